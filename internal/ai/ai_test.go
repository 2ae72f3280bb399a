package ai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/usage"
)

const testKey = "sk-test-SECRET-key"

type memRecorder struct {
	mu   sync.Mutex
	recs []usage.Record
	ctxs []context.Context
}

func (m *memRecorder) Record(ctx context.Context, r usage.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
	m.ctxs = append(m.ctxs, ctx)
	return nil
}

func (m *memRecorder) all() []usage.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]usage.Record(nil), m.recs...)
}

func newService(t *testing.T, fake *aitest.Server, provider string, mod func(*ai.Options)) (*ai.Service, *memRecorder) {
	t.Helper()
	rec := &memRecorder{}
	opts := ai.Options{
		Providers: map[string]ai.ProviderConfig{provider: {APIKey: testKey, BaseURL: fake.BaseURL(), DefaultModel: "default-" + provider}},
		Timeout:   5 * time.Second,
		Recorder:  rec,
		RetryBase: time.Millisecond,
		RetryCap:  50 * time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	return ai.New(opts), rec
}

func input(t *testing.T, js string) ai.ChatInput {
	t.Helper()
	var in ai.ChatInput
	if err := json.Unmarshal([]byte(js), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// Ensure each provider gets its own wire format with the defaults, and answers are normalized.
func TestComplete_WireFormatsAndDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider string
		body     string
		check    func(t *testing.T, c aitest.Call)
	}{
		{"OpenAIDefaults", "openai", `{"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}]}`,
			func(t *testing.T, c aitest.Call) {
				if got := c.Header.Get("Authorization"); got != "Bearer "+testKey {
					t.Errorf("Authorization=%q", got)
				}
				if c.Body["model"] != "default-openai" || c.Body["temperature"] != 0.7 || c.Body["max_completion_tokens"] != 1000.0 {
					t.Errorf("body=%s", c.Raw)
				}
				if _, ok := c.Body["max_tokens"]; ok {
					t.Errorf("max_tokens sent: %s", c.Raw)
				}
				msgs := c.Body["messages"].([]any)
				if m := msgs[0].(map[string]any); m["role"] != "system" || m["content"] != "Be terse." {
					t.Errorf("system message %v", m)
				}
			}},
		{"AnthropicDefaults", "anthropic", `{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"},{"role":"user","content":"Joke"}]}`,
			func(t *testing.T, c aitest.Call) {
				if c.Header.Get("x-api-key") != testKey || c.Header.Get("anthropic-version") != "2023-06-01" {
					t.Errorf("headers %v", c.Header)
				}
				if c.Header.Get("Authorization") != "" {
					t.Errorf("Authorization sent to anthropic")
				}
				if c.Body["model"] != "default-anthropic" || c.Body["temperature"] != 0.7 || c.Body["max_tokens"] != 1000.0 {
					t.Errorf("body=%s", c.Raw)
				}
				if len(c.Body["messages"].([]any)) != 3 {
					t.Errorf("messages %s", c.Raw)
				}
			}},
		{"GeminiDefaultsAndRoleMapping", "gemini", `{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"},{"role":"user","content":"Count"}]}`,
			func(t *testing.T, c aitest.Call) {
				if c.Header.Get("x-goog-api-key") != testKey || strings.Contains(c.Path, "key=") {
					t.Errorf("key not in x-goog-api-key")
				}
				if c.Model() != "default-gemini" {
					t.Errorf("path %s", c.Path)
				}
				var roles []string
				for _, x := range c.Body["contents"].([]any) {
					roles = append(roles, x.(map[string]any)["role"].(string))
				}
				if strings.Join(roles, ",") != "user,model,user" {
					t.Errorf("roles %v", roles)
				}
				gc := c.Body["generationConfig"].(map[string]any)
				if gc["temperature"] != 0.9 || gc["maxOutputTokens"] != 1000.0 {
					t.Errorf("generationConfig %v", gc)
				}
			}},
		{"ExplicitValues", "openai", `{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini","temperature":0.3,"maxTokens":64}`,
			func(t *testing.T, c aitest.Call) {
				if c.Body["model"] != "gpt-4o-mini" || c.Body["temperature"] != 0.3 || c.Body["max_completion_tokens"] != 64.0 {
					t.Errorf("body=%s", c.Raw)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider)
			svc, rec := newService(t, fake, tt.provider, nil)
			got, err := svc.Complete(context.Background(), "user1", tt.provider, input(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			last := fake.Last()
			tt.check(t, last)
			// Every provider gets JSON, and is not asked to compress (the answers are small).
			if last.Header.Get("Content-Type") != "application/json" || last.Header.Get("Accept") != "application/json" ||
				last.Header.Get("Accept-Encoding") != "" {
				t.Errorf("headers %v", last.Header)
			}
			if got.Text != "Hello from the fake" || got.Usage != (ai.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18}) ||
				got.Provider != tt.provider || len(got.RequestID) != 36 {
				t.Errorf("completion %+v", got)
			}
			recs := rec.all()
			if len(recs) != 1 || recs[0].Status != usage.StatusSuccess || recs[0].RequestID != got.RequestID ||
				recs[0].UserID != "user1" || recs[0].TotalTokens != 18 || recs[0].Model != got.Model {
				t.Errorf("records %+v", recs)
			}
		})
	}
}

// Ensure token normalization: cached prompt tokens count as prompt, thinking as completion,
// thought parts are not text, and cached tokens are billed at the cache rate.
func TestComplete_TokenRulesAndCost(t *testing.T) {
	t.Parallel()
	gem := aitest.GeminiAnswer("gemini-2.5-flash", "visible", 100, 20, 30, 40)
	gem["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"] = []any{
		map[string]any{"text": "thinking...", "thought": true}, map[string]any{"text": "visible"}, map[string]any{"text": " answer"}}
	tests := []struct {
		name       string
		provider   string
		answer     map[string]any
		want       ai.Usage
		wantText   string
		wantModel  string
		wantCost   float64
		wantPrices string
	}{
		{"OpenAICachedSubset", "openai", aitest.OpenAIAnswer("gpt-4o-mini-2024-07-18", "hi", 1000, 100, 400), ai.Usage{1000, 100, 1100}, "hi",
			"gpt-4o-mini-2024-07-18", 600*0.15e-6 + 400*0.075e-6 + 100*0.6e-6, "gpt-4o-mini"},
		{"AnthropicCacheReadAndWrite", "anthropic", aitest.AnthropicAnswer("claude-haiku-4-5-20251001", "hi", 10, 50, 200, 100), ai.Usage{310, 50, 360}, "hi",
			"claude-haiku-4-5-20251001", 10*1e-6 + 200*0.1e-6 + 100*1.25e-6 + 50*5e-6, "claude-haiku-4-5"},
		{"GeminiThoughtsAreCompletion", "gemini", gem, ai.Usage{100, 50, 150}, "visible answer",
			"gemini-2.5-flash", 60*0.3e-6 + 40*0.03e-6 + 50*2.5e-6, "gemini/gemini-2.5-flash"},
		{"OpenAINullContentIsEmptyText", "openai", map[string]any{"id": "c", "model": "gpt-4o-mini", "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help with that."}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11}}, ai.Usage{5, 6, 11}, "", "gpt-4o-mini", 5*0.15e-6 + 6*0.6e-6, "gpt-4o-mini"},
		{"AnthropicToolUseOnlyIsEmptyText", "anthropic", map[string]any{"id": "m", "type": "message", "model": "claude-haiku-4-5",
			"content": []any{map[string]any{"type": "tool_use", "id": "t", "name": "f", "input": map[string]any{}}},
			"usage":   map[string]any{"input_tokens": 5, "output_tokens": 6}}, ai.Usage{5, 6, 11}, "", "claude-haiku-4-5", 5*1e-6 + 6*5e-6, "claude-haiku-4-5"},
		{"UnknownModelCostsZero", "openai", aitest.OpenAIAnswer("mystery-model", "hi", 10, 10, 0), ai.Usage{10, 10, 20}, "hi", "mystery-model", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider, aitest.JSON(200, tt.answer))
			svc, rec := newService(t, fake, tt.provider, nil)
			got, err := svc.Complete(context.Background(), "u", tt.provider, input(t, `{"messages":[{"role":"user","content":"x"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if got.Usage != tt.want || got.Text != tt.wantText || got.Model != tt.wantModel {
				t.Errorf("got %+v", got)
			}
			if math.Abs(got.Cost-tt.wantCost) > 1e-12 {
				t.Errorf("cost=%g, want %g", got.Cost, tt.wantCost)
			}
			r := rec.all()[0]
			if tt.wantPrices == "" {
				if r.Prices != nil {
					t.Errorf("unknown model has prices %+v", r.Prices)
				}
			} else if r.Prices == nil || r.Prices.Entry != tt.wantPrices {
				t.Errorf("prices %+v, want entry %s", r.Prices, tt.wantPrices)
			}
		})
	}
}

// Ensure failures become the right answers, with the right number of upstream calls.
func TestComplete_Failures(t *testing.T) {
	t.Parallel()
	ok := aitest.OK("")
	tests := []struct {
		name       string
		provider   string
		script     []aitest.Responder
		timeout    time.Duration
		wantKind   apperr.Kind
		wantCalls  int
		wantMsg    string // substring of the message
		wantRetry  int    // Retry-After seconds
		wantStatus string
	}{
		{"429ThenRetryAfterThen429", "openai", []aitest.Responder{aitest.Error("openai", 429, "rate_limit_exceeded", "slow down", "retry-after", "0.01")},
			0, apperr.RateLimited, 3, "rate limit", 1, usage.StatusError},
		{"429RetryAfterTooLongAnswersAtOnce", "openai", []aitest.Responder{aitest.Error("openai", 429, "rate_limit_exceeded", "slow", "retry-after", "47")},
			0, apperr.RateLimited, 1, "rate limit", 47, usage.StatusError},
		{"GeminiRetryInfoIsRetryAfter", "gemini", []aitest.Responder{aitest.JSON(429, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}`)},
			0, apperr.RateLimited, 1, "quota", 47, usage.StatusError},
		{"InsufficientQuotaNotRetried", "openai", []aitest.Responder{aitest.Error("openai", 429, "insufficient_quota", "You exceeded your current quota")},
			0, apperr.Unavailable, 1, "spending limit", 0, usage.StatusError},
		{"AnthropicSpendLimitNotRetried", "anthropic", []aitest.Responder{aitest.JSON(429, `{"type":"error","error":{"type":"rate_limit_error","message":"cap","details":{"error_code":"enforced_spend_limit_reached"}}}`)},
			0, apperr.Unavailable, 1, "spending limit", 0, usage.StatusError},
		{"500ThenSuccess", "openai", []aitest.Responder{aitest.JSON(500, "<html>oops</html>"), ok}, 0, 0, 2, "", 0, usage.StatusSuccess},
		{"ConnectionResetThenSuccess", "openai", []aitest.Responder{aitest.Reset(), ok}, 0, 0, 2, "", 0, usage.StatusSuccess},
		{"Anthropic529Thrice", "anthropic", []aitest.Responder{aitest.Error("anthropic", 529, "overloaded_error", "Overloaded")},
			0, apperr.Upstream, 3, "Overloaded", 0, usage.StatusError},
		{"Anthropic529ShouldNotRetry", "anthropic", []aitest.Responder{aitest.Error("anthropic", 529, "overloaded_error", "Overloaded", "x-should-retry", "false")},
			0, apperr.Upstream, 1, "Overloaded", 0, usage.StatusError},
		{"Gemini503ThenSuccess", "gemini", []aitest.Responder{aitest.Error("gemini", 503, "UNAVAILABLE", "overloaded"), ok}, 0, 0, 2, "", 0, usage.StatusSuccess},
		{"BadKey401", "openai", []aitest.Responder{aitest.Error("openai", 401, "invalid_api_key", "Incorrect API key provided: "+testKey)},
			0, apperr.Upstream, 1, "refused the server's API key", 0, usage.StatusError},
		{"GeminiBadKeyIs400", "gemini", []aitest.Responder{aitest.JSON(400, `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`)},
			0, apperr.Upstream, 1, "refused the server's API key", 0, usage.StatusError},
		{"Upstream400CarriesMessage", "anthropic", []aitest.Responder{aitest.Error("anthropic", 400, "invalid_request_error", "messages: roles must alternate")},
			0, apperr.Invalid, 1, "roles must alternate", 0, usage.StatusError},
		{"GeminiBlockedPrompt", "gemini", []aitest.Responder{aitest.JSON(200, `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":5}}`)},
			0, apperr.Invalid, 1, "SAFETY", 0, usage.StatusError},
		{"EmptyChoices", "openai", []aitest.Responder{aitest.JSON(200, `{"id":"x","choices":[],"usage":{}}`)}, 0, apperr.Upstream, 1, "no choices", 0, usage.StatusError},
		{"EmptyCandidates", "gemini", []aitest.Responder{aitest.JSON(200, `{"candidates":[]}`)}, 0, apperr.Upstream, 1, "no candidates", 0, usage.StatusError},
		{"AnthropicNullBody", "anthropic", []aitest.Responder{aitest.JSON(200, `null`)}, 0, apperr.Upstream, 1, "without content", 0, usage.StatusError},
		{"AnthropicNoContent", "anthropic", []aitest.Responder{aitest.JSON(200, `{"id":"msg_1","type":"message","usage":{"input_tokens":1,"output_tokens":1}}`)}, 0, apperr.Upstream, 1, "without content", 0, usage.StatusError},
		{"TruncatedJSON", "anthropic", []aitest.Responder{aitest.JSON(200, `{"id":"msg_1","content":[{"type":"te`)}, 0, apperr.Upstream, 1, "not valid JSON", 0, usage.StatusError},
		{"HangPastTimeout", "openai", []aitest.Responder{aitest.Hang(10 * time.Second)}, 100 * time.Millisecond, apperr.UpstreamTimeout, 1, "ai.timeout", 0, usage.StatusError},
		{"TemperatureRefusedResentWithout", "openai", []aitest.Responder{
			aitest.JSON(400, `{"error":{"message":"Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}`), ok},
			0, 0, 2, "", 0, usage.StatusSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider, tt.script...)
			svc, rec := newService(t, fake, tt.provider, func(o *ai.Options) {
				if tt.timeout > 0 {
					o.Timeout = tt.timeout
				}
			})
			_, err := svc.Complete(context.Background(), "u", tt.provider, input(t, `{"messages":[{"role":"user","content":"x"}]}`))
			if got := len(fake.Calls()); got != tt.wantCalls {
				t.Errorf("upstream calls=%d, want %d", got, tt.wantCalls)
			}
			recs := rec.all()
			if len(recs) != 1 || recs[0].Status != tt.wantStatus {
				t.Fatalf("records %+v, want one with status %s", recs, tt.wantStatus)
			}
			if tt.wantStatus == usage.StatusSuccess {
				if err != nil {
					t.Fatalf("err=%v", err)
				}
				if tt.name == "TemperatureRefusedResentWithout" {
					if _, sent := fake.Last().Body["temperature"]; sent {
						t.Errorf("temperature resent: %s", fake.Last().Raw)
					}
				}
				return
			}
			e := apperr.As(err)
			if e == nil || e.Kind != tt.wantKind {
				t.Fatalf("err=%v (kind %v), want kind %v", err, apperr.KindOf(err), tt.wantKind)
			}
			msg := strings.Join(e.Messages, " ")
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q lacks %q", msg, tt.wantMsg)
			}
			// err.Error() is what the access log writes (the cause included).
			if strings.Contains(err.Error(), testKey) || strings.Contains(recs[0].Error, testKey) {
				t.Errorf("API key leaked: %q / %q", err.Error(), recs[0].Error)
			}
			if e.RetryAfter != tt.wantRetry {
				t.Errorf("RetryAfter=%d, want %d", e.RetryAfter, tt.wantRetry)
			}
		})
	}
}

