package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// newTest returns an interceptor with fallback off and the given mocks.
func newTest(t *testing.T, defs Definitions, opts ...Option) *Interceptor {
	t.Helper()
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	ic := New(cfg, append([]Option{WithMocks(defs)}, opts...)...)
	t.Cleanup(func() { ic.Close() })
	return ic
}

func getJSON(t *testing.T, c *http.Client, method, u string, body io.Reader) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("body %q: %v", b, err)
		}
	}
	return resp, v
}

// Ensure a matched request through a real http.Client gets the handler's
// answer with params, query, headers and the parsed JSON body.
func TestRoundTrip_Match(t *testing.T) {
	t.Parallel()
	var got *Request
	ic := newTest(t, Definitions{
		"POST /users/:id": func(ctx context.Context, r *Request) (*Response, error) {
			got = r
			return &Response{Status: StatusCreated, Data: map[string]any{"id": r.Param("id")}, Headers: map[string]string{"X-Mock": "yes"}}, nil
		},
	})
	req, _ := http.NewRequest("POST", "http://api.test/users/42?expand=1", strings.NewReader(`{"name":"Ada"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := ic.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if got, want := resp.StatusCode, 201; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	if got, want := string(b), `{"id":"42"}`; got != want {
		t.Fatalf("body=%s, want %s", got, want)
	}
	if got, want := resp.Header.Get("Content-Type"), "application/json"; got != want {
		t.Fatalf("Content-Type=%q, want %q", got, want)
	}
	if got := resp.Header.Get("X-Mock"); got != "yes" {
		t.Fatalf("X-Mock=%q, want yes", got)
	}
	if got.Query.Get("expand") != "1" || got.Header.Get("Content-Type") != "application/json" || got.Route != "POST /users/:id" {
		t.Fatalf("request seen by handler: %+v", got)
	}
	if body, ok := got.Body.(map[string]any); !ok || body["name"] != "Ada" {
		t.Fatalf("parsed body=%#v, want map with name Ada", got.Body)
	}
	if string(got.RawBody) != `{"name":"Ada"}` || got.RequestID == "" || got.Timestamp.IsZero() {
		t.Fatalf("raw body, id or timestamp missing: %+v", got)
	}
	if n := ic.Calls("POST /users/:id"); n != 1 {
		t.Fatalf("Calls=%d, want 1", n)
	}
}

// Ensure unmatched requests reach the wrapped transport when fallback is on.
func TestRoundTrip_FallbackToNetwork(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"upstream":true,"path":%q}`, r.URL.Path)
	}))
	defer upstream.Close()
	cfg := DefaultConfig()
	ic := New(cfg, WithMocks(Definitions{"GET /mocked": JSON(200, map[string]any{"mocked": true})}))
	resp, body := getJSON(t, ic.Client(), "GET", upstream.URL+"/real", nil)
	if resp.StatusCode != 200 || body["upstream"] != true || body["path"] != "/real" {
		t.Fatalf("fallback answer: %d %v", resp.StatusCode, body)
	}
	_, body = getJSON(t, ic.Client(), "GET", upstream.URL+"/mocked", nil)
	if body["mocked"] != true {
		t.Fatalf("mocked route was not mocked: %v", body)
	}
	if got := ic.Stats().UnmatchedRequests; got != 1 {
		t.Fatalf("unmatched=%d, want 1", got)
	}
}

// Ensure an unmatched request without fallback fails with
// ROUTE_MATCH_FAILED and names the closest routes.
func TestRoundTrip_NoFallbackError(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{"GET /users/:id": JSON(200, nil), "GET /orders": JSON(200, nil)})
	_, err := ic.Client().Get("http://api.test/user/1")
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("err=%v, want *mock.Error", err)
	}
	if me.Code != CodeRouteMatchFailed || !errors.Is(err, ErrRouteMatchFailed) {
		t.Fatalf("code=%s, want ROUTE_MATCH_FAILED", me.Code)
	}
	if len(me.Closest) == 0 || me.Closest[0] != "GET /users/:id" {
		t.Fatalf("closest=%v, want GET /users/:id first", me.Closest)
	}
	if !strings.Contains(err.Error(), "GET /users/:id") {
		t.Fatalf("error text lacks the near-miss hint: %v", err)
	}
}

