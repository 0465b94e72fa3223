package servers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/web"
)

// ServeOptions are the flags of `git agentmine serve`.
type ServeOptions = serverargs.Serve

// checkAddr refuses an --addr that is not HOST:PORT, or that is not
// loopback without AllowRemote; it reports whether the address is loopback.
func checkAddr(o ServeOptions) (host string, loopback bool, err error) {
	host, port, err := net.SplitHostPort(o.Addr)
	if err == nil {
		err = checkHostPort(host, port)
	}
	if err != nil {
		return "", false, exitcode.New(exitcode.Usage, fmt.Errorf("--addr %q is not HOST:PORT: %w", o.Addr, err),
			"give a host name or IP address and a port number from 0 to 65535 (0 picks a free one), e.g. 127.0.0.1:7878")
	}
	loopback = isLoopback(host)
	if !loopback && !o.AllowRemote {
		return "", false, exitcode.New(exitcode.Usage, fmt.Errorf("--addr %s is not a loopback address; the board would be reachable from other machines", o.Addr),
			"pass --allow-remote as well to serve it there (the access token is still required)")
	}
	return host, loopback, nil
}

// checkHostPort refuses, before anything listens, what net.Listen would
// refuse only later or read as something else: a port that is not a
// decimal number from 0 to 65535 (a service name, an empty port), and a
// host that is neither empty, an IP address nor a DNS name.
func checkHostPort(host, port string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	ip, _, _ := strings.Cut(host, "%") // an IPv6 zone: fe80::1%eth0
	if host == "" || net.ParseIP(ip) != nil {
		return nil
	}
	if len(host) > 253 {
		return fmt.Errorf("host name of %d characters", len(host))
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' ||
			strings.TrimLeft(strings.ToLower(label), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Errorf("host %q is neither an IP address nor a host name", host)
		}
	}
	return nil
}

// Serve serves the board until the context ends.
func Serve(e *Env, o ServeOptions) error {
	host, loopback, err := checkAddr(o)
	if err != nil {
		return err
	}
	cfg, err := tlsConfig(o)
	if err != nil {
		return err
	}
	st, err := e.Store()
	if err != nil {
		return err
	}
	if err := web.RemoveStoredToken(st); err != nil {
		return err
	}
	token, err := web.NewToken()
	if err != nil {
		return err
	}
	s, err := web.New(e.Ctx, web.Options{Dir: e.Dir, Getenv: e.Getenv, Token: token, ReadOnly: o.ReadOnly, Loopback: loopback,
		Log: e.P.Err, Supervisor: e.Supervisor, Command: e.Command, ShareHint: ShareHint})
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return exitcode.New(exitcode.State, fmt.Errorf("listening on %s: %w", o.Addr, err), "")
	}
	scheme := "http"
	if cfg != nil {
		scheme = "https"
		ln = tls.NewListener(ln, cfg)
	}
	addrs := listenAddrs(ln.Addr(), host, loopback)
	url := scheme + "://" + addrs[0] + "/?token=" + token
	ctx := e.Ctx
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	e.P.Printf("%s\n", url)
	if !e.P.Quiet {
		mode := ""
		if o.ReadOnly {
			mode = " (read-only)"
		}
		e.P.Notef("serving the board of %s%s; Ctrl-C stops it\n", st.Location().Top, mode)
		if !loopback {
			for i := range addrs {
				addrs[i] = scheme + "://" + addrs[i] + "/"
			}
			e.P.Notef("listening on %s\n", strings.Join(addrs, ", "))
		}
	}
	if !loopback && cfg == nil {
		e.P.Warnf("the board's traffic is plain HTTP: the login address, the login cookie and every page cross the network unencrypted; give --tls-cert and --tls-key, or serve it behind a TLS proxy")
	}
	if o.Open {
		if err := openBrowser(url); err != nil {
			e.P.Warnf("could not open a browser: %v; open the address above yourself", err)
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

// tlsConfig loads --tls-cert and --tls-key; nil without them.
func tlsConfig(o ServeOptions) (*tls.Config, error) {
	if o.TLSCert == "" && o.TLSKey == "" {
		return nil, nil
	}
	if o.TLSCert == "" || o.TLSKey == "" {
		return nil, exitcode.New(exitcode.Usage, errors.New("--tls-cert and --tls-key go together"),
			"give both: a PEM certificate (chain) and its PEM private key")
	}
	cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("reading the TLS certificate %s and key %s: %w", o.TLSCert, o.TLSKey, err),
			"give a PEM certificate (chain) and the PEM private key it was made for")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// listenAddrs are the host:port addresses the listener can be reached at,
// the one to print in the login address first: the address asked for,
// with the port actually bound (port 0 picks one). A listener on every
// interface (no host, 0.0.0.0 or ::) is reached at each interface's
// address: a remote board lists them all, the ones other machines can
// reach first (link-local IPv6 addresses, which need a zone, left out); a
// loopback one prints localhost.
func listenAddrs(addr net.Addr, host string, loopback bool) []string {
	_, port, _ := net.SplitHostPort(addr.String())
	if host != "" && host != "0.0.0.0" && host != "::" {
		return []string{net.JoinHostPort(host, port)}
	}
	var out, local []string
	if ifs, err := net.InterfaceAddrs(); err == nil && !loopback {
		for _, a := range ifs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLinkLocalUnicast() || host == "0.0.0.0" && n.IP.To4() == nil {
				continue
			}
			if n.IP.IsLoopback() {
				local = append(local, net.JoinHostPort(n.IP.String(), port))
			} else {
				out = append(out, net.JoinHostPort(n.IP.String(), port))
			}
		}
	}
	if len(out)+len(local) == 0 {
		return []string{net.JoinHostPort("localhost", port)}
	}
	return append(out, local...)
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