// Ensure a caller that leaves cancels the upstream call and the request is still recorded on a
// context that is not canceled.
func TestComplete_ClientCancel(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	fake := aitest.New(t, "openai", func(w http.ResponseWriter, r *http.Request, c aitest.Call) {
		<-r.Context().Done()
		close(gone)
	})
	svc, rec := newService(t, fake, "openai", nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(fake.Calls()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := svc.Complete(ctx, "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}]}`))
	if err == nil {
		t.Fatal("no error after cancel")
	}
	<-gone // the upstream saw its request canceled
	recs := rec.all()
	if len(recs) != 1 || recs[0].Status != usage.StatusCanceled {
		t.Fatalf("records %+v, want one canceled", recs)
	}
	if rec.ctxs[0].Err() != nil {
		t.Fatalf("record context is canceled: the recorder could drop it")
	}
}

// Ensure a provider without a key answers 503 naming the key, and sends nothing.
func TestComplete_MissingKey(t *testing.T) {
	t.Parallel()
	fake := aitest.New(t, "anthropic")
	svc, rec := newService(t, fake, "anthropic", func(o *ai.Options) {
		o.Providers = map[string]ai.ProviderConfig{"anthropic": {BaseURL: fake.BaseURL()}}
	})
	_, err := svc.Complete(context.Background(), "u", "anthropic", input(t, `{"messages":[{"role":"user","content":"x"}]}`))
	if e := apperr.As(err); e == nil || e.Kind != apperr.Unavailable || !strings.Contains(e.Messages[0], "ai.anthropic.api_key") {
		t.Fatalf("err=%v", err)
	}
	if len(fake.Calls()) != 0 || len(rec.all()) != 0 {
		t.Fatal("a request without a key reached the provider or was recorded")
	}
}

// Ensure validation follows each endpoint's rules in class-validator's words, names the
// parameter of the first message, and sends nothing.
func TestComplete_Validation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, param, provider, body string // param: the parameter of the first message
		want                        []string
	}{
		{"EmptyMessages", "messages", "openai", `{"messages":[]}`, []string{"messages should not be empty"}},
		{"MissingMessages", "messages", "gemini", `{}`, []string{"messages should not be empty", "messages must be an array"}},
		{"SystemRefusedByAnthropic", "messages.0.role", "anthropic", `{"messages":[{"role":"system","content":"x"}]}`,
			[]string{"messages.0.role must be one of the following values: user, assistant"}},
		{"SystemRefusedByGemini", "messages.1.role", "gemini", `{"messages":[{"role":"user","content":"x"},{"role":"system","content":"x"}]}`,
			[]string{"messages.1.role must be one of the following values: user, assistant"}},
		{"BadRoleOpenAI", "messages.0.role", "openai", `{"messages":[{"role":"tool","content":"x"}]}`,
			[]string{"messages.0.role must be one of the following values: user, assistant, system"}},
		{"AnthropicTemperature", "temperature", "anthropic", `{"messages":[{"role":"user","content":"x"}],"temperature":1.5}`,
			[]string{"temperature must not be greater than 1"}},
		{"OpenAITemperature", "temperature", "openai", `{"messages":[{"role":"user","content":"x"}],"temperature":2.5}`,
			[]string{"temperature must not be greater than 2"}},
		{"NegativeTemperature", "temperature", "gemini", `{"messages":[{"role":"user","content":"x"}],"temperature":-1}`,
			[]string{"temperature must not be less than 0"}},
		{"TemperatureString", "temperature", "openai", `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`,
			[]string{"temperature must be a number conforming to the specified constraints"}},
		{"MaxTokensFraction", "maxTokens", "openai", `{"messages":[{"role":"user","content":"x"}],"maxTokens":1.5}`,
			[]string{"maxTokens must be an integer number"}},
		{"MaxTokensZero", "maxTokens", "openai", `{"messages":[{"role":"user","content":"x"}],"maxTokens":0}`,
			[]string{"maxTokens must not be less than 1"}},
		{"ContentNotString", "messages.0.content", "openai", `{"messages":[{"role":"user","content":5}]}`, []string{"messages.0.content must be a string"}},
		{"ContentEmpty", "messages.0.content", "openai", `{"messages":[{"role":"user","content":""}]}`, []string{"messages.0.content should not be empty"}},
		{"MessageNotObject", "messages.0", "openai", `{"messages":["hi"]}`, []string{"each value in nested property messages must be either object or array",
			"messages.0.role must be one of the following values: user, assistant, system", "messages.0.content should not be empty"}},
		{"ModelPathTraversal", "model", "gemini", `{"messages":[{"role":"user","content":"x"}],"model":"../../etc"}`,
			[]string{"model must match ^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$ regular expression"}},
		{"ModelNotString", "model", "gemini", `{"messages":[{"role":"user","content":"x"}],"model":7}`, []string{"model must be a string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider)
			svc, _ := newService(t, fake, tt.provider, nil)
			_, err := svc.Complete(context.Background(), "u", tt.provider, input(t, tt.body))
			e := apperr.As(err)
			if e == nil || e.Kind != apperr.Invalid || !e.List {
				t.Fatalf("err=%v, want a validation error", err)
			}
			if strings.Join(e.Messages, "|") != strings.Join(tt.want, "|") {
				t.Errorf("messages %q, want %q", e.Messages, tt.want)
			}
			if e.Param != tt.param {
				t.Errorf("param %q, want %q", e.Param, tt.param)
			}
			if len(fake.Calls()) != 0 {
				t.Errorf("an invalid request reached the provider")
			}
		})
	}
}

// Ensure input built in code (as the /v1 gateway builds it) is held to the model rule that
// decoded input is: a name that is not a model never reaches the provider or a usage record.
func TestComplete_ModelOfInputBuiltInCode(t *testing.T) {
	t.Parallel()
	for _, model := range []string{strings.Repeat("A", 3000), "<img src=x>", "\u202egpt-5-mini"} {
		fake := aitest.New(t, "openai")
		svc, _ := newService(t, fake, "openai", nil)
		in := ai.ChatInput{Model: model, Messages: []ai.Message{{Role: "user", Content: "x"}}}
		_, err := svc.Complete(context.Background(), "u", "openai", in)
		if e := apperr.As(err); e == nil || e.Kind != apperr.Invalid || e.Param != "model" {
			t.Fatalf("model %.20q: err=%v, want a validation error of model", model, err)
		}
		if len(fake.Calls()) != 0 {
			t.Errorf("model %.20q reached the provider", model)
		}
	}
}

// Ensure a provider's redirect is an answer, never followed: the request carries the API key.
func TestComplete_RedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer elsewhere.Close()
	fake := aitest.New(t, "anthropic", func(w http.ResponseWriter, _ *http.Request, _ aitest.Call) {
		w.Header().Set("Location", elsewhere.URL+"/v1/messages")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	svc, rec := newService(t, fake, "anthropic", nil)
	_, err := svc.Complete(context.Background(), "u", "anthropic", input(t, `{"messages":[{"role":"user","content":"x"}]}`))
	if e := apperr.As(err); e == nil || e.Kind != apperr.Upstream || !strings.Contains(strings.Join(e.Messages, " "), "307") {
		t.Fatalf("err=%v, want an upstream error naming the 307", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
	if recs := rec.all(); len(recs) != 1 || recs[0].UpstreamStatus != http.StatusTemporaryRedirect {
		t.Errorf("records %+v", recs)
	}
}

// Ensure answers with invalid UTF-8 (replaced by U+FFFD) or duplicate names (the last wins) are
// read as encoding/json reads them.
func TestComplete_LenientAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, provider, body, want string }{
		{"InvalidUTF8", "openai", "{\"model\":\"m\",\"choices\":[{\"message\":{\"content\":\"caf\xe9\"}}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}", "caf\uFFFD"},
		{"DuplicateNames", "anthropic", `{"model":"m","content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}],"usage":{"input_tokens":1,"output_tokens":2}}`, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider, aitest.JSON(200, tt.body))
			svc, _ := newService(t, fake, tt.provider, nil)
			c, err := svc.Complete(context.Background(), "u", tt.provider, input(t, `{"messages":[{"role":"user","content":"x"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if c.Text != tt.want || c.Usage.TotalTokens != 3 {
				t.Errorf("text %q tokens %+v, want %q and 3", c.Text, c.Usage, tt.want)
			}
		})
	}
}

// Ensure no configured API key reaches an answer or a record, in any letter case, also when
// a provider quotes another provider's key (one gateway behind several base URLs), and in a
// stream's failure.
func TestProviderKeysRedacted(t *testing.T) {
	t.Parallel()
	const other = "sk-ant-OTHER-provider-key"
	encoded := strings.ReplaceAll(url.QueryEscape(other), "-", "%2d") // every - percent-encoded
	cut := other[:len(other)-4]                                       // quoted cut short
	quote := "bad keys: " + testKey + ", " + strings.ToUpper(testKey) + ", " + other + " and " + encoded + ", cut " + cut + "..."
	for _, tc := range []struct {
		name   string
		stream bool
		script aitest.Responder
	}{
		{"ErrorAnswer", false, aitest.Error("openai", 400, "invalid_request_error", quote)},
		{"StreamError", true, aitest.Events(`{"error":{"message":"` + quote + `","type":"server_error"}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, "openai", tc.script)
			svc, rec := newService(t, fake, "openai", func(o *ai.Options) {
				o.Providers["anthropic"] = ai.ProviderConfig{APIKey: other, BaseURL: fake.BaseURL()}
			})
			in := input(t, `{"messages":[{"role":"user","content":"x"}]}`)
			var err error
			if tc.stream {
				_, err = svc.Stream(context.Background(), "u", "openai", in, nil)
			} else {
				_, err = svc.Complete(context.Background(), "u", "openai", in)
			}
			recs := rec.all()
			if err == nil || len(recs) != 1 {
				t.Fatalf("err = %v, records %d: want a failure recorded once", err, len(recs))
			}
			for _, text := range []string{err.Error(), strings.Join(apperr.As(err).Messages, " "), recs[0].Error} {
				low := strings.ToLower(text)
				if !strings.Contains(text, "[redacted]") || strings.Contains(low, strings.ToLower(testKey)) || strings.Contains(low, strings.ToLower(other)) ||
					strings.Contains(low, "other%2dprovider") || strings.Contains(low, strings.ToLower(cut)) {
					t.Errorf("a key is left in %q", text)
				}
			}
		})
	}
}

// Ensure a provider's usage is read into typed counts only: unknown keys (dotted, '$', NUL) are
// ignored, and a count that is negative, above 10^9, beyond int64 or not an integer is a
// malformed answer (502), recorded as a failure without the counts.
func TestComplete_UntrustedUsage(t *testing.T) {
	t.Parallel()
	ok := `"choices":[{"message":{"content":"hi"}}]`
	tests := []struct {
		name, provider, body, wantErr string
		wantTotal                     int64
	}{
		{"DottedKeyIgnored", "openai", `{"model":"m",` + ok + `,"usage":{"prompt_tokens":3,"completion_tokens":4,"a.b":1}}`, "", 7},
		{"DollarKeyIgnored", "anthropic", `{"model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":4,"$x":1}}`, "", 7},
		{"NULKeyIgnored", "gemini", `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"a\u0000b":1}}`, "", 7},
		{"NullUsage", "openai", `{"model":"m",` + ok + `,"usage":null}`, "", 2}, // estimated from "x" and "hi"
		{"Negative", "openai", `{"model":"m",` + ok + `,"usage":{"prompt_tokens":-5,"completion_tokens":4}}`, "impossible token count", 0},
		{"AboveBillion", "anthropic", `{"model":"m","content":[],"usage":{"input_tokens":9223372036854775000,"output_tokens":4}}`, "impossible token count", 0},
		{"BeyondInt64", "gemini", `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":{"promptTokenCount":92233720368547758070}}`, "unreadable usageMetadata.promptTokenCount", 0},
		{"NotInteger", "openai", `{"model":"m",` + ok + `,"usage":{"prompt_tokens":"three"}}`, "unreadable usage.prompt_tokens", 0},
		{"Fraction", "openai", `{"model":"m",` + ok + `,"usage":{"prompt_tokens":1.5}}`, "unreadable usage.prompt_tokens", 0},
		{"UsageNotObject", "gemini", `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":[1]}`, "unreadable usageMetadata", 0},
		// Each count within bounds, their sum past them: priced and charged, the record
		// would be refused.
		{"SumAboveBillion", "anthropic", `{"model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1000000000,"cache_read_input_tokens":1000000000,"output_tokens":4}}`, "impossible token count", 0},
		{"GeminiSumAboveBillion", "gemini", `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1000000000,"thoughtsTokenCount":1000000000}}`, "impossible token count", 0},
		{"CachedBeyondPrompt", "openai", `{"model":"m",` + ok + `,"usage":{"prompt_tokens":1,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":1000000}}}`, "more cached tokens", 0},
		{"GeminiCachedBeyondPrompt", "gemini", `{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":4,"cachedContentTokenCount":900}}`, "more cached tokens", 0},
		{"ReasoningBeyondCompletion", "openai", `{"model":"m",` + ok + `,"usage":{"prompt_tokens":1,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":5}}}`, "more reasoning tokens", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider, aitest.JSON(200, tt.body))
			svc, rec := newService(t, fake, tt.provider, nil)
			c, err := svc.Complete(context.Background(), "u", tt.provider, input(t, `{"messages":[{"role":"user","content":"x"}]}`))
			recs := rec.all()
			if len(recs) != 1 {
				t.Fatalf("records %+v, want one", recs)
			}
			if tt.wantErr != "" {
				if apperr.KindOf(err) != apperr.Upstream || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an Upstream error containing %q", err, tt.wantErr)
				}
				if recs[0].Status != usage.StatusError || recs[0].TotalTokens != 0 || recs[0].PromptTokens != 0 {
					t.Errorf("record %+v, want an error without counts", recs[0])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Usage.TotalTokens != tt.wantTotal || recs[0].TotalTokens != tt.wantTotal {
				t.Errorf("total %d / recorded %d, want %d", c.Usage.TotalTokens, recs[0].TotalTokens, tt.wantTotal)
			}
		})
	}
}

// Ensure the model a provider reports is kept only when it is a plain short name.
func TestComplete_ReportedModelGuard(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, reported, want string }{
		{"Snapshot", "gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18"},
		{"Dollar", "$where", "gpt-4o-mini"},
		{"OnlyDots", "..", "gpt-4o-mini"},
		{"Control", `gpt\u0001x`, "gpt-4o-mini"},
		{"Space", "gpt 4", "gpt-4o-mini"},
		{"TooLong", strings.Repeat("m", 129), "gpt-4o-mini"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, "openai", aitest.JSON(200, `{"model":"`+tt.reported+`","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
			svc, rec := newService(t, fake, "openai", nil)
			c, err := svc.Complete(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini"}`))
			if err != nil {
				t.Fatal(err)
			}
			if c.Model != tt.want || rec.all()[0].Model != tt.want {
				t.Errorf("model %q / recorded %q, want %q", c.Model, rec.all()[0].Model, tt.want)
			}
		})
	}
}

