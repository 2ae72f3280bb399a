package mockserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
)

const templFile = `
mocks:
  "GET /users/:id":
    data: {id: "{{.Params.id}}", kind: user}
  "GET /search":
    data:
      q: "{{.Query.q}}"
      page: "{{.Query.page | default \"1\"}}"
      auth: "{{.Headers.Authorization}}"
      lower: "{{.Headers.authorization}}"
      missing: "{{.Query.nope}}"
  "POST /echo":
    status: 201
    headers: {X-Echo: "{{.Body.email}}", X-Static: fixed}
    data:
      email: "{{.Body.email}}"
      nested: {tags: ["{{.Body.tag}}", 2, true, null]}
      id: "{{uuid}}"
      n: "{{int 5 5}}"
  "POST /raw":
    headers: {Content-Type: text/plain}
    body: "hello {{.Body.name}}"
  "GET /literal":
    templating: false
    data: {x: "{{not a template}}"}
  "GET /people":
    generate: {kind: user, count: 3}
  "GET /one":
    generate: {kind: product, seed: 7}
  "GET /flaky":
    sequence:
      - {status: 500, data: {error: boom}}
      - {status: 200, data: {ok: true}}
  "GET /slow":
    delay: 30
    data: {}
`

// Ensure templates render params, query, headers and body, with generator functions.
func TestTemplating(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, "m.yaml", templFile, nil)
	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		wantStatus               int
		check                    func(t *testing.T, a answer)
	}{
		{"Params", "GET", "/users/abc", "", nil, 200, func(t *testing.T, a answer) {
			if a.body != `{"id":"abc","kind":"user"}` {
				t.Fatalf("body=%s", a.body)
			}
		}},
		{"QueryAndHeaders", "GET", "/search?q=go&q=again", "", []string{"Authorization", "Bearer t"}, 200, func(t *testing.T, a answer) {
			want := `{"q":"go","page":"1","auth":"Bearer t","lower":"Bearer t","missing":""}`
			if a.body != want {
				t.Fatalf("body=%s, want %s", a.body, want)
			}
		}},
		{"JSONBody", "POST", "/echo", `{"email":"a@b.co","tag":"x\"y"}`, []string{"Content-Type", "application/json"}, 201, func(t *testing.T, a answer) {
			v := decode[map[string]any](t, a)
			if v["email"] != "a@b.co" || v["n"] != "5" || len(v["id"].(string)) != 36 {
				t.Fatalf("body=%s", a.body)
			}
			tags := v["nested"].(map[string]any)["tags"].([]any)
			if tags[0] != `x"y` || tags[1] != float64(2) || tags[2] != true || tags[3] != nil {
				t.Fatalf("tags=%v", tags)
			}
			if a.header.Get("X-Echo") != "a@b.co" || a.header.Get("X-Static") != "fixed" {
				t.Fatalf("headers=%v", a.header)
			}
		}},
		{"FormBody", "POST", "/echo", "email=f%40b.co", []string{"Content-Type", "application/x-www-form-urlencoded"}, 201, func(t *testing.T, a answer) {
			if decode[map[string]any](t, a)["email"] != "f@b.co" {
				t.Fatalf("body=%s", a.body)
			}
		}},
		{"RawBody", "POST", "/raw", `{"name":"Ada"}`, nil, 200, func(t *testing.T, a answer) {
			if a.body != "hello Ada" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
				t.Fatalf("body=%q ctype=%q", a.body, a.header.Get("Content-Type"))
			}
		}},
		{"TemplatingOff", "GET", "/literal", "", nil, 200, func(t *testing.T, a answer) {
			if a.body != `{"x":"{{not a template}}"}` {
				t.Fatalf("body=%s", a.body)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := do(t, tc.method, hs.URL+tc.path, tc.body, tc.headers...)
			if a.status != tc.wantStatus {
				t.Fatalf("status=%d, want %d (%s)", a.status, tc.wantStatus, a.body)
			}
			tc.check(t, a)
		})
	}
}

// Ensure generate fills data with records that stay the same across requests, and a
// sequence answers its steps in turn, the last one repeating, until a reset.
func TestGenerateAndSequence(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, "m.yaml", templFile, nil)
	people := decode[[]mock.User](t, do(t, "GET", hs.URL+"/people", ""))
	if len(people) != 3 || people[0].Email == "" || people[0].ID == "" {
		t.Fatalf("people=%+v", people)
	}
	again := decode[[]mock.User](t, do(t, "GET", hs.URL+"/people", ""))
	if again[0].ID != people[0].ID {
		t.Fatal("generated data changed between requests")
	}
	if p := decode[mock.Product](t, do(t, "GET", hs.URL+"/one", "")); p.Name == "" || p.SKU == "" {
		t.Fatalf("product=%+v", p)
	}
	var got []int
	for range 3 {
		got = append(got, do(t, "GET", hs.URL+"/flaky", "").status)
	}
	if want := []int{500, 200, 200}; !slices.Equal(got, want) {
		t.Fatalf("sequence statuses=%v, want %v", got, want)
	}
	do(t, "POST", hs.URL+"/__mock/reset", "")
	if s := do(t, "GET", hs.URL+"/flaky", "").status; s != 500 {
		t.Fatalf("after reset status=%d, want 500", s)
	}
}

