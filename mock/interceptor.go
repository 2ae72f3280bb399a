package mock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
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

// build compiles a new state. prev (may be nil) lends its cache when the
// persistence configuration is unchanged.
func (ic *Interceptor) build(prev *state, cfg Config, defs Definitions) (*state, error) {
	st := &state{cfg: cfg}
	st.m = NewMatcher(cfg.RouteMatching)
	routes := compileRoutes(st.m, defs)
	if res := validateRoutes(st.m, routes); !res.Valid {
		return nil, &Error{Code: CodeInvalidMockDefinition, Message: res.Error(), Validation: &res}
	}
	st.t = newTable(routes)
	st.chain = sortMiddleware(cfg.Middleware)
	st.defHeader = make(http.Header, len(cfg.DefaultHeaders))
	for k, v := range cfg.DefaultHeaders {
		st.defHeader.Set(k, v)
	}
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err == nil && u.Host != "" {
			st.baseHost = strings.ToLower(u.Host)
			st.basePath = strings.TrimSuffix(u.EscapedPath(), "/")
		} else {
			st.basePath = "/" + strings.Trim(cfg.BaseURL, "/")
		}
	}
	switch {
	case prev != nil && prev.cache != nil && prev.cfg.Persistence == cfg.Persistence:
		st.cache = prev.cache
	case cfg.Persistence.Enabled:
		if prev != nil && prev.cache != nil {
			ic.closeCache(prev)
		}
		c, err := openCache(cfg.Persistence, ic.cacheEvent)
		if err != nil {
			ic.log(st, slog.LevelError, "cache storage unavailable, using memory", "err", err)
		}
		st.cache = c
	default:
		if prev != nil && prev.cache != nil {
			ic.closeCache(prev)
		}
	}
	if st.cache != nil {
		// Entries of routes that changed (or are gone, or may not be cached now) are
		// dropped, from the persistent tier too: the cache never answers for an old
		// definition.
		st.cache.retain(keepCurrent(st.t, cfg.Cache))
	}
	return st, nil
}

// cacheEvent logs a cache operation when LogCacheOperations is on.
func (ic *Interceptor) cacheEvent(op, key string, err error) {
	st := ic.state.Load()
	if st == nil || !st.cfg.Logging.Enabled {
		return
	}
	if err != nil {
		ic.log(st, slog.LevelError, "cache "+op+" failed", "key", key,
			"err", &Error{Code: CodePersistence, Message: "cache " + op, Err: err})
		return
	}
	if st.cfg.Logging.LogCacheOperations {
		ic.log(st, slog.LevelDebug, "cache "+op, "key", key)
	}
}

func (ic *Interceptor) closeCache(prev *state) {
	if err := prev.cache.close(); err != nil {
		ic.log(prev, slog.LevelError, "closing cache", "err", &Error{Code: CodePersistence, Message: "close cache", Err: err})
	}
}

// update applies f to a copy of the configuration and definitions and
// installs the result atomically.
func (ic *Interceptor) update(f func(cfg *Config, defs Definitions) error) error {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	prev := ic.state.Load()
	cfg := prev.cfg.clone()
	defs := prev.t.definitions()
	if err := f(&cfg, defs); err != nil {
		return err
	}
	st, err := ic.build(prev, cfg.withDefaults(), defs)
	if err != nil {
		return err
	}
	ic.state.Store(st)
	return nil
}

// Configure replaces the configuration and the definitions at once (the
// seed's configureMockInterceptor). On error nothing changes.
func (ic *Interceptor) Configure(cfg Config, defs Definitions) error {
	return ic.update(func(c *Config, d Definitions) error {
		*c = cfg.clone()
		clear(d)
		maps.Copy(d, defs)
		return nil
	})
}

// SetMocks replaces every definition with defs, atomically (the seed's
// updateMocks). It returns an [*Error] with [CodeInvalidMockDefinition]
// and changes nothing if defs is invalid.
func (ic *Interceptor) SetMocks(defs Definitions) error {
	return ic.update(func(_ *Config, d Definitions) error {
		clear(d)
		maps.Copy(d, defs)
		return nil
	})
}

// AddMocks adds defs, replacing definitions with the same route key (the
// seed's addMocks). On error nothing changes.
func (ic *Interceptor) AddMocks(defs Definitions) error {
	return ic.update(func(_ *Config, d Definitions) error {
		maps.Copy(d, defs)
		return nil
	})
}

