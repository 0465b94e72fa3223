package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// thiefScript is a worker that hunts for a credential of the web board
// served beside it: every 64-hex string in the repository's common dir
// (where earlier versions kept the token), in the serve process's command
// line and environment, and in its writable memory. It prints each
// candidate as "candidate <hex>", and whether each /proc read was allowed.
const thiefScript = `common=$(git rev-parse --git-common-dir)
tmp=${TMPDIR:-/tmp}/thief.$$
grep -rhoaE '[0-9a-f]{64}' "$common/agentmine" 2>/dev/null | sed 's/^/candidate /'
for f in cmdline environ maps; do
	if cat /proc/$SERVE_PID/$f > $tmp.$f 2>/dev/null && [ -s $tmp.$f ]; then echo "read $f: allowed"; else echo "read $f: denied"; fi
	grep -oaE '[0-9a-f]{64}' $tmp.$f 2>/dev/null | sed 's/^/candidate /'
done
if dd if=/proc/$SERVE_PID/mem bs=1 count=0 2>/dev/null; then echo "open mem: allowed"; else echo "open mem: denied"; fi
grep -E ' rw-p ' $tmp.maps 2>/dev/null | while read -r range rest; do
	s=${range%-*}; e=${range#*-}
	dd if=/proc/$SERVE_PID/mem iflag=skip_bytes,count_bytes skip=$((0x$s)) count=$((0x$e - 0x$s)) 2>/dev/null
done | grep -oaE '[0-9a-f]{64}' | sort -u | sed 's/^/candidate /'
echo x >> src/a.txt && git add src && git commit -qm thief
`

// TestBoardTokenOutOfWorkersReach: a worker at landlock, bwrap and clone
// that looks for the board's credential where earlier versions left it (a
// file in the common dir) and in the serve process itself (/proc: command
// line, environment, memory) finds nothing that logs in to a board served
// on loopback beside it.
func TestBoardTokenOutOfWorkersReach(t *testing.T) {
	if testing.Short() {
		t.Skip("real workers under every sandbox level")
	}
	repo := testRepo(t)
	files := map[string]string{"tools/thief.sh": thiefScript, "src/a.txt": "a\n"}
	for _, level := range []string{"landlock", "bwrap", "clone"} {
		files[".agentmine/agents/thief-"+level+".toml"] = "client = \"custom\"\ncommand = [\"sh\", \"tools/thief.sh\"]\n[scope]\nwrite = [\"src/**\"]\n[isolation]\nlevel = \"" + level + "\"\n"
	}
	gittest.CommitFiles(t, repo, "thieves", files)
	srv := startServe(t, repo, "127.0.0.1:0")
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", srv.cmd.Process.Pid, srv.cmd.Process.Pid))
	if err != nil || len(strings.Fields(string(kids))) != 1 {
		t.Fatalf("the server process: %q %v", kids, err)
	}
	servePid, _ := strconv.Atoi(strings.Fields(string(kids))[0])
	candRE := regexp.MustCompile(`(?m)^candidate ([0-9a-f]{64})$`)
	var found []string
	for _, level := range []string{"landlock", "bwrap", "clone"} {
		id, code := try(t, repo, nil, "task", "add", "-q", "thief at "+level)
		if code != 0 {
			t.Fatal("task add failed")
		}
		out, code := try(t, repo, []string{"SERVE_PID=" + strconv.Itoa(servePid)}, "worker", "run", id, "--agent", "thief-"+level, "--exec", "--skip-dod", "--json")
		var res struct {
			Log       string `json:"log"`
			Isolation struct {
				Level string `json:"level"`
			} `json:"isolation"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
			t.Fatalf("worker run at %s: exit %d: %s", level, code, out)
		}
		if res.Isolation.Level != level {
			t.Fatalf("the worker ran at %q, not %s", res.Isolation.Level, level)
		}
		log, err := os.ReadFile(res.Log)
		if err != nil {
			t.Fatal(err)
		}
		// The command line, environment and memory map may be readable
		// (they are at landlock); the memory is not.
		if !strings.Contains(string(log), "open mem: denied") {
			t.Errorf("at %s the worker opened the server's /proc/<pid>/mem:\n%s", level, log)
		}
		t.Logf("at %s: %s", level, strings.Join(regexp.MustCompile(`(?m)^(read|open) .*$`).FindAllString(string(log), -1), "; "))
		for _, m := range candRE.FindAllStringSubmatch(string(log), -1) {
			found = append(found, level+" "+m[1])
		}
	}
	// Any candidate that logs in (as the login token, or as a cookie) is a
	// credential a worker obtained.
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(req *http.Request) int {
		res, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, f := range found {
		level, cand, _ := strings.Cut(f, " ")
		req, _ := http.NewRequest("GET", srv.base+"/?token="+cand, nil)
		if code := status(req); code != http.StatusUnauthorized {
			t.Errorf("a worker at %s found a login token: %s logs in (%d)", level, cand, code)
		}
	}
	// The person's own login still works, and no candidate is its cookie.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("the printed address: %d", res.StatusCode)
	}
	res, err = http.Get(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the printed address a second time: %d, want 401 (one login)", res.StatusCode)
	}
	var name string
	for _, ck := range jar.Cookies(res.Request.URL) {
		name = ck.Name
	}
	for _, f := range found {
		level, cand, _ := strings.Cut(f, " ")
		req, _ := http.NewRequest("GET", srv.base+"/", nil)
		req.AddCookie(&http.Cookie{Name: name, Value: cand})
		if code := status(req); code != http.StatusUnauthorized {
			t.Errorf("a worker at %s found a login cookie: %s (%d)", level, cand, code)
		}
	}
	t.Logf("%d candidates found by the workers, none logs in", len(found))
}