// Ensure a route delay and the --delay override apply.
func TestDelay(t *testing.T) {
	t.Parallel()
	d := mock.Fixed(0)
	_, hs, _ := newTestServer(t, "m.yaml", "config: {delay: 5000}\nmocks:\n  \"GET /a\": {data: {}}\n", func(o *Options) { o.Delay = &d })
	start := time.Now()
	do(t, "GET", hs.URL+"/a", "")
	if time.Since(start) > 4*time.Second {
		t.Fatal("--delay 0 did not override the file's delay")
	}
}

// Ensure unmatched requests go to --target, matched ones stay mocked, and without a target
// they get 404 ROUTE_MATCH_FAILED with the closest routes.
func TestFallbackProxy(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"upstream": "yes", "path": r.URL.Path})
	})
	_, hs, _ := newTestServer(t, "m.yaml", yamlFile, func(o *Options) { o.Target = target })

	a := do(t, "GET", hs.URL+"/proxied/thing?x=1", "")
	if a.status != 200 || decode[map[string]string](t, a)["path"] != "/proxied/thing" {
		t.Fatalf("proxied answer %d %s", a.status, a.body)
	}
	if a := do(t, "GET", hs.URL+"/users/7", ""); a.body != `{"id":"7","kind":"user"}` {
		t.Fatalf("mocked route answered %s", a.body)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != "GET /proxied/thing?x=1" {
		t.Fatalf("upstream saw %v", seen)
	}
	mu.Unlock()

	_, plain, _ := newTestServer(t, "m.yaml", yamlFile, nil)
	a = do(t, "GET", plain.URL+"/user/7", "")
	body := decode[map[string]any](t, a)
	if a.status != 404 || body["code"] != "ROUTE_MATCH_FAILED" {
		t.Fatalf("unmatched: %d %s", a.status, a.body)
	}
	if c, _ := body["closest"].([]any); len(c) == 0 || c[0] != "GET /users/:id" {
		t.Fatalf("closest=%v", body["closest"])
	}
}

// Ensure --record writes proxied exchanges as mocks that replay offline.
func TestRecordThenReplay(t *testing.T) {
	t.Parallel()
	up, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/items/1":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Upstream", "1")
			w.Write([]byte(`{"id":1,"name":"{{weird}}"}`))
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte("short and stout"))
		}
	})
	dir := t.TempDir()
	rec := dir + "/recorded.yaml"
	_, hs, _ := newTestServer(t, "", "", func(o *Options) {
		o.Target = target
		o.Record = rec
		o.File = writeTemp(t, dir, "m.yaml", "mocks: {}\n")
	})
	do(t, "GET", hs.URL+"/api/items/1", "")
	do(t, "GET", hs.URL+"/tea", "")
	up.Close() // offline from here

	replay, err := New(Options{File: rec, Logger: quiet})
	if err != nil {
		b, _ := os.ReadFile(rec)
		t.Fatalf("replaying %s: %v", b, err)
	}
	rs := httptest.NewServer(replay)
	t.Cleanup(rs.Close)
	a := do(t, "GET", rs.URL+"/api/items/1", "")
	if a.status != 200 || a.body != `{"id":1,"name":"{{weird}}"}` || a.header.Get("X-Upstream") != "1" {
		t.Fatalf("replayed %d %v %s", a.status, a.header, a.body)
	}
	a = do(t, "GET", rs.URL+"/tea", "")
	if a.status != 418 || a.body != "short and stout" {
		t.Fatalf("replayed %d %s", a.status, a.body)
	}
}

