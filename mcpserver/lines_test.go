package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// initLine is the initialize request a client sends first.
const initLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// reply is one line the server wrote.
type reply struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// serveLines serves a repository over a LineTransport fed with input, and
// returns what Serve returned and the lines the server wrote, once the
// server has ended with the input.
func serveLines(t *testing.T, input string, maxLine int) (error, []reply) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := New(ctx, Options{Dir: gittest.NewRepo(t), Supervisor: func(top, session string) []string { return []string{"false"} }})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	// A pipe, as stdin is: the input arrives while the server runs.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(input))
		pw.Close()
	}()
	serr := s.Serve(ctx, &LineTransport{Reader: pr, Writer: &out, MaxLine: maxLine})
	if ctx.Err() != nil {
		t.Fatalf("the server did not end with its input: %v", ctx.Err())
	}
	var replies []reply
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %q", sc.Text())
		}
		replies = append(replies, r)
	}
	return serr, replies
}

// TestMalformedLinesBetweenRequests feeds every kind of bad line between
// valid requests: each valid request is answered, each bad line gets its
// JSON-RPC error, and the server ends cleanly with its input.
func TestMalformedLinesBetweenRequests(t *testing.T) {
	bad := []struct {
		line string
		code int
		id   any
	}{
		{"not json", -32700, nil},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", -32700, nil},
		{"\x00", -32700, nil},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"nul\x00\",\"method\":\"ping\"}", -32700, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}`, -32700, nil},
		{`{"jsonrpc":"1.0","id":"v1","method":"ping"}`, -32600, "v1"},
		{`{"id":"none","method":"ping"}`, -32600, "none"},
		{`{"jsonrpc":2,"id":"num","method":"ping"}`, -32600, "num"},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":"m","method":7}`, -32600, "m"},
		{`{"jsonrpc":"2.0","id":"p","method":"ping","params":3}`, -32600, "p"},
		{`{"jsonrpc":"2.0","id":"r"}`, -32600, "r"},
		{`{"jsonrpc":"2.0","id":"e","error":"text"}`, -32600, "e"},
		{`{"jsonrpc":"2.0","id":"both","result":{},"error":{"code":1,"message":"x"}}`, -32600, "both"},
		{`[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]`, -32600, nil},
		{`[]`, -32600, nil},
		{`"a string"`, -32600, nil},
		{`42`, -32600, nil},
		{`null`, -32600, nil},
	}
	var in strings.Builder
	in.WriteString(initLine + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	// Responses to nothing the server asked and a cancellation of nothing:
	// well-formed, passed on, answered by nobody.
	in.WriteString(`{"jsonrpc":"2.0","id":"stray","result":{}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"no"}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nothing"}}` + "\n")
	want := map[string]bool{"init": true}
	for i, b := range bad {
		// A valid request just before each bad line, and a blank line,
		// which is skipped.
		id := fmt.Sprintf("ok-%d", i)
		want[id] = true
		method := "ping"
		if i%3 == 0 {
			method = "tools/list"
		}
		fmt.Fprintf(&in, "{\"jsonrpc\":\"2.0\",\"id\":%q,\"method\":%q}\n%s\n\r\n", id, method, b.line)
	}
	// The last request ends the input without a newline.
	in.WriteString(`{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"task_list","arguments":{}}}`)
	want["last"] = true

	serr, replies := serveLines(t, in.String(), 0)
	if serr != nil {
		t.Errorf("Serve: %v", serr)
	}
	var errs []reply
	for _, r := range replies {
		id, _ := r.ID.(string)
		switch {
		case want[id] && r.Error == nil && r.Result != nil:
			delete(want, id)
		case r.Error != nil && !strings.HasPrefix(id, "ok-") && id != "init" && id != "last":
			errs = append(errs, r)
		default:
			t.Errorf("unexpected reply %+v", r)
		}
	}
	for id := range want {
		t.Errorf("request %s was not answered", id)
	}
	if len(errs) != len(bad) {
		t.Fatalf("%d error replies for %d bad lines: %+v", len(errs), len(bad), errs)
	}
	// Error replies are written in the order of the bad lines.
	for i, b := range bad {
		r := errs[i]
		if r.Error.Code != b.code || fmt.Sprint(r.ID) != fmt.Sprint(b.id) || r.Error.Message == "" {
			t.Errorf("line %q: reply id %v code %d %q, want id %v code %d", b.line, r.ID, r.Error.Code, r.Error.Message, b.id, b.code)
		}
	}
}

// TestOverlongLineAndDuplicateID: a line over the bound is answered with a
// parse error and skipped whole, and a second request with the id of one
// in flight is refused without disturbing the first.
func TestOverlongLineAndDuplicateID(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":"long","method":"ping","params":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	in := initLine + "\n" + long + "\n" +
		`{"jsonrpc":"2.0","id":"after","method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":"same","method":"tools/call","params":{"name":"task_list","arguments":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":"same","method":"tools/call","params":{"name":"task_list","arguments":{}}}` + "\n"
	serr, replies := serveLines(t, in, 200)
	if serr != nil {
		t.Errorf("Serve: %v", serr)
	}
	got := map[string]int{}
	var codes []int
	for _, r := range replies {
		if r.Error != nil {
			codes = append(codes, r.Error.Code)
			if r.ID != nil {
				t.Errorf("error reply with id %v: %+v", r.ID, r.Error)
			}
			continue
		}
		got[fmt.Sprint(r.ID)]++
	}
	if got["init"] != 1 || got["after"] != 1 || got["long"] != 0 {
		t.Errorf("answered %v, want init and after once, long never", got)
	}
	// "same" is answered once with a result, or (when the first was
	// already answered) twice.
	if got["same"] == 0 || got["same"]+len(codes) != 3 {
		t.Errorf("same answered %d times with %d error replies %v", got["same"], len(codes), codes)
	}
	if len(codes) == 0 || codes[0] != -32700 {
		t.Errorf("error codes %v, want the overlong line's -32700 first", codes)
	}
}