// Ensure an upstream that sends one answer nobody asked for on a keep-alive connection never
// hands it to the next caller: the next call gets its own answer.
//
// The calls are a few milliseconds apart, as calls from different users are: net/http's
// transport watches an idle connection and drops it the moment unasked bytes arrive. HTTP/1.1
// has no way to tie an answer to its request, so bytes that arrive in the same instant as the
// next request is written cannot be told apart by any client; docs/ai.md says so.
func TestComplete_UnaskedAnswerNotServedToNextCaller(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	answer := func(content string) string {
		b, _ := json.Marshal(aitest.OpenAIAnswer("gpt-4o-mini", "answer to "+content, 1, 1, 0))
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for first := true; ; first = false {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					var body struct {
						Messages []ai.Message `json:"messages"`
					}
					_ = json.NewDecoder(req.Body).Decode(&body)
					out := answer(body.Messages[0].Content)
					if first { // the same answer twice: the second was never asked for
						out += out
					}
					if _, err := io.WriteString(conn, out); err != nil {
						return
					}
				}
			}()
		}
	}()
	svc := ai.New(ai.Options{Providers: map[string]ai.ProviderConfig{"openai": {APIKey: testKey, BaseURL: "http://" + ln.Addr().String() + "/v1", DefaultModel: "m"}},
		Timeout: 5 * time.Second, RetryBase: time.Millisecond})
	for _, content := range []string{"one", "two", "three"} {
		time.Sleep(20 * time.Millisecond)
		c, err := svc.Complete(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"`+content+`"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if c.Text != "answer to "+content {
			t.Fatalf("call %q got %q: another caller's answer", content, c.Text)
		}
	}
}