func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := dir + "/" + name
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Ensure --watch swaps in a valid edit and keeps the old mocks on an invalid one.
func TestHotReload(t *testing.T) {
	t.Parallel()
	reloads := make(chan error, 10)
	s, hs, path := newTestServer(t, "m.yaml", "mocks:\n  \"GET /v\": {data: {v: 1}}\n", func(o *Options) {
		o.OnReload = func(err error) { reloads <- err }
	})
	ctx := t.Context()
	if err := s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	wait := func() error {
		select {
		case err := <-reloads:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no reload after the edit")
			return nil
		}
	}
	writeAtomically(t, path, "mocks:\n  \"GET /v\": {data: {v: 2}}\n  \"GET /w\": {}\n")
	if err := wait(); err != nil {
		t.Fatalf("valid edit: %v", err)
	}
	if a := do(t, "GET", hs.URL+"/v", ""); a.body != `{"v":2}` {
		t.Fatalf("after valid edit body=%s", a.body)
	}
	if err := os.WriteFile(path, []byte("mocks:\n  \"GET /v\": {status: 999}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := wait()
	var le *mockfile.LoadError
	if !errors.As(err, &le) || le.Problems[0].Code != mockfile.CodeStatus {
		t.Fatalf("invalid edit: err=%v, want a LoadError with INVALID_STATUS", err)
	}
	if a := do(t, "GET", hs.URL+"/v", ""); a.body != `{"v":2}` {
		t.Fatalf("after invalid edit body=%s, want the previous mocks", a.body)
	}
}

// writeAtomically saves as editors do: a new file renamed over the old one.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Ensure preflights are answered with the CORS headers and simple requests carry them: a
// listed origin (flag or config.cors.origins) is echoed with credentials, any other gets "*"
// without credentials.
func TestCORS(t *testing.T) {
	t.Parallel()
	file := strings.Replace(yamlFile, "config:\n", "config:\n  cors: {origins: [\"http://from-file.test\"]}\n", 1)
	_, hs, _ := newTestServer(t, "m.yaml", file, func(o *Options) { o.CORSOrigins = []string{"http://localhost:5173"} })
	for _, tc := range []struct {
		name, origin, wantOrigin, wantCreds string
	}{
		{"FlagOrigin", "http://localhost:5173", "http://localhost:5173", "true"},
		{"FileOrigin", "http://from-file.test", "http://from-file.test", "true"},
		{"OtherOrigin", "https://evil.example", "*", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, "OPTIONS", hs.URL+"/users/1", "", "Origin", tc.origin,
				"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type")
			h := a.header
			if a.status != 204 || h.Get("Access-Control-Allow-Origin") != tc.wantOrigin || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
				h.Get("Access-Control-Allow-Headers") != "authorization,content-type" || h.Get("Access-Control-Allow-Credentials") != tc.wantCreds {
				t.Fatalf("preflight %d headers=%v", a.status, h)
			}
			a = do(t, "GET", hs.URL+"/users/1", "", "Origin", tc.origin)
			if a.header.Get("Access-Control-Allow-Origin") != tc.wantOrigin || a.header.Get("Access-Control-Allow-Credentials") != tc.wantCreds {
				t.Fatalf("simple request headers=%v", a.header)
			}
		})
	}

	_, off, _ := newTestServer(t, "m.yaml", yamlFile, func(o *Options) { o.NoCORS = true })
	a := do(t, "GET", off.URL+"/users/1", "", "Origin", "http://localhost:5173")
	if a.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("--no-cors still sent CORS headers")
	}
}

// Ensure a file's fallbackToNetwork: false wins over --target: unmatched requests get 404.
func TestFallbackOffInFile(t *testing.T) {
	t.Parallel()
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) })
	_, hs, _ := newTestServer(t, "m.yaml", "config: {fallbackToNetwork: false}\nmocks: {}\n", func(o *Options) { o.Target = target })
	if a := do(t, "GET", hs.URL+"/x", ""); a.status != 404 || !strings.Contains(a.body, "ROUTE_MATCH_FAILED") {
		t.Fatalf("unmatched with fallback off: %d %s", a.status, a.body)
	}
}

// Ensure --record into a .json file writes JSON that replays.
// Ensure --record names a file it cannot write at start, not at the first exchange (when
// the log line is easy to miss and the clicks are lost): a directory that does not exist,
// or a directory in the file's place.
func TestRecord_RefusesAFileItCannotWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target, _ := url.Parse("http://127.0.0.1:1")
	for _, tc := range []struct{ name, path, want string }{
		{"MissingDirectory", filepath.Join(dir, "nowhere", "rec.yaml"), "no such file or directory"},
		{"ADirectory", dir, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := newRecorder(tc.path, target, http.DefaultTransport, slog.Default(), false)
			if err == nil || !strings.HasPrefix(err.Error(), "--record "+tc.path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("newRecorder(%s) = %v, want an error naming --record and %q", tc.path, err, tc.want)
			}
		})
	}
	if _, err := newRecorder(filepath.Join(dir, "new.yaml"), target, http.DefaultTransport, slog.Default(), false); err != nil {
		t.Errorf("a new file in a writable directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the check left files behind: %v", entries)
	}
}

func TestRecordJSON(t *testing.T) {
	t.Parallel()
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	rec := t.TempDir() + "/rec.json"
	_, hs, _ := newTestServer(t, "", "", func(o *Options) { o.Target = target; o.Record = rec })
	do(t, "POST", hs.URL+"/things", `{"a":1}`)
	b, err := os.ReadFile(rec)
	if err != nil || !json.Valid(b) || !strings.Contains(string(b), `"POST /things"`) {
		t.Fatalf("recorded %s, %v", b, err)
	}
	if _, err := mockfile.LoadFile(rec); err != nil {
		t.Fatalf("recorded file does not load: %v", err)
	}
}

// Ensure one answer the recorder cannot keep never spoils the rest: an answer over its limit
// reaches the client whole and unrecorded, bytes that are not UTF-8 are passed on unrecorded,
// and the answers after them are still recorded.
func TestRecord_WhatItCannotKeep(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", maxRecordBody+1000)
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Write([]byte(big))
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte{0x89, 'P', 'N', 'G', 0xff, 0xfe})
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		}
	})
	rec := t.TempDir() + "/rec.yaml"
	_, hs, _ := newTestServer(t, "", "", func(o *Options) { o.Target = target; o.Record = rec })
	if a := do(t, "GET", hs.URL+"/big", ""); a.status != 200 || len(a.body) != len(big) {
		t.Fatalf("big answer: %d, %d bytes, want all %d", a.status, len(a.body), len(big))
	}
	if a := do(t, "GET", hs.URL+"/png", ""); a.status != 200 || a.body != "\x89PNG\xff\xfe" {
		t.Fatalf("binary answer: %d %q", a.status, a.body)
	}
	do(t, "GET", hs.URL+"/after", "")
	set, err := mockfile.LoadFile(rec)
	if err != nil {
		t.Fatalf("recorded file does not load: %v", err)
	}
	var keys []string
	for _, r := range set.Routes {
		keys = append(keys, r.Key)
	}
	if fmt.Sprint(keys) != "[GET /after]" {
		t.Fatalf("recorded %v, want only GET /after", keys)
	}
}

