package httpapi

import (
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/metrics"
	"github.com/acme/app/internal/ratelimit"
)

// errTooManyRequests is the answer of a request over a limit.
var errTooManyRequests = apperr.E(apperr.RateLimited, "Too Many Requests")

// rateLimiter applies per-client limits and sets the X-RateLimit-* headers.
type rateLimiter struct {
	limiter ratelimit.Limiter
	trusted []*net.IPNet
	log     *slog.Logger
	metrics *metrics.Metrics
}

// limit returns a middleware allowing limit requests per window per client under name. A limit
// of 0 turns it off.
func (rl *rateLimiter) limit(name string, limit int, window time.Duration) func(http.Handler) http.Handler {
	if limit <= 0 || window <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	limitVal := strconv.Itoa(limit)
	label := name
	if label == "" {
		label = "global"
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := clientKey(rl.clientIP(r)) // the global limit's key; a named limit's is name|client
			if name != "" {
				key = name + "|" + key
			}
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
				h.Set("X-RateLimit-Limit", limitVal)
				h.Set("X-RateLimit-Remaining", "0")
				h.Set("X-RateLimit-Reset", reset)
				rl.metrics.RateLimited(label)
				writeError(w, r, errTooManyRequests) // in the format of the route's group
				return
			}
			// The global limit's headers are the ones a client sees; a stricter route limit
			// overrides them when it is lower.
			if name == "" || d.Remaining < atoiOr(h.Get("X-RateLimit-Remaining"), math.MaxInt) {
				h.Set("X-RateLimit-Limit", limitVal)
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
	if len(rl.trusted) == 0 || !rl.isTrusted(net.ParseIP(host)) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		ip := net.ParseIP(hop)
		if ip == nil {
			break
		}
		if !rl.isTrusted(ip) {
			return hop
		}
	}
	return host
}

// clientKey is the client a limit counts for an address: an IPv4 address, or an IPv6
// address's /64 network, which one subscriber usually holds whole (counting its 2^64
// addresses apart would give it as many limits).
func clientKey(host string) string {
	if !strings.Contains(host, ":") {
		return host
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// isTrusted reports whether ip (nil: not an address) is in a trusted proxy range.
func (rl *rateLimiter) isTrusted(ip net.IP) bool {
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