// Ensure a surface keeping the provider's defaults (ProviderDefaults, as /v1 does) sends no
// temperature and no output cap the caller did not set, except the cap Anthropic requires and
// the one a caller with a budget is held to; the /api endpoints keep their own defaults.
func TestRun_ProviderDefaults(t *testing.T) {
	t.Parallel()
	// capOf is the output cap the provider was sent (0: none) and the temperature (nil: none).
	capOf := func(provider string, body map[string]any) (float64, any) {
		switch provider {
		case "openai":
			n, _ := body["max_completion_tokens"].(float64)
			return n, body["temperature"]
		case "anthropic":
			n, _ := body["max_tokens"].(float64)
			return n, body["temperature"]
		default:
			gc, _ := body["generationConfig"].(map[string]any)
			n, _ := gc["maxOutputTokens"].(float64)
			return n, gc["temperature"]
		}
	}
	tests := []struct {
		name, provider string
		defaults       bool
		budget         bool
		wantCap        float64
		wantTemp       any
	}{
		{"OpenAIOwnDefaults", "openai", true, false, 0, nil},
		{"AnthropicNeedsACap", "anthropic", true, false, 4096, nil},
		{"GeminiOwnDefaults", "gemini", true, false, 0, nil},
		{"OpenAIWithBudget", "openai", true, true, 4096, nil},
		{"APIDefaults", "openai", false, false, 1000, 0.7},
		{"APIDefaultsGemini", "gemini", false, false, 1000, 0.9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tc.provider, aitest.Answer())
			b := &budget{limit: 100}
			svc, _ := newService(t, fake, tc.provider, func(o *ai.Options) {
				if tc.budget {
					o.Budget = b
				}
			})
			in := input(t, `{"messages":[{"role":"user","content":"hi"}],"model":"`+models[tc.provider]+`"}`)
			in.ProviderDefaults = tc.defaults
			if _, err := svc.Complete(context.Background(), "u", tc.provider, in); err != nil {
				t.Fatal(err)
			}
			gotCap, gotTemp := capOf(tc.provider, fake.Last().Body)
			if gotCap != tc.wantCap || gotTemp != tc.wantTemp {
				t.Errorf("sent cap %v, temperature %v; want %v, %v (body %s)", gotCap, gotTemp, tc.wantCap, tc.wantTemp, fake.Last().Raw)
			}
			if tc.budget && (len(b.reserved) != 1 || b.reserved[0] < 4096*6e-7) {
				t.Errorf("reserved %v: want the worst case of a 4,096-token answer at least", b.reserved)
			}
		})
	}
}