// Ensure every recorded route replays what was asked: a path with escapes (a space, a #)
// is recorded as sent and answers it again, and a method or a path a route key cannot hold
// literally (a method of its own, a segment that reads as a parameter or a wildcard) is
// passed on unrecorded instead of leaving a file that does not load or answers other paths.
func TestRecord_PathsAsSent(t *testing.T) {
	t.Parallel()
	up, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Method + " " + r.URL.EscapedPath()))
	})
	rec := t.TempDir() + "/rec.yaml"
	_, hs, _ := newTestServer(t, "", "", func(o *Options) { o.Target = target; o.Record = rec })
	for _, c := range []struct{ method, path string }{
		{"GET", "/files/my%20doc.pdf"},
		{"GET", "/tags/a%23b"},
		{"FOO", "/custom"},
		{"GET", "/users/:me"},
		{"GET", "/any/*"},
		{"GET", "/after"},
	} {
		if a := do(t, c.method, hs.URL+c.path, ""); a.status != 200 || a.body != c.method+" "+c.path {
			t.Fatalf("%s %s through the recorder: %d %q", c.method, c.path, a.status, a.body)
		}
	}
	up.Close()
	set, err := mockfile.LoadFile(rec)
	if err != nil {
		b, _ := os.ReadFile(rec)
		t.Fatalf("recorded file does not load: %v\n%s", err, b)
	}
	var keys []string
	for _, r := range set.Routes {
		keys = append(keys, r.Key)
	}
	if want := "[GET /files/my%20doc.pdf GET /tags/a%23b GET /after]"; fmt.Sprint(keys) != want {
		t.Fatalf("recorded %v, want %s", keys, want)
	}
	replay, err := New(Options{File: rec, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rs := httptest.NewServer(replay)
	t.Cleanup(rs.Close)
	for _, p := range []string{"/files/my%20doc.pdf", "/tags/a%23b"} {
		if a := do(t, "GET", rs.URL+p, ""); a.status != 200 || a.body != "GET "+p {
			t.Fatalf("replayed %s: %d %q", p, a.status, a.body)
		}
	}
	if a := do(t, "GET", rs.URL+"/users/other", ""); a.status != 404 {
		t.Fatalf("GET /users/other answered %d %q from a recording", a.status, a.body)
	}
}

// upstream starts a server answering with h, closed when the test ends, and returns it with
// its URL (a --target).
func upstream(t *testing.T, h http.HandlerFunc) (*httptest.Server, *url.URL) {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	target, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	return up, target
}

// Ensure --record without --target and --watch without a file are refused.
func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{Record: "x.yaml", Logger: quiet}); err == nil {
		t.Fatal("--record without --target was accepted")
	}
	if _, err := New(Options{Logger: quiet}); err == nil {
		t.Fatal("no file, no API and no target was accepted")
	}
	s, err := New(Options{Logger: quiet, API: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Watch(t.Context()); err == nil {
		t.Fatal("--watch without a file was accepted")
	}
	if err := s.Reload(); err == nil {
		t.Fatal("reload of the built-in mock was accepted")
	}
}

// Ensure a request in flight during a reload is answered by the mock set it started with,
// and the next request by the new one.
func TestReload_InFlightFinishesOnOldSet(t *testing.T) {
	t.Parallel()
	started := &logSignal{msg: "mock: mock request", c: make(chan struct{})}
	s, hs, path := newTestServer(t, "m.yaml", "mocks:\n  \"GET /slow\": {delay: 400, data: {v: 1}}\n", func(o *Options) {
		o.LogRequests, o.Logger = true, slog.New(started)
	})
	got := make(chan answer, 1)
	go func() { got <- do(t, "GET", hs.URL+"/slow", "") }()
	select { // the request has been routed on the old set and waits out its delay
	case <-started.c:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not logged as started within 10 s")
	}
	writeAtomically(t, path, "mocks:\n  \"GET /slow\": {data: {v: 2}}\n")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.status != 200 || a.body != `{"v":1}` {
		t.Fatalf("in-flight answer = %d %s, want the old set's {\"v\":1}", a.status, a.body)
	}
	if a := do(t, "GET", hs.URL+"/slow", ""); a.body != `{"v":2}` {
		t.Fatalf("after reload = %s, want {\"v\":2}", a.body)
	}
}

// Ensure the cache never serves an old answer: a reload (and a restart on the persisted
// bbolt file) answers the new body; POST, non-2xx answers, sequences, generators and delay
// ranges are not cached unless the file opts in (config.cache, cache: true).
func TestCache_NeverStale(t *testing.T) {
	t.Parallel()
	const file = `config:
  persistence: {enabled: true, storage: indexeddb, dir: %q}
  %s
mocks:
  "GET /v": {data: {version: %d}}
  "POST /p": {data: {n: "{{int 1 1000000000}}"}}
  "GET /missing": {status: 404, data: {n: "{{int 1 1000000000}}"}, cache: %s}
  "GET /seq": {sequence: [{data: {step: 1}}, {data: {step: 2}}]}
  "GET /seqcached": {sequence: [{data: {step: 1}}, {data: {step: 2}}], cache: true}
  "GET /uuid": {data: {id: "{{uuid}}"}}
  "GET /slow": {data: {id: "{{.Query.x}}"}, delay: [0, 1]}
`
	write := func(path string, version int, rules, missing string) {
		writeAtomically(t, path, fmt.Sprintf(file, "cache", rules, version, missing))
	}
	s, hs, path := newTestServer(t, "m.yaml", fmt.Sprintf(file, "cache", "", 1, "false"), nil)
	same := func(p, method string) bool {
		a, b := do(t, method, hs.URL+p, ""), do(t, method, hs.URL+p, "")
		return a.body == b.body
	}
	for _, tc := range []struct {
		path, method string
		cached       bool
	}{
		{"/v", "GET", true}, {"/p", "POST", false}, {"/missing", "GET", false}, {"/seq", "GET", false},
		{"/seqcached", "GET", true}, {"/uuid", "GET", false},
	} {
		if got := same(tc.path, tc.method); got != tc.cached {
			t.Errorf("%s %s: the second answer equals the first: %v, want %v", tc.method, tc.path, got, tc.cached)
		}
	}
	do(t, "POST", hs.URL+"/__mock/reset", "")
	do(t, "GET", hs.URL+"/slow?x=1", "")
	do(t, "GET", hs.URL+"/slow?x=1", "")
	if st := decode[map[string]any](t, do(t, "GET", hs.URL+"/__mock/stats", "")); st["cacheHitRate"] != nil && st["cacheHitRate"].(float64) != 0 {
		t.Errorf("a route with a delay range was answered from the cache: %v", st["cacheHitRate"])
	}
	write(path, 2, "", "false")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "GET", hs.URL+"/v", ""); a.body != `{"version":2}` {
		t.Fatalf("after reload: %s", a.body)
	}
	hs.Close()
	s.Close()

	// A restart on the persisted file: the changed route answers fresh.
	write(path, 3, "", "false")
	s2, err := New(Options{Logger: quiet, File: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	hs2 := httptest.NewServer(s2)
	defer hs2.Close()
	if a := do(t, "GET", hs2.URL+"/v", ""); a.body != `{"version":3}` {
		t.Fatalf("after restart: %s", a.body)
	}

	// Opt-in: every method and status, and a dynamic route that says cache: true.
	_, hs3, _ := newTestServer(t, "m.yaml", fmt.Sprintf(file, "cache", `cache: {methods: ["*"], statuses: ["*"]}`, 1, "true"), nil)
	for _, p := range []string{"/p", "/missing"} {
		method := map[string]string{"/p": "POST", "/missing": "GET"}[p]
		a, b := do(t, method, hs3.URL+p, ""), do(t, method, hs3.URL+p, "")
		if p == "/p" && a.body == b.body {
			t.Errorf("POST /p has a generator and no cache: true, yet was cached")
		}
		if p == "/missing" && a.body != b.body {
			t.Errorf("GET /missing (404, cache: true, statuses *) was not cached")
		}
	}
}

// Ensure WireMock mappings named by the file's wiremock key are served before the file's
// mocks, a miss falls through to the mocks, and WireMock's scenario reset is an admin call.
func TestWireMock_BesideTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wm := filepath.Join(dir, "wm", "mappings")
	if err := os.MkdirAll(wm, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wm, "s.json"), []byte(`{"mappings":[
		{"scenarioName":"s","requiredScenarioState":"Started","newScenarioState":"done","request":{"method":"POST","urlPath":"/users/1"},"response":{"status":202,"body":"moved"}},
		{"request":{"method":"GET","urlPath":"/users/1"},"response":{"status":200,"jsonBody":{"from":"wiremock"}}}]}`), 0o644)
	path := filepath.Join(dir, "m.yaml")
	os.WriteFile(path, []byte("wiremock: wm\n"+yamlFile), 0o644)
	s, err := New(Options{Logger: quiet, File: path})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	if a := do(t, "GET", hs.URL+"/users/1", ""); a.body != `{"from":"wiremock"}` {
		t.Fatalf("the mapping did not answer first: %s", a.body)
	}
	if a := do(t, "GET", hs.URL+"/users/2", ""); !strings.Contains(a.body, `"kind":"user"`) {
		t.Fatalf("a miss did not fall through to the file's mocks: %s", a.body)
	}
	if a := do(t, "POST", hs.URL+"/users/1", ""); a.status != 202 {
		t.Fatalf("scenario step: %d", a.status)
	}
	if a := do(t, "POST", hs.URL+"/__admin/scenarios/reset", "", "Origin", "https://evil.example"); a.status != 403 {
		t.Fatalf("cross-origin scenario reset: %d", a.status)
	}
	if a := do(t, "POST", hs.URL+"/__admin/scenarios/reset", ""); a.status != 200 {
		t.Fatalf("scenario reset: %d %s", a.status, a.body)
	}
	if a := do(t, "POST", hs.URL+"/users/1", ""); a.status != 202 {
		t.Fatalf("the scenario did not start again after reset: %d", a.status)
	}
}

