package mockserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/mock/openapi"
)

const petsSpec = `openapi: 3.0.3
info: {title: pets, version: "1"}
paths:
  /pets/{id}:
    get:
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: a pet
          content:
            application/json:
              example: {source: openapi, v: 1}
  /owners:
    get:
      responses:
        "200":
          description: owners
          content:
            application/json:
              example: [{name: Ada}]
`

// Ensure the description serves beside a mock file (whose routes win, whatever their
// parameter names), is listed by the admin API and counted by the stats.
func TestOpenAPI_BesideTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := writeTemp(t, dir, "pets.yaml", petsSpec)
	_, hs, _ := newTestServer(t, "m.yaml", "mocks:\n  \"GET /pets/:petId\": {data: {source: file}}\n", func(o *Options) {
		o.OpenAPI = []string{spec}
	})
	tests := []struct {
		method, path string
		wantStatus   int
		wantBody     string
	}{
		{"GET", "/pets/7", 200, `{"source":"file"}`},
		{"GET", "/owners", 200, `[{"name":"Ada"}]`},
		{"GET", "/owners/1", 404, ""},
		{"POST", "/owners", 405, ""},
	}
	for _, tt := range tests {
		a := do(t, tt.method, hs.URL+tt.path, "")
		if a.status != tt.wantStatus || (tt.wantBody != "" && a.body != tt.wantBody) {
			t.Errorf("%s %s: %d %s, want %d %s", tt.method, tt.path, a.status, a.body, tt.wantStatus, tt.wantBody)
		}
		if tt.wantBody == "" && a.header.Get("Content-Type") != openapi.ProblemType {
			t.Errorf("%s %s: Content-Type %q, want %s", tt.method, tt.path, a.header.Get("Content-Type"), openapi.ProblemType)
		}
	}
	list := decode[struct {
		Mocks []mockInfo `json:"mocks"`
	}](t, do(t, "GET", hs.URL+"/__mock/mocks", ""))
	origins := map[string]string{}
	calls := map[string]int{}
	for _, m := range list.Mocks {
		origins[m.Route], calls[m.Route] = m.Origin, m.Calls
	}
	if origins["GET /owners"] != "openapi" || origins["GET /pets/:petId"] != "file" {
		t.Errorf("origins %v: want GET /owners from openapi, GET /pets/:petId from the file", origins)
	}
	if _, shadowed := origins["GET /pets/:id"]; shadowed {
		t.Errorf("the description's GET /pets/:id is listed though the file's route answers it")
	}
	if calls["GET /owners"] != 1 {
		t.Errorf("GET /owners called %d times, want 1", calls["GET /owners"])
	}
	stats := decode[struct {
		TotalRequests int `json:"totalRequests"`
	}](t, do(t, "GET", hs.URL+"/__mock/stats", ""))
	if stats.TotalRequests < 3 {
		t.Errorf("stats count %d requests, want at least the 3 the description and file answered", stats.TotalRequests)
	}
}

// Ensure WireMock mappings answer before a description, and a proxy target receives what
// neither answers (in place of the 404 problem).
func TestOpenAPI_BesideWireMockAndTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := writeTemp(t, dir, "pets.yaml", petsSpec)
	wm := filepath.Join(dir, "wm", "mappings")
	if err := os.MkdirAll(wm, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTemp(t, wm, "m.json", `{"request":{"method":"GET","urlPath":"/pets/1"},"response":{"status":200,"jsonBody":{"from":"wiremock"}}}`)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("upstream " + r.URL.Path))
	}))
	t.Cleanup(upstream.Close)
	target, _ := url.Parse(upstream.URL)
	_, hs, _ := newTestServer(t, "", "", func(o *Options) {
		o.OpenAPI, o.WireMock, o.Target = []string{spec}, filepath.Join(dir, "wm"), target
	})
	for path, want := range map[string]string{
		"/pets/1":    `{"from":"wiremock"}`,
		"/pets/2":    `{"source":"openapi","v":1}`,
		"/elsewhere": "upstream /elsewhere",
	} {
		if a := do(t, "GET", hs.URL+path, ""); a.status != 200 || a.body != want {
			t.Errorf("GET %s: %d %s, want %s", path, a.status, a.body, want)
		}
	}
}

// Ensure a description's answers are not cached when the file turns the cache on: each
// request's Prefer header still picks its answer.
func TestOpenAPI_NotCached(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := writeTemp(t, dir, "pets.yaml", replace(petsSpec, "example: {source: openapi, v: 1}", "examples: {a: {value: {v: a}}, b: {value: {v: b}}}"))
	_, hs, _ := newTestServer(t, "m.yaml", "config:\n  persistence: {enabled: true, storage: indexeddb, dir: cache, maxCacheSize: 100}\nmocks: {}\n", func(o *Options) {
		o.OpenAPI = []string{spec}
	})
	for _, name := range []string{"a", "b", "a"} {
		if a := do(t, "GET", hs.URL+"/pets/1", "", "Prefer", "example="+name); a.body != `{"v":"`+name+`"}` {
			t.Fatalf("Prefer example=%s: %d %s", name, a.status, a.body)
		}
	}
}

