package mock

import (
	"log/slog"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody is the largest request body the interceptor reads (32 MiB).
const maxBody = 32 << 20

// Interceptor answers HTTP requests from mock definitions. It is an
// [http.RoundTripper] (for an [http.Client]) and an [http.Handler] (for a
// server). All its methods are safe for concurrent use; definitions and
// configuration can change while requests are served, and each request
// sees one consistent snapshot of both.
type Interceptor struct {
	mu        sync.Mutex // serialises writers of state
	state     atomic.Pointer[state]
	life      sync.RWMutex // requests hold it shared; Close takes it
	closed    atomic.Bool
	transport http.RoundTripper
	target    *url.URL
	// fallback answers unmatched requests on the Handler face: the proxy to target, or
	// the handler given to WithFallback.
	fallback http.Handler
	logger   *slog.Logger
	now      func() time.Time
	stats    *stats
	seq      atomic.Uint64
}

// state is an immutable snapshot of configuration and compiled routes.
type state struct {
	cfg       Config
	m         *Matcher
	t         *table
	chain     []Middleware
	baseHost  string
	basePath  string
	defHeader http.Header
	cache     *cache
}

// Option configures an Interceptor in [New]; the With functions make them.
type Option struct {
	apply func(ic *Interceptor, defs Definitions)
}

// WithMocks registers an initial definition set. New panics if it is
// invalid; use [Interceptor.SetMocks] to get an error instead.
func WithMocks(defs Definitions) Option {
	return Option{func(_ *Interceptor, d Definitions) { maps.Copy(d, defs) }}
}

// WithTransport sets the transport unmatched requests fall back to (the
// RoundTripper face) and the transport the Handler face proxies to its
// target with. Default http.DefaultTransport.
func WithTransport(rt http.RoundTripper) Option {
	return Option{func(ic *Interceptor, _ Definitions) { ic.transport = rt }}
}

// WithTarget sets the upstream that the Handler face proxies unmatched
// (and ignored) requests to, with [httputil.ReverseProxy], when
// FallbackToNetwork is on.
func WithTarget(target *url.URL) Option {
	return Option{func(ic *Interceptor, _ Definitions) { ic.target = target }}
}

// WithFallback sets the handler that the Handler face passes unmatched (and
// ignored) requests to when FallbackToNetwork is on, in place of a proxy to a
// target: an in-process API behind a few mocks, say. It wins over [WithTarget].
func WithFallback(h http.Handler) Option {
	return Option{func(ic *Interceptor, _ Definitions) { ic.fallback = h }}
}

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Option {
	return Option{func(ic *Interceptor, _ Definitions) { ic.logger = l }}
}

// WithClock sets the clock used for timestamps, statistics and cache
// expiry. Tests use it to move time without sleeping.
func WithClock(now func() time.Time) Option {
	return Option{func(ic *Interceptor, _ Definitions) { ic.now = now }}
}

// New returns an interceptor configured by cfg (start from
// [DefaultConfig]). It shares nothing with other interceptors. Call
// [Interceptor.Close] when done if persistence is enabled.
//
// New panics when cfg or the set given by [WithMocks] is invalid, as
// regexp.MustCompile does. For definitions from outside the program, check
// them first with [ValidateDefinitions], or pass none and call
// [Interceptor.SetMocks], which returns the error.
func New(cfg Config, opts ...Option) *Interceptor {
	ic := &Interceptor{transport: http.DefaultTransport, logger: slog.Default(), now: time.Now}
	defs := Definitions{}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(ic, defs)
		}
	}
	ic.stats = newStats(ic.now())
	if ic.target != nil && ic.fallback == nil {
		ic.fallback = &httputil.ReverseProxy{
			Transport: ic.transport,
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(ic.target)
				pr.SetXForwarded()
				if ic.state.Load().cfg.PreserveOriginalHeaders {
					pr.Out.Host = pr.In.Host
				}
			},
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				ic.log(ic.state.Load(), slog.LevelError, "proxy to target failed", "url", r.URL.String(), "err", err)
				writeJSON(w, http.StatusBadGateway, map[string]any{"statusCode": 502, "error": "Bad Gateway", "message": err.Error()})
			},
		}
	}
	st, err := ic.build(nil, cfg.withDefaults(), defs)
	if err != nil {
		panic(err)
	}
	ic.state.Store(st)
	return ic
}

var (
	defaultOnce sync.Once
	defaultIC   *Interceptor
)

// Default returns a process-wide interceptor with [DefaultConfig], created
// on first use. Tests should prefer their own from [New].
func Default() *Interceptor {
	defaultOnce.Do(func() { defaultIC = New(DefaultConfig()) })
	return defaultIC
}

// Stats returns a snapshot of the usage statistics.
func (ic *Interceptor) Stats() UsageStats {
	return ic.stats.snapshot(ic.state.Load().cfg.Persistence.Enabled)
}

// ResetStats zeroes the statistics and the call counts.
func (ic *Interceptor) ResetStats() { ic.stats.reset(ic.now()) }

// Calls returns how many requests the route answered since the last
// reset.
func (ic *Interceptor) Calls(route string) int { return ic.stats.calls(route) }

// Pending returns the registered routes that have not been called since
// the last reset, sorted.
func (ic *Interceptor) Pending() []string {
	var out []string
	for _, k := range ic.state.Load().t.keys {
		if ic.stats.calls(k) == 0 {
			out = append(out, k)
		}
	}
	return out
}

// Unmatched returns the most recent unmatched requests ("METHOD URL"),
// oldest first (at most 64 are kept).
func (ic *Interceptor) Unmatched() []string { return ic.stats.recentUnmatched() }

// TB is the part of testing.TB that [Interceptor.Verify] uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// Verify reports a test error listing every registered mock that was
// never called, and every unmatched request seen.
func (ic *Interceptor) Verify(t TB) {
	t.Helper()
	if p := ic.Pending(); len(p) > 0 {
		t.Errorf("mock: %d registered mocks were never called: %s", len(p), strings.Join(p, ", "))
	}
	if u := ic.Unmatched(); len(u) > 0 {
		t.Errorf("mock: %d requests matched no mock: %s", len(u), strings.Join(u, ", "))
	}
}

// Client returns an [http.Client] whose transport is the interceptor.
func (ic *Interceptor) Client() *http.Client { return &http.Client{Transport: ic} }

// Close waits for requests in flight and closes the cache storage. The
// interceptor keeps answering afterwards, without a cache.
func (ic *Interceptor) Close() error {
	ic.life.Lock()
	defer ic.life.Unlock()
	if ic.closed.Swap(true) {
		return nil
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	st := ic.state.Load()
	if st.cache == nil {
		return nil
	}
	ns := *st
	ns.cache = nil
	ns.cfg.Persistence.Enabled = false
	ic.state.Store(&ns)
	if err := st.cache.close(); err != nil {
		return &Error{Code: CodePersistence, Message: "close cache", Err: err}
	}
	return nil
}
