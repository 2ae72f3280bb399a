package mock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ensure hooks run in priority order, higher first, ties in list order.
func TestMiddleware_Order(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var trace []string
	mw := func(name string, prio int) Middleware {
		rec := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
		return Middleware{Name: name, Priority: prio,
			OnRequest:  func(context.Context, *Request) (*Response, error) { rec("req:" + name); return nil, nil },
			OnResponse: func(context.Context, *Response, *Request) (*Response, error) { rec("resp:" + name); return nil, nil },
		}
	}
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Middleware = []Middleware{mw("low", 1), mw("high", 10), mw("mid-a", 5), mw("mid-b", 5)}
	ic := New(cfg, WithMocks(Definitions{"GET /x": JSON(200, "ok")}))
	resp, err := ic.Client().Get("http://t.test/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := "req:high,req:mid-a,req:mid-b,req:low,resp:high,resp:mid-a,resp:mid-b,resp:low"
	if got := strings.Join(trace, ","); got != want {
		t.Fatalf("order=%s, want %s", got, want)
	}
}

// Ensure a failing middleware gives MIDDLEWARE_ERROR and OnError can
// recover from handler failures.
func TestMiddleware_Errors(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Middleware = []Middleware{{Name: "broken", OnRequest: func(context.Context, *Request) (*Response, error) {
		return nil, errors.New("nope")
	}}}
	ic := New(cfg, WithMocks(Definitions{"GET /x": JSON(200, "ok")}))
	if _, err := ic.Client().Get("http://t.test/x"); !errors.Is(err, ErrMiddleware) {
		t.Fatalf("err=%v, want MIDDLEWARE_ERROR", err)
	}
	ic.UpdateConfig(func(c *Config) {
		c.Middleware = []Middleware{{Name: "panicky", OnResponse: func(context.Context, *Response, *Request) (*Response, error) { panic("x") }}}
	})
	if _, err := ic.Client().Get("http://t.test/x"); !errors.Is(err, ErrMiddleware) {
		t.Fatalf("panic in OnResponse: err=%v, want MIDDLEWARE_ERROR", err)
	}
	ic.UpdateConfig(func(c *Config) {
		c.Middleware = []Middleware{{Name: "rescue", OnError: func(_ context.Context, err error, _ *Request) (*Response, error) {
			if errors.Is(err, ErrHandlerExecution) {
				return &Response{Status: 503, Data: "rescued"}, nil
			}
			return nil, nil
		}}}
	})
	ic.AddMock("GET /fail", Fail(errors.New("boom")))
	resp, err := ic.Client().Get("http://t.test/fail")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || string(b) != `"rescued"` {
		t.Fatalf("rescued answer: %d %s", resp.StatusCode, b)
	}
}

func do(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// Ensure the factory's CORS middleware answers preflight and decorates
// responses.
func TestCORSMiddleware(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Middleware = []Middleware{CORSMiddleware(CORSOptions{AllowOrigins: []string{"https://app.test"}})}
	ic := New(cfg, WithMocks(Definitions{"* /items": JSON(200, []int{1})}))
	w := do(t, ic, "OPTIONS", "/items", map[string]string{"Origin": "https://app.test", "Access-Control-Request-Method": "POST"})
	if w.Code != 204 || w.Header().Get("Access-Control-Allow-Origin") != "https://app.test" || !strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", w.Code, w.Header())
	}
	if ic.Calls("* /items") != 1 {
		t.Fatalf("preflight not counted on its route")
	}
	w = do(t, ic, "GET", "/items", map[string]string{"Origin": "https://app.test"})
	if w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "https://app.test" || w.Body.String() != "[1]" {
		t.Fatalf("simple: %d %v %s", w.Code, w.Header(), w.Body)
	}
	w = do(t, ic, "GET", "/items", map[string]string{"Origin": "https://evil.test"})
	if got := w.Header().Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("foreign origin allowed: %q", got)
	}
}

// Ensure the CORS header values, defaulted and configured, on preflight
// and on every request.
func TestCORSMiddleware_HeaderValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts                     CORSOptions
		methods, headers, maxAge string
		expose                   string
	}{
		{CORSOptions{}, "GET, POST, PUT, PATCH, DELETE, OPTIONS", "Content-Type, Authorization", "86400", ""},
		{CORSOptions{AllowMethods: []string{"GET"}, AllowHeaders: []string{"X-A", "X-B"}, ExposeHeaders: []string{"X-Total", "X-Page"}, MaxAge: 90 * time.Second},
			"GET", "X-A, X-B", "90", "X-Total, X-Page"},
	} {
		cfg := DefaultConfig()
		cfg.FallbackToNetwork = false
		cfg.Middleware = []Middleware{CORSMiddleware(tc.opts)}
		ic := New(cfg, WithMocks(Definitions{"* /items": JSON(200, []int{1})}))
		for range 2 {
			w := do(t, ic, "OPTIONS", "/items", map[string]string{"Origin": "https://app.test", "Access-Control-Request-Method": "POST"})
			h := w.Header()
			if h.Get("Access-Control-Allow-Methods") != tc.methods || h.Get("Access-Control-Allow-Headers") != tc.headers ||
				h.Get("Access-Control-Max-Age") != tc.maxAge || h.Get("Access-Control-Expose-Headers") != tc.expose {
				t.Fatalf("%+v preflight: %v", tc.opts, h)
			}
			w = do(t, ic, "GET", "/items", map[string]string{"Origin": "https://app.test"})
			if got := w.Header().Get("Access-Control-Expose-Headers"); got != tc.expose {
				t.Fatalf("%+v: expose %q, want %q", tc.opts, got, tc.expose)
			}
		}
	}
}

