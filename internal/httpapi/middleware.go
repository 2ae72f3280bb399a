package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/metrics"
)

type ctxKey int

const (
	keyRequest ctxKey = iota
	keyCaller
)

// requestInfo is what the outer middleware knows about a request, in one context value.
type requestInfo struct {
	id       string // made by the server (ai.NewRequestID): never the client's
	clientID string // the client's X-Request-Id when it is sane (logged, never a key)
	base     *slog.Logger
	log      *slog.Logger // base with the request id, built on first use
	maxBody  int64
	mem      *memlimit.Limit // the bound request bodies are read within
	held     int64           // bytes of mem the request's body took, given back at its end
	caller   *auth.Caller    // set by requireAuth

	// Set by route: the matched pattern ("" when none matched) and its handler, and the
	// metrics' route label (the pattern, or for a preflight the pattern it asks about).
	pattern string
	handler http.Handler
	route   string
	// format answers the route's failures (nil: the envelope), set by route from the
	// handler's group (withFormat).
	format errorFormat
}

func infoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(keyRequest).(*requestInfo)
	return ri
}

// loggerFrom returns the request's logger (with its request id), or a discarding one.
func loggerFrom(ctx context.Context) *slog.Logger {
	ri := infoFrom(ctx)
	if ri == nil {
		return slog.New(slog.DiscardHandler)
	}
	if ri.log == nil {
		ri.log = ri.base.With("request_id", ri.id)
		if ri.clientID != "" {
			ri.log = ri.log.With("client_request_id", ri.clientID)
		}
	}
	return ri.log
}

// RequestID returns the request's id, made by the server for each request.
func RequestID(ctx context.Context) string {
	if ri := infoFrom(ctx); ri != nil {
		return ri.id
	}
	return ""
}

// withMaxBody gives h, a route's handler, the request body limit n (0: the server's).
func withMaxBody(n int64, h http.Handler) http.Handler {
	if n <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ri := infoFrom(r.Context()); ri != nil {
			ri.maxBody = n
		}
		h.ServeHTTP(w, r)
	})
}

func maxBodyFrom(ctx context.Context) int64 {
	if ri := infoFrom(ctx); ri != nil && ri.maxBody > 0 {
		return ri.maxBody
	}
	return 1 << 20
}

// CallerFrom returns the authenticated caller of a request that passed requireAuth.
func CallerFrom(ctx context.Context) (auth.Caller, bool) {
	if ri := infoFrom(ctx); ri != nil && ri.caller != nil {
		return *ri.caller, true
	}
	c, ok := ctx.Value(keyCaller).(auth.Caller)
	return c, ok
}

// validRequestID accepts a client-supplied id only if it is short and printable ASCII, so it
// cannot forge log lines. It is logged beside the request's own id and used for nothing else:
// the request id is the _id of an AI call's usage record, and a client could reuse its own.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// logPath is the request's path as log lines show it: a segment that may be a credential
// (see secretLike: a key or token pasted in place of an id) is cut to its first characters,
// so that no log line holds a usable secret.
func logPath(r *http.Request) string {
	p := r.URL.Path
	if len(p) < minSecret {
		return p
	}
	segments := strings.Split(p, "/")
	for i, s := range segments {
		if secretLike(s) {
			segments[i] = cutSecret(s)
		}
	}
	return strings.Join(segments, "/")
}

// minSecret is the length from which a run of token characters may be a credential: an API
// key's body alone is 43 characters, a JWT longer.
const minSecret = 32