// Ensure a call whose provider reports a model the price table does not list (a preview, a
// new snapshot) is priced as the model asked for, which the budget reserved for, not free;
// the record keeps the reported name.
func TestComplete_ReportedModelWithoutPrice(t *testing.T) {
	t.Parallel()
	fake := aitest.New(t, "openai", aitest.JSON(200, aitest.OpenAIAnswer("gpt-4o-mini-free", "hi", 1000, 1000, 0)))
	svc, rec := newService(t, fake, "openai", nil)
	c, err := svc.Complete(context.Background(), "u", "openai", input(t, `{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o-mini"}`))
	if err != nil {
		t.Fatal(err)
	}
	const want = 1000*0.15e-6 + 1000*0.6e-6 // gpt-4o-mini's prices
	recs := rec.all()
	if c.Cost != usage.RoundCost(want) || len(recs) != 1 || recs[0].Cost != c.Cost || recs[0].Model != "gpt-4o-mini-free" {
		t.Errorf("cost %v, records %+v: want $%v at gpt-4o-mini's prices, recorded under the reported name", c.Cost, recs, want)
	}
}

// Ensure Anthropic's cache writes kept an hour are billed at their own rate (the table's
// cache_creation_input_token_cost_above_1hr, else twice the input rate), the others at the
// 5-minute rate, streamed or not, and the record says how many there were.
func TestCost_AnthropicHourCacheWrites(t *testing.T) {
	t.Parallel()
	usageJSON := `{"input_tokens":100,"output_tokens":50,"cache_read_input_tokens":1000,"cache_creation_input_tokens":2000,` +
		`"cache_creation":{"ephemeral_5m_input_tokens":500,"ephemeral_1h_input_tokens":1500}}`
	// claude-haiku-4-5: input 1.00, output 5.00, cache read 0.10, 5-minute write 1.25, hour write 2.00 per million.
	const want = (100*1.00 + 1000*0.10 + 500*1.25 + 1500*2.00 + 50*5.00) / 1e6
	for name, reply := range map[string]aitest.Responder{
		"Answer": aitest.JSON(200, `{"id":"m","type":"message","model":"claude-haiku-4-5","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":`+usageJSON+`}`),
		"Stream": aitest.Events(`message_start|{"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5","usage":`+usageJSON+`}}`,
			`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
			`message_delta|{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":50}}`,
			`message_stop|{"type":"message_stop"}`),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, "anthropic", reply)
			svc, rec := newService(t, fake, "anthropic", nil)
			in := input(t, `{"messages":[{"role":"user","content":"x"}],"model":"claude-haiku-4-5"}`)
			var c *ai.Completion
			var err error
			if name == "Stream" {
				c, err = svc.Stream(context.Background(), "u", "anthropic", in, nil)
			} else {
				c, err = svc.Complete(context.Background(), "u", "anthropic", in)
			}
			if err != nil {
				t.Fatal(err)
			}
			recs := rec.all()
			if c.Cost != usage.RoundCost(want) || len(recs) != 1 || recs[0].CacheWrite1h != 1500 || recs[0].Prices == nil || recs[0].Prices.CacheWrite1h != 2e-6 {
				t.Errorf("cost %v, records %+v: want %v with 1,500 hour writes at 2e-6", c.Cost, recs, usage.RoundCost(want))
			}
		})
	}
}
