package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/admin"
	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/templates"
	"github.com/acme/app/internal/usage"
)

// gwFixture is the whole AI path on the embedded store: usage, budgets, keys, the AI service
// against aitest fakes, and the gateway.
type gwFixture struct {
	h      http.Handler
	tokens *auth.Tokens
	usage  *usage.Service
	keys   *keys.Service
	budget *budget.Service
	auth   *auth.Service
	db     *mongo.Database
	fakes  map[string]*aitest.Server
}

// budgetHook is the budget service as the AI service's hook.
type budgetHook struct{ svc *budget.Service }

func (b budgetHook) Reserve(ctx context.Context, userID string, usd float64) (ai.Reservation, error) {
	r, err := b.svc.Reserve(ctx, userID, usd)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// newGWFixture builds the fixture; the fake providers answer with script (default aitest.OK).
func newGWFixture(t testing.TB, opts Options, script ...aitest.Responder) *gwFixture {
	t.Helper()
	return newGWFixtureWith(t, opts, gateway.Options{}, script...)
}

// newGWFixtureWith is newGWFixture with the gateway configured by gwOpts (ai.max_image_bytes
// …); its AI service, prices and providers are the fixture's.
func newGWFixtureWith(t testing.TB, opts Options, gwOpts gateway.Options, script ...aitest.Responder) *gwFixture {
	t.Helper()
	ctx := context.Background()
	db := storetest.DB(t)
	us := usage.New(db, usage.Options{Recorder: usage.RecorderOptions{FlushInterval: time.Millisecond}})
	t.Cleanup(func() { _ = us.Close(context.Background()) })
	fx := &gwFixture{tokens: auth.NewTokens(secret, time.Hour), usage: us, fakes: map[string]*aitest.Server{}}
	fx.keys = keys.New(db, keys.Options{})
	var err error
	fx.budget, err = budget.New(ctx, db, budget.Options{
		Spent: func(ctx context.Context, userID string, days int) (float64, error) {
			s, err := us.Summary(ctx, userID, days)
			return s.TotalCost, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]ai.ProviderConfig{}
	defaults := map[string]string{}
	for _, p := range ai.Providers() {
		fx.fakes[p] = aitest.New(t, p, script...)
		cfg[p] = ai.ProviderConfig{APIKey: "k-" + p, BaseURL: fx.fakes[p].BaseURL(), DefaultModel: "m-" + p}
		defaults[p] = "m-" + p
	}
	prices, err := ai.LoadPrices("", nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := ai.New(ai.Options{Providers: cfg, Timeout: 5 * time.Second, Recorder: us, Prices: prices, Budget: budgetHook{fx.budget}})
	gwOpts.AI, gwOpts.Prices, gwOpts.Providers = svc, prices, defaults
	gw := gateway.New(gwOpts)
	authSvc, err := auth.New(ctx, db, fx.tokens, 4)
	if err != nil {
		t.Fatal(err)
	}
	fx.auth, fx.db = authSvc, db
	dbc, err := dbcheck.New(dbcheck.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.Store(t)
	tpl := templates.New(templates.Options{Spaces: st.Client(), AppDatabase: db.Name(), Core: st.Client(), CoreDatabase: db.Name()})
	if opts.RateLimit == 0 {
		opts.RateLimit, opts.RateWindow = 1<<20, time.Minute
	}
	fx.h = NewServer(opts, Deps{Tokens: fx.tokens, Auth: authSvc, AI: svc, Usage: us, Keys: fx.keys, Budget: fx.budget,
		Gateway: gw, DBCheck: dbc, Templates: tpl, Admin: admin.New(authSvc, fx.budget, us, nil)})
	return fx
}

// user registers a new user and returns its id and access token.
func (fx *gwFixture) user(t testing.TB) (string, string) {
	t.Helper()
	email := primitive.NewObjectID().Hex() + "@example.com"
	res, err := fx.auth.Register(context.Background(), auth.RegisterInput{Email: email, Password: "password1", Name: "Test User"})
	if err != nil {
		t.Fatal(err)
	}
	return res.User.ID, res.AccessToken
}

// spentUser registers a user whose monthly budget is spent (a limit of 0) and returns its
// access token.
func (fx *gwFixture) spentUser(t testing.TB) string {
	t.Helper()
	id, tok := fx.user(t)
	zero := 0.0
	if _, err := fx.budget.SetLimit(context.Background(), id, &zero); err != nil {
		t.Fatal(err)
	}
	return tok
}

func decodeJSON[T any](t testing.TB, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

// Ensure /v1/chat/completions answers OpenAI's chat.completion for each provider prefix and a
// bare name, sends the provider what it was asked, and records the call like /api/ai/*.
func TestV1Chat(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	for _, tc := range []struct{ model, provider, sent, answered string }{
		{"openai/gpt-4o-mini", "openai", "gpt-4o-mini", "openai/gpt-4o-mini-2024-07-18"},
		{"anthropic/claude-haiku-4-5", "anthropic", "claude-haiku-4-5", "anthropic/claude-haiku-4-5"},
		{"gemini/gemini-2.5-flash", "gemini", "gemini-2.5-flash", "gemini/gemini-2.5-flash"},
		{"gpt-4o-mini", "openai", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"},
	} {
		rec := do(fx.h, "POST", "/v1/chat/completions", `{"model":"`+tc.model+`","messages":[{"role":"user","content":"hi"}],"max_tokens":20,"top_p":0.5,"stop":"END"}`, tok)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", tc.model, rec.Code, rec.Body)
		}
		c := decodeJSON[gateway.ChatCompletion](t, rec.Body.Bytes())
		if c.Object != "chat.completion" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != tc.answered || len(c.Choices) != 1 ||
			c.Choices[0].Message.Content == nil || *c.Choices[0].Message.Content != "Hello from the fake" || c.Choices[0].FinishReason != "stop" ||
			c.Usage.PromptTokens != 11 || c.Usage.CompletionTokens != 7 || c.Usage.TotalTokens != 18 {
			t.Fatalf("%s: answer %s", tc.model, rec.Body)
		}
		if rec.Header().Get("X-Request-Id") == "" {
			t.Fatalf("%s: no X-Request-Id", tc.model)
		}
		call := fx.fakes[tc.provider].Last()
		if call.Model() != tc.sent {
			t.Fatalf("%s: the provider was asked for %q", tc.model, call.Model())
		}
		if tc.provider == "openai" && (call.Body["top_p"] != 0.5 || fmt.Sprint(call.Body["stop"]) != "[END]") {
			t.Fatalf("top_p/stop not sent: %s", call.Raw)
		}
	}
	var sum usage.Summary
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && sum.TotalRequests < 4; time.Sleep(5 * time.Millisecond) {
		sum = decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage?days=1", "", tok).Body.Bytes())
	}
	if sum.TotalRequests != 4 || sum.TotalTokens != 72 {
		t.Fatalf("usage after four /v1 calls: %+v", sum)
	}
}

// readSSE returns the data lines of an event stream.
func readSSE(t testing.TB, body string) []string {
	t.Helper()
	var data []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	return data
}

// Ensure a streamed call is chat.completion.chunk events (role first, finish_reason, the usage
// chunk with include_usage) ending with [DONE], every chunk naming the model the provider
// reported (the fake OpenAI reports a dated snapshot), for each provider.
func TestV1Stream(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.Stream(aitest.StreamOptions{}))
	_, tok := fx.user(t)
	for _, p := range ai.Providers() {
		for _, includeUsage := range []bool{true, false} {
			body := fmt.Sprintf(`{"model":"%s/m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":%t}}`, p, includeUsage)
			rec := do(fx.h, "POST", "/v1/chat/completions", body, tok)
			if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
			}
			data := readSSE(t, rec.Body.String())
			if len(data) < 3 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("%s: stream %q", p, data)
			}
			var text strings.Builder
			var finishes []string
			usages := 0
			model := p + "/m"
			if p == "openai" {
				model += "-2024-07-18"
			}
			for i, d := range data[:len(data)-1] {
				c := decodeJSON[gateway.Chunk](t, []byte(d))
				if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") {
					t.Fatalf("%s: chunk %s", p, d)
				}
				if c.Model != model {
					t.Errorf("%s: chunk %d names model %q, want %q", p, i, c.Model, model)
				}
				if len(c.Choices) == 0 {
					usages++
					if c.Usage == nil || c.Usage.TotalTokens == 0 {
						t.Fatalf("%s: usage chunk %s", p, d)
					}
					continue
				}
				if i == 0 && c.Choices[0].Delta.Role != "assistant" {
					t.Fatalf("%s: first chunk without the role: %s", p, d)
				}
				text.WriteString(c.Choices[0].Delta.Content)
				if f := c.Choices[0].FinishReason; f != nil {
					finishes = append(finishes, *f)
				}
			}
			if text.String() != "Hello from the fake" || fmt.Sprint(finishes) != "[stop]" || (usages == 1) != includeUsage {
				t.Fatalf("%s include_usage=%t: text %q finishes %v usage chunks %d", p, includeUsage, text.String(), finishes, usages)
			}
		}
	}
}

// Ensure a provider failing mid-stream ends the stream with OpenAI's error object, no [DONE].
func TestV1StreamFailure(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.Stream(aitest.StreamOptions{FailAfter: 2}))
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/v1/chat/completions", `{"model":"openai/m","messages":[{"role":"user","content":"hi"}],"stream":true}`, tok)
	data := readSSE(t, rec.Body.String())
	if rec.Code != 200 || len(data) < 2 || data[len(data)-1] == "[DONE]" {
		t.Fatalf("%d %q", rec.Code, data)
	}
	openAIErr(t, rec, []byte(data[len(data)-1]))
}

// Ensure a provider's refusal on /v1/chat/completions keeps the parameter OpenAI named
// (param null when the provider named none), streamed or not, and OpenAI's code when it
// describes the caller's request (short and an identifier; never one about the server's key,
// account or limits, which is not the caller's to fix); and that a failure in the
// middle of a stream carries the same fields with the same meaning as the error answer of
// that failure: type server_error, code null (the provider's own type is not our code).
// Anthropic's overloaded_error and Gemini's UNAVAILABLE read as OpenAI says a failing server
// (server_error, code null: the SDKs retry it); Gemini's RESOURCE_EXHAUSTED before the first
// piece as its rate limit (429 rate_limit_exceeded), as its error answer is.
func TestV1Chat_ProviderErrorFields(t *testing.T) {
	t.Parallel()
	const (
		openAIBadTopP = `{"error":{"message":"Invalid value for 'top_p': expected a number at most 1.","type":"invalid_request_error","param":"top_p","code":"invalid_value"}}`
		openAINoParam = `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`
		openAIPiece   = `{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`
		openAIFailure = `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
		anthropicText = `content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`
	)
	anthropicStart := []string{
		`message_start|{"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5","usage":{"input_tokens":5,"output_tokens":1}}}`,
		`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, anthropicText,
	}
	tests := []struct {
		name       string
		model      string
		stream     bool
		fake       aitest.Responder
		wantStatus int
		wantEvent  bool // the error ends a stream rather than being the answer
		want       gateway.ErrorObject
	}{
		{name: "ParamOfOpenAIsRefusal", model: "openai/gpt-4o-mini", fake: aitest.JSON(400, openAIBadTopP),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("top_p"), Code: ptr("invalid_value")}},
		{name: "ParamOfOpenAIsRefusalStreamed", model: "openai/gpt-4o-mini", stream: true, fake: aitest.JSON(400, openAIBadTopP),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("top_p"), Code: ptr("invalid_value")}},
		{name: "OverlongParamDropped", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(400, strings.Replace(openAIBadTopP, `"param":"top_p"`, `"param":"`+strings.Repeat("p", 300)+`"`, 1)),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Code: ptr("invalid_value")}},
		{name: "NoParamNamedCodePassed", model: "openai/gpt-4o-mini", fake: aitest.JSON(400, openAINoParam),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Code: ptr("context_length_exceeded")}},
		{name: "CodeOfOpenAIsRefusalStreamed", model: "openai/gpt-4o-mini", stream: true, fake: aitest.JSON(400, openAINoParam),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Code: ptr("context_length_exceeded")}},
		{name: "OverlongCodeDropped", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(400, strings.Replace(openAINoParam, `"context_length_exceeded"`, `"`+strings.Repeat("c", 300)+`"`, 1)),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error"}},
		{name: "CodeOfOtherCharactersDropped", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(400, strings.Replace(openAINoParam, `"context_length_exceeded"`, `"see <a href=x>this</a>"`, 1)),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error"}},
		{name: "CodeHoldingTheKeyDropped", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(400, strings.Replace(openAINoParam, `"context_length_exceeded"`, `"k-openai"`, 1)),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error"}},
		{name: "NumericCodeDropped", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(400, strings.Replace(openAINoParam, `"context_length_exceeded"`, `400`, 1)),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error"}},
		{name: "ServerKeyRefusedNotTheCallers", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(401, `{"error":{"message":"Incorrect API key provided: k-openai.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			wantStatus: 502, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "ServerKeyRefusedIn400NotTheCallers", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(400, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			wantStatus: 502, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "ServerAccountCodeNotPassed", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(400, `{"error":{"message":"Your organization must be verified to use this model.","type":"invalid_request_error","param":null,"code":"organization_verification_required"}}`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error"}},
		{name: "QuotaCodeNotPassed", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(429, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			wantStatus: 503, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "ModelNotFoundPassed", model: "openai/gpt-4o-mini",
			fake:       aitest.JSON(404, `{"error":{"message":"The model 'gpt-4o-mini' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("model"), Code: ptr("model_not_found")}},
		{name: "RefusalInStreamBeforeFirstPiece", model: "openai/gpt-4o-mini", stream: true,
			fake:       aitest.Events(`{"error":{"message":"Invalid value for 'top_p'.","type":"invalid_request_error","param":"top_p","code":"invalid_value"}}`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error", Param: ptr("top_p"), Code: ptr("invalid_value")}},
		{name: "OverlongParamInStreamDropped", model: "openai/gpt-4o-mini", stream: true,
			fake:       aitest.Events(`{"error":{"message":"Invalid value.","type":"invalid_request_error","param":"` + strings.Repeat("p", 300) + `","code":null}}`),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error"}},
		{name: "AnthropicOverloadedAnswer", model: "anthropic/claude-haiku-4-5",
			fake:       aitest.Error("anthropic", 529, "overloaded_error", "Overloaded", "x-should-retry", "false"),
			wantStatus: 502, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "GeminiUnavailableAnswer", model: "gemini/gemini-2.5-flash",
			fake:       aitest.Error("gemini", 503, "UNAVAILABLE", "The model is overloaded.", "x-should-retry", "false"),
			wantStatus: 502, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "GeminiUnavailableBeforeFirstPiece", model: "gemini/gemini-2.5-flash", stream: true,
			fake:       aitest.Events(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`),
			wantStatus: 502, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "GeminiExhaustedBeforeFirstPiece", model: "gemini/gemini-2.5-flash", stream: true,
			fake:       aitest.Events(`{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED"}}`),
			wantStatus: 429, want: gateway.ErrorObject{Type: "requests", Code: ptr("rate_limit_exceeded")}},
		{name: "AnthropicNamesNoParam", model: "anthropic/claude-haiku-4-5",
			fake:       aitest.Error("anthropic", 400, "invalid_request_error", "messages: text content blocks must be non-empty"),
			wantStatus: 400, want: gateway.ErrorObject{Type: "invalid_request_error"}},
		{name: "OpenAIFailsMidStream", model: "openai/gpt-4o-mini", stream: true, fake: aitest.Events(openAIPiece, openAIFailure),
			wantStatus: 200, wantEvent: true, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "AnthropicOverloadedMidStream", model: "anthropic/claude-haiku-4-5", stream: true,
			fake:       aitest.Events(append(anthropicStart, `error|{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)...),
			wantStatus: 200, wantEvent: true, want: gateway.ErrorObject{Type: "server_error"}},
		{name: "OpenAIFailsAnswer", model: "openai/gpt-4o-mini", fake: aitest.JSON(500, openAIFailure, "x-should-retry", "false"),
			wantStatus: 502, want: gateway.ErrorObject{Type: "server_error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fx := newGWFixture(t, Options{}, tt.fake)
			_, tok := fx.user(t)
			rec := do(fx.h, "POST", "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":%t,"top_p":0.5,
				"messages":[{"role":"user","content":"hi"}]}`, tt.model, tt.stream), tok)
			if got, want := rec.Code, tt.wantStatus; got != want {
				t.Fatalf("status=%d, want %d: %s", got, want, rec.Body)
			}
			body := rec.Body.Bytes()
			if tt.wantEvent {
				data := readSSE(t, rec.Body.String())
				if len(data) < 2 || data[len(data)-1] == "[DONE]" {
					t.Fatalf("stream %s: want it to end with an error chunk", rec.Body)
				}
				body = []byte(data[len(data)-1])
			}
			var raw struct {
				Error map[string]json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			for _, field := range []string{"message", "type", "param", "code"} {
				if _, ok := raw.Error[field]; !ok {
					t.Errorf("error %s has no %s, which OpenAI's error object always has", body, field)
				}
			}
			got := openAIErr(t, rec, body)
			got.Message = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error object (-want +got):\n%s\n%s", diff, body)
			}
		})
	}
}

func openAIErr(t testing.TB, rec interface {
	Result() *http.Response
}, body []byte) gateway.ErrorObject {
	t.Helper()
	var b struct {
		Error *gateway.ErrorObject `json:"error"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Error == nil || b.Error.Message == "" || b.Error.Type == "" {
		t.Fatalf("not OpenAI's error format: %s", body)
	}
	return *b.Error
}

func code(e gateway.ErrorObject) string {
	if e.Code == nil {
		return ""
	}
	return *e.Code
}

// Ensure every refusal on /v1 is in OpenAI's format with OpenAI's status, type and code, the
// middleware's included, and nothing reaches a provider.
func TestV1Errors(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	spentTok := fx.spentUser(t)
	chat := `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, method, path, body, token string
		status                          int
		typ, code, param                string
	}{
		{"unknown key", "POST", "/v1/chat/completions", chat, keys.Prefix + strings.Repeat("0", 43), 401, "invalid_request_error", "invalid_api_key", ""},
		{"no token", "POST", "/v1/chat/completions", chat, "", 401, "invalid_request_error", "invalid_api_key", ""},
		{"bad JWT", "GET", "/v1/models", "", "not.a.jwt", 401, "invalid_request_error", "invalid_api_key", ""},
		{"n", "POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"n":3}`, tok, 400, "invalid_request_error", "unsupported_parameter", "n"},
		{"malformed JSON", "POST", "/v1/chat/completions", `{"model":`, tok, 400, "invalid_request_error", "", ""},
		{"temperature past the provider's", "POST", "/v1/chat/completions", `{"model":"anthropic/claude-haiku-4-5","messages":[{"role":"user","content":"hi"}],"temperature":1.5}`, tok, 400, "invalid_request_error", "", "temperature"},
		{"empty content (the AI service's rule)", "POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"},{"role":"user","content":""}]}`, tok, 400, "invalid_request_error", "", "messages[1].content"},
		{"spent budget", "POST", "/v1/chat/completions", chat, spentTok, 429, "insufficient_quota", "insufficient_quota", ""},
		// A budget cannot bound a model without a price: its calls would be recorded at 0.
		{"budget and an unpriced model", "POST", "/v1/chat/completions", `{"model":"openai/o9-unpriced","messages":[{"role":"user","content":"hi"}]}`, spentTok, 400, "invalid_request_error", "model_not_priced", "model"},
		{"unknown model", "GET", "/v1/models/openai/nope", "", tok, 404, "invalid_request_error", "model_not_found", "model"},
		{"unknown model, id escaped", "GET", "/v1/models/openai%2Fnope", "", tok, 404, "invalid_request_error", "model_not_found", "model"},
	} {
		before := 0
		for _, f := range fx.fakes {
			before += len(f.Calls())
		}
		rec := do(fx.h, tc.method, tc.path, tc.body, tc.token)
		e := openAIErr(t, rec, rec.Body.Bytes())
		param := ""
		if e.Param != nil {
			param = *e.Param
		}
		if rec.Code != tc.status || e.Type != tc.typ || code(e) != tc.code || param != tc.param {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
		if tc.name == "spent budget" && rec.Header().Get("X-Should-Retry") != "false" {
			t.Errorf("a spent budget lets the SDKs retry")
		}
		after := 0
		for _, f := range fx.fakes {
			after += len(f.Calls())
		}
		if after != before {
			t.Errorf("%s: a provider was called", tc.name)
		}
	}
	// The same budget on /api answers the envelope.
	rec := do(fx.h, "POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini"}`, spentTok)
	env := decodeJSON[envelope](t, rec.Body.Bytes())
	if rec.Code != 402 || env.Error != "Payment Required" || !strings.HasPrefix(fmt.Sprint(env.Message), "Monthly AI budget of $0.00 reached; it resets on ") {
		t.Errorf("/api budget refusal: %d %s", rec.Code, rec.Body)
	}
	// A caller without a budget calls an unpriced model as before (its cost is 0).
	if rec := do(fx.h, "POST", "/v1/chat/completions", `{"model":"openai/o9-unpriced","messages":[{"role":"user","content":"hi"}]}`, tok); rec.Code != 200 {
		t.Errorf("an unpriced model without a budget: %d %s", rec.Code, rec.Body)
	}
}

// Ensure the rate limit on /v1 answers OpenAI's 429 rate_limit_exceeded.
func TestV1RateLimit(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{RateLimit: 1, RateWindow: time.Minute})
	_, tok := fx.user(t)
	do(fx.h, "GET", "/v1/models", "", tok)
	rec := do(fx.h, "GET", "/v1/models", "", tok)
	if e := openAIErr(t, rec, rec.Body.Bytes()); rec.Code != 429 || code(e) != "rate_limit_exceeded" || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// Ensure keys are created, listed without their secret, used on /v1 and /api/ai/*, refused on
// accounts, keys, storage and templates, and revoked.
func TestKeysRoutes(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/api/keys", `{"name":"ci","expiresInDays":30}`, tok)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	created := decodeJSON[keys.Created](t, rec.Body.Bytes())
	if !keys.LooksLikeKey(created.Key) || created.ExpiresAt == nil {
		t.Fatalf("created %s", rec.Body)
	}
	rec = do(fx.h, "GET", "/api/keys", "", tok)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), created.Key[len(keys.Prefix):]) || !strings.Contains(rec.Body.String(), created.ID) {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	if rec := do(fx.h, "POST", "/api/keys", `{"name":""}`, tok); rec.Code != 400 || !strings.Contains(rec.Body.String(), "name should not be empty") {
		t.Fatalf("bad create: %d %s", rec.Code, rec.Body)
	}
	chat := `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/chat/completions", chat, 200},
		{"GET", "/v1/models", "", 200},
		{"POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"GET", "/api/ai/usage", "", 200},
		{"GET", "/api/ai/budget", "", 200},
		{"GET", "/api/auth/profile", "", 401},
		{"GET", "/api/keys", "", 401},
		{"POST", "/api/keys", `{"name":"more"}`, 401},
		{"DELETE", "/api/keys/" + created.ID, "", 401},
		{"POST", "/api/storage/mongodb/test", `{"uri":"mongodb://localhost:1"}`, 401},
		{"GET", "/api/spaces/s1/properties/templates", "", 401},
	} {
		if rec := do(fx.h, tc.method, tc.path, tc.body, created.Key); rec.Code != tc.status {
			t.Errorf("key on %s %s: %d %s", tc.method, tc.path, rec.Code, rec.Body)
		}
	}
	if fx.fakes["openai"].Last().Header.Get("Authorization") != "Bearer k-openai" {
		t.Fatal("the provider did not get the server's key")
	}
	if rec := do(fx.h, "DELETE", "/api/keys/"+created.ID, "", tok); rec.Code != 204 {
		t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
	}
	if rec := do(fx.h, "DELETE", "/api/keys/"+created.ID, "", tok); rec.Code != 404 {
		t.Fatalf("second revoke: %d %s", rec.Code, rec.Body)
	}
	rec = do(fx.h, "POST", "/v1/chat/completions", chat, created.Key)
	if e := openAIErr(t, rec, rec.Body.Bytes()); rec.Code != 401 || code(e) != "invalid_api_key" {
		t.Fatalf("revoked key: %d %s", rec.Code, rec.Body)
	}
	if rec := do(fx.h, "POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi"}]}`, created.Key); rec.Code != 401 {
		t.Fatalf("revoked key on /api: %d %s", rec.Code, rec.Body)
	}
}

// Ensure /v1 passes system and developer messages to every provider where its API takes them:
// Anthropic's system text, Gemini's systemInstruction.
func TestV1SystemMessages(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	msgs := `[{"role":"system","content":"Be brief."},{"role":"developer","content":"Use English."},{"role":"user","content":"hi"}]`
	for _, model := range []string{"anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"} {
		rec := do(fx.h, "POST", "/v1/chat/completions", `{"model":"`+model+`","messages":`+msgs+`}`, tok)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", model, rec.Code, rec.Body)
		}
	}
	if got := fx.fakes["anthropic"].Last().Body["system"]; got != "Be brief.\n\nUse English." {
		t.Errorf("anthropic system %q", got)
	}
	if got := fmt.Sprint(fx.fakes["gemini"].Last().Body["systemInstruction"]); !strings.Contains(got, "Be brief.") || !strings.Contains(got, "Use English.") {
		t.Errorf("gemini systemInstruction %s", got)
	}
	// The Anthropic endpoint of /api keeps refusing the role.
	apiBody := `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`
	if rec := do(fx.h, "POST", "/api/ai/anthropic/messages", apiBody, tok); rec.Code != 400 {
		t.Errorf("/api anthropic with a system message: %d %s", rec.Code, rec.Body)
	}
}

// Ensure a personal key stops working with its user's account: once the user is deleted, the
// key is refused like any bad key (the account cache set to read on every request here).
func TestKeyOfDeletedUserRefused(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	fx.auth.SetCallerTTL(0)
	uid, tok := fx.user(t)
	rec := do(fx.h, "POST", "/api/keys", `{"name":"ci"}`, tok)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	key := decodeJSON[keys.Created](t, rec.Body.Bytes()).Key
	if rec := do(fx.h, "GET", "/v1/models", "", key); rec.Code != 200 {
		t.Fatalf("before: %d %s", rec.Code, rec.Body)
	}
	oid, err := primitive.ObjectIDFromHex(uid)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := fx.db.Collection(auth.UsersCollection).DeleteOne(context.Background(), bson.D{{Key: "_id", Value: oid}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("delete user: %v %v", res, err)
	}
	if rec := do(fx.h, "GET", "/v1/models", "", key); rec.Code != 401 {
		t.Fatalf("/v1 after the user was deleted: %d %s", rec.Code, rec.Body)
	}
	if rec := do(fx.h, "GET", "/api/ai/usage", "", key); rec.Code != 401 {
		t.Fatalf("/api/ai after the user was deleted: %d %s", rec.Code, rec.Body)
	}
}

// Ensure GET /api/ai/budget reports the caller's month.
func TestBudgetRoute(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	uid, tok := fx.user(t)
	rec := do(fx.h, "GET", "/api/ai/budget", "", tok)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"limit":null`) || !strings.Contains(rec.Body.String(), `"remaining":null`) {
		t.Fatalf("no budget: %d %s", rec.Code, rec.Body)
	}
	limit := 25.0
	if _, err := fx.budget.SetLimit(context.Background(), uid, &limit); err != nil {
		t.Fatal(err)
	}
	if rec := do(fx.h, "POST", "/api/ai/openai/chat", `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini"}`, tok); rec.Code != 200 {
		t.Fatalf("call: %d %s", rec.Code, rec.Body)
	}
	st := decodeJSON[budget.Status](t, do(fx.h, "GET", "/api/ai/budget", "", tok).Body.Bytes())
	if *st.Limit != 25 || st.Spent <= 0 || st.Reserved != 0 || *st.Remaining-(25-st.Spent) > 1e-9 || st.ResetsAt.Day() != 1 {
		t.Fatalf("budget after one call: %+v", st)
	}
}

// Ensure 200 concurrent calls through the real AI service against a budget covering about 50
// end with the month's recorded spend at or under the limit, every refusal the budget's 402.
func TestBudgetConcurrentCalls(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	uid, tok := fx.user(t)
	body := `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini","maxTokens":100}`
	// One call's worst case: 2 prompt bytes and the overhead of one message (16 + 8 tokens) at
	// the input price, and 100 output tokens.
	prices, _ := ai.LoadPrices("", nil)
	_, pr, _ := prices.Lookup("openai", "gpt-4o-mini")
	worst := (2+16+8)*pr.Input + 100*pr.Output
	limit := 50.5 * worst
	if _, err := fx.budget.SetLimit(context.Background(), uid, &limit); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := do(fx.h, "POST", "/api/ai/openai/chat", body, tok)
			if rec.Code == 402 && !strings.Contains(rec.Body.String(), "Monthly AI budget of") {
				t.Errorf("402 without the budget's message: %s", rec.Body)
			}
			mu.Lock()
			statuses[rec.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[200]+statuses[402] != 200 || statuses[200] < 50 {
		t.Fatalf("statuses %v", statuses)
	}
	var sum usage.Summary
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && sum.TotalRequests < int64(statuses[200]); time.Sleep(10 * time.Millisecond) {
		sum = decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage?days=1", "", tok).Body.Bytes())
	}
	if sum.TotalRequests != int64(statuses[200]) || sum.TotalCost > limit*(1+1e-9) {
		t.Fatalf("recorded %+v for %d admitted calls, limit %g", sum, statuses[200], limit)
	}
}

// Ensure a provider failure that retrying cannot cure (the server's provider key refused, its
// provider account out of credit) is answered on /v1 and /v1/messages with X-Should-Retry:
// false, so that the official SDKs do not send it twice more; one that may pass (a 5xx) is
// left to the SDKs' retries.
func TestV1_ProviderFailureRetryHint(t *testing.T) {
	t.Parallel()
	geminiBadKey := `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`
	anthropicSpendLimit := `{"type":"error","error":{"type":"rate_limit_error","message":"spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}`
	tests := []struct {
		name       string
		model      string
		fail       aitest.Responder
		wantStatus int
		wantHeader string // X-Should-Retry
	}{
		{"OpenAIKeyRefused", "openai/gpt-4o-mini", aitest.Error("openai", 401, "invalid_api_key", "Incorrect API key provided"), 502, "false"},
		{"OpenAIInsufficientQuota", "openai/gpt-4o-mini", aitest.Error("openai", 429, "insufficient_quota", "You exceeded your current quota"), 503, "false"},
		{"AnthropicBillingError", "anthropic/claude-haiku-4-5", aitest.Error("anthropic", 402, "billing_error", "Your credit balance is too low"), 503, "false"},
		{"AnthropicSpendLimit", "anthropic/claude-haiku-4-5", aitest.JSON(429, json.RawMessage(anthropicSpendLimit)), 503, "false"},
		{"GeminiKeyRefused", "gemini/gemini-2.5-flash", aitest.JSON(400, json.RawMessage(geminiBadKey)), 502, "false"},
		{"OpenAIServerError", "openai/gpt-4o-mini", aitest.JSON(500, "<html>oops</html>"), 502, ""},
	}
	for _, tt := range tests {
		for _, route := range []string{"/v1/chat/completions", "/v1/messages"} {
			t.Run(tt.name+route, func(t *testing.T) {
				t.Parallel()
				fx := newGWFixture(t, Options{}, tt.fail)
				_, tok := fx.user(t)
				body := fmt.Sprintf(`{"model":%q,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, tt.model)
				rec := do(fx.h, "POST", route, body, tok)
				if got, want := rec.Code, tt.wantStatus; got != want {
					t.Fatalf("status=%d, want %d: %s", got, want, rec.Body)
				}
				if got, want := rec.Header().Get("X-Should-Retry"), tt.wantHeader; got != want {
					t.Errorf("X-Should-Retry=%q, want %q", got, want)
				}
				if tt.wantHeader == "false" {
					if got, want := len(fx.fakes[strings.Split(tt.model, "/")[0]].Calls()), 1; got != want {
						t.Errorf("the provider received %d calls, want %d", got, want)
					}
				}
			})
		}
	}
}
