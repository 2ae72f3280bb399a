package mockserver

import (
	"fmt"
	"strings"
	"testing"
)

// Ensure each admin endpoint does what docs/mock-file.md says.
func TestAdmin(t *testing.T) {
	t.Parallel()
	_, hs, _ := newTestServer(t, "m.yaml", yamlFile, nil)
	base := hs.URL + "/__mock/"

	t.Run("Stats", func(t *testing.T) {
		do(t, "GET", hs.URL+"/users/1", "")
		do(t, "GET", hs.URL+"/nope", "")
		st := decode[map[string]any](t, do(t, "GET", base+"stats", ""))
		if st["totalRequests"].(float64) < 2 || st["unmatchedRequests"].(float64) < 1 {
			t.Fatalf("stats=%v", st)
		}
		if st["requestsByRoute"].(map[string]any)["GET /users/:id"].(float64) < 1 {
			t.Fatalf("requestsByRoute=%v", st["requestsByRoute"])
		}
	})
	t.Run("Reset", func(t *testing.T) {
		a := do(t, "POST", base+"reset", "")
		if a.status != 200 {
			t.Fatalf("reset status=%d", a.status)
		}
		st := decode[map[string]any](t, do(t, "GET", base+"stats", ""))
		if st["totalRequests"].(float64) != 0 {
			t.Fatalf("after reset stats=%v", st)
		}
	})
	t.Run("ListMocks", func(t *testing.T) {
		l := decode[struct {
			Count int        `json:"count"`
			Mocks []mockInfo `json:"mocks"`
		}](t, do(t, "GET", base+"mocks", ""))
		if l.Count != 1 || l.Mocks[0].Route != "GET /users/:id" || l.Mocks[0].Origin != "file" || l.Mocks[0].Line == 0 || l.Mocks[0].Spec == nil {
			t.Fatalf("mocks=%+v", l)
		}
	})
	t.Run("AddMocks", func(t *testing.T) {
		a := do(t, "POST", base+"mocks", `{"GET /added/:x": {"status": 202, "data": {"x": "{{.Params.x}}"}}}`)
		if a.status != 201 || !strings.Contains(a.body, "GET /added/:x") {
			t.Fatalf("add: %d %s", a.status, a.body)
		}
		if a := do(t, "GET", hs.URL+"/added/9", ""); a.status != 202 || a.body != `{"x":"9"}` {
			t.Fatalf("added route answered %d %s", a.status, a.body)
		}
	})
	t.Run("AddMocksInvalid", func(t *testing.T) {
		for _, body := range []string{`{"GET /bad": {"status": 9000}}`, `{"NOPE": {}}`, `[1]`, `{}`, `{"GET /x": {"data": "{{"}}`} {
			a := do(t, "POST", base+"mocks", body)
			if a.status != 400 {
				t.Fatalf("add %s: status=%d %s", body, a.status, a.body)
			}
		}
		if a := do(t, "POST", base+"mocks", `{"GET /bad": {"status": 9000}}`); !strings.Contains(a.body, "INVALID_STATUS") {
			t.Fatalf("invalid add body=%s lacks the problem", a.body)
		}
	})
	t.Run("DeleteMocks", func(t *testing.T) {
		a := do(t, "DELETE", base+"mocks", `{"routes": ["GET /added/:x", "GET /never"]}`)
		if a.status != 200 || !strings.Contains(a.body, `"removed":["GET /added/:x"]`) || !strings.Contains(a.body, `"unknown":["GET /never"]`) {
			t.Fatalf("delete: %d %s", a.status, a.body)
		}
		if a := do(t, "GET", hs.URL+"/added/9", ""); a.status != 404 {
			t.Fatalf("deleted route answered %d", a.status)
		}
		if a := do(t, "DELETE", base+"mocks?route=GET%20/never", ""); a.status != 404 {
			t.Fatalf("delete unknown: %d", a.status)
		}
		if a := do(t, "DELETE", base+"mocks", ""); a.status != 400 {
			t.Fatalf("delete nothing: %d", a.status)
		}
	})
	t.Run("GetConfig", func(t *testing.T) {
		c := decode[configView](t, do(t, "GET", base+"config", ""))
		if !c.Enabled || !c.CORS || c.Routes != 1 || c.File == "" {
			t.Fatalf("config=%+v", c)
		}
	})
	t.Run("PatchConfig", func(t *testing.T) {
		a := do(t, "PATCH", base+"config", `{"delay": "10-20", "fallbackToNetwork": false}`)
		c := decode[configView](t, a)
		if a.status != 200 || c.Delay.Min != 10 || c.Delay.Max != 20 || c.FallbackToNetwork {
			t.Fatalf("patched: %d %+v", a.status, c)
		}
		a = do(t, "PATCH", base+"config", `{"enabled": false}`)
		if c := decode[configView](t, a); c.Enabled || c.Delay.Min != 10 {
			t.Fatalf("patched enabled: %+v", c)
		}
		// Disabled: nothing is intercepted; without a target that is a 404.
		if a := do(t, "GET", hs.URL+"/users/1", ""); a.status != 404 {
			t.Fatalf("disabled mock answered %d", a.status)
		}
		do(t, "PATCH", base+"config", `{"enabled": true, "delay": 0}`)
		if a := do(t, "GET", hs.URL+"/users/1", ""); a.status != 200 {
			t.Fatalf("re-enabled mock answered %d", a.status)
		}
		for _, body := range []string{`{"delay": "soon"}`, `{"enabled": "yes"}`, `{"port": 1}`, `nope`} {
			if a := do(t, "PATCH", base+"config", body); a.status != 400 {
				t.Fatalf("patch %s: %d", body, a.status)
			}
		}
	})
	t.Run("Reload", func(t *testing.T) {
		if a := do(t, "POST", base+"reload", ""); a.status != 200 {
			t.Fatalf("reload: %d %s", a.status, a.body)
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		if a := do(t, "GET", base+"nothing", ""); a.status != 404 || !strings.Contains(a.body, "statusCode") {
			t.Fatalf("unknown admin path: %d %s", a.status, a.body)
		}
	})
}

// Ensure runtime mocks survive a reload of the file and file mocks removed at runtime come back.
func TestAdmin_RuntimeMocksSurviveReload(t *testing.T) {
	t.Parallel()
	s, hs, _ := newTestServer(t, "m.yaml", yamlFile, nil)
	do(t, "POST", hs.URL+"/__mock/mocks", `{"GET /rt": {"data": {"rt": true}}}`)
	do(t, "DELETE", hs.URL+"/__mock/mocks?route=GET%20/users/:id", "")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if a := do(t, "GET", hs.URL+"/rt", ""); a.status != 200 {
		t.Fatalf("runtime mock after reload: %d", a.status)
	}
	if a := do(t, "GET", hs.URL+"/users/1", ""); a.status != 200 {
		t.Fatalf("file mock removed at runtime, after reload: %d, want 200", a.status)
	}
}

// Ensure an admin change never leaves a cached answer behind: with the cache on, a route
// replaced through POST /__mock/mocks answers its new body at once, and one removed through
// DELETE stops answering.
func TestAdmin_ChangeDropsCache(t *testing.T) {
	t.Parallel()
	file := "config:\n  persistence: {enabled: true, storage: indexeddb, dir: cache}\nmocks:\n  \"GET /v\": {data: {version: 1}}\n"
	_, hs, _ := newTestServer(t, "m.yaml", file, nil)
	get := func() string { return do(t, "GET", hs.URL+"/v", "").body }
	if a, b := get(), get(); a != `{"version":1}` || b != a {
		t.Fatalf("before: %s, %s", a, b)
	}
	if a := do(t, "POST", hs.URL+"/__mock/mocks", `{"GET /v": {"data": {"version": 2}}}`); a.status != 201 {
		t.Fatalf("add: %d %s", a.status, a.body)
	}
	if got := get(); got != `{"version":2}` {
		t.Fatalf("after the admin change: %s, want version 2", got)
	}
	if a := do(t, "DELETE", hs.URL+"/__mock/mocks?route=GET%20/v", ""); a.status != 200 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	if a := do(t, "GET", hs.URL+"/v", ""); a.status != 404 {
		t.Fatalf("after delete: %d %s, want 404", a.status, a.body)
	}
}

// Ensure the admin API refuses what a web page could send (cross-site, another origin, a
// body that is not JSON), sends no CORS headers, and checks the bearer token when one is set.
func TestAdmin_Guard(t *testing.T) {
	t.Parallel()
	_, open, _ := newTestServer(t, "m.yaml", yamlFile, nil)
	_, locked, _ := newTestServer(t, "m.yaml", yamlFile, func(o *Options) { o.AdminToken = "s3cret" })
	add := `{"GET /added": {"data": {"ok": true}}}`
	for _, tc := range []struct {
		name    string
		url     string
		ctype   string
		headers []string
		want    int
	}{
		{"SameOriginJSON", open.URL, "application/json", nil, 201},
		{"CrossSite", open.URL, "application/json", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"OtherOrigin", open.URL, "application/json", []string{"Origin", "https://evil.example"}, 403},
		{"OwnOrigin", open.URL, "application/json", []string{"Origin", open.URL}, 201},
		{"TextPlain", open.URL, "text/plain", nil, 415},
		{"Form", open.URL, "application/x-www-form-urlencoded", nil, 415},
		{"NoToken", locked.URL, "application/json", nil, 401},
		{"WrongToken", locked.URL, "application/json", []string{"Authorization", "Bearer nope"}, 401},
		{"Token", locked.URL, "application/json", []string{"Authorization", "Bearer s3cret"}, 201},
		// DNS rebinding: a page at evil.example:PORT whose name now points at 127.0.0.1 sends
		// its own origin, which matches the Host it sends. Without a token, only loopback
		// names are answered; with one, the page cannot know it.
		{"Rebound", open.URL, "application/json", []string{"Host", "evil.example:" + port(open.URL), "Origin", "http://evil.example:" + port(open.URL)}, 403},
		{"LocalhostName", open.URL, "application/json", []string{"Host", "localhost:" + port(open.URL)}, 201},
		{"ReboundWithToken", locked.URL, "application/json", []string{"Host", "evil.example:" + port(locked.URL), "Authorization", "Bearer s3cret"}, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, "POST", tc.url+"/__mock/mocks", add, append([]string{"Content-Type", tc.ctype}, tc.headers...)...)
			if a.status != tc.want {
				t.Fatalf("status=%d want %d: %s", a.status, tc.want, a.body)
			}
			if a.header.Get("Access-Control-Allow-Origin") != "" {
				t.Fatalf("the admin API sent CORS headers: %v", a.header)
			}
		})
	}
	a := do(t, "OPTIONS", open.URL+"/__mock/mocks", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if a.header.Get("Access-Control-Allow-Origin") != "" || a.status == 204 {
		t.Fatalf("admin preflight answered %d %v", a.status, a.header)
	}
}

