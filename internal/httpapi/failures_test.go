package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/ratelimit"
)

// failingKeys is a key store that cannot be read.
type failingKeys struct{}

func (failingKeys) Authenticate(context.Context, string) (keys.Owner, error) {
	return keys.Owner{}, apperr.Wrap(apperr.Unavailable, errors.New("connection refused"), "the key store is unavailable")
}

// echoFields answers the JSON object it reads, or the failure to read it.
var echoFields = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	fields, err := decodeFields(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	encode(w, http.StatusOK, fields)
})

// formatStack is the middleware of NewServer around two groups of the same routes: /api in
// the envelope and /v1 in OpenAI's format. Each route authenticates, reads a JSON object of
// at most 64 bytes and answers it; /x/panic panics. The global limit is 2 requests per client.
func formatStack(t *testing.T) http.Handler {
	t.Helper()
	authn := &authenticator{tokens: auth.NewTokens(secret, time.Hour), keys: failingKeys{}}
	echo := echoFields
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	mux := http.NewServeMux()
	mux.Handle("POST /api/echo", requireAuth(authn, true, echo))
	mux.Handle("GET /api/panic", boom)
	mux.Handle("POST /v1/echo", withFormat(openAIFormat, requireAuth(authn, true, echo)))
	mux.Handle("GET /v1/panic", withFormat(openAIFormat, boom))
	rl := &rateLimiter{limiter: ratelimit.NewMemory(0)}
	global := rl.limit("", 2, time.Minute)
	return observe(logDiscard(), false, 64, nil, nil, route(mux, limitHeaders(DefaultMaxHeaderBytes, global(dispatch(mux)))))
}

