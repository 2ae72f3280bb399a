package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/ratelimit"
)

// SyncBuffer is a log sink safe for concurrent handlers (exported for the httpapi_test files).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *SyncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func decodeEnvelope(t *testing.T, rec *httptest.ResponseRecorder) envelope {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want JSON", ct)
	}
	var e envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("body %q is not JSON: %v", rec.Body.String(), err)
	}
	if e.StatusCode != rec.Code || e.Error == "" {
		t.Fatalf("envelope %+v does not match status %d", e, rec.Code)
	}
	return e
}

type pingFunc func(context.Context) error

func (p pingFunc) Ping(ctx context.Context) error { return p(ctx) }

func newTestServer(opts Options) http.Handler {
	return NewServer(opts, Deps{DB: pingFunc(func(context.Context) error { return nil })})
}

// Ensure a handler panic answers a 500 envelope, logs the stack, and the server keeps serving.
func TestObserve_Panic(t *testing.T) {
	t.Parallel()
	logs := &SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	h := observe(log, true, 1<<20, nil, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("kaboom")
		}
		encode(w, 200, map[string]string{"ok": "yes"})
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	if rec.Code != 500 {
		t.Fatalf("status = %d, want 500", rec.Code)
	}
	e := decodeEnvelope(t, rec)
	if e.Message != "Internal server error" || e.Error != "Internal Server Error" || strings.Contains(rec.Body.String(), "kaboom") {
		t.Fatalf("body = %s", rec.Body.String())
	}
	if !strings.Contains(logs.String(), "kaboom") || !strings.Contains(logs.String(), "goroutine") {
		t.Fatalf("log lacks the panic and its stack: %s", logs.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/fine", nil))
	if rec.Code != 200 {
		t.Fatalf("after a panic status = %d, want 200", rec.Code)
	}
}

// Ensure NoAccessLog drops the access-log line and nothing else: a failure is still logged.
func TestObserve_NoAccessLog(t *testing.T) {
	t.Parallel()
	logs := &SyncBuffer{}
	h := observe(slog.New(slog.NewJSONHandler(logs, nil)), false, 1<<20, nil, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("kaboom")
		}
		encode(w, 200, map[string]string{"ok": "yes"})
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/fine", nil))
	if logs.String() != "" {
		t.Fatalf("logged with the access log off: %s", logs.String())
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/boom", nil))
	if !strings.Contains(logs.String(), "kaboom") || strings.Contains(logs.String(), `"msg":"request"`) {
		t.Fatalf("log = %s, want the panic and no access line", logs.String())
	}
}

// Ensure every request gets an id of the server's own (a version 7 UUID, in X-Request-Id and
// the access log), whatever the client sends, and a sane client X-Request-Id is logged beside
// it as client_request_id: never as the request's id.
func TestObserve_RequestID(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, client string }{
		{"abc-123", "abc-123"},
		{"0b7c7f54-2d0a-4f3e-9a57-3f1c2f9b8a11", "0b7c7f54-2d0a-4f3e-9a57-3f1c2f9b8a11"},
		{"bad id\nforged", ""},
		{"", ""},
		{"sk-app-5gzbEJ2cQ8rTnW3xYv7LmK1pZa9sDf4GhJ6kL0qWe", ""}, // a credential is not logged
		{"5gzbEJ2cQ8rTnW3xYv7LmK1pZa9sDf4GhJ6kL0qWe", ""},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		logs := &SyncBuffer{}
		h := newTestServer(Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
		req := httptest.NewRequest("GET", "/api/health", nil)
		if tt.in != "" {
			req.Header.Set("X-Request-Id", tt.in)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if id, err := uuid.Parse(got); err != nil || id.Version() != 7 || got == tt.in || seen[got] {
			t.Errorf("X-Request-Id for %q = %q, want a new version 7 UUID", tt.in, got)
		}
		seen[got] = true
		line := logs.String()
		if !strings.Contains(line, `"request_id":"`+got+`"`) {
			t.Errorf("access log lacks request id %q: %s", got, line)
		}
		if tt.client != "" && !strings.Contains(line, `"client_request_id":"`+tt.client+`"`) ||
			tt.client == "" && strings.Contains(line, "client_request_id") {
			t.Errorf("client X-Request-Id %q: access log %s", tt.in, line)
		}
	}
}

// Ensure the access log line holds what docs/operations.md promises, and each level's logger
// decides whether it is written.
func TestObserve_AccessLogLine(t *testing.T) {
	t.Parallel()
	logs := &SyncBuffer{}
	h := newTestServer(Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	req := httptest.NewRequest("GET", "/api/nope", nil)
	req.RemoteAddr = "192.0.2.7:4711"
	h.ServeHTTP(httptest.NewRecorder(), req)
	var line map[string]any
	if err := json.Unmarshal([]byte(logs.String()), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	d, isNumber := line["duration"].(float64)
	if line["msg"] != "request" || line["level"] != "INFO" || line["method"] != "GET" || line["path"] != "/api/nope" ||
		line["status"] != 404.0 || line["bytes"].(float64) <= 0 || line["remote"] != "192.0.2.7:4711" ||
		len(line["request_id"].(string)) != 36 || !isNumber || d <= 0 || d != float64(int64(d)) {
		t.Errorf("access log line %v", line)
	}
	if _, ok := line["source"]; ok {
		t.Errorf("access log line has a source: %v", line)
	}

	quiet := &SyncBuffer{}
	h = newTestServer(Options{Logger: slog.New(slog.NewJSONHandler(quiet, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/nope", nil))
	if quiet.String() != "" {
		t.Errorf("an info line reached a warn logger: %s", quiet)
	}
}

// Ensure an API key pasted into a path (in place of a key's id) is cut to its prefix in the
// access log, and a path without one is logged as it is.
func TestObserve_AccessLogHidesKeysInPath(t *testing.T) {
	t.Parallel()
	const key = "sk-app-5gzbEJ2cQ8rTnW3xYv7LmK1pZa9sDf4GhJ6kL0qWe"
	const jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI2YjA0In0.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU"
	for _, tc := range []struct{ path, want string }{
		{"/api/keys/" + key, "/api/keys/sk-app-…"},
		{"/api/keys/" + key + "/x/" + key, "/api/keys/sk-app-…/x/sk-app-…"},
		{"/api/keys/abc123", "/api/keys/abc123"},
		{"/api/keys/SK-APP-" + key[len("sk-app-"):], "/api/keys/SK-APP-…"},
		{"/api/keys/" + key[len("sk-app-"):], "/api/keys/5gzb…"}, // the key without its prefix
		{"/api/keys/" + jwt, "/api/keys/eyJh…"},
		{"/api/Bearer%20" + jwt, "/api/Bear…"},
		{"/api/keys/0192f3a4-1b2c-7d3e-8f40-123456789abc", "/api/keys/0192f3a4-1b2c-7d3e-8f40-123456789abc"}, // a key's id
	} {
		logs := &SyncBuffer{}
		h := newTestServer(Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", tc.path, nil))
		var line map[string]any
		if err := json.Unmarshal([]byte(logs.String()), &line); err != nil {
			t.Fatalf("log %q: %v", logs.String(), err)
		}
		if line["path"] != tc.want || strings.Contains(logs.String(), key[len("sk-app-"):]) || strings.Contains(logs.String(), jwt[10:]) {
			t.Errorf("%s: access log %s, want the path %q", tc.path, logs.String(), tc.want)
		}
	}
}

// blockingWriter is a log sink that holds every write until release is closed.
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return len(p), nil
}

// Ensure a JSON answer carries its length and reaches the client before its access-log line is
// written: a slow log sink does not hold answers back. The answer is read whole while the log
// write is still blocked, and the request is already counted in the metrics by then.
func TestObserve_AnswerLeavesBeforeItsLogLine(t *testing.T) {
	t.Parallel()
	sink := &blockingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	m := metrics.New()
	srv := httptest.NewServer(newTestServer(Options{Logger: slog.New(slog.NewJSONHandler(sink, nil)), Metrics: m}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(sink.release) })

	type answer struct {
		res  *http.Response
		body []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := http.Get(srv.URL + "/api/nope")
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		got <- answer{res, body, err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatal(a.err)
		}
		if a.res.StatusCode != http.StatusNotFound || a.res.ContentLength != int64(len(a.body)) || len(a.res.TransferEncoding) != 0 ||
			!bytes.Contains(a.body, []byte(`"statusCode":404`)) {
			t.Fatalf("answer %d, length %d, transfer encoding %v, body %s", a.res.StatusCode, a.res.ContentLength, a.res.TransferEncoding, a.body)
		}
		if got := testutil.ToFloat64(m.HTTPRequests().WithLabelValues("unmatched", "GET", "404")); got != 1 {
			t.Fatalf("the answered request counts %v in the metrics, want 1", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer waited for its access-log line")
	}
	select {
	case <-sink.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no access-log line was written")
	}
}

// Ensure unknown routes, wrong methods and the API root answer as specified.
func TestRouting(t *testing.T) {
	t.Parallel()
	h := newTestServer(Options{})
	tests := []struct {
		method, path string
		want         int
		wantAllow    string
	}{
		{"GET", "/api", 200, ""},
		{"GET", "/api/", 200, ""},
		{"GET", "/api/health", 200, ""},
		{"GET", "/api/nope", 404, ""},
		{"GET", "/", 404, ""},
		{"POST", "/api/health", 405, "GET, HEAD"},
		{"GET", "/api/../api/health", 307, ""}, // the mux redirects to the canonical path
		{"GET", "/api/../nope", 404, ""},       // but never to an unknown route
		{"HEAD", "/api/health", 200, ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.want {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, rec.Code, tt.want)
			continue
		}
		if tt.want >= 400 {
			decodeEnvelope(t, rec)
		}
		if tt.wantAllow != "" && rec.Header().Get("Allow") != tt.wantAllow {
			t.Errorf("%s %s Allow = %q, want %q", tt.method, tt.path, rec.Header().Get("Allow"), tt.wantAllow)
		}
	}
}

// Ensure API answers, errors included, are kept by no cache and not sniffed, while the
// public OpenAPI description and the console keep their own caching.
func TestPrivateAnswers(t *testing.T) {
	t.Parallel()
	h := NewServer(Options{}, Deps{Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
	})})
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/api/health", "no-store"},
		{"GET", "/api/nope", "no-store"},
		{"POST", "/api/health", "no-store"},
		{"GET", "/v1/models", "no-store"},
		{"GET", "/api/openapi.json", "public, max-age=300"},
		{"GET", "/console/", "no-cache"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if got := rec.Header().Get("Cache-Control"); got != tc.want {
			t.Errorf("%s %s: Cache-Control %q, want %q", tc.method, tc.path, got, tc.want)
		}
		if nosniff := rec.Header().Get("X-Content-Type-Options"); (nosniff == "nosniff") == strings.HasPrefix(tc.path, "/console") {
			t.Errorf("%s %s: X-Content-Type-Options %q", tc.method, tc.path, nosniff)
		}
	}
}

// Ensure a request with a chunked body, with or without a Content-Length beside it, is answered
// and its connection closed, so that what follows it on the connection is never served (a
// proxy framing by Content-Length would have seen it as part of the body); a request with a
// Content-Length keeps its connection.
func TestCloseAfterChunked(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewServer(Options{}, Deps{}))
	t.Cleanup(srv.Close)
	next := "GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n"
	body := `{"a":1}`
	chunks := "7\r\n" + body + "\r\n0\r\n\r\n"
	for _, tc := range []struct {
		name, head, body string
		answers          int
	}{
		{"ChunkedAndLength", "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", chunks, 1},
		{"Chunked", "Transfer-Encoding: chunked\r\n", chunks, 1},
		{"Length", "Content-Length: 7\r\n", body, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			req := "POST /api/nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + tc.head + "\r\n" + tc.body + next
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // generous: a loaded machine
			br := bufio.NewReader(conn)
			for i := range tc.answers {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("answer %d: %v", i+1, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if last := i == tc.answers-1; resp.Close != (last && tc.answers == 1) {
					t.Errorf("answer %d: Connection close %v", i+1, resp.Close)
				}
			}
			if tc.answers == 1 { // closed: nothing more comes, not even the request that followed
				if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
					t.Errorf("after the answer: %q, %v; want the connection closed", rest, err)
				}
			}
		})
	}
}

// Ensure the shared body reader: 413 past the limit, 400 for malformed or trailing JSON and
// a non-JSON content type, and fields for a good body.
func TestDecodeFields(t *testing.T) {
	t.Parallel()
	h := observe(slog.New(slog.DiscardHandler), true, 64, nil, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields, err := decodeFields(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, 200, fields)
	}))
	tests := []struct {
		name, ctype, body string
		want              int
	}{
		{"OK", "application/json", `{"a":1}`, 200},
		{"OK charset", "application/json; charset=utf-8", `{"a":1}`, 200},
		{"empty body is an empty object", "application/json", ``, 200},
		{"too large", "application/json", `{"a":"` + strings.Repeat("x", 100) + `"}`, 413},
		{"declared too large", "application/json", `{"a":1}`, 413},
		{"malformed", "application/json", `{"email":`, 400},
		{"trailing data", "application/json", `{"a":1} {"b":2}`, 400},
		{"not an object", "application/json", `[1,2]`, 400},
		{"text content type", "text/plain", `{"a":1}`, 400},
	}
	for _, tt := range tests {
		req := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
		req.Header.Set("Content-Type", tt.ctype)
		if tt.name == "declared too large" {
			req.ContentLength = 10_000_000_000 // refused as declared: nothing is read
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s: status = %d, want %d (%s)", tt.name, rec.Code, tt.want, rec.Body.String())
			continue
		}
		if tt.want != 200 {
			decodeEnvelope(t, rec)
		}
	}
}

// Ensure the rate limit: headers on every answer, then exactly the throttler body with
// Retry-After; X-Forwarded-For only counts from trusted proxies.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	_, trusted, _ := net.ParseCIDR("10.0.0.0/8")
	h := newTestServer(Options{RateLimit: 3, RateWindow: time.Minute, TrustedProxies: []*net.IPNet{trusted}})
	get := func(remote, xff string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/api/health", nil)
		req.RemoteAddr = remote + ":1234"
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := 0; i < 3; i++ {
		rec := get("192.0.2.1", "")
		if rec.Code != 200 || rec.Header().Get("X-RateLimit-Limit") != "3" ||
			rec.Header().Get("X-RateLimit-Remaining") != string(rune('2'-i)) || rec.Header().Get("X-RateLimit-Reset") != "60" {
			t.Fatalf("request %d: %d %v", i+1, rec.Code, rec.Header())
		}
	}
	rec := get("192.0.2.1", "")
	if rec.Code != 429 || rec.Body.String() != `{"statusCode":429,"message":"Too Many Requests","error":"ThrottlerException"}`+"\n" {
		t.Fatalf("4th: %d %q", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("Retry-After") != "60" {
		t.Fatalf("Retry-After = %q, want 60", rec.Header().Get("Retry-After"))
	}
	// An untrusted client cannot escape its limit with a forged X-Forwarded-For.
	if rec := get("192.0.2.1", "198.51.100.7"); rec.Code != 429 {
		t.Fatalf("forged XFF from an untrusted client: %d, want 429", rec.Code)
	}
	// Behind a trusted proxy, each forwarded client has its own count.
	for i := 0; i < 3; i++ {
		if rec := get("10.1.2.3", "198.51.100.7, 10.9.9.9"); rec.Code != 200 {
			t.Fatalf("forwarded client request %d: %d", i+1, rec.Code)
		}
	}
	if rec := get("10.1.2.3", "198.51.100.7"); rec.Code != 429 {
		t.Fatalf("forwarded client 4th: %d, want 429", rec.Code)
	}
	if rec := get("10.1.2.3", "198.51.100.8"); rec.Code != 200 {
		t.Fatalf("another forwarded client: %d, want 200", rec.Code)
	}
	// IPv6 clients count by /64 network: its other addresses share the limit, directly and
	// forwarded; another network has its own.
	for i, remote := range []string{"[2001:db8:0:1::1]", "[2001:db8:0:1::2]", "[2001:db8:0:1:ffff:ffff:ffff:ffff]"} {
		if rec := get(remote, ""); rec.Code != 200 {
			t.Fatalf("IPv6 request %d: %d", i+1, rec.Code)
		}
	}
	if rec := get("10.1.2.3", "2001:db8:0:1::99"); rec.Code != 429 {
		t.Fatalf("4th address of one /64, forwarded: %d, want 429", rec.Code)
	}
	if rec := get("[2001:db8:0:2::1]", ""); rec.Code != 200 {
		t.Fatalf("another /64: %d, want 200", rec.Code)
	}
}

type failingLimiter struct{}

func (failingLimiter) Take(context.Context, string, int, time.Duration) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, errors.New("store down")
}

// Ensure a failing shared limiter store does not take the API down.
func TestRateLimit_StoreDown(t *testing.T) {
	t.Parallel()
	h := newTestServer(Options{RateLimit: 1, RateWindow: time.Minute, Limiter: failingLimiter{}})
	for i := 0; i < 3; i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/health", nil))
		if rec.Code != 200 {
			t.Fatalf("status = %d, want 200", rec.Code)
		}
	}
}

// Ensure health answers 503 with status error when the database does not answer, without a
// database round trip per request.
func TestHealth(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	pings, fail := 0, false
	db := pingFunc(func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		pings++
		if fail {
			return errors.New("down")
		}
		return nil
	})
	h := NewServer(Options{Version: "1.2.3"}, Deps{DB: db})
	get := func() (int, Health) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/health", nil))
		var body Health
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body
	}
	for i := 0; i < 50; i++ {
		code, body := get()
		if code != 200 || body.Status != "ok" || body.Service != "backend-api" || body.Version != "1.2.3" {
			t.Fatalf("health = %d %+v", code, body)
		}
		if _, err := time.Parse(time.RFC3339Nano, body.Timestamp); err != nil {
			t.Fatalf("timestamp %q: %v", body.Timestamp, err)
		}
	}
	mu.Lock()
	if pings > 2 {
		t.Fatalf("50 health calls made %d pings, want the cached state", pings)
	}
	fail = true
	mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get()
		if code == 503 && body.Status == "error" && body.Service == "backend-api" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health never turned 503 after the database failed: %d %+v", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func logDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
