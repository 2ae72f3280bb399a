package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/acme/app/internal/store"
)

// testEnv is the environment of a test run: JSON logs and a fixed secret.
func testEnv(extra ...string) func(string) string {
	m := map[string]string{"APP_LOG_FORMAT": "json", "APP_JWT_SECRET": "test-secret-test-secret-test-secret!", "APP_AUTH_BCRYPT_COST": "4"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return func(k string) string { return m[k] }
}

type result struct {
	code        int
	out, errOut string
}

// runApp runs the program in-process with args.
func runApp(t *testing.T, getenv func(string) string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := Run(ctx, args, getenv, strings.NewReader(""), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// server is an `app serve` running in-process.
type server struct {
	addr   string
	cancel context.CancelFunc
	done   chan int
	logs   *lockedBuffer
}

// lockedBuffer is a log sink safe for serve's goroutines, which can tell when a line is logged.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	waiters []logWaiter
}

type logWaiter struct {
	text   string
	logged chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	waiting := l.waiters[:0]
	for _, w := range l.waiters {
		if bytes.Contains(p, []byte(w.text)) {
			close(w.logged)
		} else {
			waiting = append(waiting, w)
		}
	}
	l.waiters = waiting
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// logged returns a channel closed when a write from now on contains text (a log line: each
// is one write).
func (l *lockedBuffer) logged(text string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := logWaiter{text: text, logged: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	return w.logged
}

// startServe runs `app serve` on a random port with dataDir and waits until health answers 200.
func startServe(t *testing.T, dataDir string, getenv func(string) string) *server {
	t.Helper()
	return startServeWith(t, dataDir, getenv, nil)
}

// startServeWith is startServe with the factory's test hooks set by hooks (nil: none).
func startServeWith(t *testing.T, dataDir string, getenv func(string) string, hooks func(*factory)) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{cancel: cancel, done: make(chan int, 1), logs: &lockedBuffer{}}
	addrc := make(chan string, 1)
	f := &factory{in: strings.NewReader(""), out: s.logs, errOut: s.logs, getenv: getenv,
		onListen: func(a string) { addrc <- a }}
	if hooks != nil {
		hooks(f)
	}
	go func() { s.done <- run(ctx, f, []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}) }()
	select {
	case s.addr = <-addrc:
	case code := <-s.done:
		t.Fatalf("serve exited with %d: %s", code, s.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen within 30s")
	}
	t.Cleanup(func() { s.stop(t) })
	resp, err := http.Get("http://" + s.addr + "/api/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	return s
}

func (s *server) stop(t *testing.T) int {
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(30 * time.Second):
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Fatalf("serve did not stop within 30s; its log:\n%s\ngoroutines:\n%s", s.logs.String(), stacks.String())
		return -1
	}
}

// Ensure a request in flight when shutdown starts is answered, new connections are refused,
// and the store is released (URI file removed) once serve returns 0.
func TestServe_GracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, testEnv())

	body := `{"email":"nobody@example.com","password":"secret1"}`
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Expect: 100-continue makes the server say when the handler starts reading the body.
	fmt.Fprintf(conn, "POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n%s",
		len(body), body[:10])
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("before the body: %v, %v; want 100 Continue", resp, err)
	} // the handler is now blocked reading the rest of the body

	s.cancel()
	deadline := time.Now().Add(5 * time.Second)
	for { // wait until the listener is closed
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("server still accepts connections after shutdown began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprint(conn, body[10:])
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in-flight request got no answer: %v", err)
	}
	var env map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&env)
	if resp.StatusCode != 401 || env["message"] != "Invalid credentials" {
		t.Fatalf("in-flight answer = %d %v, want 401 Invalid credentials", resp.StatusCode, env)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exit = %d, want 0: %s", code, s.logs.String())
	}
	if _, err := os.Stat(store.URIFile(dir)); !os.IsNotExist(err) {
		t.Fatalf("URI file left behind after shutdown (err=%v)", err)
	}
}

// Ensure a second serve on the same data directory is refused while the first runs.
func TestServe_SecondOnSameDataDir(t *testing.T) {
	dir := t.TempDir()
	startServe(t, dir, testEnv())
	r := runApp(t, testEnv(), "serve", "--addr", "127.0.0.1:0", "--data-dir", dir)
	if r.code != exitFailure || !strings.Contains(r.errOut, "in use") {
		t.Fatalf("second serve = %d %q, want exit 1 naming the data directory in use", r.code, r.errOut)
	}
}

