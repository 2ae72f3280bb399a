package cmd

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Ensure mock serve's flags parse into the options, and bad combinations are usage errors.
func TestNewMockServeCmd_Flags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		want     mockServeOptions
		wantExit int // of serverOptions: 0 ok, 2 usage
	}{
		{"Defaults", nil, mockServeOptions{Host: "127.0.0.1", Port: 3001}, 0},
		{"All", []string{"--file", "m.yaml", "--host", "0.0.0.0", "--port", "9", "--target", "http://x:1", "--delay", "100-400", "--watch", "--record", "r.yaml", "--no-cors", "--log-requests", "--admin-token", "t", "--cors-origin", "http://a:1", "--cors-origin", "https://b"},
			mockServeOptions{File: "m.yaml", Host: "0.0.0.0", Port: 9, Target: "http://x:1", Delay: "100-400", Watch: true, Record: "r.yaml", NoCORS: true, LogRequests: true,
				AdminToken: "t", CORSOrigins: []string{"http://a:1", "https://b"}}, 0},
		{"PublicHostNeedsToken", []string{"--host", "0.0.0.0"}, mockServeOptions{Host: "0.0.0.0", Port: 3001}, exitUsage},
		{"LoopbackV6", []string{"--host", "::1"}, mockServeOptions{Host: "::1", Port: 3001}, 0},
		{"BadCORSOrigin", []string{"--cors-origin", "localhost:5173"}, mockServeOptions{Host: "127.0.0.1", Port: 3001, CORSOrigins: []string{"localhost:5173"}}, exitUsage},
		{"BadDelay", []string{"--delay", "soon"}, mockServeOptions{Host: "127.0.0.1", Port: 3001, Delay: "soon"}, exitUsage},
		{"BadTarget", []string{"--target", "localhost:3000"}, mockServeOptions{Host: "127.0.0.1", Port: 3001, Target: "localhost:3000"}, exitUsage},
		{"RecordWithoutTarget", []string{"--record", "r.yaml"}, mockServeOptions{Host: "127.0.0.1", Port: 3001, Record: "r.yaml"}, exitUsage},
		{"WatchWithoutFile", []string{"--watch"}, mockServeOptions{Host: "127.0.0.1", Port: 3001, Watch: true}, exitUsage},
		{"WatchWireMock", []string{"--watch", "--wiremock", "wm"}, mockServeOptions{Host: "127.0.0.1", Port: 3001, Watch: true, WireMock: "wm"}, 0},
		{"BadPort", []string{"--port", "70000"}, mockServeOptions{Host: "127.0.0.1", Port: 70000}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *mockServeOptions
			c := newMockServeCmd(&factory{}, func(_ context.Context, o *mockServeOptions) error { got = o; return nil })
			c.SetArgs(tc.args)
			c.SetOut(io.Discard)
			if err := c.Execute(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("opts=%+v, want %+v", *got, tc.want)
			}
			_, err := got.serverOptions()
			if exit := map[bool]int{true: exitUsage, false: 0}[err != nil]; exit != tc.wantExit {
				t.Fatalf("serverOptions err=%v, want exit %d", err, tc.wantExit)
			}
		})
	}
}

// Ensure mock validate exits 0 on a valid file, 2 with every problem and its line otherwise,
// and never needs configuration or a database.
func TestMockValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("mocks:\n  \"GET /a\": {data: {x: 1}}\n"), 0o644)
	os.WriteFile(bad, []byte("mocks:\n  \"GET /a\": {status: 900}\n  \"GET /b\":\n    dta: 1\n"), 0o644)
	wmGood, wmBad := filepath.Join(dir, "wm-good"), filepath.Join(dir, "wm-bad")
	for d, mapping := range map[string]string{
		wmGood: `{"request":{"urlPath":"/a"},"response":{"body":"a"}}`,
		wmBad:  `{"name":"tpl","request":{"urlPath":"/t"},"response":{"body":"{{x}}","transformers":["response-template"]}}`,
	} {
		os.MkdirAll(filepath.Join(d, "mappings"), 0o755)
		os.WriteFile(filepath.Join(d, "mappings", "m.json"), []byte(mapping), 0o644)
	}
	env := func(k string) string {
		if k == "APP_ADDR" {
			return "not an address at all::::" // would fail config loading if the mock group loaded it
		}
		return ""
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  []string
	}{
		{"Valid", []string{"mock", "validate", good}, 0, []string{"valid, 1 route(s)"}, nil},
		{"Invalid", []string{"mock", "validate", bad}, exitUsage, nil, []string{"bad.yaml:2: GET /a: status 900", "bad.yaml:4: GET /b: unknown field \"dta\"", "2 problem(s)"}},
		{"InvalidJSON", []string{"mock", "validate", "--json", bad}, exitUsage, []string{`"isValid": false`, `"line": 4`}, nil},
		{"Missing", []string{"mock", "validate", filepath.Join(dir, "none.yaml")}, exitFailure, nil, []string{"no such file"}},
		{"NoArg", []string{"mock", "validate"}, exitUsage, nil, nil},
		{"WireMockValid", []string{"mock", "validate", "--wiremock", wmGood}, 0, []string{"1 WireMock mapping(s) served, 0 problem(s)"}, nil},
		{"WireMockUnsupported", []string{"mock", "validate", "--wiremock", wmBad}, exitUsage, []string{"0 WireMock mapping(s) served, 1 problem(s)"},
			[]string{`mappings/m.json:1: mapping "tpl": response.transformers: not supported`}},
		{"WireMockJSON", []string{"mock", "validate", "--json", "--wiremock", wmBad}, exitUsage, []string{`"field": "response.transformers"`, `"line": 1`}, nil},
		{"ServeInvalidFile", []string{"mock", "serve", "--file", bad, "--port", "0"}, exitUsage, nil, []string{"bad.yaml:2:"}},
		{"ServeRejectsAddr", []string{"mock", "serve", "--addr", ":9"}, exitUsage, nil, []string{"--addr does not apply"}},
		{"ServeRejectsDataDir", []string{"mock", "serve", "--data-dir", dir}, exitUsage, nil, []string{"--data-dir does not apply"}},
		{"ServeRejectsConfig", []string{"mock", "serve", "--config", good}, exitUsage, nil, []string{"--config does not apply"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runApp(t, env, tc.args...)
			r.expect(t, tc.wantCode, tc.wantOut, tc.wantErr)
		})
	}
}