// Ensure a recording keeps the upstream's key order and the order routes were recorded in,
// does not replay volatile headers, and redacts tokens unless RecordSecrets is set; in YAML
// and in JSON.
func TestRecord_OrderVolatileSecrets(t *testing.T) {
	t.Parallel()
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Request-Id", "req-123")
		h.Set("X-RateLimit-Remaining", "99")
		h.Set("Set-Cookie", "s=1")
		h.Set("X-Kept", "yes")
		h.Set("X-Auth-Token", "hdrsecret")
		if r.URL.Path == "/form" {
			h.Set("Content-Type", "application/x-www-form-urlencoded")
			w.Write([]byte(`user=ada&password=formsecret&refresh_token=formsecret2`))
			return
		}
		w.Write([]byte(`{"zeta":1,"alpha":{"accessToken":"abc","nested":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"},"mid":[3,2,1],` +
			`"private_key":"pkvalue","credentials":{"user":"creduser","pass":"credpass"}}`))
	})
	for _, tc := range []struct {
		name    string
		file    string
		secrets bool
	}{
		{"YAML", "rec.yaml", false},
		{"JSON", "rec.json", false},
		{"YAMLSecrets", "rec.yaml", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := filepath.Join(t.TempDir(), tc.file)
			_, hs, _ := newTestServer(t, "", "", func(o *Options) { o.Target = target; o.Record = rec; o.RecordSecrets = tc.secrets })
			do(t, "GET", hs.URL+"/second", "")
			do(t, "GET", hs.URL+"/first", "")
			do(t, "GET", hs.URL+"/second", "")
			do(t, "GET", hs.URL+"/form", "")
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			first := strings.Index(text, "GET /first")
			if s := strings.Index(text, "GET /second"); s < 0 || first < s {
				t.Fatalf("routes out of recording order:\n%s", text)
			}
			last := first
			for _, w := range []string{"zeta", "alpha", "mid"} {
				i := strings.Index(text[first:], w) + first
				if i < last {
					t.Fatalf("%q missing or out of the upstream's order in:\n%s", w, text)
				}
				last = i
			}
			for _, gone := range []string{"req-123", "X-Ratelimit", "X-RateLimit", "Set-Cookie"} {
				if strings.Contains(text, gone) {
					t.Errorf("the recording replays %q:\n%s", gone, text)
				}
			}
			if !strings.Contains(text, "X-Kept") {
				t.Errorf("an ordinary header was dropped:\n%s", text)
			}
			for _, secret := range []string{"abc", "eyJhbGciOiJIUzI1NiJ9", "hdrsecret", "pkvalue", "creduser", "credpass", "formsecret"} {
				if strings.Contains(text, secret) != tc.secrets {
					t.Errorf("%q kept: %v, want %v:\n%s", secret, !tc.secrets, tc.secrets, text)
				}
			}
			if !strings.Contains(text, "user=ada") {
				t.Errorf("an ordinary form field was redacted:\n%s", text)
			}
			// The recording replays.
			_, replay, _ := newTestServer(t, "replay"+filepath.Ext(tc.file), text, nil)
			if a := do(t, "GET", replay.URL+"/first", ""); a.status != 200 || !strings.HasPrefix(a.body, `{"zeta":1,"alpha":`) {
				t.Fatalf("replay: %d %s", a.status, a.body)
			}
		})
	}
}

