package httpapi

import (
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acme/app/internal/ratelimit"
)

// rateLimiter applies per-client limits and sets the X-RateLimit-* headers.
type rateLimiter struct {
	limiter ratelimit.Limiter
	trusted []*net.IPNet
	log     *slog.Logger
}

// limit returns a middleware allowing limit requests per window per client under name. A limit
// of 0 turns it off.
func (rl *rateLimiter) limit(name string, limit int, window time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if limit <= 0 || window <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := name + "|" + rl.clientIP(r)
			d, err := rl.limiter.Take(r.Context(), key, limit, window)
			if err != nil { // a failing shared store must not take the API down: let it through
				loggerFrom(r.Context()).Warn("rate limiter unavailable", "err", err)
				next.ServeHTTP(w, r)
				return
			}
			reset := strconv.Itoa(int(math.Ceil(d.Reset.Seconds())))
			h := w.Header()
			if !d.Allowed {
				h.Set("Retry-After", reset)
				h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
				h.Set("X-RateLimit-Remaining", "0")
				h.Set("X-RateLimit-Reset", reset)
				writeEnvelope(w, http.StatusTooManyRequests, "Too Many Requests")
				return
			}
			// The global limit's headers are the ones a client sees; a stricter route limit
			// overrides them when it is lower.
			if name == "" || d.Remaining < atoiOr(h.Get("X-RateLimit-Remaining"), math.MaxInt) {
				h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
				h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
				h.Set("X-RateLimit-Reset", reset)
			}
			next.ServeHTTP(w, r)
		})
	}
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

// clientIP is the remote address, or, when the remote address is a trusted proxy, the
// right-most address of X-Forwarded-For that is not itself a trusted proxy.
func (rl *rateLimiter) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(rl.trusted) == 0 || !rl.isTrusted(host) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if net.ParseIP(hop) == nil {
			break
		}
		if !rl.isTrusted(hop) {
			return hop
		}
	}
	return host
}

func (rl *rateLimiter) isTrusted(addr string) bool {
	ip := net.ParseIP(addr)
	if ip == nil {
		return false
	}
	for _, n := range rl.trusted {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}