// AddMock adds or replaces one definition.
func (ic *Interceptor) AddMock(route string, h Handler) error {
	return ic.AddMocks(Definitions{route: h})
}

// RemoveMocks removes the definitions with the given route keys (the
// seed's removeMocks); unknown keys are ignored.
func (ic *Interceptor) RemoveMocks(routes ...string) {
	_ = ic.update(func(_ *Config, d Definitions) error {
		for _, r := range routes {
			delete(d, r)
		}
		return nil
	})
}

// ClearMocks removes every definition (the seed's clearMocks).
func (ic *Interceptor) ClearMocks() {
	_ = ic.update(func(_ *Config, d Definitions) error { clear(d); return nil })
}

// Mocks returns the registered route keys, sorted.
func (ic *Interceptor) Mocks() []string {
	return append([]string(nil), ic.state.Load().t.keys...)
}

// Definitions returns a copy of the registered definitions.
func (ic *Interceptor) Definitions() Definitions { return ic.state.Load().t.definitions() }

// SetEnabled turns interception on or off (the seed's setEnabled).
func (ic *Interceptor) SetEnabled(enabled bool) {
	_ = ic.update(func(c *Config, _ Definitions) error { c.Enabled = enabled; return nil })
}

// Enabled reports whether interception is on (the seed's isEnabled and
// getEnabled).
func (ic *Interceptor) Enabled() bool { return ic.state.Load().cfg.Enabled }

// SetDelay sets the delay of every mocked response (the seed's setDelay).
func (ic *Interceptor) SetDelay(d Delay) {
	_ = ic.update(func(c *Config, _ Definitions) error { c.Delay = d; return nil })
}

// Delay returns the configured delay (the seed's getDelay).
func (ic *Interceptor) Delay() Delay { return ic.state.Load().cfg.Delay }

// SetFallbackToNetwork turns network fallback on or off (the seed's
// setFallbackToNetwork).
func (ic *Interceptor) SetFallbackToNetwork(on bool) {
	_ = ic.update(func(c *Config, _ Definitions) error { c.FallbackToNetwork = on; return nil })
}

// FallbackToNetwork reports whether network fallback is on (the seed's
// getFallbackToNetwork).
func (ic *Interceptor) FallbackToNetwork() bool { return ic.state.Load().cfg.FallbackToNetwork }

// Config returns a copy of the configuration (the seed's getConfig).
func (ic *Interceptor) Config() Config { return ic.state.Load().cfg.clone() }

// UpdateConfig changes part of the configuration (the seed's
// updateConfig): f receives a copy to modify. The result is applied
// atomically; if the definitions become invalid under a new matching
// configuration, it returns the error and nothing changes.
func (ic *Interceptor) UpdateConfig(f func(*Config)) error {
	return ic.update(func(c *Config, _ Definitions) error { f(c); return nil })
}

// Use appends middleware to the configuration.
func (ic *Interceptor) Use(mw ...Middleware) {
	_ = ic.update(func(c *Config, _ Definitions) error {
		c.Middleware = append(c.Middleware, mw...)
		return nil
	})
}

// Stats returns a snapshot of the usage statistics (the seed's getStats).
func (ic *Interceptor) Stats() UsageStats {
	return ic.stats.snapshot(ic.state.Load().cfg.Persistence.Enabled)
}

// ResetStats zeroes the statistics and the call counts (the seed's
// resetStats).
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

// lookup is the outcome of routing one request.
type lookup struct {
	e    *entry
	pass bool // not intercepted: disabled, filtered or outside BaseURL
	path string
	segs []string
	buf  [16]string
	fbuf [16]string
}

// route finds the route for a request. fullURL renders the URL for the
// include/ignore patterns.
func (ic *Interceptor) route(st *state, method string, u *url.URL, server bool, lk *lookup) {
	if !st.cfg.Enabled {
		lk.pass = true
		return
	}
	if len(st.cfg.IgnorePatterns) > 0 || len(st.cfg.IncludePatterns) > 0 {
		full, p := u.String(), u.Path
		if matchAny(st.cfg.IgnorePatterns, full, p) ||
			(len(st.cfg.IncludePatterns) > 0 && !matchAny(st.cfg.IncludePatterns, full, p)) {
			lk.pass = true
			return
		}
	}
	p := u.EscapedPath()
	if st.baseHost != "" && !server && !strings.EqualFold(u.Host, st.baseHost) {
		lk.pass = true
		return
	}
	if st.basePath != "" && st.basePath != "/" {
		if !hasPathPrefix(p, st.basePath, !st.cfg.RouteMatching.CaseSensitive) {
			lk.pass = true
			return
		}
		p = p[len(st.basePath):]
		if p == "" {
			p = "/"
		}
	}
	p = st.m.stripPrefix(p)
	lk.path = p
	lk.segs = st.m.split(p, lk.buf[:0], false)
	folded := st.m.foldAll(lk.segs, lk.fbuf[:0])
	lk.e = st.t.find(method, lk.segs, folded)
}