// port is the port of a test server's URL.
func port(rawURL string) string { return rawURL[strings.LastIndex(rawURL, ":")+1:] }

// Ensure config.middleware switches on the package's middleware in list order, and
// GET /__mock/config shows the whole effective configuration, middleware and patterns included.
func TestConfig_MiddlewareAndView(t *testing.T) {
	t.Parallel()
	const file = `config:
  ignorePatterns: ["/health*"]
  middleware:
    - auth: {tokens: [dev-token]}
    - rateLimit: {limit: 2, window: 60s}
mocks:
  "GET /users/:id": {data: {id: "{{.Params.id}}"}}
`
	_, hs, _ := newTestServer(t, "m.yaml", file, nil)
	for i, tc := range []struct {
		token string
		want  int
	}{
		{"", 401}, {"wrong", 401}, {"dev-token", 200}, {"dev-token", 200}, {"dev-token", 429},
	} {
		h := []string{}
		if tc.token != "" {
			h = []string{"Authorization", "Bearer " + tc.token}
		}
		if a := do(t, "GET", hs.URL+"/users/1", "", h...); a.status != tc.want {
			t.Fatalf("request %d (token %q): %d %s, want %d", i, tc.token, a.status, a.body, tc.want)
		}
	}
	v := decode[map[string]any](t, do(t, "GET", hs.URL+"/__mock/config", ""))
	mw, _ := v["middleware"].([]any)
	if len(mw) != 2 || !strings.Contains(fmt.Sprint(mw[0]), "dev-token") || !strings.Contains(fmt.Sprint(mw[1]), "rateLimit") {
		t.Errorf("middleware %v", v["middleware"])
	}
	if fmt.Sprint(v["ignorePatterns"]) != "[/health*]" {
		t.Errorf("ignorePatterns %v", v["ignorePatterns"])
	}
	for _, k := range []string{"persistence", "cache", "logging", "defaultHeaders", "routeMatching", "adminTokenSet", "corsOrigins"} {
		if _, ok := v[k]; !ok {
			t.Errorf("config lacks %q: %v", k, v)
		}
	}
}
