package main

import (
	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
)

// ServeCmd is `serve`: the web board, served by agentmine-serve.
type ServeCmd struct {
	Addr        string `default:"127.0.0.1:7878" placeholder:"HOST:PORT" help:"Address to listen on (port 0 picks a free one)."`
	Open        bool   `help:"Open the board in the default browser."`
	ReadOnly    bool   `name:"read-only" help:"Serve the board without actions: nothing can be changed from the browser."`
	AllowRemote bool   `name:"allow-remote" help:"Allow an --addr that is not loopback (the access token is still required)."`
	TLSCert     string `name:"tls-cert" type:"path" placeholder:"FILE" help:"Serve HTTPS with this PEM certificate (chain); needs --tls-key."`
	TLSKey      string `name:"tls-key" type:"path" placeholder:"FILE" help:"The PEM private key of --tls-cert."`
}

// Run serves the board until interrupted.
func (c *ServeCmd) Run(a *App) error {
	return runServer(a, serverargs.Args{Command: "serve",
		Serve: serverargs.Serve{Addr: c.Addr, Open: c.Open, ReadOnly: c.ReadOnly, AllowRemote: c.AllowRemote,
			TLSCert: c.TLSCert, TLSKey: c.TLSKey}})
}