func hasPathPrefix(p, prefix string, fold bool) bool {
	if len(p) < len(prefix) {
		return false
	}
	head := p[:len(prefix)]
	if head != prefix && !(fold && strings.EqualFold(head, prefix)) {
		return false
	}
	return len(p) == len(prefix) || p[len(prefix)] == '/'
}

func matchAny(ps []Pattern, full, path string) bool {
	for _, p := range ps {
		if p != nil && (p.MatchString(full) || p.MatchString(path)) {
			return true
		}
	}
	return false
}

// noMatch builds the ROUTE_MATCH_FAILED error with near-miss hints.
func (ic *Interceptor) noMatch(st *state, method, rawURL, path string) *Error {
	closest := closestRoutes(st.t.keys, method+" "+path, 3)
	if st.cfg.Logging.Enabled && st.cfg.Logging.LogRouteMatching {
		ic.log(st, slog.LevelWarn, "no mock matched", "method", method, "url", rawURL, "closest", closest)
	}
	msg := fmt.Sprintf("no mock matches %s %s", method, rawURL)
	if len(st.t.keys) == 0 {
		msg += " (no mocks are registered)"
	}
	return &Error{Code: CodeRouteMatchFailed, Message: msg, Method: method, URL: rawURL, Closest: closest}
}

// Closest returns up to n of keys nearest to want by edit distance, ignoring case, nearest
// first (the suggestions of an unmatched request).
func Closest(keys []string, want string, n int) []string { return closestRoutes(keys, want, n) }