// Ensure POST /__mock/reload re-reads the WireMock mappings when they are all there is.
func TestReload_WireMockOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(body string) {
		os.MkdirAll(filepath.Join(dir, "mappings"), 0o755)
		writeAtomically(t, filepath.Join(dir, "mappings", "a.json"), `{"request":{"urlPath":"/a"},"response":{"body":"`+body+`"}}`)
	}
	write("one")
	_, hs, _ := newTestServer(t, "", "", func(o *Options) { o.WireMock = dir })
	if a := do(t, "GET", hs.URL+"/a", ""); a.body != "one" {
		t.Fatalf("first: %q", a.body)
	}
	write("two")
	if a := do(t, "POST", hs.URL+"/__mock/reload", ""); a.status != 200 {
		t.Fatalf("reload: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", hs.URL+"/a", ""); a.body != "two" {
		t.Fatalf("after reload: %q", a.body)
	}
}

// logSignal is a slog handler that closes c at the first record whose message is msg.
type logSignal struct {
	msg  string
	c    chan struct{}
	once sync.Once
}

func (h *logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h *logSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.c) })
	}
	return nil
}
func (h *logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logSignal) WithGroup(string) slog.Handler      { return h }

// Ensure a proxied answer that carries its own CORS headers goes out with the server's policy
// only: one Access-Control-Allow-Origin (a browser refuses two), the listed origin echoed
// with credentials, and the target's other CORS headers gone; the same as a mocked answer.
func TestCORSReplacesTargetHeaders(t *testing.T) {
	t.Parallel()
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", "X-Upstream-Only")
		w.Header().Set("Access-Control-Allow-Credentials", "false")
		w.Header().Set("Vary", "Origin")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-1")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	for _, tc := range []struct {
		name, origin, wantOrigin, wantCreds string
		flags                               []string
	}{
		{"ListedOrigin", "http://localhost:5173", "http://localhost:5173", "true", []string{"http://localhost:5173"}},
		{"AnyOrigin", "http://other.test", "*", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, hs, _ := newTestServer(t, "m.yaml", yamlFile, func(o *Options) { o.Target = target; o.CORSOrigins = tc.flags })
			for _, path := range []string{"/cors", "/users/1"} {
				a := do(t, "GET", hs.URL+path, "", "Origin", tc.origin)
				if a.status != 200 {
					t.Fatalf("%s: status %d", path, a.status)
				}
				if got := a.header.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != tc.wantOrigin {
					t.Errorf("%s: Access-Control-Allow-Origin = %q, want [%q]", path, got, tc.wantOrigin)
				}
				if got := a.header.Values("Access-Control-Allow-Credentials"); strings.Join(got, ",") != tc.wantCreds {
					t.Errorf("%s: Access-Control-Allow-Credentials = %q, want %q", path, got, tc.wantCreds)
				}
				if got := a.header.Values("Access-Control-Expose-Headers"); len(got) != 1 || strings.Contains(got[0], "X-Upstream-Only") {
					t.Errorf("%s: Access-Control-Expose-Headers = %q, want the server's one value", path, got)
				}
				if got := a.header.Values("Vary"); strings.Count(strings.Join(got, ","), "Origin") != 1 {
					t.Errorf("%s: Vary = %q, want Origin once", path, got)
				}
			}
		})
	}
}

