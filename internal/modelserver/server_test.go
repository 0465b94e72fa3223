package modelserver

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The edit script answers in each API's own tool vocabulary, read from the
// request's tool list, and moves on as tool results come back.
func TestEditScriptSpeaksEachAPI(t *testing.T) {
	s, err := Start(Options{Dir: "/wt", File: "notes/hello.txt"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		path, first, second, want1, want2 string
	}{
		{"/v1/messages?beta=true",
			`{"stream":true,"messages":[{"role":"user","content":"go"}],"tools":[{"name":"Write","input_schema":{"properties":{"file_path":{},"content":{}}}},{"name":"Bash","input_schema":{"properties":{"command":{},"description":{}}}}]}`,
			`{"stream":true,"messages":[{"role":"user","content":"go"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}],"tools":[{"name":"Bash","input_schema":{"properties":{"command":{}}}}]}`,
			`"name":"Write"`, `git commit`},
		{"/v1/responses",
			`{"stream":true,"input":[{"type":"message"}],"tools":[{"type":"function","name":"exec_command","parameters":{"properties":{"cmd":{}}}}]}`,
			`{"stream":true,"input":[{"type":"message"},{"type":"function_call_output"}],"tools":[{"type":"function","name":"exec_command","parameters":{"properties":{"cmd":{}}}}]}`,
			`mkdir -p 'notes'`, `git commit`},
		{"/v1/chat/completions",
			`{"stream":true,"messages":[{"role":"user"}],"tools":[{"function":{"name":"write","parameters":{"properties":{"filePath":{},"content":{}}}}}]}`,
			`{"stream":true,"messages":[{"role":"user"},{"role":"tool"}],"tools":[{"function":{"name":"bash","parameters":{"properties":{"command":{},"description":{}}}}}]}`,
			`filePath`, `git commit`},
		{"/v1beta/models/m:streamGenerateContent?alt=sse",
			`{"contents":[{"parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"write_file","parametersJsonSchema":{"properties":{"file_path":{},"content":{}}}}]}]}`,
			`{"contents":[{"parts":[{"text":"go"}]},{"parts":[{"functionResponse":{}}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command","parameters":{"properties":{"command":{}}}}]}]}`,
			`/wt/notes/hello.txt`, `git commit`},
	} {
		code, body := post(t, s.URL()+tc.path, tc.first)
		if code != 200 || !strings.Contains(body, tc.want1) {
			t.Errorf("%s first answer %d:\n%s", tc.path, code, body)
		}
		code, body = post(t, s.URL()+tc.path, tc.second)
		if code != 200 || !strings.Contains(body, tc.want2) {
			t.Errorf("%s second answer %d:\n%s", tc.path, code, body)
		}
	}
	if got := s.Served(); got.Input == 0 || got.Output == 0 {
		t.Errorf("no usage served: %v", got)
	}
}

func TestFailureScriptsAndUnknownRequests(t *testing.T) {
	req := `{"stream":true,"messages":[{"role":"user","content":"go"}],"tools":[{"name":"Bash","input_schema":{"properties":{"command":{}}}}]}`
	s, err := Start(Options{Script: Flaky})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, want := range []int{429, 500, 200} {
		if code, body := post(t, s.URL()+"/v1/messages", req); code != want {
			t.Fatalf("flaky answered %d, want %d: %s", code, want, body)
		}
	}
	u, err := Start(Options{Script: Unauthorized})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if code, body := post(t, u.URL()+"/v1/messages", req); code != 401 || !strings.Contains(body, "authentication_error") {
		t.Fatalf("unauthorized answered %d: %s", code, body)
	}
	if code, _ := post(t, u.URL()+"/v2/whatever", `{"x":1}`); code != 404 {
		t.Fatalf("unknown endpoint answered %d", code)
	}
	if code, _ := post(t, u.URL()+"/v1/messages", `not json`); code != 400 {
		t.Fatalf("bad body answered %d", code)
	}
	log := u.Log()
	if !strings.Contains(log, "NOT UNDERSTOOD") || !strings.Contains(log, `body: {"x":1}`) || !strings.Contains(log, "body: not json") {
		t.Fatalf("the log does not keep what it did not understand:\n%s", log)
	}
}

// Hold keeps the answer that ends a turn until the test releases it; the
// tool calls before it are not held.
func TestHoldKeepsTheFinalAnswer(t *testing.T) {
	hold := make(chan struct{})
	s, err := Start(Options{Dir: "/wt", File: "notes/hello.txt", Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const tools = `"tools":[{"name":"Bash","input_schema":{"properties":{"command":{}}}}]`
	code, body := post(t, s.URL()+"/v1/messages", `{"messages":[{"role":"user","content":"go"}],`+tools+`}`)
	if code != 200 || !strings.Contains(body, "tool_use") {
		t.Fatalf("first answer %d: %s", code, body)
	}
	// A side request without tools (a title) is answered and counted.
	if code, body := post(t, s.URL()+"/v1/messages", `{"messages":[{"role":"user","content":"title?"}]}`); code != 200 || !strings.Contains(body, "Scripted answer") {
		t.Fatalf("side answer %d: %s", code, body)
	}
	final := `{"messages":[{"role":"user","content":"go"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"b"}]}],` + tools + `}`
	done := make(chan string, 1)
	go func() {
		_, body := post(t, s.URL()+"/v1/messages", final)
		done <- body
	}()
	for held := false; !held; {
		for _, e := range s.Entries() {
			held = held || e.Note == "final answer held"
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case body := <-done:
		t.Fatalf("the final answer was sent while held: %s", body)
	default:
	}
	if n := s.Answers(); n != 2 {
		t.Fatalf("%d answers completed while the final one is held, want 2", n)
	}
	close(hold)
	if body := <-done; !strings.Contains(body, "Done: wrote notes/hello.txt") {
		t.Fatalf("final answer after release: %s", body)
	}
	if got, want := s.Served(), (Usage{Input: 1007 + 1107 + 1207, Output: 20 + 23 + 26}); got != want {
		t.Fatalf("served %v, want %v", got, want)
	}
}
