package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/console"
)

// Ensure NewServer serves Deps.Console at /console and /console/… behind the same middleware
// as the API (the global rate limit included), an unknown file there answers the envelope, and
// nothing is there without it.
func TestServer_MountsTheConsole(t *testing.T) {
	t.Parallel()
	with := NewServer(Options{RateLimit: 3, RateWindow: time.Minute}, Deps{Console: console.New()})
	for _, tc := range []struct {
		path   string
		status int
		ctype  string
	}{
		{"/console", 200, "text/html"},
		{"/console/app.js", 200, "javascript"},
		{"/console/missing.js", 404, "application/json"}, // the API's envelope, as every path
		{"/console", 429, ""},                            // the fourth request of the window
	} {
		rec := do(with, "GET", tc.path, "", "")
		if rec.Code != tc.status || !strings.Contains(rec.Header().Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %d %s, want %d %s", tc.path, rec.Code, rec.Header().Get("Content-Type"), tc.status, tc.ctype)
		}
		if tc.status == 404 && !strings.Contains(rec.Body.String(), `"message":"Cannot GET /console/missing.js"`) {
			t.Errorf("%s: %s, want the envelope", tc.path, rec.Body)
		}
		if tc.status == 200 && rec.Header().Get("Content-Security-Policy") != console.CSP {
			t.Errorf("%s: CSP %q", tc.path, rec.Header().Get("Content-Security-Policy"))
		}
	}
	without := NewServer(Options{}, Deps{})
	if rec := do(without, "GET", "/console", "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("without a console: %d", rec.Code)
	}
}