// Ensure Access-Control-Expose-Headers names the answer's headers for an origin allowed with
// credentials, where "*" is a header's name to a browser (Fetch), and stays "*" otherwise.
func TestCORSExposeHeaders(t *testing.T) {
	t.Parallel()
	_, target := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-1")
		w.Header().Set("Location", "/things/1")
		w.Header().Set("Set-Cookie", "s=1")
		w.WriteHeader(http.StatusCreated)
	})
	file := "mocks:\n  \"GET /users/:id\":\n    headers: {X-Total: \"3\", Cache-Control: no-store}\n    data: {id: 1}\n"
	_, hs, _ := newTestServer(t, "m.yaml", file, func(o *Options) { o.Target = target; o.CORSOrigins = []string{"http://localhost:5173"} })
	for _, tc := range []struct {
		name, path, origin, want string
	}{
		{"MockedWithCredentials", "/users/1", "http://localhost:5173", "X-Total"},
		{"ProxiedWithCredentials", "/things", "http://localhost:5173", "Date, Location, X-Request-Id"},
		{"MockedWithoutCredentials", "/users/1", "http://other.test", "*"},
		{"ProxiedWithoutCredentials", "/things", "http://other.test", "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, "GET", hs.URL+tc.path, "", "Origin", tc.origin)
			if got := a.header.Values("Access-Control-Expose-Headers"); len(got) != 1 || got[0] != tc.want {
				t.Errorf("Access-Control-Expose-Headers = %q, want [%q] (headers %v)", got, tc.want, a.header)
			}
		})
	}
}

// Ensure --delay delays WireMock answers as it does the mocks, and that a mapping's own
// fixedDelayMilliseconds replaces it (as a route's own delay does); PATCH /__mock/config
// reaches them too.
func TestWireMock_GlobalDelay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wm := filepath.Join(dir, "mappings")
	if err := os.MkdirAll(wm, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTemp(t, wm, "m.json", `{"mappings":[
		{"request":{"method":"GET","urlPath":"/plain"},"response":{"status":200,"body":"plain"}},
		{"request":{"method":"GET","urlPath":"/own"},"response":{"status":200,"body":"own","fixedDelayMilliseconds":10}}]}`)
	delay := mock.Fixed(300 * time.Millisecond)
	s, err := New(Options{Logger: quiet, WireMock: dir, Delay: &delay})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	timed := func(path string) (answer, time.Duration) {
		start := time.Now()
		a := do(t, "GET", hs.URL+path, "")
		return a, time.Since(start)
	}
	if a, d := timed("/plain"); a.body != "plain" || d < 300*time.Millisecond {
		t.Errorf("/plain answered %q after %v, want after --delay 300ms", a.body, d)
	}
	if a, d := timed("/own"); a.body != "own" || d >= 300*time.Millisecond {
		t.Errorf("/own answered %q after %v, want its own 10ms", a.body, d)
	}
	if a := do(t, "PATCH", hs.URL+"/__mock/config", `{"delay": 0}`, "Content-Type", "application/json"); a.status != 200 {
		t.Fatalf("PATCH /__mock/config: %d %s", a.status, a.body)
	}
	if a, d := timed("/plain"); a.body != "plain" || d >= 300*time.Millisecond {
		t.Errorf("/plain answered %q after %v, want no delay after PATCH", a.body, d)
	}
}