// secretLike reports whether s may hold a credential: an API key (its prefix in any case), a
// JWT (the "eyJ" of its JSON header, then two dots), or a run of at least minSecret token
// characters that is not a UUID (the ids of keys and requests): a key without its prefix.
func secretLike(s string) bool {
	if len(s) < len(keys.Prefix) {
		return false
	}
	if strings.Contains(strings.ToLower(s), keys.Prefix) || strings.Contains(s, "eyJ") && strings.Count(s, ".") >= 2 {
		return true
	}
	if len(s) < minSecret || uuid.Validate(s) == nil {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
}

// cutSecret is s as a log shows a possible credential: an API key's prefix (in s's case) or
// s's first 4 bytes, then "…".
func cutSecret(s string) string {
	if j := strings.Index(strings.ToLower(s), keys.Prefix); j >= 0 {
		return s[:j+len(keys.Prefix)] + "…"
	}
	return s[:4] + "…"
}

// recorder remembers the status and size of an answer.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer (flush, deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe is the outermost middleware: request id, per-request logger, body limit, panic
// recovery, one access-log line (when logAccess is set) and the HTTP metrics of each request.
func observe(log *slog.Logger, logAccess bool, maxBody int64, mem *memlimit.Limit, m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: ai.NewRequestID(), base: log, maxBody: maxBody, mem: mem}
		if cid := r.Header.Get("X-Request-Id"); validRequestID(cid) && !secretLike(cid) {
			info.clientID = cid
		}
		rec := &recorder{ResponseWriter: w}
		w.Header().Set("X-Request-Id", info.id)
		ctx := context.WithValue(r.Context(), keyRequest, info)
		defer func() {
			mem.Give(info.held)
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				loggerFrom(ctx).Error("panic serving request", "panic", fmt.Sprint(p), "method", r.Method, "path", logPath(r),
					"stack", string(debug.Stack()))
				if rec.status == 0 {
					writeFailure(rec, formatFrom(ctx), apperr.E(apperr.Internal)) // logged above
				}
			}
			// The metrics count the request before its answer leaves, so that a client that
			// has its answer finds it counted.
			if m != nil {
				m.ObserveHTTP(info.route, r.Method, rec.status, time.Since(start))
			}
			if rec.status != 0 && w.Header().Get("Content-Length") != "" {
				// A whole answer of known length leaves now, not after its log line: the
				// client does not wait for the line's formatting and write. (Without a
				// length, a flush would turn the answer into a chunked one.)
				_ = http.NewResponseController(w).Flush()
			}
			if logAccess {
				accessLog(ctx, log, r, rec, info, start)
			}
		}()
		next.ServeHTTP(rec, r.WithContext(ctx))
	})
}

// accessLog writes the request's line. The record goes to the handler directly: Logger.LogAttrs
// would also capture the caller's program counter, which an access log never shows. The
// duration is a slog.Duration (nanoseconds in JSON, "1.5ms" in text): JSON handlers write a
// float through encoding/json.
func accessLog(ctx context.Context, log *slog.Logger, r *http.Request, rec *recorder, info *requestInfo, start time.Time) {
	h := log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	now := time.Now()
	line := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	line.AddAttrs(
		slog.String("request_id", info.id),
		slog.String("method", r.Method),
		slog.String("path", logPath(r)),
		slog.Int("status", rec.status),
		slog.Int("bytes", rec.bytes),
		slog.Duration("duration", now.Sub(start)),
		slog.String("remote", r.RemoteAddr),
	)
	if info.clientID != "" {
		line.AddAttrs(slog.String("client_request_id", info.clientID))
	}
	_ = h.Handle(ctx, line)
}

// route finds the request's route once, before the limits run, and keeps its pattern (the
// metrics' route label), handler and error format in the request's info. A CORS preflight is
// labelled with the route of the method it asks about.
func route(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := infoFrom(r.Context())
		if ri == nil {
			next.ServeHTTP(w, r)
			return
		}
		ri.handler, ri.pattern = mux.Handler(r)
		ri.route = ri.pattern
		if f, ok := ri.handler.(formatted); ok {
			ri.format = f.format
		}
		if ri.route == "" && isPreflight(r) {
			probe := *r
			probe.Method = r.Header.Get("Access-Control-Request-Method")
			_, ri.route = mux.Handler(&probe)
		}
		next.ServeHTTP(w, r)
	})
}

// cannot answers a request no route serves (404) or serves with another method (405), in the
// envelope: "Cannot GET /api/nope".
func cannot(w http.ResponseWriter, r *http.Request, status int) {
	writeEnvelope(w, status, fmt.Sprintf("Cannot %s %s", r.Method, r.URL.Path))
}

// dispatch serves the route that route found, and answers routes the mux does not know, and
// known routes with a wrong method, in the error envelope (the standard mux answers both in
// plain text).
// private marks every answer outside the console as the caller's alone: no cache, the
// browser's or a proxy's, keeps it (a signed-in admin's user list stayed in the browser's
// disk cache after signing out), and no browser reads it as another type than the one it
// declares. A handler may set its own Cache-Control (the OpenAPI description is public); the
// console sets its own headers.
func private(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/console") {
			h := w.Header()
			h["Cache-Control"] = noStore // shared, never written to: as jsonContentType
			h["X-Content-Type-Options"] = noSniff
		}
		next.ServeHTTP(w, r)
	})
}

var noStore, noSniff = []string{"no-store"}, []string{"nosniff"}

func dispatch(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h http.Handler
		var pattern string
		if ri := infoFrom(r.Context()); ri != nil && ri.handler != nil {
			h, pattern = ri.handler, ri.pattern
		} else {
			h, pattern = mux.Handler(r)
		}
		switch {
		case pattern != "" && strings.Contains(pattern, "{"):
			mux.ServeHTTP(w, r) // routed again, to set the path values the handler reads
			return
		case pattern != "":
			h.ServeHTTP(w, r) // what mux.ServeHTTP would call, without routing twice
			return
		}
		probe := &headerProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		switch probe.status {
		case http.StatusMethodNotAllowed:
			if allow := probe.header.Get("Allow"); allow != "" {
				w.Header().Set("Allow", allow)
			}
			cannot(w, r, http.StatusMethodNotAllowed)
		case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			// The mux redirects to a cleaned path; answer as an unknown route instead of
			// redirecting API clients.
			fallthrough
		default:
			cannot(w, r, http.StatusNotFound)
		}
	})
}