// Ensure the users commands work beside a running serve (through its store) and alone (opening
// the store themselves), with the documented exit codes.
func TestUsersCLI(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, testEnv())
	resp, err := http.Post("http://"+s.addr+"/api/auth/register", "application/json",
		strings.NewReader(`{"email":"ops@example.com","password":"secret1","name":"Ops"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("register: %v %v", resp, err)
	}
	resp.Body.Close()

	r := runApp(t, testEnv(), "users", "grant", "ops@example.com", "admin", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.out, "admin") {
		t.Fatalf("grant beside serve = %d out=%q err=%q", r.code, r.out, r.errOut)
	}
	r = runApp(t, testEnv(), "users", "list", "--json", "--data-dir", dir)
	var users []struct {
		Email string   `json:"email"`
		Roles []string `json:"roles"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.out), &users) != nil || len(users) != 1 || fmt.Sprint(users[0].Roles) != "[user admin]" {
		t.Fatalf("list --json = %d %q %q", r.code, r.out, r.errOut)
	}
	r = runApp(t, testEnv(), "users", "grant", "ghost@example.com", "admin", "--data-dir", dir)
	if r.code != exitFailure || strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 || !strings.Contains(r.errOut, "ghost@example.com") {
		t.Fatalf("unknown user = %d %q, want exit 1 with one line", r.code, r.errOut)
	}
	r = runApp(t, testEnv(), "users", "grant", "only-one-arg", "--data-dir", dir)
	if r.code != exitUsage {
		t.Fatalf("missing argument = %d %q, want exit 2", r.code, r.errOut)
	}

	// Alone: stop serve; the command opens the store itself and sees the same data.
	s.stop(t)
	r = runApp(t, testEnv(), "users", "revoke", "ops@example.com", "admin", "--data-dir", dir)
	if r.code != 0 {
		t.Fatalf("revoke alone = %d %q", r.code, r.errOut)
	}
	r = runApp(t, testEnv(), "users", "list", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.out, "ops@example.com") || strings.Contains(r.out, "admin") {
		t.Fatalf("list alone = %d %q", r.code, r.out)
	}
	if _, err := os.Stat(filepath.Join(dir, "app.lock")); err != nil {
		t.Fatal(err)
	}
}

// Ensure a bad configuration value stops the program with exit 2 and one line naming the key.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	r := runApp(t, testEnv("APP_JWT_TTL", "forever"), "serve", "--data-dir", t.TempDir())
	if r.code != exitUsage || !strings.Contains(r.errOut, "jwt.ttl") || !strings.Contains(r.errOut, "forever") ||
		strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
		t.Fatalf("bad config = %d %q", r.code, r.errOut)
	}
	r = runApp(t, testEnv(), "serve", "--no-such-flag")
	if r.code != exitUsage {
		t.Fatalf("unknown flag = %d, want 2", r.code)
	}
}

// Ensure version is printed by both spellings.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runApp(t, testEnv(), args...)
		if r.code != 0 || r.out != "app 0.1.0-dev\n" {
			t.Fatalf("%v = %d %q", args, r.code, r.out)
		}
	}
}

// expect fails the test unless the command exited with code and its output holds every
// text of wantOut and of wantErr.
func (r result) expect(t *testing.T, code int, wantOut, wantErr []string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit=%d, want %d\nout=%s\nerr=%s", r.code, code, r.out, r.errOut)
	}
	for _, w := range wantOut {
		if !strings.Contains(r.out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, r.out)
		}
	}
	for _, w := range wantErr {
		if !strings.Contains(r.errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.errOut)
		}
	}
}

// Ensure tracked waits for the handlers in flight, as serve does after closing the
// connections at the shutdown deadline so that their usage records reach the recorder
// before it closes, and gives up after its bound.
func TestTracked_WaitsForHandlers(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var finished atomic.Bool
	h, done := tracked(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		<-release
		time.Sleep(50 * time.Millisecond) // the handler's way out: a usage record
		finished.Store(true)
	}))
	go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	for done(0) { // until the handler is in flight
		time.Sleep(time.Millisecond)
	}
	if done(20 * time.Millisecond) {
		t.Fatal("done reported no handler in flight while one was")
	}
	close(release)
	if !done(10*time.Second) || !finished.Load() {
		t.Fatal("done returned before the handler finished")
	}
}

// Ensure SIGINT or SIGTERM while `serve`, `store serve` or an operator command waits for a data directory
// another command holds stops it quietly: exit 128 + the signal's number, as a shell reports a
// process the signal killed, and one line saying it was stopped waiting for the lock, with no
// "error:" and no "context canceled".
func TestInterruptedLockWait(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		args     []string
		sig      syscall.Signal
		sigName  string
		wantCode int
	}{
		{"ServeSIGTERM", []string{"serve", "--addr", "127.0.0.1:0"}, syscall.SIGTERM, "SIGTERM", 143},
		{"CommandSIGINT", []string{"users", "list"}, syscall.SIGINT, "SIGINT", 130},
		{"StoreServeSIGTERM", []string{"store", "serve", "--listen", "127.0.0.1:0"}, syscall.SIGTERM, "SIGTERM", 143},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dir := t.TempDir()
			holder, err := store.Open(ctx, store.Options{DataDir: dir, Shared: true}) // a command's hold
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close(context.Background())

			var out, errOut bytes.Buffer
			f := &factory{in: strings.NewReader(""), out: &out, errOut: &errOut, getenv: testEnv("APP_LOG_LEVEL", "error"),
				signals: func() (<-chan os.Signal, func()) {
					c := make(chan os.Signal, 1)
					time.AfterFunc(300*time.Millisecond, func() { c <- tt.sig })
					return c, func() {}
				}}
			code := run(ctx, f, append(tt.args, "--data-dir", dir))
			want := "store: stopped while waiting for the lock on " + dir + ", held by process " + strconv.Itoa(os.Getpid()) +
				": interrupted by " + tt.sigName + "\n"
			if code != tt.wantCode || errOut.String() != want {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut.String(), tt.wantCode, want)
			}
		})
	}
}
