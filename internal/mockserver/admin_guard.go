package mockserver

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// guardAdmin refuses what a web page could make a browser send to the admin API, and checks
// the bearer token when one is set:
//   - without a token, a Host that is not localhost or a loopback address: 403. A page whose
//     name was rebound to 127.0.0.1 (DNS rebinding) is this server's own origin to the
//     browser, so its Origin passes; its Host still names the page's host;
//   - Sec-Fetch-Site: cross-site, or an Origin that is not this server's own: 403;
//   - a body that is not application/json (a form or text/plain needs no preflight): 415;
//   - with a token set, a request without "Authorization: Bearer <token>": 401.
//
// It never sets CORS headers, so a browser lets no other origin read an admin answer.
func guardAdmin(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" && !IsLoopback(hostOnly(r.Host)) {
			adminError(w, http.StatusForbidden, "without --admin-token the admin API answers only requests to localhost or a loopback address, not "+r.Host, nil)
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			adminError(w, http.StatusForbidden, "the admin API refuses cross-site browser requests", nil)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
			adminError(w, http.StatusForbidden, "the admin API answers only its own origin, not "+origin, nil)
			return
		}
		if token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="app mock admin"`)
				adminError(w, http.StatusUnauthorized, "the admin API needs Authorization: Bearer <the --admin-token>", nil)
				return
			}
		}
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				adminError(w, http.StatusUnsupportedMediaType, "the admin API accepts only application/json bodies", nil)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin names the host the request was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// hostOnly is a Host header's host, without its port.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// IsLoopback reports whether host (a name or an address, as given to --host) only accepts
// connections from this machine.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