// closestRoutes ranks keys by edit distance to want.
func closestRoutes(keys []string, want string, n int) []string {
	type cand struct {
		k string
		d int
	}
	limit := min(len(keys), 5000)
	cands := make([]cand, 0, limit)
	want = strings.ToLower(want)
	for _, k := range keys[:limit] {
		cands = append(cands, cand{k, EditDistance(strings.ToLower(k), want)})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	out := make([]string, 0, n)
	for _, c := range cands {
		if len(out) == n {
			break
		}
		out = append(out, c.k)
	}
	return out
}

// EditDistance is the Levenshtein distance of a and b, counted in bytes over at most their
// first 128 bytes (enough to rank route keys and suggest field names). It is the one edit
// distance of the module: the mock file reader and the WireMock loader use it too.
func EditDistance(a, b string) int {
	if len(a) > 128 {
		a = a[:128]
	}
	if len(b) > 128 {
		b = b[:128]
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// newRequest builds the handler's view of a matched request.
func (ic *Interceptor) newRequest(st *state, method, rawURL string, u *url.URL, h http.Header, body []byte, lk *lookup) *Request {
	req := &Request{
		Method:    method,
		URL:       rawURL,
		Path:      lk.path,
		Route:     lk.e.key,
		Params:    params(lk.e.segs, lk.segs),
		Header:    h,
		RawBody:   body,
		Timestamp: ic.now(),
	}
	if u.RawQuery != "" {
		req.Query, _ = url.ParseQuery(u.RawQuery)
	}
	var idb [24]byte
	req.RequestID = string(strconv.AppendUint(append(idb[:0], "req-"...), ic.seq.Add(1), 10))
	if len(body) > 0 {
		req.Body = parseBody(h.Get("Content-Type"), body)
	}
	return req
}

func parseBody(ctype string, body []byte) any {
	trimmed := bytes.TrimSpace(body)
	if strings.Contains(ctype, "json") || (ctype == "" && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')) {
		var v any
		if json.Unmarshal(body, &v) == nil {
			return v
		}
	}
	return string(body)
}

// execute runs middleware, cache, handler and delay for a matched request.
func (ic *Interceptor) execute(ctx context.Context, st *state, h Handler, req *Request) (resp *Response, err error) {
	start := ic.now()
	defer func() {
		ic.stats.record(req.Route, req.Method, ic.now().Sub(start))
	}()
	logc := st.cfg.Logging
	if logc.Enabled && logc.LogRequests {
		ic.log(st, slog.LevelInfo, "mock request", "id", req.RequestID, "method", req.Method, "url", req.URL, "route", req.Route)
	}
	if logc.Enabled && logc.LogRouteMatching {
		ic.log(st, slog.LevelDebug, "route matched", "id", req.RequestID, "route", req.Route, "params", req.Params)
	}
	resp, err = ic.run(ctx, st, h, req)
	if err != nil {
		resp, err = ic.recover(ctx, st, req, err)
		if err != nil {
			if logc.Enabled {
				ic.log(st, slog.LevelError, "mock request failed", "id", req.RequestID, "route", req.Route, "err", err)
			}
			return nil, err
		}
	}
	for _, mw := range st.chain {
		if mw.OnResponse == nil {
			continue
		}
		mw := mw
		r := resp
		out, herr := callHook(func() (*Response, error) { return mw.OnResponse(ctx, r, req) })
		if herr != nil {
			return ic.recover(ctx, st, req, reqError(CodeMiddleware, req, fmt.Sprintf("middleware %q OnResponse failed", mw.Name), herr))
		}
		if out != nil {
			resp = out
		}
	}
	d := resp.Delay
	if d <= 0 && !st.cfg.Delay.IsZero() {
		d = st.cfg.Delay.Pick()
	}
	if err := sleep(ctx, d); err != nil {
		return nil, err
	}
	if logc.Enabled && logc.LogResponses {
		ic.log(st, slog.LevelInfo, "mock response", "id", req.RequestID, "route", req.Route, "status", statusOf(resp))
	}
	return resp, nil
}

// run executes OnRequest hooks, the cache and the handler.
func (ic *Interceptor) run(ctx context.Context, st *state, h Handler, req *Request) (*Response, error) {
	for _, mw := range st.chain {
		if mw.OnRequest == nil {
			continue
		}
		mw := mw
		resp, err := callHook(func() (*Response, error) { return mw.OnRequest(ctx, req) })
		if err != nil {
			return nil, reqError(CodeMiddleware, req, fmt.Sprintf("middleware %q OnRequest failed", mw.Name), err)
		}
		if resp != nil {
			return resp, nil
		}
	}
	var key string
	c := st.cache
	var rc RouteCache
	if c != nil {
		rc = st.cfg.Cache.Routes[req.Route]
		if rc.Off || !st.cfg.Cache.methodCached(req.Method) {
			c = nil
		}
	}
	if c != nil {
		key = cacheKey(st.m, req, rc.Digest)
		if resp, ok := c.get(key, ic.now()); ok {
			ic.stats.recordCache(true)
			return resp, nil
		}
		ic.stats.recordCache(false)
	}
	resp, err := callHandler(ctx, h, req)
	if err != nil {
		return nil, err
	}
	if c != nil && st.cfg.Cache.statusCached(statusOf(resp)) {
		// Encode the body once, as render would, and answer the bytes that
		// are stored, so that a hit answers exactly what the miss did.
		b, err := encodeBody(resp, responseHeader(st, resp).Get("Content-Type"))
		if err == nil {
			r := *resp
			r.Body = b
			resp = &r
			err = c.put(key, resp, ic.now())
		}
		if err != nil {
			ic.log(st, slog.LevelError, "cache store failed", "route", req.Route,
				"err", &Error{Code: CodePersistence, Route: req.Route, Message: "store response", Err: err})
		}
	}
	return resp, nil
}

// callHandler runs the handler, turning errors and panics into
// HANDLER_EXECUTION_ERROR.
func callHandler(ctx context.Context, h Handler, req *Request) (resp *Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, reqError(CodeHandlerExecution, req, fmt.Sprintf("handler for %q panicked", req.Route), fmt.Errorf("panic: %v", p))
		}
	}()
	resp, err = h(ctx, req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, err
		}
		return nil, reqError(CodeHandlerExecution, req, fmt.Sprintf("handler for %q failed", req.Route), err)
	}
	if resp == nil {
		return nil, reqError(CodeHandlerExecution, req, fmt.Sprintf("handler for %q returned no response", req.Route), nil)
	}
	return resp, nil
}