// Ensure the auth middleware answers 401 for missing or wrong tokens.
func TestAuthMiddleware(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   AuthOptions
		header map[string]string
		want   int
	}{
		{"MissingBearer", AuthOptions{}, nil, 401},
		{"AnyBearer", AuthOptions{}, map[string]string{"Authorization": "Bearer abc"}, 200},
		{"WrongScheme", AuthOptions{}, map[string]string{"Authorization": "Basic abc"}, 401},
		{"TokenListOK", AuthOptions{Tokens: []string{"t1"}}, map[string]string{"Authorization": "bearer t1"}, 200},
		{"TokenListBad", AuthOptions{Tokens: []string{"t1"}}, map[string]string{"Authorization": "Bearer t2"}, 401},
		{"HeaderCheckOK", AuthOptions{Header: "X-Api-Key", Tokens: []string{"k"}}, map[string]string{"X-Api-Key": "k"}, 200},
		{"HeaderCheckBad", AuthOptions{Header: "X-Api-Key", Tokens: []string{"k"}}, map[string]string{"Authorization": "Bearer k"}, 401},
		{"Validate", AuthOptions{Validate: func(c string, _ *Request) bool { return strings.HasPrefix(c, "ok") }}, map[string]string{"Authorization": "Bearer ok-1"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Middleware = []Middleware{AuthMiddleware(tt.opts)}
			ic := New(cfg, WithMocks(Definitions{"GET /me": JSON(200, "me")}))
			w := do(t, ic, "GET", "/me", tt.header)
			if w.Code != tt.want {
				t.Fatalf("status=%d, want %d (%s)", w.Code, tt.want, w.Body)
			}
			if tt.want == 401 && w.Body.String() != `{"error":"Unauthorized","message":"Unauthorized","statusCode":401}` {
				t.Fatalf("401 body=%s", w.Body)
			}
		})
	}
}

// Ensure the rate limit answers 429 past the limit and resets each window.
func TestRateLimitMiddleware(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := DefaultConfig()
	cfg.Middleware = []Middleware{RateLimitMiddleware(RateLimitOptions{Limit: 2, Window: time.Minute, Now: clock})}
	ic := New(cfg, WithMocks(Definitions{"GET /x": JSON(200, "x")}))
	codes := []int{}
	for range 3 {
		codes = append(codes, do(t, ic, "GET", "/x", nil).Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Fatalf("codes=%v, want [200 200 429]", codes)
	}
	w := do(t, ic, "GET", "/x", map[string]string{"X-Forwarded-For": "10.0.0.9"})
	if w.Code != 200 {
		t.Fatalf("another client was limited: %d", w.Code)
	}
	w = do(t, ic, "GET", "/x", nil)
	if w.Body.String() != `{"error":"ThrottlerException","message":"Too Many Requests","statusCode":429}` || w.Header().Get("Retry-After") == "" {
		t.Fatalf("429 answer: %s %v", w.Body, w.Header())
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if w := do(t, ic, "GET", "/x", nil); w.Code != 200 {
		t.Fatalf("after the window: %d, want 200", w.Code)
	}
}

// Ensure the delay middleware waits and gives up with the context.
func TestDelayMiddleware_Cancel(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Middleware = []Middleware{DelayMiddleware(Fixed(time.Hour))}
	ic := New(cfg, WithMocks(Definitions{"GET /slow": JSON(200, "x")}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://t.test/slow", nil)
	errc := make(chan error, 1)
	go func() { _, err := ic.RoundTrip(req); errc <- err }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err=%v, want context.Canceled", err)
	}
}

// Ensure the logging middleware logs request, response and failure.
func TestLoggingMiddleware(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var mu sync.Mutex
	l := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Middleware = []Middleware{LoggingMiddleware(LoggingOptions{Logger: l, LogBody: true})}
	ic := New(cfg, WithMocks(Definitions{"POST /x": JSON(201, "x"), "GET /bad": Fail(errors.New("boom"))}))
	resp, err := ic.Client().Post("http://t.test/x", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ic.Client().Get("http://t.test/bad")
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{"mock request", "body=hello", "mock response", "status=201", "mock failure", "boom"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Ensure credentials go only to an origin listed by name: "*" answers "*" without
// credentials even with AllowCredentials, in the middleware and in CORSHandler.
func TestCORS_CredentialsOnlyForListedOrigins(t *testing.T) {
	t.Parallel()
	opts := CORSOptions{AllowOrigins: []string{"https://app.test", "*"}, AllowCredentials: true}
	cfg := DefaultConfig()
	cfg.FallbackToNetwork = false
	cfg.Middleware = []Middleware{CORSMiddleware(opts)}
	ic := New(cfg, WithMocks(Definitions{"GET /items": JSON(200, []int{1})}))
	handler := CORSHandler(opts, http.NotFoundHandler())
	for _, tc := range []struct {
		origin, wantOrigin, wantCreds string
	}{
		{"https://app.test", "https://app.test", "true"},
		{"https://evil.test", "*", ""},
	} {
		w := do(t, ic, "GET", "/items", map[string]string{"Origin": tc.origin})
		if w.Header().Get("Access-Control-Allow-Origin") != tc.wantOrigin || w.Header().Get("Access-Control-Allow-Credentials") != tc.wantCreds {
			t.Errorf("middleware, %s: %v", tc.origin, w.Header())
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("OPTIONS", "/anything", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "PUT")
		handler.ServeHTTP(rec, req)
		if rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != tc.wantOrigin || rec.Header().Get("Access-Control-Allow-Credentials") != tc.wantCreds {
			t.Errorf("handler preflight, %s: %d %v", tc.origin, rec.Code, rec.Header())
		}
	}
}
