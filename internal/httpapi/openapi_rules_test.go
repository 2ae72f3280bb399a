package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Ensure the description refuses exactly the requests the server refuses as invalid (400): a
// client or a validating proxy that trusts it neither sends what the server refuses nor
// refuses what the server takes. Each case is sent to the server and validated against
// docs/openapi.yaml; the two must agree.
func TestOpenAPI_RequestRulesMatchTheServer(t *testing.T) {
	t.Parallel()
	v := statusValidator(t)
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	msgs := func(role string) string { return `"messages":[{"role":"` + role + `","content":"hi"}]` }
	for _, tc := range []struct {
		method, path, body string
		valid              bool
	}{
		// Personal API keys.
		{"POST", "/api/keys", `{"name":"ci","expiresInDays":null}`, true},
		{"POST", "/api/keys", `{"name":"ci","expiresInDays":3650}`, true},
		{"POST", "/api/keys", `{"name":"ci","expiresInDays":3651}`, false},
		{"POST", "/api/keys", `{"name":"ci","expiresInDays":0}`, false},
		{"POST", "/api/keys", `{"name":"` + strings.Repeat("k", 100) + `"}`, true},
		{"POST", "/api/keys", `{"name":"` + strings.Repeat("k", 101) + `"}`, false},
		{"POST", "/api/keys", `{"name":"   "}`, false},
		{"POST", "/api/keys", `{"name":"a\u0001b"}`, false},
		{"POST", "/api/keys", `{"name":" a b "}`, true},
		// MongoDB query: the host is refused (403) after the input is accepted.
		{"POST", "/api/storage/mongodb/query", `{"connectionString":"mongodb://127.0.0.1:1/","database":"d","collection":"c","limit":0}`, false},
		{"POST", "/api/storage/mongodb/query", `{"connectionString":"mongodb://127.0.0.1:1/","database":"d","collection":"c","limit":1}`, true},
		{"POST", "/api/storage/mongodb/query", `{"connectionString":"mongodb://127.0.0.1:1/","database":"d","collection":"c","limit":null}`, true},
		{"POST", "/api/storage/mongodb/query", `{"connectionString":"mongodb://127.0.0.1:1/","database":"d","collection":"c","limit":1000}`, true},
		{"POST", "/api/storage/mongodb/query", `{"connectionString":"postgres://127.0.0.1:1/","database":"d","collection":"c"}`, false},
		{"POST", "/api/storage/mongodb/test", `{"connectionString":"mongodb://127.0.0.1:1/","database":"d"}`, true},
		{"POST", "/api/storage/mongodb/test", `{"connectionString":"127.0.0.1:27017","database":"d"}`, false},
		// The AI routes: each provider's temperature range and roles.
		{"POST", "/api/ai/openai/chat", `{` + msgs("system") + `,"temperature":2}`, true},
		{"POST", "/api/ai/openai/chat", `{` + msgs("user") + `,"temperature":2.1}`, false},
		{"POST", "/api/ai/openai/chat", `{` + msgs("user") + `,"temperature":-0.1}`, false},
		{"POST", "/api/ai/anthropic/messages", `{` + msgs("user") + `,"temperature":1}`, true},
		{"POST", "/api/ai/anthropic/messages", `{` + msgs("user") + `,"temperature":1.5}`, false},
		{"POST", "/api/ai/anthropic/messages", `{` + msgs("system") + `}`, false},
		{"POST", "/api/ai/gemini/generate", `{` + msgs("user") + `,"temperature":1.5}`, true},
		{"POST", "/api/ai/gemini/generate", `{` + msgs("system") + `}`, false},
		{"POST", "/api/ai/openai/chat", `{` + msgs("user") + `,"maxTokens":1000000,"model":null,"temperature":null,"stream":null}`, true},
		{"POST", "/api/ai/openai/chat", `{` + msgs("user") + `,"maxTokens":1000001}`, false},
		{"POST", "/api/ai/openai/chat", `{` + msgs("user") + `,"maxTokens":0}`, false},
		{"POST", "/api/ai/openai/chat", `{` + msgs("user") + `,"model":"a/b"}`, false},
		{"POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":""}]}`, false},
		{"POST", "/api/ai/openai/chat", `{"messages":[]}`, false},
		// Usage.
		{"GET", "/api/ai/usage?days=366", "", true},
		{"GET", "/api/ai/usage?days=367", "", false},
		{"GET", "/api/ai/usage/providers?days=0", "", false},
		{"GET", "/api/ai/usage/providers?days=1", "", true},
		// Accounts (a password's bound is in bytes: checked here with one-byte characters).
		{"POST", "/api/auth/register", `{"email":"rules72@example.com","password":"` + strings.Repeat("p", 72) + `","name":"R"}`, true},
		{"POST", "/api/auth/register", `{"email":"rules73@example.com","password":"` + strings.Repeat("p", 73) + `","name":"R"}`, false},
		{"POST", "/api/auth/register", `{"email":"rules5@example.com","password":"12345","name":"R"}`, false},
		{"POST", "/api/auth/login", `{"email":"not-an-email","password":"x"}`, false},
		{"POST", "/api/auth/login", `{"email":"rules72@example.com","password":""}`, false},
	} {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		fx.h.ServeHTTP(rec, req)
		if served := rec.Code != http.StatusBadRequest; served != tc.valid {
			t.Errorf("%s %s %s: the server answered %d %s, want it to %s", tc.method, tc.path, tc.body, rec.Code, rec.Body,
				map[bool]string{true: "accept it", false: "refuse it (400)"}[tc.valid])
			continue
		}
		u, _ := url.Parse("http://localhost:3000" + tc.path)
		vreq := &http.Request{Method: tc.method, URL: u, Header: req.Header, Host: u.Host,
			Body: http.NoBody}
		if tc.body != "" {
			vreq.Body = httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)).Body
		}
		ok, errs := v.ValidateHttpRequest(vreq)
		if ok != tc.valid {
			var why []string
			for _, e := range errs {
				why = append(why, e.Message+": "+e.Reason)
				for _, se := range e.SchemaValidationErrors {
					why = append(why, se.Reason+" at "+se.FieldPath)
				}
			}
			t.Errorf("%s %s %s: the server answered %d, the description %s it %v", tc.method, tc.path, tc.body, rec.Code,
				map[bool]string{true: "accepts", false: "refuses"}[ok], why)
		}
	}
}