// recover lets OnError hooks answer a failure.
func (ic *Interceptor) recover(ctx context.Context, st *state, req *Request, cause error) (*Response, error) {
	for _, mw := range st.chain {
		if mw.OnError == nil {
			continue
		}
		mw := mw
		resp, err := callHook(func() (*Response, error) { return mw.OnError(ctx, cause, req) })
		if err != nil {
			return nil, reqError(CodeMiddleware, req, fmt.Sprintf("middleware %q OnError failed", mw.Name), err)
		}
		if resp != nil {
			return resp, nil
		}
	}
	return nil, cause
}

// cacheKey is the route, its definition's digest, the method, the normalised URL and a hash
// of the body: an answer is reused only for the same request to the same definition.
func cacheKey(m *Matcher, req *Request, digest string) string {
	sum := sha256.Sum256(req.RawBody)
	return req.Route + cacheKeySep + digest + cacheKeySep + req.Method + " " + m.NormalizeURL(req.URL) + " " + hex.EncodeToString(sum[:8])
}

func statusOf(r *Response) int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// responseHeader returns the default headers overlaid with the
// response's own.
func responseHeader(st *state, r *Response) http.Header {
	h := st.defHeader.Clone()
	if h == nil {
		h = http.Header{}
	}
	for k, v := range r.Headers {
		h.Set(k, v)
	}
	return h
}

// render turns a response into status, header and body bytes.
func render(st *state, r *Response) (int, http.Header, []byte, error) {
	h := responseHeader(st, r)
	body, err := encodeBody(r, h.Get("Content-Type"))
	if err != nil {
		return 0, nil, nil, err
	}
	return statusOf(r), h, body, nil
}

// encodeBody returns the body bytes of a response whose Content-Type is
// ctype.
func encodeBody(r *Response, ctype string) ([]byte, error) {
	if r.Body != nil {
		return r.Body, nil
	}
	switch d := r.Data.(type) {
	case nil:
		return nil, nil
	case []byte:
		return d, nil
	case json.RawMessage:
		return d, nil
	case string:
		if strings.Contains(ctype, "json") {
			return json.Marshal(d)
		}
		return []byte(d), nil
	default:
		return json.Marshal(d)
	}
}

var statusLines sync.Map // int -> string

func statusLine(code int, text string) string {
	if text != "" {
		return strconv.Itoa(code) + " " + text
	}
	if s, ok := statusLines.Load(code); ok {
		return s.(string)
	}
	s := strconv.Itoa(code) + " " + http.StatusText(code)
	statusLines.Store(code, s)
	return s
}

type respBody struct{ bytes.Reader }

func (*respBody) Close() error { return nil }

func readBody(rc io.ReadCloser, n int64) ([]byte, error) {
	if rc == nil || rc == http.NoBody {
		return nil, nil
	}
	defer rc.Close()
	if n > 0 && n <= maxBody {
		b := make([]byte, n)
		_, err := io.ReadFull(rc, b)
		return b, err
	}
	return io.ReadAll(io.LimitReader(rc, maxBody))
}

// RoundTrip answers req from the mocks (the RoundTripper face). Unmatched
// requests go to the wrapped transport when FallbackToNetwork is on, and
// otherwise fail with an [*Error] of [CodeRouteMatchFailed] listing the
// closest routes. A handler or middleware failure is returned as an
// [*Error] too.
func (ic *Interceptor) RoundTrip(r *http.Request) (*http.Response, error) {
	ic.life.RLock()
	defer ic.life.RUnlock()
	st := ic.state.Load()
	var lk lookup
	ic.route(st, r.Method, r.URL, false, &lk)
	if lk.pass {
		return ic.transport.RoundTrip(r)
	}
	if lk.e == nil {
		rawURL := r.URL.String()
		ic.stats.recordUnmatched(r.Method, rawURL)
		if st.cfg.FallbackToNetwork {
			return ic.transport.RoundTrip(r)
		}
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, ic.noMatch(st, r.Method, rawURL, lk.path)
	}
	b, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("mock: read request body: %w", err)
	}
	req := ic.newRequest(st, r.Method, r.URL.String(), r.URL, r.Header, b, &lk)
	resp, err := ic.execute(r.Context(), st, lk.e.handler, req)
	if err != nil {
		return nil, err
	}
	status, h, out, err := render(st, resp)
	if err != nil {
		return nil, &Error{Code: CodeHandlerExecution, Route: req.Route, Message: "encode response data", Err: err}
	}
	rb := &respBody{}
	rb.Reset(out)
	return &http.Response{
		Status:        statusLine(status, resp.StatusText),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          rb,
		ContentLength: int64(len(out)),
		Request:       r,
	}, nil
}

