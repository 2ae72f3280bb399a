package mock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// passthrough records requests that reached the wrapped transport.
type passthrough struct {
	mu   sync.Mutex
	urls []string
}

func (p *passthrough) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.urls = append(p.urls, r.URL.String())
	p.mu.Unlock()
	rec := httptest.NewRecorder()
	rec.WriteString("network")
	return rec.Result(), nil
}

// Ensure include/ignore patterns, BaseURL and Enabled decide what is
// intercepted.
func TestInterceptionFilters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*Config)
		url   string
		mock  bool
		route string
	}{
		{"Default", func(*Config) {}, "http://api.test/v1/users", true, "GET /v1/users"},
		{"IgnoreGlob", func(c *Config) { c.IgnorePatterns = []Pattern{Glob("*/analytics/*")} }, "http://api.test/analytics/x", false, "GET /analytics/x"},
		{"IgnoreGlobOther", func(c *Config) { c.IgnorePatterns = []Pattern{Glob("*/analytics/*")} }, "http://api.test/users", true, "GET /users"},
		{"IgnoreRegexp", func(c *Config) { c.IgnorePatterns = []Pattern{regexp.MustCompile(`\.png$`)} }, "http://api.test/a.png", false, "GET /a.png"},
		{"IncludeOnly", func(c *Config) { c.IncludePatterns = []Pattern{Glob("/api/*")} }, "http://x.test/other", false, "GET /other"},
		{"IncludeHit", func(c *Config) { c.IncludePatterns = []Pattern{Glob("/api/*")} }, "http://x.test/api/a", true, "GET /api/a"},
		{"BaseURLHost", func(c *Config) { c.BaseURL = "https://api.test/v1" }, "https://api.test/v1/users", true, "GET /users"},
		{"BaseURLOtherHost", func(c *Config) { c.BaseURL = "https://api.test/v1" }, "https://cdn.test/v1/users", false, "GET /users"},
		{"BaseURLPath", func(c *Config) { c.BaseURL = "/v1" }, "http://any.test/v1/users", true, "GET /users"},
		{"Disabled", func(c *Config) { c.Enabled = false }, "http://api.test/users", false, "GET /users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.FallbackToNetwork = false
			tt.edit(&cfg)
			net := &passthrough{}
			ic := New(cfg, WithMocks(Definitions{tt.route: JSON(200, "mock")}), WithTransport(net))
			got := body(t, ic.Client(), tt.url)
			want := "network"
			if tt.mock {
				want = `"mock"`
			}
			if got != want {
				t.Fatalf("body=%s, want %s", got, want)
			}
		})
	}
}

// Ensure default headers are set unless the handler sets its own, and
// text data is written raw for non-JSON content types.
func TestDefaultHeadersAndBodies(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.DefaultHeaders = map[string]string{"Content-Type": "application/json", "X-Env": "mock"}
	ic := New(cfg, WithMocks(Definitions{
		"GET /json": JSON(200, map[string]int{"a": 1}),
		"GET /text": Static(Response{Data: "hi", Headers: map[string]string{"Content-Type": "text/plain"}, StatusText: "Fine"}),
		"GET /raw":  Static(Response{Status: 202, Body: []byte("<x/>"), Headers: map[string]string{"Content-Type": "application/xml"}}),
	}))
	w := do(t, ic, "GET", "/json", nil)
	if w.Header().Get("X-Env") != "mock" || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != `{"a":1}` {
		t.Fatalf("json: %v %s", w.Header(), w.Body)
	}
	w = do(t, ic, "GET", "/text", nil)
	if w.Header().Get("Content-Type") != "text/plain" || w.Body.String() != "hi" || w.Header().Get("X-Env") != "mock" {
		t.Fatalf("text: %v %s", w.Header(), w.Body)
	}
	w = do(t, ic, "GET", "/raw", nil)
	if w.Code != 202 || w.Body.String() != "<x/>" {
		t.Fatalf("raw: %d %s", w.Code, w.Body)
	}
	resp, err := ic.Client().Get("http://t.test/text")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Status != "200 Fine" {
		t.Fatalf("Status=%q, want 200 Fine", resp.Status)
	}
}

// Ensure a channel-delivering handler is adapted, and a closed channel
// is a handler error.
func TestFromChan(t *testing.T) {
	t.Parallel()
	ic := newTest(t, Definitions{
		"GET /later": FromChan(func(ctx context.Context, r *Request) <-chan *Response {
			ch := make(chan *Response, 1)
			go func() { ch <- &Response{Data: "later"} }()
			return ch
		}),
		"GET /closed": FromChan(func(context.Context, *Request) <-chan *Response {
			ch := make(chan *Response)
			close(ch)
			return ch
		}),
		"GET /never": FromChan(func(context.Context, *Request) <-chan *Response { return make(chan *Response) }),
	})
	if got := body(t, ic.Client(), "http://t.test/later"); got != `"later"` {
		t.Fatalf("body=%s", got)
	}
	if _, err := ic.Client().Get("http://t.test/closed"); !errors.Is(err, ErrHandlerExecution) {
		t.Fatalf("closed channel: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://t.test/never", nil)
	if _, err := ic.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("never: %v, want deadline exceeded", err)
	}
}

// Ensure each logging switch adds its kind of record and the level
// filters.
func TestLoggingConfig(t *testing.T) {
	t.Parallel()
	run := func(lc LoggingConfig) string {
		var buf bytes.Buffer
		var mu sync.Mutex
		cfg := DefaultConfig()
		cfg.FallbackToNetwork = false
		cfg.Logging = lc
		cfg.Persistence.Enabled = true
		ic := New(cfg, WithMocks(Definitions{"GET /a": JSON(200, 1)}),
			WithLogger(slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		body(t, ic.Client(), "http://t.test/a")
		ic.Client().Get("http://t.test/zz")
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
	if out := run(LoggingConfig{LogRequests: true, LogResponses: true}); out != "" {
		t.Fatalf("disabled logging wrote %s", out)
	}
	all := LoggingConfig{Enabled: true, Level: slog.LevelDebug, LogRequests: true, LogResponses: true, LogRouteMatching: true, LogCacheOperations: true}
	out := run(all)
	for _, want := range []string{"mock request", "mock response", "route matched", "no mock matched", "cache store"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
	only := LoggingConfig{Enabled: true, Level: slog.LevelDebug, LogRequests: true}
	if out := run(only); !strings.Contains(out, "mock request") || strings.Contains(out, "mock response") || strings.Contains(out, "cache") {
		t.Fatalf("only requests:\n%s", out)
	}
	warn := all
	warn.Level = slog.LevelWarn
	if out := run(warn); strings.Contains(out, "mock request") || !strings.Contains(out, "no mock matched") {
		t.Fatalf("warn level:\n%s", out)
	}
}
