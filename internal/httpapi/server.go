// Package httpapi is the HTTP face of the services: routes, middleware (request id, access
// log, panic recovery, rate limits, authentication) and the error envelope.
package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/ratelimit"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// Options configures the cross-cutting behaviour of the API.
type Options struct {
	Logger       *slog.Logger
	MaxBodyBytes int64 // request body limit (413 past it)

	Limiter        ratelimit.Limiter // nil: an in-memory limiter
	RateLimit      int               // requests per RateWindow per client, every route
	RateWindow     time.Duration     //
	AuthRateLimit  int               // stricter limit on register and login
	AuthRateWindow time.Duration     //
	TrustedProxies []*net.IPNet      // X-Forwarded-For is honoured only from these

	Version string // reported by /api/health
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
	Keys      *keys.Service      // personal API keys (/api/keys; a key is accepted on the AI routes and /v1)
	Budget    *budget.Service    // GET /api/ai/budget
	Gateway   *gateway.Service   // the OpenAI-compatible /v1
}

// NewServer returns the API's handler with every route and middleware in place.
func NewServer(opts Options, deps Deps) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.Limiter == nil {
		opts.Limiter = ratelimit.NewMemory(0)
	}
	rl := &rateLimiter{limiter: opts.Limiter, trusted: opts.TrustedProxies, log: opts.Logger}
	mux := http.NewServeMux()
	addRoutes(mux, opts, deps, rl)
	global := rl.limit("", opts.RateLimit, opts.RateWindow)
	return observe(opts.Logger, opts.MaxBodyBytes, global(notFound(mux)))
}

func init() {
	// Request ids are UUIDs; drawing them from a buffered pool of crypto/rand bytes saves a
	// read of the random source per request.
	uuid.EnableRandPool()
}
