package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/usage"
)

type aiFixture struct {
	h     http.Handler
	token string
	other string
	usage *usage.Service
	fakes map[string]*aitest.Server
}

func newAIFixture(t testing.TB) *aiFixture {
	t.Helper()
	tokens := auth.NewTokens(secret, time.Hour)
	us := usage.New(storetest.DB(t), usage.Options{Recorder: usage.RecorderOptions{FlushInterval: time.Millisecond}})
	t.Cleanup(func() { _ = us.Close(context.Background()) })
	fx := &aiFixture{usage: us, fakes: map[string]*aitest.Server{}}
	cfg := map[string]ai.ProviderConfig{}
	for _, p := range ai.Providers() {
		fx.fakes[p] = aitest.New(t, p)
		cfg[p] = ai.ProviderConfig{APIKey: "k-" + p, BaseURL: fx.fakes[p].BaseURL(), DefaultModel: "m-" + p}
	}
	svc := ai.New(ai.Options{Providers: cfg, Timeout: 5 * time.Second, Recorder: us})
	fx.h = NewServer(Options{RateLimit: 1 << 20, RateWindow: time.Minute}, Deps{Tokens: tokens, AI: svc, Usage: us})
	fx.token, _ = tokens.Issue(auth.Caller{ID: "64b000000000000000000001", Email: "a@example.com", Roles: []string{"user"}})
	fx.other, _ = tokens.Issue(auth.Caller{ID: "64b000000000000000000002", Email: "b@example.com", Roles: []string{"user"}})
	return fx
}

// Ensure the three endpoints answer the normalized shape with requestId = X-Request-Id, and
// the usage endpoints then report exactly those answers for the caller only.
func TestAIAndUsageRoutes(t *testing.T) {
	t.Parallel()
	fx := newAIFixture(t)
	paths := map[string]string{"openai": "/api/ai/openai/chat", "anthropic": "/api/ai/anthropic/messages", "gemini": "/api/ai/gemini/generate"}
	var cost float64
	for _, p := range ai.Providers() {
		rec := do(fx.h, "POST", paths[p], `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini"}`, fx.token)
		if rec.Code != 200 {
			t.Fatalf("%s = %d %s", p, rec.Code, rec.Body)
		}
		var c ai.Completion
		if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Provider != p || c.RequestID == "" || rec.Header().Get("X-Request-Id") != c.RequestID || c.Usage.TotalTokens != 18 {
			t.Fatalf("%s answer %+v, X-Request-Id %q", p, c, rec.Header().Get("X-Request-Id"))
		}
		cost += c.Cost
	}
	var sum usage.Summary
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		rec := do(fx.h, "GET", "/api/ai/usage?days=1", "", fx.token)
		_ = json.Unmarshal(rec.Body.Bytes(), &sum)
		if sum.TotalRequests == 3 {
			break
		}
	}
	if sum.TotalRequests != 3 || sum.TotalTokens != 54 || sum.TotalCost-cost > 1e-12 || cost-sum.TotalCost > 1e-12 {
		t.Fatalf("summary %+v, want 3 requests, 54 tokens, cost %g", sum, cost)
	}
	rec := do(fx.h, "GET", "/api/ai/usage/providers", "", fx.token)
	var rows []usage.ProviderUsage
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &rows) != nil || len(rows) != 3 {
		t.Fatalf("providers = %d %s", rec.Code, rec.Body)
	}
	rec = do(fx.h, "GET", "/api/ai/usage", "", fx.other)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"totalRequests":0`) {
		t.Fatalf("other user's summary = %d %s", rec.Code, rec.Body)
	}
}

// Ensure bad input is a 400 envelope and missing tokens a 401, with nothing sent upstream.
func TestAIAndUsageRoutes_Errors(t *testing.T) {
	t.Parallel()
	fx := newAIFixture(t)
	tests := []struct {
		name, method, path, body, token string
		wantStatus                      int
		wantBody                        string
	}{
		{"NoToken", "POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi"}]}`, "", 401, `"message":"Unauthorized"`},
		{"NoTokenUsage", "GET", "/api/ai/usage", "", "", 401, `"message":"Unauthorized"`},
		{"EmptyMessages", "POST", "/api/ai/gemini/generate", `{"messages":[]}`, "t", 400, `"message":["messages should not be empty"]`},
		{"AnthropicSystem", "POST", "/api/ai/anthropic/messages", `{"messages":[{"role":"system","content":"x"}]}`, "t", 400,
			`"message":["messages.0.role must be one of the following values: user, assistant"]`},
		{"MalformedJSON", "POST", "/api/ai/openai/chat", `{"messages":`, "t", 400, `"message":"Unexpected token in JSON: unexpected end of JSON input"`},
		{"BadToken", "POST", "/api/ai/openai/chat", `{"messages":[{"role":'user'}]}`, "t", 400, `"message":"Unexpected token in JSON: invalid character`},
		{"DataAfterBody", "POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi"}]} {}`, "t", 400, `"message":"Unexpected data after the JSON body"`},
		{"BodyNotObject", "POST", "/api/ai/openai/chat", `[1,2]`, "t", 400, `"message":"request body does not have the expected shape"`},
		{"DaysZero", "GET", "/api/ai/usage?days=0", "", "t", 400, `"message":["days must not be less than 1"]`},
		{"DaysTooMany", "GET", "/api/ai/usage/providers?days=367", "", "t", 400, `"message":["days must not be greater than 366"]`},
		{"DaysText", "GET", "/api/ai/usage?days=week", "", "t", 400, `"message":["days must be an integer number"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := tt.token
			if token == "t" {
				token = fx.token
			}
			rec := do(fx.h, tt.method, tt.path, tt.body, token)
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Fatalf("%s %s = %d %s, want %d with %s", tt.method, tt.path, rec.Code, rec.Body, tt.wantStatus, tt.wantBody)
			}
		})
	}
	for p, f := range fx.fakes {
		if n := len(f.Calls()); n != 0 {
			t.Errorf("%s received %d requests", p, n)
		}
	}
}