// Ensure an edited description is served again, and a broken edit keeps the previous one.
func TestOpenAPI_Reload(t *testing.T) {
	t.Parallel()
	reloads := make(chan error, 10)
	dir := t.TempDir()
	path := writeTemp(t, dir, "pets.yaml", petsSpec)
	s, hs, _ := newTestServer(t, "", "", func(o *Options) {
		o.OpenAPI = []string{path}
		o.OnReload = func(err error) { reloads <- err }
	})
	if err := s.Watch(t.Context()); err != nil {
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
	writeAtomically(t, path, replace(petsSpec, "v: 1", "v: 2"))
	if err := wait(); err != nil {
		t.Fatalf("valid edit: %v", err)
	}
	if a := do(t, "GET", hs.URL+"/pets/1", ""); a.body != `{"source":"openapi","v":2}` {
		t.Fatalf("after the edit: %d %s", a.status, a.body)
	}
	if err := os.WriteFile(path, []byte(replace(petsSpec, "in: path", "in: nowhere")), 0o644); err != nil {
		t.Fatal(err)
	}
	var le *openapi.LoadError
	if err := wait(); !errors.As(err, &le) {
		t.Fatalf("broken edit: %v, want an *openapi.LoadError", err)
	}
	if a := do(t, "GET", hs.URL+"/pets/1", ""); a.body != `{"source":"openapi","v":2}` {
		t.Fatalf("after the broken edit: %d %s, want the previous answer", a.status, a.body)
	}
}

// Ensure an edit of a file the description refers to is served too.
func TestOpenAPI_ReloadReferencedFile(t *testing.T) {
	t.Parallel()
	reloads := make(chan error, 10)
	dir := t.TempDir()
	writeTemp(t, dir, "owner.yaml", "Owner: {type: object, properties: {city: {type: string, example: Oslo}}}\n")
	path := writeTemp(t, dir, "api.yaml", replace(petsSpec, "example: [{name: Ada}]", `schema: {$ref: "./owner.yaml#/Owner"}`))
	s, hs, _ := newTestServer(t, "", "", func(o *Options) {
		o.OpenAPI = []string{path}
		o.OnReload = func(err error) { reloads <- err }
	})
	if err := s.Watch(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "GET", hs.URL+"/owners", ""); a.body != `{"city":"Oslo"}` {
		t.Fatalf("before the edit: %d %s", a.status, a.body)
	}
	writeAtomically(t, filepath.Join(dir, "owner.yaml"), "Owner: {type: object, properties: {city: {type: string, example: Bergen}}}\n")
	select {
	case err := <-reloads:
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reload after editing the referenced file")
	}
	if a := do(t, "GET", hs.URL+"/owners", ""); a.body != `{"city":"Bergen"}` {
		t.Fatalf("after the edit: %d %s", a.status, a.body)
	}
}

// Ensure POST /__mock/reload answers the problems of a description that cannot be served,
// and keeps serving the previous one.
func TestOpenAPI_AdminReload(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, t.TempDir(), "pets.yaml", petsSpec)
	_, hs, _ := newTestServer(t, "", "", func(o *Options) { o.OpenAPI = []string{path} })
	if err := os.WriteFile(path, []byte(replace(petsSpec, "in: path", "in: nowhere")), 0o644); err != nil {
		t.Fatal(err)
	}
	a := do(t, "POST", hs.URL+"/__mock/reload", "")
	if a.status != 400 || !strings.Contains(a.body, "nowhere") || !strings.Contains(a.body, `"line":7`) {
		t.Errorf("reload of a broken description: %d %s, want 400 naming the parameter and its line", a.status, a.body)
	}
	if a := do(t, "GET", hs.URL+"/owners", ""); a.status != 200 {
		t.Errorf("after the failed reload GET /owners: %d %s", a.status, a.body)
	}
}

// Ensure a description that cannot be served stops the server from starting, with its problems.
func TestOpenAPI_InvalidRefused(t *testing.T) {
	t.Parallel()
	path := writeTemp(t, t.TempDir(), "bad.yaml", replace(petsSpec, "in: path", "in: nowhere"))
	_, err := New(Options{Logger: quiet, OpenAPI: []string{path}})
	var le *openapi.LoadError
	if !errors.As(err, &le) || len(le.Problems) == 0 || filepath.Base(le.File) != "bad.yaml" {
		t.Fatalf("New: %v, want an *openapi.LoadError for bad.yaml", err)
	}
}

func replace(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