// Ensure --watch takes a mock file truncated to empty (as editors leave it while saving) for
// a passing state: the previous mocks keep answering, and the write that follows reloads.
func TestHotReload_EmptyFileKeepsMocks(t *testing.T) {
	t.Parallel()
	reloads := make(chan error, 10)
	s, hs, path := newTestServer(t, "m.yaml", "mocks:\n  \"GET /v\": {data: {v: 1}}\n", func(o *Options) {
		o.OnReload = func(err error) { reloads <- err }
	})
	if err := s.Watch(t.Context()); err != nil {
		t.Fatal(err)
	}
	wait := func() error {
		t.Helper()
		select {
		case err := <-reloads:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("no reload after the edit")
			return nil
		}
	}
	for _, empty := range []string{"", "\n  \n"} {
		if err := os.WriteFile(path, []byte(empty), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := wait(); !errors.Is(err, ErrEmptyFile) {
			t.Fatalf("empty file %q: reload err=%v, want ErrEmptyFile", empty, err)
		}
		if a := do(t, "GET", hs.URL+"/v", ""); a.status != 200 || a.body != `{"v":1}` {
			t.Fatalf("while the file is empty: %d %s, want the previous mocks", a.status, a.body)
		}
	}
	if err := os.WriteFile(path, []byte("mocks:\n  \"GET /v\": {data: {v: 2}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("write after the truncation: %v", err)
	}
	if a := do(t, "GET", hs.URL+"/v", ""); a.body != `{"v":2}` {
		t.Fatalf("after the write: %s", a.body)
	}
}

// Ensure --watch reloads WireMock mappings (named by --wiremock or by the file's wiremock
// key) when a mapping or a body file under __files changes, as it reloads the file; and that
// a mapping file left unparseable (an editor half-way through saving) keeps the previous
// mappings, with why.
func TestHotReload_WireMock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		byFlag bool // --wiremock DIR; else the file's wiremock key
	}{
		{"Flag", true},
		{"FileKey", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			wm := filepath.Join(dir, "wm")
			for _, d := range []string{"mappings", "__files"} {
				if err := os.MkdirAll(filepath.Join(wm, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			mapping := filepath.Join(wm, "mappings", "a.json")
			body := filepath.Join(wm, "__files", "b.txt")
			writeAtomically(t, mapping, `{"request":{"urlPath":"/a"},"response":{"body":"one"}}`)
			writeAtomically(t, body, "file one")
			if err := os.WriteFile(filepath.Join(wm, "mappings", "b.json"), []byte(`{"request":{"urlPath":"/b"},"response":{"bodyFileName":"b.txt"}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			reloads := make(chan error, 10)
			opts := Options{Logger: quiet, OnReload: func(err error) { reloads <- err }}
			if tc.byFlag {
				opts.WireMock = wm
			} else {
				opts.File = filepath.Join(dir, "m.yaml")
				if err := os.WriteFile(opts.File, []byte("wiremock: wm\nmocks:\n  \"GET /v\": {data: {v: 1}}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := New(opts)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			hs := httptest.NewServer(s)
			t.Cleanup(func() { hs.Close(); s.Close() })
			if err := s.Watch(t.Context()); err != nil {
				t.Fatalf("Watch: %v", err)
			}
			wait := func() error {
				t.Helper()
				select {
				case err := <-reloads:
					return err
				case <-time.After(10 * time.Second):
					t.Fatal("no reload after the edit")
					return nil
				}
			}
			for _, step := range []struct {
				name       string
				change     func()
				wantErr    bool
				path       string
				wantBody   string
				wantStatus int
			}{
				{"MappingEdited", func() { writeAtomically(t, mapping, `{"request":{"urlPath":"/a"},"response":{"body":"two"}}`) }, false, "/a", "two", 200},
				{"BodyFileEdited", func() { writeAtomically(t, body, "file two") }, false, "/b", "file two", 200},
				{"MappingAdded", func() {
					writeAtomically(t, filepath.Join(wm, "mappings", "c.json"), `{"request":{"urlPath":"/c"},"response":{"body":"three"}}`)
				}, false, "/c", "three", 200},
				{"MappingHalfSaved", func() {
					if err := os.WriteFile(mapping, []byte(`{"request":{"urlPath":"/a"},"resp`), 0o644); err != nil {
						t.Fatal(err)
					}
				}, true, "/a", "two", 200},
				{"MappingRemoved", func() {
					if err := os.Remove(filepath.Join(wm, "mappings", "c.json")); err != nil {
						t.Fatal(err)
					}
				}, true, "/c", "three", 200}, // a.json is still half-saved: nothing changes
				{"MappingSavedAgain", func() { writeAtomically(t, mapping, `{"request":{"urlPath":"/a"},"response":{"body":"four"}}`) }, false, "/a", "four", 200},
			} {
				step.change()
				err := wait()
				var we *WireMockLoadError
				if step.wantErr && !errors.As(err, &we) {
					t.Fatalf("%s: reload err=%v, want a *WireMockLoadError", step.name, err)
				}
				if !step.wantErr && err != nil {
					t.Fatalf("%s: reload err=%v", step.name, err)
				}
				if a := do(t, "GET", hs.URL+step.path, ""); a.status != step.wantStatus || a.body != step.wantBody {
					t.Fatalf("%s: GET %s = %d %q, want %d %q", step.name, step.path, a.status, a.body, step.wantStatus, step.wantBody)
				}
			}
			if a := do(t, "GET", hs.URL+"/c", ""); a.status != 404 {
				t.Fatalf("removed mapping still served after the good save: %d %q", a.status, a.body)
			}
		})
	}
}
