package serverargs

import (
	"reflect"
	"testing"
)

// TestRoundTrip: what Argv renders, Parse reads back as it was, for serve
// with every flag and none, and for mcp; what it does not render, Parse
// refuses.
func TestRoundTrip(t *testing.T) {
	for _, a := range []Args{
		{Dir: "/repo with space", Agentmine: "/bin/git-agentmine", Version: "v1.2.3", Command: "mcp"},
		{Dir: ".", Agentmine: "git-agentmine", Version: "(devel)", Quiet: true, NoColor: true, Command: "serve",
			Serve: Serve{Addr: "127.0.0.1:0", Open: true, ReadOnly: true, AllowRemote: true, TLSCert: "/c.pem", TLSKey: "/k.pem"}},
		{Dir: "-C", Agentmine: "x", Version: "y", Command: "serve", Serve: Serve{Addr: DefaultAddr}},
	} {
		got, err := Parse(a.Argv(Name)[1:])
		if err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("round trip of %+v gave %+v", a, got)
		}
	}
	for _, bad := range [][]string{nil, {"serve", "extra"}, {"mcp", "extra"}, {"board"}, {"--nope", "mcp"}, {"serve", "--addr"}} {
		if _, err := Parse(bad); err == nil {
			t.Fatalf("%q was accepted", bad)
		}
	}
}