// Ensure every refusal, the middleware's included (authentication, a failing key store, the
// body limit, a panic, the global rate limit), is answered in the format of the route's group,
// chosen before anything was written: the envelope on /api, OpenAI's error on /v1 with the
// type and code of the failure's kind; a path no route matches keeps the envelope.
func TestFailuresInTheRouteGroupsFormat(t *testing.T) {
	t.Parallel()
	h := formatStack(t)
	tok, err := auth.NewTokens(secret, time.Hour).Issue(auth.Caller{ID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	key := keys.Prefix + strings.Repeat("0", 43)
	client := 0 // each request comes from its own client: the limit is not reached
	for _, tc := range []struct {
		name, method, path, body, token string
		status                          int
		api, v1                         string // the bodies on /api and /v1 (path's "/x" replaced by each)
	}{
		{"no credentials", "POST", "/x/echo", `{}`, "", 401,
			`{"statusCode":401,"message":"Unauthorized","error":"Unauthorized"}`,
			`{"error":{"message":"Incorrect API key provided: use a personal API key (sk-app-…) or an access token from /api/auth/login.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{"key store down", "POST", "/x/echo", `{}`, key, 503,
			`{"statusCode":503,"message":"the key store is unavailable","error":"Service Unavailable"}`,
			`{"error":{"message":"the key store is unavailable","type":"server_error","param":null,"code":null}}`},
		{"body over the limit", "POST", "/x/echo", `{"text":"` + strings.Repeat("a", 100) + `"}`, tok, 413,
			`{"statusCode":413,"message":"request entity too large","error":"Request Entity Too Large"}`,
			`{"error":{"message":"request entity too large","type":"invalid_request_error","param":null,"code":null}}`},
		{"validation list", "POST", "/x/echo", "{\"a\":\"\xff\",\"b\":\"\xfe\"}", tok, 400,
			`{"statusCode":400,"message":["a must be valid UTF-8","b must be valid UTF-8"],"error":"Bad Request"}`,
			`{"error":{"message":"a must be valid UTF-8; b must be valid UTF-8","type":"invalid_request_error","param":null,"code":null}}`},
		{"panic", "GET", "/x/panic", "", "", 500,
			`{"statusCode":500,"message":"Internal server error","error":"Internal Server Error"}`,
			`{"error":{"message":"Internal server error","type":"server_error","param":null,"code":null}}`},
	} {
		for _, group := range []string{"/api", "/v1"} {
			want := tc.api
			if group == "/v1" {
				want = tc.v1
			}
			req := httptest.NewRequest(tc.method, group+strings.TrimPrefix(tc.path, "/x"), strings.NewReader(tc.body))
			client++
			req.RemoteAddr = fmt.Sprintf("192.0.2.%d:1234", client)
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status || rec.Body.String() != want+"\n" {
				t.Errorf("%s on %s: %d %s, want %d %s", tc.name, group, rec.Code, rec.Body, tc.status, want)
			}
		}
	}

	// The global rate limit: the third request of a client is refused.
	for group, want := range map[string]string{ // the client's address is the group's
		"/api": `{"statusCode":429,"message":"Too Many Requests","error":"ThrottlerException"}`,
		"/v1":  `{"error":{"message":"Too Many Requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
	} {
		var rec *httptest.ResponseRecorder
		for range 3 {
			req := httptest.NewRequest("POST", group+"/echo", strings.NewReader(`{}`))
			req.RemoteAddr = "198.51.100.1:1"
			if group == "/v1" {
				req.RemoteAddr = "198.51.100.2:1"
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, req)
		}
		if rec.Code != 429 || rec.Body.String() != want+"\n" || rec.Header().Get("Retry-After") == "" {
			t.Errorf("rate limit on %s: %d %s", group, rec.Code, rec.Body)
		}
	}

	// No route: the envelope, whatever the prefix.
	for i, path := range []string{"/api/nope", "/v1/nope"} {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = fmt.Sprintf("203.0.113.%d:1", i+1)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if want := `{"statusCode":404,"message":"Cannot GET ` + path + `","error":"Not Found"}`; rec.Code != 404 || rec.Body.String() != want+"\n" {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// Ensure each kind of failure is answered with OpenAI's status, type and code on /v1, the
// parameter and code an error names shown as set, an internal error's text never shown, and a
// spent budget marked not worth retrying; and in the envelope with the kind's status elsewhere.
func TestErrorFormats(t *testing.T) {
	t.Parallel()
	retryAfter := apperr.E(apperr.RateLimited, "openai rate limit reached: slow down")
	retryAfter.RetryAfter = 7
	for _, tc := range []struct {
		name              string
		err               error
		status            int
		envelope          string
		openAIStatus      int
		openAI            string
		retryAfter, retry string // Retry-After and X-Should-Retry
	}{
		{"gateway parameter", &apperr.Error{Kind: apperr.Invalid, Messages: []string{"Unsupported parameter: 'n'."}, Param: "n", Code: "unsupported_parameter"},
			400, `{"statusCode":400,"message":"Unsupported parameter: 'n'.","error":"Bad Request"}`,
			400, `{"error":{"message":"Unsupported parameter: 'n'.","type":"invalid_request_error","param":"n","code":"unsupported_parameter"}}`, "", ""},
		{"validation", &apperr.Error{Kind: apperr.Invalid, Messages: []string{"temperature must not be greater than 1"}, List: true, Param: "temperature"},
			400, `{"statusCode":400,"message":["temperature must not be greater than 1"],"error":"Bad Request"}`,
			400, `{"error":{"message":"temperature must not be greater than 1","type":"invalid_request_error","param":"temperature","code":null}}`, "", ""},
		{"forbidden", apperr.E(apperr.Forbidden, "Forbidden resource"),
			403, `{"statusCode":403,"message":"Forbidden resource","error":"Forbidden"}`,
			403, `{"error":{"message":"Forbidden resource","type":"permission_error","param":null,"code":null}}`, "", ""},
		{"not found", apperr.E(apperr.NotFound),
			404, `{"statusCode":404,"message":"Not Found","error":"Not Found"}`,
			404, `{"error":{"message":"Not Found","type":"invalid_request_error","param":null,"code":"not_found"}}`, "", ""},
		{"model not found", &apperr.Error{Kind: apperr.NotFound, Messages: []string{"The model 'x/y' does not exist."}, Param: "model", Code: "model_not_found"},
			404, `{"statusCode":404,"message":"The model 'x/y' does not exist.","error":"Not Found"}`,
			404, `{"error":{"message":"The model 'x/y' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`, "", ""},
		{"conflict", apperr.E(apperr.Conflict, "a", "b"),
			409, `{"statusCode":409,"message":["a","b"],"error":"Conflict"}`,
			409, `{"error":{"message":"a; b","type":"invalid_request_error","param":null,"code":null}}`, "", ""},
		{"provider rate limit", retryAfter,
			429, `{"statusCode":429,"message":"openai rate limit reached: slow down","error":"ThrottlerException"}`,
			429, `{"error":{"message":"openai rate limit reached: slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "7", ""},
		{"spent budget", apperr.E(apperr.PaymentRequired, "Monthly AI budget of $1.00 reached"),
			402, `{"statusCode":402,"message":"Monthly AI budget of $1.00 reached","error":"Payment Required"}`,
			429, `{"error":{"message":"Monthly AI budget of $1.00 reached","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, "", "false"},
		{"unavailable", apperr.E(apperr.Unavailable, "the openai provider is not configured"),
			503, `{"statusCode":503,"message":"the openai provider is not configured","error":"Service Unavailable"}`,
			503, `{"error":{"message":"the openai provider is not configured","type":"server_error","param":null,"code":null}}`, "", ""},
		{"upstream", apperr.Wrap(apperr.Upstream, errors.New("EOF"), "openai could not be reached"),
			502, `{"statusCode":502,"message":"openai could not be reached","error":"Bad Gateway"}`,
			502, `{"error":{"message":"openai could not be reached","type":"server_error","param":null,"code":null}}`, "", ""},
		{"upstream timeout", apperr.E(apperr.UpstreamTimeout, "openai did not answer within 1m0s (ai.timeout)"),
			504, `{"statusCode":504,"message":"openai did not answer within 1m0s (ai.timeout)","error":"Gateway Timeout"}`,
			504, `{"error":{"message":"openai did not answer within 1m0s (ai.timeout)","type":"server_error","param":null,"code":"timeout"}}`, "", ""},
		{"internal", apperr.Wrap(apperr.Internal, errors.New("secret detail"), "secret message"),
			500, `{"statusCode":500,"message":"Internal server error","error":"Internal Server Error"}`,
			500, `{"error":{"message":"Internal server error","type":"server_error","param":null,"code":null}}`, "", ""},
		{"plain error", errors.New("secret detail"),
			500, `{"statusCode":500,"message":"Internal server error","error":"Internal Server Error"}`,
			500, `{"error":{"message":"Internal server error","type":"server_error","param":null,"code":null}}`, "", ""},
	} {
		for _, f := range []struct {
			name   string
			format errorFormat
			status int
			body   string
		}{{"envelope", envelopeFormat, tc.status, tc.envelope}, {"openai", openAIFormat, tc.openAIStatus, tc.openAI}} {
			rec := httptest.NewRecorder()
			writeFailure(rec, f.format, tc.err)
			retry := ""
			if f.name == "openai" {
				retry = tc.retry
			}
			if rec.Code != f.status || rec.Body.String() != f.body+"\n" || rec.Header().Get("Retry-After") != tc.retryAfter ||
				rec.Header().Get("X-Should-Retry") != retry {
				t.Errorf("%s in the %s: %d %s (Retry-After %q, X-Should-Retry %q), want %d %s", tc.name, f.name, rec.Code, rec.Body,
					rec.Header().Get("Retry-After"), rec.Header().Get("X-Should-Retry"), f.status, f.body)
			}
		}
	}
}
