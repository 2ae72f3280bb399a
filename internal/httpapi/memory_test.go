package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/memlimit"
)

// Ensure request bodies are read within the process's bound on buffered bytes: a body that
// does not fit beside what others hold, declared or chunked, is answered 503 with
// Retry-After and code "overloaded" in the route's format, before or while it is read; the
// bytes a request took are given back when it ends.
func TestBodiesWithinTheBufferedBound(t *testing.T) {
	t.Parallel()
	tok, err := auth.NewTokens(secret, time.Hour).Issue(auth.Caller{ID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"text":"` + strings.Repeat("a", 50) + `"}` // 61 bytes
	const envelope = `{"statusCode":503,"message":"the server holds as many request and answer bytes as it may at once (server.max_buffered_bytes): retry in a moment","error":"Service Unavailable"}`
	const openAI = `{"error":{"message":"the server holds as many request and answer bytes as it may at once (server.max_buffered_bytes): retry in a moment","type":"server_error","param":null,"code":"overloaded"}}`
	for _, tc := range []struct {
		name    string
		path    string
		others  int64 // bytes held elsewhere
		chunked bool
		status  int
		want    string
	}{
		{"fits", "/api/echo", 0, false, 200, `{"text":"` + strings.Repeat("a", 50) + `"}`},
		{"fits chunked", "/api/echo", 0, true, 200, `{"text":"` + strings.Repeat("a", 50) + `"}`},
		{"others hold the room", "/api/echo", 50, false, 503, envelope},
		{"others hold the room, chunked", "/api/echo", 50, true, 503, envelope},
		{"in OpenAI's format on /v1", "/v1/echo", 50, false, 503, openAI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := memlimit.New(100)
			mem.Take(tc.others)
			authn := &authenticator{tokens: auth.NewTokens(secret, time.Hour), keys: failingKeys{}}
			mux := http.NewServeMux()
			mux.Handle("POST /api/echo", requireAuth(authn, true, echoFields))
			mux.Handle("POST /v1/echo", withFormat(openAIFormat, requireAuth(authn, true, echoFields)))
			h := observe(logDiscard(), false, 1<<20, mem, nil, route(mux, dispatch(mux)))

			var rd io.Reader = strings.NewReader(body)
			if tc.chunked {
				rd = io.MultiReader(rd) // no length: read as it comes
			}
			req := httptest.NewRequest("POST", tc.path, rd)
			if tc.chunked {
				req.ContentLength = -1
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status || rec.Body.String() != tc.want+"\n" {
				t.Errorf("%d %s, want %d %s", rec.Code, rec.Body, tc.status, tc.want)
			}
			if tc.status == 503 && rec.Header().Get("Retry-After") != "1" {
				t.Errorf("Retry-After %q, want 1", rec.Header().Get("Retry-After"))
			}
			if mem.Used() != tc.others {
				t.Errorf("%d bytes held after the request, want the others' %d", mem.Used(), tc.others)
			}
			wantRefused := int64(0)
			if tc.status == 503 {
				wantRefused = 1
			}
			if mem.Refused() != wantRefused {
				t.Errorf("%d refusals counted, want %d", mem.Refused(), wantRefused)
			}
		})
	}
}