// ServeHTTP answers r from the mocks (the Handler face). Unmatched and
// ignored requests are proxied to the target (see [WithTarget]) when
// FallbackToNetwork is on; otherwise an unmatched request gets a 404 JSON
// body naming ROUTE_MATCH_FAILED and the closest routes. A handler or
// middleware failure gets a 500 JSON body naming its code.
func (ic *Interceptor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ic.life.RLock()
	defer ic.life.RUnlock()
	st := ic.state.Load()
	var lk lookup
	ic.route(st, r.Method, r.URL, true, &lk)
	if lk.pass || lk.e == nil {
		if !lk.pass {
			ic.stats.recordUnmatched(r.Method, r.URL.RequestURI())
		}
		if st.cfg.FallbackToNetwork && ic.fallback != nil {
			ic.fallback.ServeHTTP(w, r)
			return
		}
		e := ic.noMatch(st, r.Method, r.URL.RequestURI(), lk.path)
		if lk.pass {
			e.Message = fmt.Sprintf("%s %s is not intercepted (disabled, ignored or outside the base URL) and there is no fallback target", r.Method, r.URL.RequestURI())
		}
		writeError(w, http.StatusNotFound, e)
		return
	}
	b, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "error": "Bad Request", "message": "read body: " + err.Error()})
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	req := ic.newRequest(st, r.Method, scheme+"://"+r.Host+r.URL.RequestURI(), r.URL, r.Header, b, &lk)
	req.RemoteAddr = r.RemoteAddr
	resp, err := ic.execute(r.Context(), st, lk.e.handler, req)
	if err != nil {
		var me *Error
		if errors.As(err, &me) {
			writeError(w, http.StatusInternalServerError, me)
		} else {
			writeError(w, http.StatusInternalServerError, &Error{Code: CodeHandlerExecution, Route: req.Route, Message: err.Error()})
		}
		return
	}
	status, h, out, err := render(st, resp)
	if err != nil {
		writeError(w, http.StatusInternalServerError, &Error{Code: CodeHandlerExecution, Route: req.Route, Message: "encode response data", Err: err})
		return
	}
	dst := w.Header()
	for k, v := range h {
		dst[k] = v
	}
	dst.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(out)
	}
}

// writeError writes an error as JSON: statusCode, error, code, message
// and, for unmatched requests, closest.
func writeError(w http.ResponseWriter, status int, e *Error) {
	body := map[string]any{
		"statusCode": status,
		"error":      http.StatusText(status),
		"code":       string(e.Code),
		"message":    e.Message,
	}
	if e.Err != nil {
		body["message"] = e.Message + ": " + e.Err.Error()
	}
	if e.Route != "" {
		body["route"] = e.Route
	}
	if e.Code == CodeRouteMatchFailed {
		closest := e.Closest
		if closest == nil {
			closest = []string{}
		}
		body["closest"] = closest
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// log writes one record when logging is on and level passes the
// configured level.
func (ic *Interceptor) log(st *state, level slog.Level, msg string, args ...any) {
	if st == nil || !st.cfg.Logging.Enabled || level < st.cfg.Logging.Level {
		return
	}
	ic.logger.Log(context.Background(), level, "mock: "+msg, args...)
}

// Explain reports which route would answer method and rawURL (absolute or
// a path), without running anything or counting it in the stats.
func (ic *Interceptor) Explain(method, rawURL string) RouteMatchInfo {
	start := time.Now()
	u, err := url.Parse(rawURL)
	if err != nil {
		return RouteMatchInfo{ProcessingTime: time.Since(start)}
	}
	st := ic.state.Load()
	var lk lookup
	ic.route(st, method, u, u.Host == "", &lk)
	info := RouteMatchInfo{Matched: lk.e != nil}
	if lk.e != nil {
		info.MatchedRoute = lk.e.key
		info.ExtractedParams = params(lk.e.segs, lk.segs)
		if info.ExtractedParams == nil {
			info.ExtractedParams = map[string]string{}
		}
		info.Score = score(lk.e.segs, len(lk.segs))
	}
	info.ProcessingTime = time.Since(start)
	return info
}
