// Package web owns git agentmine's web board: an HTTP server for one
// repository that shows the board, each task with the facts that decided
// its status, the Memory Bank and the running workers and run supervisors,
// streams session and run logs live over Server-Sent Events, and pushes a
// change event to every open page when refs/agentmine, the notes or a
// branch move. Everything it shows is read through the packages the command
// line uses (board, contract, sessions, memory, pipeline), and every action
// (create, edit, reopen, unblock and cancel a task, start and stop a worker,
// review, merge, start and stop a run) calls the same functions the command
// line calls. Assets are embedded; there is no database and no
// build step.
//
// Safety: every request needs a login cookie, which the one-time login
// address the serve command prints hands out (the address's token is then
// spent; neither is ever written to disk, see Options.Token); a state-changing request must be a POST from the board's own
// origin carrying the form's CSRF value; a loopback server refuses Host
// names that are not loopback (DNS rebinding); html/template escapes
// everything a worker or a task's author controls, and log output reaches
// the page as text with ANSI colour turned into class names.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// Options configure a server.
type Options struct {
	// Dir is a directory inside the repository to serve.
	Dir string
	// Getenv reads the environment (AGENTMINE_* settings); nil reads
	// nothing.
	Getenv func(string) string
	// Supervisor returns the command line of a detached supervisor that
	// runs a prepared session, given the repository's top and the
	// session's id: starting a worker starts it and returns.
	Supervisor func(top, session string) []string
	// ShareHint words the hint the Board and Runs pages show when the
	// repository has a remote (its name given) that shares nothing; nil
	// shows none.
	ShareHint func(remote string) string
	// Command returns the argv of git agentmine running args in the
	// repository at top: the board starts runs with `run --detach`. Nil
	// leaves starting runs out.
	Command func(top string, args ...string) []string
	// Token is the one-time login token (see NewToken): the first request
	// that carries it in its query gets a login cookie, and the token is
	// spent. It and the cookies exist only in this process's memory: a
	// file any process of the user can read (every sandboxed worker reads
	// the repository's common dir) would hand the board's actions to
	// every worker.
	Token string
	// ReadOnly leaves every action out: no forms, and POSTs are refused.
	ReadOnly bool
	// Loopback: the server listens on a loopback address only, so a Host
	// header naming anything else is a DNS-rebinding attempt and refused.
	Loopback bool
	// Log receives warnings (unreadable refs skipped, a watch that failed);
	// nil drops them.
	Log io.Writer
}

// Server is the web board of one repository.
type Server struct {
	opts  Options
	pages *pages
	live  *live
	snaps snapCache
	// cookie is the name of the login cookie: derived from the token, so
	// that boards of two repositories served on one host do not overwrite
	// each other's cookie.
	cookie string
	csrf   string
	common string

	// bg counts the goroutines requests leave behind (a log's watcher):
	// Close waits for them, so none writes to the repository after.
	bg sync.WaitGroup

	mu sync.Mutex
	// spent is set once the login token was exchanged for a cookie.
	spent bool
	// logins holds the SHA-256 of every login cookie handed out.
	logins map[[32]byte]bool
}

// New checks that opts.Dir is inside a git repository and builds the
// server. Call Close when done with it.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Supervisor == nil && !opts.ReadOnly {
		return nil, errors.New("web board: no supervisor command for starting workers")
	}
	if len(opts.Token) < 16 {
		return nil, errors.New("web board: the access token is missing or too short")
	}
	st, err := gitstore.Open(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte("agentmine board cookie\x00" + opts.Token))
	mac := hmac.New(sha256.New, []byte(opts.Token))
	mac.Write([]byte("agentmine board csrf"))
	s := &Server{opts: opts, cookie: "agentmine_" + hex.EncodeToString(sum[:4]),
		csrf: hex.EncodeToString(mac.Sum(nil))[:32], common: st.Location().CommonDir, logins: map[[32]byte]bool{}}
	s.pages, err = newPages()
	if err != nil {
		return nil, err
	}
	s.live = newLive(s.common, opts.Log)
	s.snaps.ctx, s.snaps.cancel = context.WithCancel(context.Background())
	s.snaps.asyncAbove = defaultAsyncAbove
	return s, nil
}

// Close stops watching the repository for changes and waits for every
// goroutine the board started to end (the board being read in the
// background, if any, is told to stop). Call it after the HTTP server is
// shut down: the goroutines a request started end with its context.
func (s *Server) Close() {
	s.live.close()
	s.snaps.cancel()
	s.snaps.wg.Wait()
	s.bg.Wait()
}

// spawn runs f in a goroutine that Close waits for.
func (s *Server) spawn(f func()) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		f()
	}()
}

