package mock

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Middleware runs around mocked requests.
// Middleware with a higher Priority runs earlier, for every hook; equal
// priorities keep their order in Config.Middleware. A hook that returns an
// error or panics fails the request with [CodeMiddleware].
type Middleware struct {
	// Name identifies the middleware in errors and logs.
	Name string
	// Priority orders the middleware: higher runs earlier.
	Priority int
	// OnRequest sees the request before the handler and may change it in
	// place. A non-nil response answers the request at once: the handler,
	// the cache and later OnRequest hooks are skipped, OnResponse hooks
	// still run.
	OnRequest func(ctx context.Context, req *Request) (*Response, error)
	// OnResponse sees each response; a non-nil result replaces it.
	OnResponse func(ctx context.Context, resp *Response, req *Request) (*Response, error)
	// OnError sees a handler or middleware failure; a non-nil response
	// recovers from it and is answered instead.
	OnError func(ctx context.Context, err error, req *Request) (*Response, error)
}

// sortMiddleware returns the middleware ordered by priority, higher first.
func sortMiddleware(mw []Middleware) []Middleware {
	out := append([]Middleware(nil), mw...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority > out[j].Priority })
	return out
}

// callHook runs one hook, turning a panic into an error.
func callHook(f func() (*Response, error)) (resp *Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// LoggingOptions configures [LoggingMiddleware].
type LoggingOptions struct {
	// Logger receives the records. Default slog.Default().
	Logger *slog.Logger
	// Level is the level of request and response records. Default
	// slog.LevelInfo; failures are logged at slog.LevelError.
	Level slog.Level
	// LogBody adds the raw request body to the request record.
	LogBody bool
}

// LoggingMiddleware returns middleware that logs every request, response
// and failure. Its priority is 1000, so it runs first.
func LoggingMiddleware(opts LoggingOptions) Middleware {
	l := opts.Logger
	if l == nil {
		l = slog.Default()
	}
	return Middleware{
		Name:     "logging",
		Priority: 1000,
		OnRequest: func(ctx context.Context, req *Request) (*Response, error) {
			args := []any{"id", req.RequestID, "method", req.Method, "url", req.URL, "route", req.Route}
			if opts.LogBody && len(req.RawBody) > 0 {
				args = append(args, "body", string(req.RawBody))
			}
			l.Log(ctx, opts.Level, "mock request", args...)
			return nil, nil
		},
		OnResponse: func(ctx context.Context, resp *Response, req *Request) (*Response, error) {
			l.Log(ctx, opts.Level, "mock response", "id", req.RequestID, "route", req.Route, "status", statusOf(resp))
			return nil, nil
		},
		OnError: func(ctx context.Context, err error, req *Request) (*Response, error) {
			l.Log(ctx, slog.LevelError, "mock failure", "id", req.RequestID, "route", req.Route, "err", err)
			return nil, nil
		},
	}
}

// CORSOptions configures [CORSMiddleware] and [CORSHandler].
type CORSOptions struct {
	// AllowOrigins lists the allowed origins; "*" allows any origin. Default "*".
	AllowOrigins []string
	// AllowMethods default GET, POST, PUT, PATCH, DELETE, OPTIONS.
	AllowMethods []string
	// AllowHeaders default Content-Type, Authorization; "*" echoes the headers a preflight
	// asks for.
	AllowHeaders []string
	// ExposeHeaders lists response headers the browser may read. "*" means every header, as
	// the Fetch standard reads it for an answer without credentials; for one with credentials,
	// where "*" would be a header's name, it is the answer's own header names, listed (minus
	// the CORS-safelisted ones and Set-Cookie).
	ExposeHeaders []string
	// AllowCredentials sets Access-Control-Allow-Credentials for the origins listed by name:
	// their origin is echoed. An origin allowed only through "*" gets "*" and no
	// credentials, so no page can read an answer made with the user's cookies.
	AllowCredentials bool
	// MaxAge is how long a preflight answer may be cached; default 24h.
	MaxAge time.Duration
}

// corsPolicy is CORSOptions with defaults and the header values built once.
type corsPolicy struct {
	opts                                          CORSOptions
	allowMethods, allowHeaders, maxAge, exposeHdr string
	echoHeaders                                   bool
	exposeAll                                     bool // ExposeHeaders holds "*"
}

func newCORSPolicy(opts CORSOptions) *corsPolicy {
	if len(opts.AllowOrigins) == 0 {
		opts.AllowOrigins = []string{"*"}
	}
	if len(opts.AllowMethods) == 0 {
		opts.AllowMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
	}
	if len(opts.AllowHeaders) == 0 {
		opts.AllowHeaders = []string{"Content-Type", "Authorization"}
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = 24 * time.Hour
	}
	return &corsPolicy{
		opts:         opts,
		allowMethods: strings.Join(opts.AllowMethods, ", "),
		allowHeaders: strings.Join(opts.AllowHeaders, ", "),
		maxAge:       strconv.Itoa(int(opts.MaxAge / time.Second)),
		exposeHdr:    strings.Join(opts.ExposeHeaders, ", "),
		echoHeaders:  slices.Contains(opts.AllowHeaders, "*"),
		exposeAll:    slices.Contains(opts.ExposeHeaders, "*"),
	}
}

// origin returns the Access-Control-Allow-Origin value for the request's origin ("" for
// none) and whether credentials are allowed.
func (p *corsPolicy) origin(o string) (string, bool) {
	star := false
	for _, a := range p.opts.AllowOrigins {
		if a == "*" {
			star = true
		} else if strings.EqualFold(a, o) {
			return o, p.opts.AllowCredentials
		}
	}
	if star {
		return "*", false
	}
	return "", false
}

// set adds the CORS headers for an answer to origin o (a preflight's too when preflight).
// answer holds the answer's own headers: with credentials allowed, "*" in ExposeHeaders
// exposes them by name.
func (p *corsPolicy) set(set func(k, v string), o string, preflight bool, reqHeaders string, answer http.Header) bool {
	allow, creds := p.origin(o)
	if allow == "" {
		return false
	}
	set("Access-Control-Allow-Origin", allow)
	set("Vary", "Origin")
	if creds {
		set("Access-Control-Allow-Credentials", "true")
	}
	switch {
	case creds && p.exposeAll:
		if v := exposeList(p.opts.ExposeHeaders, answer); v != "" {
			set("Access-Control-Expose-Headers", v)
		}
	case p.exposeHdr != "":
		set("Access-Control-Expose-Headers", p.exposeHdr)
	}
	if preflight {
		set("Access-Control-Allow-Methods", p.allowMethods)
		switch {
		case p.echoHeaders && reqHeaders != "":
			set("Access-Control-Allow-Headers", reqHeaders)
		default:
			set("Access-Control-Allow-Headers", p.allowHeaders)
		}
		set("Access-Control-Max-Age", p.maxAge)
	}
	return true
}

func isPreflight(method string, h http.Header) bool {
	return method == http.MethodOptions && h.Get("Access-Control-Request-Method") != ""
}

// CORSMiddleware returns middleware that answers CORS preflight requests
// (OPTIONS with Access-Control-Request-Method) with 204 and adds the CORS
// headers to every response. A preflight is answered only for a route that
// has a mock: register "OPTIONS /path" or "* /path" routes, or use a
// catch-all "OPTIONS /*"; or
// put [CORSHandler] in front of the whole server. Priority 900.
func CORSMiddleware(opts CORSOptions) Middleware {
	p := newCORSPolicy(opts)
	return Middleware{
		Name:     "cors",
		Priority: 900,
		OnRequest: func(_ context.Context, req *Request) (*Response, error) {
			if !isPreflight(req.Method, req.Header) {
				return nil, nil
			}
			h := map[string]string{}
			if !p.set(func(k, v string) { h[k] = v }, req.Header.Get("Origin"), true, req.Header.Get("Access-Control-Request-Headers"), nil) {
				return nil, nil
			}
			return &Response{Status: StatusNoContent, Headers: h, Body: []byte{}}, nil
		},
		OnResponse: func(_ context.Context, resp *Response, req *Request) (*Response, error) {
			o := req.Header.Get("Origin")
			if o == "" {
				return nil, nil
			}
			r := *resp
			r.Headers = cloneHeaders(resp.Headers)
			answer := make(http.Header, len(resp.Headers))
			for k, v := range resp.Headers {
				answer.Set(k, v)
			}
			p.set(func(k, v string) { r.Headers[k] = v }, o, false, "", answer)
			return &r, nil
		},
	}
}

// CORSHandler is [CORSMiddleware] for a whole http.Handler: it answers every CORS preflight
// itself (204, whatever the path) and sets the CORS headers on every answer next gives to a
// request with an allowed Origin, mocked, proxied or not. They replace the CORS headers the
// answer carries (a proxied target's own Access-Control-Allow-Origin, say), so a browser
// sees one value, the handler's policy.
func CORSHandler(opts CORSOptions, next http.Handler) http.Handler {
	p := newCORSPolicy(opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("Origin")
		if o == "" {
			next.ServeHTTP(w, r)
			return
		}
		if isPreflight(r.Method, r.Header) {
			h := w.Header()
			if p.set(headerSetter(h), o, true, r.Header.Get("Access-Control-Request-Headers"), nil) {
				h.Add("Vary", "Access-Control-Request-Method")
				h.Add("Vary", "Access-Control-Request-Headers")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if allow, _ := p.origin(o); allow == "" {
			next.ServeHTTP(w, r)
			return
		}
		cw := &corsWriter{ResponseWriter: w, p: p, origin: o}
		next.ServeHTTP(cw, r)
		cw.apply() // an answer with no body nor WriteHeader gets its headers too
	})
}

// headerSetter sets CORS headers on h: Vary is added (once), the others replace.
func headerSetter(h http.Header) func(k, v string) {
	return func(k, v string) {
		if k != "Vary" {
			h.Set(k, v)
			return
		}
		for _, have := range h.Values("Vary") {
			for _, f := range strings.Split(have, ",") {
				if strings.EqualFold(strings.TrimSpace(f), v) {
					return
				}
			}
		}
		h.Add(k, v)
	}
}

// corsHeaders are the CORS headers of an answer, which the policy's replace.
var corsHeaders = []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials",
	"Access-Control-Expose-Headers", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
	"Access-Control-Max-Age"}

// corsWriter sets the policy's CORS headers on an answer when its header is written: then
// the answer's own headers are known (those to expose), and the CORS headers it carries can
// be replaced.
type corsWriter struct {
	http.ResponseWriter
	p      *corsPolicy
	origin string
	done   bool
}

func (cw *corsWriter) apply() {
	if cw.done {
		return
	}
	cw.done = true
	h := cw.ResponseWriter.Header()
	for _, k := range corsHeaders {
		h.Del(k)
	}
	cw.p.set(headerSetter(h), cw.origin, false, "", h)
}

// WriteHeader sets the CORS headers on a final answer (not on a 1xx one) and writes it.
func (cw *corsWriter) WriteHeader(code int) {
	if code >= 200 {
		cw.apply()
	}
	cw.ResponseWriter.WriteHeader(code)
}

func (cw *corsWriter) Write(b []byte) (int, error) {
	cw.apply()
	return cw.ResponseWriter.Write(b)
}

// Flush sends what is written so far (a proxied stream), when the writer below can.
func (cw *corsWriter) Flush() {
	cw.apply()
	_ = http.NewResponseController(cw.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer below (hijacking, deadlines).
func (cw *corsWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

// safelisted are the CORS-safelisted response headers: a browser lets a page read them
// without Access-Control-Expose-Headers.
var safelisted = map[string]bool{"Cache-Control": true, "Content-Language": true, "Content-Length": true,
	"Content-Type": true, "Expires": true, "Last-Modified": true, "Pragma": true}

// exposeList is the Access-Control-Expose-Headers value of a credentialed answer, where "*"
// would name a header called "*" (the Fetch standard): the names listed besides "*", and
// for "*" the answer's own headers, minus the safelisted ones, the CORS headers, Vary (for
// caches) and Set-Cookie (which no page may read). Sorted; "" when there is none.
func exposeList(listed []string, answer http.Header) string {
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		k = http.CanonicalHeaderKey(k)
		if k == "" || k == "*" || seen[k] || safelisted[k] || strings.HasPrefix(k, "Access-Control-") ||
			k == "Set-Cookie" || k == "Set-Cookie2" || k == "Vary" {
			return
		}
		seen[k] = true
		out = append(out, k)
	}
	for _, k := range listed {
		add(k)
	}
	for k := range answer {
		add(k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func cloneHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+4)
	for k, v := range h {
		out[k] = v
	}
	return out
}

// DelayMiddleware returns middleware that waits d before each handler runs, in addition
// to the configured delay. The wait ends early when the request's context is done.
// Priority 100.
func DelayMiddleware(d Delay) Middleware {
	return Middleware{
		Name:     "delay",
		Priority: 100,
		OnRequest: func(ctx context.Context, _ *Request) (*Response, error) {
			return nil, sleep(ctx, d.Pick())
		},
	}
}

// AuthOptions configures [AuthMiddleware].
type AuthOptions struct {
	// Header is the header checked; default "Authorization".
	Header string
	// Scheme is the required scheme prefix of the header value; default
	// "Bearer" when Header is Authorization, none otherwise.
	Scheme string
	// Tokens lists the accepted credentials (after the scheme). Empty
	// accepts any non-empty credential.
	Tokens []string
	// Validate, when set, decides instead of Tokens.
	Validate func(credential string, req *Request) bool
	// Skip, when set, exempts requests from the check.
	Skip func(req *Request) bool
}

// AuthMiddleware returns middleware that answers 401 with
// {"statusCode":401,"message":"Unauthorized","error":"Unauthorized"} when
// the bearer token (or the configured header) is missing or not accepted.
// CORS preflight requests (OPTIONS with Access-Control-Request-Method) pass.
// Priority 800.
func AuthMiddleware(opts AuthOptions) Middleware {
	if opts.Header == "" {
		opts.Header = "Authorization"
		if opts.Scheme == "" {
			opts.Scheme = "Bearer"
		}
	}
	accepted := make(map[string]bool, len(opts.Tokens))
	for _, t := range opts.Tokens {
		accepted[t] = true
	}
	return Middleware{
		Name:     "auth",
		Priority: 800,
		OnRequest: func(_ context.Context, req *Request) (*Response, error) {
			if (req.Method == "OPTIONS" && req.Header.Get("Access-Control-Request-Method") != "") ||
				(opts.Skip != nil && opts.Skip(req)) {
				return nil, nil
			}
			cred := strings.TrimSpace(req.Header.Get(opts.Header))
			if opts.Scheme != "" {
				if len(cred) <= len(opts.Scheme) || !strings.EqualFold(cred[:len(opts.Scheme)], opts.Scheme) || cred[len(opts.Scheme)] != ' ' {
					return unauthorized(), nil
				}
				cred = strings.TrimSpace(cred[len(opts.Scheme):])
			}
			ok := cred != ""
			switch {
			case !ok:
			case opts.Validate != nil:
				ok = opts.Validate(cred, req)
			case len(accepted) > 0:
				ok = accepted[cred]
			}
			if !ok {
				return unauthorized(), nil
			}
			return nil, nil
		},
	}
}

func unauthorized() *Response {
	return &Response{Status: StatusUnauthorized, Data: map[string]any{"statusCode": 401, "message": "Unauthorized", "error": "Unauthorized"},
		Headers: map[string]string{"WWW-Authenticate": "Bearer"}}
}

// RateLimitOptions configures [RateLimitMiddleware].
type RateLimitOptions struct {
	// Limit is the number of requests allowed per window and key; default
	// 100.
	Limit int
	// Window is the length of a fixed window; default one minute.
	Window time.Duration
	// Key groups requests; default the client address (X-Forwarded-For,
	// then RemoteAddr), so all in-process requests share one key.
	Key func(req *Request) string
	// MaxKeys bounds the keys tracked per window; further keys share one
	// counter. Default 10000.
	MaxKeys int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// RateLimitMiddleware returns middleware that answers 429 with
// {"statusCode":429,"message":"Too Many Requests","error":"ThrottlerException"}
// and a Retry-After header once a key exceeds Limit requests in the
// current window. Its memory is bounded by MaxKeys. Priority 700.
func RateLimitMiddleware(opts RateLimitOptions) Middleware {
	if opts.Limit <= 0 {
		opts.Limit = 100
	}
	if opts.Window <= 0 {
		opts.Window = time.Minute
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 10000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Key == nil {
		opts.Key = func(req *Request) string {
			if f := req.Header.Get("X-Forwarded-For"); f != "" {
				return strings.TrimSpace(strings.Split(f, ",")[0])
			}
			if host, _, err := net.SplitHostPort(req.RemoteAddr); err == nil {
				return host
			}
			return req.RemoteAddr
		}
	}
	var (
		mu     sync.Mutex
		start  time.Time
		counts = map[string]int{}
	)
	return Middleware{
		Name:     "rate-limit",
		Priority: 700,
		OnRequest: func(_ context.Context, req *Request) (*Response, error) {
			now := opts.Now()
			key := opts.Key(req)
			mu.Lock()
			if now.Sub(start) >= opts.Window || now.Before(start) {
				start = now.Truncate(opts.Window)
				clear(counts)
			}
			if _, ok := counts[key]; !ok && len(counts) >= opts.MaxKeys {
				key = OtherKey
			}
			counts[key]++
			n := counts[key]
			retry := start.Add(opts.Window).Sub(now)
			mu.Unlock()
			if n <= opts.Limit {
				return nil, nil
			}
			return &Response{Status: http.StatusTooManyRequests,
				Data:    map[string]any{"statusCode": 429, "message": "Too Many Requests", "error": "ThrottlerException"},
				Headers: map[string]string{"Retry-After": strconv.Itoa(int((retry + time.Second - 1) / time.Second))}}, nil
		},
	}
}
