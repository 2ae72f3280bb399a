package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Ensure CORS: a listed origin gets its origin back (a preflight 204 with methods, headers and
// max age; other answers with the exposed headers); an unlisted origin, and a server without
// cors.allowed_origins, get no CORS header at all.
func TestCORS(t *testing.T) {
	t.Parallel()
	const front = "http://localhost:5173"
	on := newTestServer(Options{CORSOrigins: []string{front}})
	creds := newTestServer(Options{CORSOrigins: []string{front}, CORSCredentials: true})
	anyOrigin := newTestServer(Options{CORSOrigins: []string{"*"}})
	off := newTestServer(Options{})
	preflight := func(origin string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "authorization, content-type"}
	}
	get := func(origin string) map[string]string { return map[string]string{"Origin": origin} }
	const absent = "-"
	tests := []struct {
		name       string
		h          http.Handler
		method     string
		path       string
		headers    map[string]string
		wantStatus int
		want       map[string]string // header → value (absent: not sent)
	}{
		{"preflight from listed origin", on, "OPTIONS", "/api/auth/login", preflight(front), 204, map[string]string{
			"Access-Control-Allow-Origin":      front,
			"Access-Control-Allow-Methods":     "GET, POST, PUT, DELETE, OPTIONS",
			"Access-Control-Allow-Headers":     "Authorization, Content-Type, X-Request-Id",
			"Access-Control-Max-Age":           "600",
			"Access-Control-Allow-Credentials": absent,
			"Vary":                             "Origin",
		}},
		{"preflight of a templated route", on, "OPTIONS", "/api/spaces/s/properties/templates/t", preflight(front), 204, map[string]string{
			"Access-Control-Allow-Origin": front,
		}},
		{"GET from listed origin", on, "GET", "/api/health", get(front), 200, map[string]string{
			"Access-Control-Allow-Origin":   front,
			"Access-Control-Expose-Headers": "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Templates-Source",
			"Vary":                          "Origin",
			"Access-Control-Allow-Methods":  absent,
		}},
		{"error answers carry CORS too", on, "GET", "/api/nope", get(front), 404, map[string]string{
			"Access-Control-Allow-Origin": front,
		}},
		{"credentials when configured", creds, "GET", "/api/health", get(front), 200, map[string]string{
			"Access-Control-Allow-Origin":      front,
			"Access-Control-Allow-Credentials": "true",
		}},
		{"preflight from unlisted origin is any OPTIONS", on, "OPTIONS", "/api/health", preflight("http://evil.example"), 405, map[string]string{
			"Access-Control-Allow-Origin":  absent,
			"Access-Control-Allow-Methods": absent,
		}},
		{"GET from unlisted origin", on, "GET", "/api/health", get("http://evil.example"), 200, map[string]string{
			"Access-Control-Allow-Origin":   absent,
			"Access-Control-Expose-Headers": absent,
		}},
		{"origin differing in port", on, "GET", "/api/health", get("http://localhost:5174"), 200, map[string]string{
			"Access-Control-Allow-Origin": absent,
		}},
		{"any origin", anyOrigin, "GET", "/api/health", get("http://whoever.example"), 200, map[string]string{
			"Access-Control-Allow-Origin":      "*",
			"Access-Control-Allow-Credentials": absent,
		}},
		{"off: preflight", off, "OPTIONS", "/api/health", preflight(front), 405, nil},
		{"off: GET", off, "GET", "/api/health", get(front), 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tt.method, tt.path, nil)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if rec.Code >= 400 {
				decodeEnvelope(t, rec)
			}
			for k, want := range tt.want {
				got, sent := rec.Header()[http.CanonicalHeaderKey(k)]
				switch {
				case want == absent && sent:
					t.Errorf("%s: %q, want absent", k, got)
				case want != absent && strings.Join(got, ", ") != want:
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if tt.want == nil {
				for k := range rec.Header() {
					if strings.HasPrefix(k, "Access-Control-") {
						t.Errorf("CORS off, but %s sent", k)
					}
				}
			}
		})
	}
}