// Handler is the board's HTTP handler: the routes behind the token check,
// the Host check and, for POSTs, the cross-origin and CSRF checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.boardPage)
	mux.HandleFunc("GET /tasks/{id}", s.taskPage)
	mux.HandleFunc("GET /memory", s.memoryPage)
	mux.HandleFunc("GET /runs", s.runsPage)
	mux.HandleFunc("GET /sessions/{id}/log", s.logStream)
	mux.HandleFunc("GET /runs/{name}/log", s.runLogStream)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /stream", s.stream)
	mux.HandleFunc("GET /static/{file}", s.static)
	if !s.opts.ReadOnly {
		mux.HandleFunc("POST /tasks", s.createTask)
		mux.HandleFunc("POST /tasks/{id}/{action}", s.taskAction)
		mux.HandleFunc("POST /runs", s.startRun)
		mux.HandleFunc("POST /runs/{name}/stop", s.stopRun)
	}
	mux.HandleFunc("POST /", s.readOnlyRefusal)
	// Any other path is not found (without this, a GET of an unknown
	// path would match only "POST /" and be answered 405).
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.notFound(mux, w, r) })
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "403 forbidden: a cross-origin request may not change anything on this board", http.StatusForbidden)
	}))
	return s.checkHost(s.authenticate(cop.Handler(s.checkCSRF(mux))))
}

// checkHost refuses a loopback server's requests whose Host is not a
// loopback name: a page on another site that re-points its own name at
// 127.0.0.1 must not reach the board (it would not have the token's
// cookie, but it could still probe the routes).
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Loopback && !loopbackHost(r.Host) {
			http.Error(w, "421 misdirected request: this board answers to loopback names only", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine's
// loopback interface.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// authenticate lets a request through when it carries a login cookie. A
// request without one but with the unspent login token in its query spends it and gets a
// fresh login cookie (HttpOnly, SameSite=Strict); a GET is then redirected
// to the same address without the token, so that it does not stay in the
// address bar or in the history. A spent token logs no one in: an address
// that leaked after use (a log, a terminal's scrollback, the command line
// of the browser that opened it) is worth nothing.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(s.cookie)
		in := err == nil && s.loggedIn(c.Value)
		if q := r.URL.Query().Get("token"); q != "" {
			if !in {
				cookie, ok := s.login(q)
				if !ok {
					unauthorized(w, "this login address was already used or is wrong; each serve prints a new one, good for one login (restart serve to get another)")
					return
				}
				http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: cookie, Path: "/", HttpOnly: true,
					SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			}
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				u := *r.URL
				v := u.Query()
				v.Del("token")
				u.RawQuery = v.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if in {
			next.ServeHTTP(w, r)
			return
		}
		unauthorized(w, "this board needs a login; open the address the serve command printed (it ends in ?token=…)")
	})
}

func unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintln(w, "401 unauthorized: "+why)
}

// login spends the login token t and returns a new login cookie, or false
// when t is not the token or the token was spent already.
func (s *Server) login(t string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spent || subtle.ConstantTimeCompare([]byte(t), []byte(s.opts.Token)) != 1 {
		return "", false
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false
	}
	c := hex.EncodeToString(b[:])
	s.spent = true
	s.logins[sha256.Sum256([]byte(c))] = true
	return c, true
}

// loggedIn reports whether c is a login cookie this server handed out (the
// map is keyed by a hash, so the lookup's timing says nothing of c).
func (s *Server) loggedIn(c string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins[sha256.Sum256([]byte(c))]
}

// checkCSRF refuses a POST whose form does not carry the board's CSRF
// value: the page's own forms carry it, another site cannot read it.
func (s *Server) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		got := r.PostFormValue("csrf")
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
			http.Error(w, "403 forbidden: the form's CSRF value is missing or wrong; reload the page and try again", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) readOnlyRefusal(w http.ResponseWriter, r *http.Request) {
	if s.opts.ReadOnly {
		http.Error(w, "403 forbidden: this board is read-only (served with --read-only)", http.StatusForbidden)
		return
	}
	http.NotFound(w, r)
}

// notFound answers a path the board does not have with 404 and its page,
// and a path that takes only POSTs with 405.
func (s *Server) notFound(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		post := r.Clone(r.Context())
		post.Method = http.MethodPost
		if _, pattern := mux.Handler(post); pattern != "/" && pattern != "POST /" {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "405 method not allowed: "+r.URL.Path+" takes POSTs only", http.StatusMethodNotAllowed)
			return
		}
	}
	s.fail(w, r, exitcode.New(exitcode.NotFound, fmt.Errorf("no page at %s on this board", r.URL.Path), ""))
}

// NewToken returns a fresh login token for a server: 32 random bytes, hex.
// It is never written anywhere but to the serve command's own output.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the board's login token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// RemoveStoredToken deletes the access token that earlier versions kept in
// <common dir>/agentmine/serve-token, where every sandboxed worker could
// read it. Boards no longer accept it; removing it leaves nothing to find.
func RemoveStoredToken(st *gitstore.Store) error {
	err := os.Remove(filepath.Join(st.Location().CommonDir, "agentmine", "serve-token"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the board's old stored access token: %w", err)
	}
	return nil
}