// Ensure the Handler face serves mocks, proxies unmatched requests to the
// target, and answers 404 ROUTE_MATCH_FAILED without a target.
func TestServeHTTP_ProxyFallback(t *testing.T) {
	t.Parallel()
	var hits int
	var mu sync.Mutex
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"upstream":"up","path":%q,"query":%q}`, r.URL.Path, r.URL.RawQuery)
	}))
	defer upstream.Close()
	target, _ := url.Parse(upstream.URL)
	defs := Definitions{"GET /users/:id": func(_ context.Context, r *Request) (*Response, error) {
		return &Response{Data: map[string]any{"id": r.Param("id"), "kind": "user"}}, nil
	}}
	ic := New(DefaultConfig(), WithMocks(defs), WithTarget(target))
	srv := httptest.NewServer(ic)
	defer srv.Close()

	resp, body := getJSON(t, srv.Client(), "GET", srv.URL+"/users/7", nil)
	if resp.StatusCode != 200 || body["id"] != "7" || body["kind"] != "user" {
		t.Fatalf("mocked: %d %v", resp.StatusCode, body)
	}
	resp, body = getJSON(t, srv.Client(), "GET", srv.URL+"/proxied/thing?x=1", nil)
	if resp.StatusCode != 200 || body["upstream"] != "up" || body["path"] != "/proxied/thing" || body["query"] != "x=1" {
		t.Fatalf("proxied: %d %v", resp.StatusCode, body)
	}
	if hits != 1 {
		t.Fatalf("upstream hits=%d, want 1", hits)
	}

	ic.SetFallbackToNetwork(false)
	resp, body = getJSON(t, srv.Client(), "GET", srv.URL+"/user/7", nil)
	if resp.StatusCode != 404 || body["code"] != "ROUTE_MATCH_FAILED" {
		t.Fatalf("unmatched: %d %v", resp.StatusCode, body)
	}
	if c, _ := body["closest"].([]any); len(c) == 0 || c[0] != "GET /users/:id" {
		t.Fatalf("closest=%v", body["closest"])
	}
}

// Ensure a handler error or panic is HANDLER_EXECUTION_ERROR and never
// crashes the interceptor.
func TestHandlerFailure(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{
		"GET /err":   Fail(errors.New("boom")),
		"GET /panic": func(context.Context, *Request) (*Response, error) { panic("kaboom") },
		"GET /nil":   func(context.Context, *Request) (*Response, error) { return nil, nil },
	})
	for _, p := range []string{"/err", "/panic", "/nil"} {
		_, err := ic.Client().Get("http://x.test" + p)
		if !errors.Is(err, ErrHandlerExecution) {
			t.Fatalf("%s: err=%v, want HANDLER_EXECUTION_ERROR", p, err)
		}
	}
	srv := httptest.NewServer(ic)
	defer srv.Close()
	resp, body := getJSON(t, srv.Client(), "GET", srv.URL+"/panic", nil)
	if resp.StatusCode != 500 || body["code"] != "HANDLER_EXECUTION_ERROR" {
		t.Fatalf("server face: %d %v", resp.StatusCode, body)
	}
}

// Ensure runtime management changes what is served, atomically.
func TestRuntimeManagement(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{"GET /a": JSON(200, "a")})
	if err := ic.AddMock("GET /b", JSON(200, "b")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ic.Mocks(), ","); got != "GET /a,GET /b" {
		t.Fatalf("Mocks=%s", got)
	}
	if err := ic.SetMocks(Definitions{"get /bad": JSON(200, nil)}); !errors.Is(err, ErrInvalidMockDefinition) {
		t.Fatalf("SetMocks(invalid) err=%v, want INVALID_MOCK_DEFINITION", err)
	}
	if got := len(ic.Mocks()); got != 2 {
		t.Fatalf("an invalid set changed the mocks: %v", ic.Mocks())
	}
	ic.RemoveMocks("GET /a")
	if _, err := ic.Client().Get("http://x.test/a"); !errors.Is(err, ErrRouteMatchFailed) {
		t.Fatalf("removed route still answers: %v", err)
	}
	ic.SetEnabled(false)
	if ic.Enabled() {
		t.Fatal("Enabled()=true after SetEnabled(false)")
	}
	ic.SetEnabled(true)
	ic.SetDelay(Between(0, 0))
	ic.ClearMocks()
	if len(ic.Mocks()) != 0 {
		t.Fatalf("ClearMocks left %v", ic.Mocks())
	}
	if err := ic.UpdateConfig(func(c *Config) { c.BaseURL = "/api" }); err != nil {
		t.Fatal(err)
	}
	if got := ic.Config().BaseURL; got != "/api" {
		t.Fatalf("BaseURL=%q", got)
	}
}

// Ensure concurrent reads and writes are race-free.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{"GET /users/:id": JSON(200, "u")})
	c := ic.Client()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 50 {
				if resp, err := c.Get("http://x.test/users/1"); err == nil {
					resp.Body.Close()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for j := range 20 {
				ic.AddMock(fmt.Sprintf("GET /r%d/%d", i, j), JSON(200, j))
				ic.SetDelay(Fixed(0))
				_ = ic.Stats()
				ic.RemoveMocks(fmt.Sprintf("GET /r%d/%d", i, j))
			}
		}()
	}
	wg.Wait()
	if got := ic.Calls("GET /users/:id"); got != 200 {
		t.Fatalf("Calls=%d, want 200", got)
	}
}

// Ensure Explain reports the route, params and score without counting.
func TestExplain(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{"GET /users/:id": JSON(200, nil), "GET /users/me": JSON(200, nil)})
	info := ic.Explain("GET", "http://x.test/users/42")
	if !info.Matched || info.MatchedRoute != "GET /users/:id" || info.ExtractedParams["id"] != "42" || info.Score <= 0 {
		t.Fatalf("info=%+v", info)
	}
	if me := ic.Explain("GET", "/users/me"); me.MatchedRoute != "GET /users/me" || me.Score <= info.Score {
		t.Fatalf("static route must win with a higher score: %+v vs %+v", me, info)
	}
	if ic.Explain("POST", "/users/1").Matched {
		t.Fatal("POST matched a GET route")
	}
	if ic.Stats().TotalRequests != 0 {
		t.Fatal("Explain was counted")
	}
}

// Ensure a StripPrefix changed at run time takes effect for the next
// request, and the previous one no longer applies.
func TestStripPrefixChangedAtRunTime(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{"GET /users": JSON(200, "u")})
	matched := func(path string) bool { return ic.Explain("GET", "http://x.test"+path).Matched }
	if !matched("/users") || matched("/v1/users") {
		t.Fatal("without a prefix only /users matches")
	}
	for _, pre := range []string{"/v1", "v2/"} {
		if err := ic.UpdateConfig(func(c *Config) { c.RouteMatching.StripPrefix = pre }); err != nil {
			t.Fatal(err)
		}
		want := "/" + strings.Trim(pre, "/") + "/users"
		if !matched(want) {
			t.Fatalf("StripPrefix %q: %s does not match", pre, want)
		}
	}
	if matched("/v1/users") {
		t.Fatal("the replaced prefix /v1 is still stripped")
	}
}

// Ensure the runtime setters change what the interceptor does and its getters report it:
// Use adds middleware that sees later requests, SetDelay and SetFallbackToNetwork show in
// Delay, FallbackToNetwork and Config, and Definitions is a copy the caller may change
// freely.
func TestRuntimeSettings(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{"GET /x": JSON(200, map[string]any{"ok": true})})

	ic.Use(Middleware{Name: "stamp", OnResponse: func(_ context.Context, resp *Response, _ *Request) (*Response, error) {
		if resp.Headers == nil {
			resp.Headers = map[string]string{}
		}
		resp.Headers["X-Stamp"] = "1"
		return resp, nil
	}})
	resp, err := ic.Client().Get("http://t.test/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Stamp") != "1" {
		t.Fatalf("middleware added by Use did not run: headers %v", resp.Header)
	}
	if n := len(ic.Config().Middleware); n != 1 {
		t.Fatalf("Config lists %d middleware, want 1", n)
	}

	ic.SetDelay(Delay{Min: time.Millisecond, Max: 2 * time.Millisecond})
	if d := ic.Delay(); d.Min != time.Millisecond || d.Max != 2*time.Millisecond || ic.Config().Delay != d {
		t.Fatalf("Delay %+v, Config().Delay %+v after SetDelay", d, ic.Config().Delay)
	}
	ic.SetFallbackToNetwork(true)
	if !ic.FallbackToNetwork() || !ic.Config().FallbackToNetwork {
		t.Fatal("fallback off after SetFallbackToNetwork(true)")
	}
	ic.SetFallbackToNetwork(false)
	if ic.FallbackToNetwork() {
		t.Fatal("fallback on after SetFallbackToNetwork(false)")
	}

	defs := ic.Definitions()
	if len(defs) != 1 || defs["GET /x"] == nil {
		t.Fatalf("Definitions = %v, want GET /x", defs)
	}
	delete(defs, "GET /x")
	defs["GET /y"] = JSON(200, nil)
	if got := ic.Mocks(); len(got) != 1 || got[0] != "GET /x" {
		t.Fatalf("changing the copy changed the interceptor: Mocks = %v", got)
	}
	if Default() != Default() || !Default().Enabled() {
		t.Fatal("Default is not one enabled interceptor")
	}
}

// Ensure an answer whose status has no body (204, 304) goes out without one and without a
// Content-Type, from both faces, whatever the handler gave.
func TestBodylessStatuses(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	ic := New(cfg, WithMocks(Definitions{
		"DELETE /items/:id": func(context.Context, *Request) (*Response, error) {
			return &Response{Status: 204, Data: map[string]any{"ignored": true}}, nil
		},
		"GET /items/:id": func(context.Context, *Request) (*Response, error) {
			return &Response{Status: 304, Headers: map[string]string{"ETag": `"v1"`}}, nil
		},
	}))
	for _, tc := range []struct {
		method string
		status int
	}{{"DELETE", 204}, {"GET", 304}} {
		w := do(t, ic, tc.method, "/items/1", nil)
		if w.Code != tc.status || w.Body.Len() != 0 || w.Header().Get("Content-Type") != "" || w.Header().Get("Content-Length") != "" {
			t.Errorf("handler %s: %d %v %q", tc.method, w.Code, w.Header(), w.Body.String())
		}
		req, _ := http.NewRequest(tc.method, "http://api.test/items/1", nil)
		resp, err := ic.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || len(b) != 0 || resp.Header.Get("Content-Type") != "" {
			t.Errorf("round trip %s: %d %v %q", tc.method, resp.StatusCode, resp.Header, b)
		}
	}
}
