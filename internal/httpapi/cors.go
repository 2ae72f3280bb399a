package httpapi

import (
	"net/http"
	"strconv"
	"strings"
)

// CORS headers of the API: the methods its routes use, the request headers a browser client
// sends, and the answer headers it may read beyond the CORS-safelisted ones.
const (
	corsAllowMethods  = "GET, POST, PUT, DELETE, OPTIONS"
	corsAllowHeaders  = "Authorization, Content-Type, X-Request-Id"
	corsExposeHeaders = "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, " + sourceHeader
	corsMaxAge        = 10 * 60 // seconds a browser may reuse a preflight answer
)

// corsPolicy answers browsers' cross-origin requests from the allowed origins.
type corsPolicy struct {
	anyOrigin   bool            // "*" is listed (never with credentials: config refuses it)
	origins     map[string]bool // exact origins, e.g. http://localhost:5173
	credentials bool
	maxAge      []string
}

// newCORS returns the policy for origins; nil (no CORS headers at all) when none is listed.
func newCORS(origins []string, credentials bool) *corsPolicy {
	if len(origins) == 0 {
		return nil
	}
	c := &corsPolicy{origins: map[string]bool{}, credentials: credentials, maxAge: []string{strconv.Itoa(corsMaxAge)}}
	for _, o := range origins {
		if o == "*" {
			c.anyOrigin = !credentials
			continue
		}
		c.origins[strings.TrimRight(o, "/")] = true
	}
	return c
}

// isPreflight reports whether r is a CORS preflight request.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" &&
		r.Header.Get("Access-Control-Request-Method") != ""
}

// wrap adds the CORS headers to answers to an allowed origin and answers its preflight
// requests (204). Requests from other origins get no CORS headers, so the browser keeps the
// answer from the calling page; their preflight is answered as any other OPTIONS request.
func (c *corsPolicy) wrap(next http.Handler) http.Handler {
	if c == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" || !(c.anyOrigin || c.origins[origin]) {
			next.ServeHTTP(w, r)
			return
		}
		if c.anyOrigin && !c.origins[origin] {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if c.credentials {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		if isPreflight(r) {
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h["Access-Control-Max-Age"] = c.maxAge
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}
