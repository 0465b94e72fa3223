package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/web"
)

// ServeCmd is `serve`: the web board.
type ServeCmd struct {
	Addr        string `default:"127.0.0.1:7878" placeholder:"HOST:PORT" help:"Address to listen on (port 0 picks a free one)."`
	Open        bool   `help:"Open the board in the default browser."`
	ReadOnly    bool   `name:"read-only" help:"Serve the board without actions: nothing can be changed from the browser."`
	AllowRemote bool   `name:"allow-remote" help:"Allow an --addr that is not loopback (the access token is still required)."`
}

// Run serves the board until interrupted.
func (c *ServeCmd) Run(a *App) error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--addr %q is not HOST:PORT: %w", c.Addr, err), "")
	}
	loopback := isLoopback(host)
	if !loopback && !c.AllowRemote {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--addr %s is not a loopback address; the board would be reachable from other machines", c.Addr),
			"pass --allow-remote as well to serve it there (the access token is still required)")
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	token, err := web.Token(st)
	if err != nil {
		return err
	}
	dir := a.G.Dir
	if dir == "" {
		dir = "."
	}
	s, err := web.New(a.Ctx, web.Options{Dir: dir, Getenv: a.Getenv, Token: token, ReadOnly: c.ReadOnly, Loopback: loopback,
		Log: a.P.Err, Supervisor: func(top, session string) []string { return supervisorArgv(a.Args0, top, session) }})
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return exitcode.New(exitcode.State, fmt.Errorf("listening on %s: %w", c.Addr, err), "")
	}
	url := "http://" + urlHost(ln.Addr(), host) + "/?token=" + token
	ctx := a.Ctx
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	a.P.Printf("%s\n", url)
	if !a.G.Quiet {
		mode := ""
		if c.ReadOnly {
			mode = " (read-only)"
		}
		a.P.Notef("serving the board of %s%s; Ctrl-C stops it\n", st.Location().Top, mode)
	}
	if c.Open {
		if err := openBrowser(url); err != nil {
			a.P.Warnf("could not open a browser: %v; open the address above yourself", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving the board: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stopping the board: %w", err)
	}
	return nil
}

// isLoopback reports whether a listening host is loopback only: a loopback
// IP or "localhost". An empty host listens on every interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// urlHost is the host:port to print for the listener: the address asked
// for, with the port actually bound (port 0 picks one).
func urlHost(addr net.Addr, host string) string {
	_, port, _ := net.SplitHostPort(addr.String())
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// openBrowser opens url in the desktop's browser.
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