// Ensure mock serve starts with no configuration or database, prints the banner, serves the
// built-in mock, writes the API's access log only with --log-requests, and stops cleanly when
// its context ends.
func TestMockServe_Builtin(t *testing.T) {
	// Not parallel: ferretdb.New writes a package global, so two embedded stores must not
	// start at once in one process.
	for _, tt := range []struct {
		name      string
		args      []string
		accessLog bool
	}{
		{"Quiet", nil, false},
		{"LogRequests", []string{"--log-requests"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr, logs, stop := startMockServe(t, tt.args...)
			resp, err := http.Get("http://" + addr + "/api/health")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("health: %v %v", resp, err)
			}
			resp.Body.Close()
			for _, w := range []string{"http://" + addr, "demo data loaded", "/__mock/mocks"} {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("banner lacks %q:\n%s", w, logs.String())
				}
			}
			stop()
			if got := strings.Contains(logs.String(), `"path":"/api/health"`); got != tt.accessLog {
				t.Errorf("access line for /api/health logged: %v, want %v:\n%s", got, tt.accessLog, logs.String())
			}
		})
	}
}

// Ensure the banner names where the routes come from: the mock file (with its warnings), the
// OpenAPI description, or both.
func TestMockServe_BannerNamesSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mocks := write("mocks.yaml", "mocks:\n  GET /a:\n    data: {ok: true}\n")
	warned := write("warned.yaml", "mocks:\n  GET /users/:id:\n    data: {}\n  GET /users/:name:\n    data: {}\n")
	spec := write("spec.yaml", "openapi: 3.1.0\ninfo: {title: t, version: \"1\"}\npaths:\n  /b:\n    get:\n      responses:\n        \"200\": {description: ok}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"File", []string{"--file", mocks}, "1 route from " + mocks},
		{"FileWarnings", []string{"--file", warned}, "2 routes from " + warned + " (1 warning(s), see the log)"},
		{"OpenAPI", []string{"--openapi", spec}, "2 routes from OpenAPI (" + spec + ")"},
		{"FileAndOpenAPI", []string{"--file", mocks, "--openapi", spec}, "1 route from " + mocks + "; 2 routes from OpenAPI (" + spec + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, logs, stop := startMockServe(t, tc.args...)
			stop()
			// The card wraps long lines; compare with the border and line breaks taken out.
			flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "\n", " ").Replace(logs.String())), " ")
			if !strings.Contains(flat, "Mocks: "+tc.want) {
				t.Errorf("banner lacks %q:\n%s", "Mocks: "+tc.want, logs.String())
			}
		})
	}
}

// startMockServe runs `app mock serve --port 0 ARGS…` until it listens and returns its address,
// its output and a stop that waits for a clean exit.
func startMockServe(t *testing.T, args ...string) (addr string, logs *lockedBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	logs = &lockedBuffer{}
	addrc := make(chan string, 1)
	done := make(chan int, 1)
	f := &factory{in: strings.NewReader(""), out: logs, errOut: logs, getenv: func(string) string { return "" },
		onListen: func(a string) { addrc <- a }}
	go func() { done <- run(ctx, f, append([]string{"mock", "serve", "--port", "0"}, args...)) }()
	select {
	case addr = <-addrc:
	case code := <-done:
		t.Fatalf("mock serve exited with %d: %s", code, logs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("mock serve did not listen")
	}
	return addr, logs, func() {
		t.Helper()
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("exit=%d: %s", code, logs.String())
			}
		case <-time.After(15 * time.Second):
			t.Fatal("mock serve did not stop")
		}
	}
}

// Ensure dev seed loads the demo set into --data-dir once (a second run creates nothing) and
// refuses an external database.
func TestDevSeed(t *testing.T) {
	// Not parallel: ferretdb.New writes a package global, so two embedded stores must not
	// start at once in one process.
	dir := t.TempDir()
	first := runApp(t, testEnv(), "dev", "seed", "--json", "--data-dir", dir)
	second := runApp(t, testEnv(), "dev", "seed", "--json", "--data-dir", dir)
	if first.code != 0 || !strings.Contains(first.out, `"usersCreated": 2`) || !strings.Contains(first.out, `"spaceTemplates": 7`) {
		t.Fatalf("first: %d %s %s", first.code, first.out, first.errOut)
	}
	if second.code != 0 || !strings.Contains(second.out, `"usersCreated": 0`) || !strings.Contains(second.out, `"coreTemplatesExisting": 2`) {
		t.Fatalf("second: %d %s %s", second.code, second.out, second.errOut)
	}
	if r := runApp(t, testEnv(), "dev", "seed", "--data-dir", dir, "--mongodb-uri", "mongodb://127.0.0.1:1"); r.code != exitUsage {
		t.Fatalf("external database: exit %d, want %d", r.code, exitUsage)
	}
}