// closeAfterChunked closes the connection after answering a request whose body is chunked.
// Go's server reads such a body by its chunks and drops a Content-Length sent beside them, so
// a request carrying both is served as the chunks say while a proxy in front that frames by
// Content-Length may read it otherwise: what it takes for the next request on the connection
// would be smuggled past it. HTTP/1.1 (RFC 9112, 6.1) requires closing the connection after
// such a request; the header is gone by the time a handler runs, so every chunked request
// closes its connection. Clients send JSON with a Content-Length, and keep their connections.
func closeAfterChunked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// limitHeaders answers a request whose header block (request line and header fields, as sent)
// exceeds max with 431 in the error envelope.
func limitHeaders(max int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerSize(r) > max {
			writeEnvelope(w, http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headerSize is the size of r's request line and header fields as HTTP/1.1 sends them.
func headerSize(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2 + len("Host: ") + len(r.Host) + 2
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + 2 + len(v) + 2
		}
	}
	return n
}

// headerProbe captures what the mux's own not-found or method-not-allowed handler would answer.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }

// TokenVerifier checks an access token and returns its caller.
type TokenVerifier interface {
	Verify(token string) (auth.Caller, error)
}

// AccountResolver returns the current state of the user a verified credential names: its
// roles now, Unauthorized when the user no longer exists (auth.Service.Current).
type AccountResolver interface {
	Current(ctx context.Context, userID string) (auth.Caller, error)
}

// authenticator turns a request's credentials into its caller. Each kind of credential is one
// case of authenticate; the user it names is then resolved to its current state.
type authenticator struct {
	tokens   TokenVerifier
	accounts AccountResolver  // nil: the credential's claims are trusted as they are
	keys     KeyAuthenticator // nil: personal API keys are refused
}

// errUnauthorized is every authentication failure, answered as the same 401.
var errUnauthorized = apperr.E(apperr.Unauthorized, "Unauthorized")

// authenticate returns the caller of r's credentials: a bearer access token, or, where
// keysAllowed (the AI routes and /v1), a personal API key, which acts as its user. Either way
// the caller is the user as it stands now (accounts), so that a deleted user's tokens and keys
// stop working with the account.
func (a *authenticator) authenticate(r *http.Request, keysAllowed bool) (auth.Caller, error) {
	header := r.Header.Get("Authorization")
	if header == "" && keysAllowed {
		// Anthropic's SDKs send the key in X-Api-Key.
		if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
			header = "Bearer " + k
		}
	}
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return auth.Caller{}, errUnauthorized
	}
	var c auth.Caller
	switch {
	case keys.LooksLikeKey(token):
		if !keysAllowed || a.keys == nil {
			return auth.Caller{}, errUnauthorized
		}
		owner, err := a.keys.Authenticate(r.Context(), token)
		if err != nil {
			return auth.Caller{}, err // Unauthorized, or Unavailable when the store fails
		}
		c = auth.Caller{ID: owner.UserID}
	case a.tokens != nil:
		var err error
		if c, err = a.tokens.Verify(token); err != nil {
			return auth.Caller{}, errUnauthorized
		}
	default:
		return auth.Caller{}, errUnauthorized
	}
	if a.accounts == nil {
		return c, nil
	}
	return a.accounts.Current(r.Context(), c.ID)
}

// requireAuth lets a request through only with valid credentials of a user that still exists
// (a personal API key only where keysAllowed), and puts its caller, with the user's current
// roles, in the request context.
func requireAuth(a *authenticator, keysAllowed bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := a.authenticate(r, keysAllowed)
		if err != nil {
			if apperr.KindOf(err) == apperr.Unauthorized {
				err = errUnauthorized // every authentication failure is answered alike
			}
			writeError(w, r, err)
			return
		}
		// Behind observe, the caller joins the request's info, sparing a context value and a
		// copy of the request.
		if ri := infoFrom(r.Context()); ri != nil {
			ri.caller = &c
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCaller, c)))
	})
}

// requireRole lets a request through only when its caller holds role (after requireAuth).
func requireRole(role string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := CallerFrom(r.Context())
		if !ok || !c.HasRole(role) {
			writeError(w, r, apperr.E(apperr.Forbidden, "Forbidden resource"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
