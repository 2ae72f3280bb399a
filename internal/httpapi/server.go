// Package httpapi is the HTTP face of the services: routes, middleware (request id, access
// log, panic recovery, rate limits, authentication) and the error format of each group of
// routes (the envelope of /api, OpenAI's on /v1).
package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/acme/app/internal/admin"
	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/ratelimit"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// Options configures the cross-cutting behaviour of the API.
type Options struct {
	Logger       *slog.Logger
	MaxBodyBytes int64 // request body limit (413 past it)
	// MaxAIBodyBytes is the body limit of the routes that take images (/v1/chat/completions,
	// /v1/responses, /v1/messages) or batches of inputs (/v1/embeddings); 0: MaxBodyBytes.
	MaxAIBodyBytes int64
	// Memory is the process's bound on buffered bytes (server.max_buffered_bytes), shared
	// with the AI service: request bodies are read within it (nil: none), and a body that
	// does not fit is answered 503 with Retry-After.
	Memory *memlimit.Limit
	// NoAccessLog drops the one access-log line per request (the mock server's choice unless
	// asked to log requests); failures are still logged.
	NoAccessLog bool

	Limiter        ratelimit.Limiter // nil: an in-memory limiter
	RateLimit      int               // requests per RateWindow per client, every route
	RateWindow     time.Duration     //
	AuthRateLimit  int               // stricter limit on register and login
	AuthRateWindow time.Duration     //
	TrustedProxies []*net.IPNet      // X-Forwarded-For is honoured only from these

	// MaxHeaderBytes is the limit of a request's header block (431 in the envelope past it);
	// 0: 64 KiB. The http.Server's own limit must be higher (see HeaderReadLimit).
	MaxHeaderBytes int

	// CORS: origins allowed to call the API from a browser (empty: no CORS headers at all;
	// "*": any origin, only without credentials) and whether credentials are allowed.
	CORSOrigins     []string
	CORSCredentials bool

	Metrics *metrics.Metrics // nil: no metrics

	Version string // reported by /api/health
}

// DefaultMaxHeaderBytes is the header block limit when Options.MaxHeaderBytes is 0.
const DefaultMaxHeaderBytes = 64 << 10

// HeaderReadLimit is the http.Server.MaxHeaderBytes to pair with a header limit of max: the
// server reads up to it, so that the API answers a block over max with a 431 in the error
// envelope; past it, net/http closes the connection with a plain-text 431.
func HeaderReadLimit(max int) int {
	if max <= 0 {
		max = DefaultMaxHeaderBytes
	}
	return max + 1<<20
}

// Pinger checks that the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the services the API serves. A nil service leaves its routes unregistered.
type Deps struct {
	DB        Pinger             // health
	Tokens    TokenVerifier      // access tokens for protected routes
	Auth      *auth.Service      // register, login, profile
	AI        *ai.Service        // AI proxy
	Usage     *usage.Service     // usage summaries
	Templates *templates.Service // property templates
	DBCheck   *dbcheck.Service   // MongoDB utilities

	// Accounts resolves the user a verified token names to its current state (nil: Auth, if
	// set; with neither, a token's claims are trusted as they are).
	Accounts AccountResolver
	Keys     *keys.Service    // personal API keys (/api/keys; a key is accepted on the AI routes and /v1)
	Budget   *budget.Service  // GET /api/ai/budget
	Gateway  *gateway.Service // the OpenAI-compatible /v1
	Admin    *admin.Service   // /api/admin: users, their roles and budgets

	// Console serves the web console at /console and /console/… (nil: none). It is not part
	// of the API: no OpenAPI operation describes it.
	Console http.Handler
}

// NewServer returns the API's handler with every route and middleware in place.
func NewServer(opts Options, deps Deps) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.Limiter == nil {
		opts.Limiter = ratelimit.NewMemory(0)
	}
	if deps.Accounts == nil && deps.Auth != nil {
		deps.Accounts = deps.Auth
	}
	if opts.Metrics != nil && deps.DB != nil {
		opts.Metrics.SetStore(deps.DB.Ping)
	}
	rl := &rateLimiter{limiter: opts.Limiter, trusted: opts.TrustedProxies, log: opts.Logger, metrics: opts.Metrics}
	mux := http.NewServeMux()
	addRoutes(mux, opts, deps, rl)
	if deps.Console != nil {
		// An unknown file under /console/ answers the API's envelope, as every other path.
		if c, ok := deps.Console.(interface{ SetNotFound(http.Handler) }); ok {
			c.SetNotFound(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cannot(w, r, http.StatusNotFound) }))
		}
		mux.Handle("GET /console", deps.Console)
		mux.Handle("GET /console/", deps.Console)
	}
	global := rl.limit("", opts.RateLimit, opts.RateWindow)
	cors := newCORS(opts.CORSOrigins, opts.CORSCredentials)
	return observe(opts.Logger, !opts.NoAccessLog, opts.MaxBodyBytes, opts.Memory, opts.Metrics,
		private(closeAfterChunked(route(mux, limitHeaders(opts.MaxHeaderBytes, cors.wrap(global(dispatch(mux))))))))
}
