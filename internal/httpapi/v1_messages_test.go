package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/usage"
)

// events reads a server-sent event stream as (name, data) pairs.
func events(t *testing.T, body string) [][2]string {
	t.Helper()
	var out [][2]string
	var name string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{name, strings.TrimPrefix(line, "data: ")})
			name = ""
		}
	}
	return out
}

const (
	anthropicToolAnswer = `{"id":"m","type":"message","content":[{"type":"text","text":"Checking."},
		{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{"city":"x"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`
	openAIToolAnswer = `{"id":"c","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"x\"}"}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`
	weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
)

// Ensure /v1/chat/completions answers a tool call as OpenAI does, whole and streamed piece by
// piece, whichever provider made it.
func TestV1Chat_ToolCalls(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.JSON(200, json.RawMessage(anthropicToolAnswer)),
		aitest.Events(`message_start|{"type":"message_start","message":{"id":"m","usage":{"input_tokens":5}}}`,
			`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ty\":\"x\"}"}}`,
			`message_delta|{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}`,
			`message_stop|{"type":"message_stop"}`))
	_, tok := fx.user(t)
	body := `{"model":"anthropic/claude-haiku-4-5","messages":[{"role":"user","content":"Weather?"}],"tools":[` + weatherTool + `]`
	rec := do(fx.h, "POST", "/v1/chat/completions", body+`}`, tok)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	c := decodeJSON[gateway.ChatCompletion](t, rec.Body.Bytes())
	want := gateway.AnswerMessage{Role: "assistant", Content: ptr("Checking."), ToolCalls: []gateway.ToolCall{
		{ID: "toolu_a", Type: "function", Function: gateway.FunctionCall{Name: "get_weather", Arguments: `{"city":"x"}`}}}}
	if diff := cmp.Diff(want, c.Choices[0].Message); diff != "" || c.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("message (-want +got):\n%s finish %q", diff, c.Choices[0].FinishReason)
	}

	rec = do(fx.h, "POST", "/v1/chat/completions", body+`,"stream":true}`, tok)
	var pieces []gateway.DeltaToolCall
	finish := ""
	for _, e := range events(t, rec.Body.String()) {
		if e[1] == "[DONE]" {
			continue
		}
		ch := decodeJSON[gateway.Chunk](t, []byte(e[1]))
		if len(ch.Choices) == 1 {
			pieces = append(pieces, ch.Choices[0].Delta.ToolCalls...)
			if f := ch.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
	}
	wantPieces := []gateway.DeltaToolCall{
		{Index: 0, ID: "toolu_a", Type: "function", Function: gateway.DeltaFunction{Name: "get_weather"}},
		{Index: 0, Function: gateway.DeltaFunction{Arguments: `{"ci`}},
		{Index: 0, Function: gateway.DeltaFunction{Arguments: `ty":"x"}`}},
	}
	if diff := cmp.Diff(wantPieces, pieces); diff != "" || finish != "tool_calls" {
		t.Errorf("streamed pieces (-want +got):\n%s finish %q\n%s", diff, finish, rec.Body)
	}
}

func ptr[T any](v T) *T { return &v }

// messagesReq is POST /v1/messages as Anthropic's SDK sends it, the key in x-api-key.
func messagesReq(h http.Handler, body, key string) *httptest.ResponseRecorder {
	return anthropicReq(h, "/v1/messages", body, key)
}

// anthropicReq is a POST to path as Anthropic's SDK sends it, the key in x-api-key.
func anthropicReq(h http.Handler, path, body, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Ensure /v1/messages answers Anthropic's message for every provider: a tool call from OpenAI
// as a tool_use block, the tool result sent back as OpenAI's tool message.
func TestV1Messages_TranslatesForOpenAI(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.JSON(200, json.RawMessage(openAIToolAnswer)), aitest.OK("It is sunny."))
	uid, _ := fx.user(t)
	key, err := fx.keys.Create(context.Background(), uid, "", keys.CreateInput{Name: "sdk"})
	if err != nil {
		t.Fatal(err)
	}
	tools := `"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	rec := messagesReq(fx.h, `{"model":"openai/gpt-4o-mini","max_tokens":100,"system":[{"type":"text","text":"Be brief."}],
		"messages":[{"role":"user","content":"Weather?"}],`+tools+`,"metadata":{"user_id":"u1"}}`, key.Key)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	m := decodeJSON[gateway.Message](t, rec.Body.Bytes())
	want := []gateway.ContentBlock{{Type: "tool_use", ID: "call_a", Name: "get_weather", Input: json.RawMessage(`{"city":"x"}`)}}
	if diff := cmp.Diff(want, m.Content); diff != "" || *m.StopReason != "tool_use" || m.Usage.InputTokens != 5 || m.Usage.OutputTokens != 7 ||
		m.Type != "message" || !strings.HasPrefix(m.ID, "msg_") {
		t.Errorf("content (-want +got):\n%s\n%s", diff, rec.Body)
	}
	sent := fx.fakes["openai"].Last().Body
	if diff := cmp.Diff([]any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Weather?"}}, sent["messages"]); diff != "" {
		t.Errorf("openai received (-want +got):\n%s", diff)
	}
	rec = messagesReq(fx.h, `{"model":"openai/gpt-4o-mini","max_tokens":100,"messages":[{"role":"user","content":"Weather?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"call_a","name":"get_weather","input":{"city":"x"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a","content":[{"type":"text","text":"sunny"}]},{"type":"text","text":"And?"}]}],`+tools+`}`, key.Key)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	m = decodeJSON[gateway.Message](t, rec.Body.Bytes())
	if len(m.Content) != 1 || *m.Content[0].Text != "It is sunny." || *m.StopReason != "end_turn" {
		t.Errorf("answer %s", rec.Body)
	}
	var got []any
	_ = json.Unmarshal([]byte(`[{"role":"user","content":"Weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"x\"}"}}]},
		{"role":"tool","content":"sunny","tool_call_id":"call_a"},{"role":"user","content":"And?"}]`), &got)
	if diff := cmp.Diff(got, fx.fakes["openai"].Last().Body["messages"]); diff != "" {
		t.Errorf("openai received (-want +got):\n%s", diff)
	}
}

// Ensure a streamed /v1/messages is Anthropic's event sequence, each event named as its type,
// with a block per text run and per tool call.
func TestV1Messages_Stream(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.Events(
		`{"id":"c","choices":[{"delta":{"role":"assistant","content":"Hm"}}]}`,
		`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`,
		`{"id":"c","choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
		`[DONE]`))
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/v1/messages", `{"model":"openai/gpt-4o-mini","max_tokens":50,"stream":true,
		"messages":[{"role":"user","content":"Weather?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`, tok)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var got []string
	for _, e := range events(t, rec.Body.String()) {
		var v struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(e[1]), &v)
		if v.Type != e[0] {
			t.Errorf("event %q carries type %q", e[0], v.Type)
		}
		got = append(got, e[0])
	}
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s\n%s", diff, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":5,"output_tokens":7`) ||
		!strings.Contains(rec.Body.String(), `"delta":{"type":"input_json_delta","partial_json":"{}"}`) {
		t.Errorf("stream %s", rec.Body)
	}
}

// Ensure every refusal on /v1/messages is Anthropic's error, with its type and status, and
// nothing reaches a provider.
func TestV1Messages_Errors(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	spentTok := fx.spentUser(t)
	ok := `{"model":"anthropic/claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, body, key, token string
		status                 int
		typ                    string
	}{
		{"no key", ok, "", "", 401, "authentication_error"},
		{"unknown key", ok, keys.Prefix + strings.Repeat("0", 43), "", 401, "authentication_error"},
		{"malformed JSON", `{"model":`, "", tok, 400, "invalid_request_error"},
		{"no max_tokens", `{"model":"anthropic/claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}`, "", tok, 400, "invalid_request_error"},
		{"server tool", `{"model":"anthropic/claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "", tok, 400, "invalid_request_error"},
		{"thinking", `{"model":"anthropic/claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled"}}`, "", tok, 400, "invalid_request_error"},
		{"tool_use in a user message", `{"model":"anthropic/claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]}`, "", tok, 400, "invalid_request_error"},
		{"spent budget", ok, "", spentTok, 402, "billing_error"},
	} {
		req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		if tc.key != "" {
			req.Header.Set("X-Api-Key", tc.key)
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		fx.h.ServeHTTP(rec, req)
		e := decodeJSON[gateway.AnthropicErrorBody](t, rec.Body.Bytes())
		if rec.Code != tc.status || e.Type != "error" || e.Error.Type != tc.typ || e.Error.Message == "" {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
		if tc.typ == "billing_error" && rec.Header().Get("X-Should-Retry") != "false" {
			t.Errorf("%s: X-Should-Retry %q", tc.name, rec.Header().Get("X-Should-Retry"))
		}
	}
	for p, f := range fx.fakes {
		if n := len(f.Calls()); n != 0 {
			t.Errorf("%s received %d requests", p, n)
		}
	}
}

// Ensure the stop sequence Anthropic met reaches the client as Anthropic sends it:
// stop_reason "stop_sequence" with the sequence, in the answer and in the stream's
// message_delta.
func TestV1Messages_StopSequence(t *testing.T) {
	t.Parallel()
	const answer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"one two"}],
		"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":5,"output_tokens":3}}`
	fx := newGWFixture(t, Options{}, aitest.JSON(200, answer), aitest.Events(
		`message_start|{"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5-20251001","usage":{"input_tokens":5,"output_tokens":1}}}`,
		`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"one two"}}`,
		`content_block_stop|{"type":"content_block_stop","index":0}`,
		`message_delta|{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":3}}`,
		`message_stop|{"type":"message_stop"}`))
	_, tok := fx.user(t)
	const body = `{"model":"anthropic/claude-haiku-4-5","max_tokens":10,"stop_sequences":["END"],"messages":[{"role":"user","content":"count"}]`
	rec := do(fx.h, "POST", "/v1/messages", body+`}`, tok)
	m := decodeJSON[gateway.Message](t, rec.Body.Bytes())
	if rec.Code != 200 || m.StopReason == nil || *m.StopReason != "stop_sequence" || m.StopSequence == nil || *m.StopSequence != "END" {
		t.Errorf("answer %d %s: want stop_reason stop_sequence, stop_sequence END", rec.Code, rec.Body)
	}
	// The model is the one the provider reported, as on /v1/chat/completions.
	if m.Model != "anthropic/claude-haiku-4-5-20251001" {
		t.Errorf("answer's model %q, want the reported snapshot", m.Model)
	}
	rec = do(fx.h, "POST", "/v1/messages", body+`,"stream":true}`, tok)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"delta":{"stop_reason":"stop_sequence","stop_sequence":"END"}`) {
		t.Errorf("stream %d %s: want the message_delta to name the stop sequence", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"model":"anthropic/claude-haiku-4-5-20251001"`) {
		t.Errorf("stream %s: want message_start to name the reported snapshot", rec.Body)
	}
}

// Ensure OpenAI's refusal reaches the client: as message.refusal (content null) and
// delta.refusal on /v1/chat/completions, and as a text block with stop_reason refusal on
// /v1/messages.
func TestV1_Refusal(t *testing.T) {
	t.Parallel()
	const answer = `{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"stop",
		"message":{"role":"assistant","content":null,"refusal":"I cannot help."}}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`
	stream := aitest.Events(`{"id":"c","choices":[{"delta":{"role":"assistant","refusal":"I cannot"}}]}`,
		`{"id":"c","choices":[{"delta":{"refusal":" help."}}]}`,
		`{"id":"c","choices":[{"delta":{},"finish_reason":"stop"}]}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, `[DONE]`)
	fx := newGWFixture(t, Options{}, aitest.JSON(200, answer), stream, aitest.JSON(200, answer), stream)
	_, tok := fx.user(t)
	const msgs = `"messages":[{"role":"user","content":"x"}]`

	rec := do(fx.h, "POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini",`+msgs+`}`, tok)
	c := decodeJSON[gateway.ChatCompletion](t, rec.Body.Bytes())
	if rec.Code != 200 || len(c.Choices) != 1 || c.Choices[0].Message.Content != nil || c.Choices[0].Message.Refusal == nil ||
		*c.Choices[0].Message.Refusal != "I cannot help." {
		t.Errorf("chat: %d %s, want content null and the refusal", rec.Code, rec.Body)
	}
	rec = do(fx.h, "POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","stream":true,`+msgs+`}`, tok)
	if !strings.Contains(rec.Body.String(), `"refusal":"I cannot"`) || !strings.Contains(rec.Body.String(), `"refusal":" help."`) {
		t.Errorf("chat stream: %s, want the refusal's pieces", rec.Body)
	}
	rec = do(fx.h, "POST", "/v1/messages", `{"model":"openai/gpt-4o-mini","max_tokens":10,`+msgs+`}`, tok)
	m := decodeJSON[gateway.Message](t, rec.Body.Bytes())
	if rec.Code != 200 || m.StopReason == nil || *m.StopReason != "refusal" || len(m.Content) != 1 || *m.Content[0].Text != "I cannot help." {
		t.Errorf("messages: %d %s, want the refusal as text and stop_reason refusal", rec.Code, rec.Body)
	}
	rec = do(fx.h, "POST", "/v1/messages", `{"model":"openai/gpt-4o-mini","max_tokens":10,"stream":true,`+msgs+`}`, tok)
	if !strings.Contains(rec.Body.String(), `"text":"I cannot"`) || !strings.Contains(rec.Body.String(), `"stop_reason":"refusal"`) {
		t.Errorf("messages stream: %s, want the refusal as text and stop_reason refusal", rec.Body)
	}
}

// Ensure a provider's failure reaches a /v1/messages client with the Anthropic type that says
// the same (overloaded_error, rate_limit_error, which the SDKs handle as such), not as a
// generic api_error: in an error event after text has been sent, as the answer when the error
// comes before the first piece (right after Anthropic's message_start), and as the answer to
// an error answer. Anthropic's own types are kept; Gemini's UNAVAILABLE is overloaded_error,
// its RESOURCE_EXHAUSTED and OpenAI's rate limits rate_limit_error, OpenAI's server_error
// api_error.
func TestV1Messages_ProviderErrorKeepsItsType(t *testing.T) {
	t.Parallel()
	const (
		start             = `message_start|{"type":"message_start","message":{"id":"m","model":"claude-haiku-4-5","usage":{"input_tokens":5,"output_tokens":1}}}`
		text              = `content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
		delta             = `content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`
		geminiText        = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"modelVersion":"gemini-2.5-flash"}`
		geminiUnavailable = `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
		geminiExhausted   = `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`
		openAIText        = `{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`
		openAIServer      = `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`
		openAIRate        = `{"error":{"message":"Rate limit reached for requests.","type":"rate_limit_exceeded","param":null,"code":"rate_limit_exceeded"}}`
	)
	errorEvent := func(typ string) string {
		return `error|{"type":"error","error":{"type":"` + typ + `","message":"Something happened"}}`
	}
	tests := []struct {
		name       string
		model      string // anthropic/claude-haiku-4-5 when empty
		stream     bool
		fake       aitest.Responder
		wantStatus int
		wantEvent  bool // the error ends a stream (event: error) rather than being the answer
		wantType   string
	}{
		{name: "OverloadedAfterText", stream: true, fake: aitest.Events(start, text, delta, errorEvent("overloaded_error")),
			wantStatus: 200, wantEvent: true, wantType: "overloaded_error"},
		{name: "RateLimitedAfterText", stream: true, fake: aitest.Events(start, text, delta, errorEvent("rate_limit_error")),
			wantStatus: 200, wantEvent: true, wantType: "rate_limit_error"},
		{name: "OverloadedAfterMessageStart", stream: true, fake: aitest.Events(start, errorEvent("overloaded_error")),
			wantStatus: 502, wantType: "overloaded_error"},
		{name: "RateLimitedAfterMessageStart", stream: true, fake: aitest.Events(start, errorEvent("rate_limit_error")),
			wantStatus: 429, wantType: "rate_limit_error"},
		{name: "APIErrorAfterMessageStart", stream: true, fake: aitest.Events(start, errorEvent("api_error")),
			wantStatus: 502, wantType: "api_error"},
		{name: "OverloadedAnswer", fake: aitest.Error("anthropic", 529, "overloaded_error", "Overloaded", "x-should-retry", "false"),
			wantStatus: 502, wantType: "overloaded_error"},
		{name: "GeminiUnavailableAnswer", model: "gemini/gemini-2.5-flash",
			fake:       aitest.Error("gemini", 503, "UNAVAILABLE", "The model is overloaded.", "x-should-retry", "false"),
			wantStatus: 502, wantType: "overloaded_error"},
		{name: "GeminiExhaustedAnswer", model: "gemini/gemini-2.5-flash",
			fake:       aitest.Error("gemini", 429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "x-should-retry", "false"),
			wantStatus: 429, wantType: "rate_limit_error"},
		{name: "GeminiUnavailableStreamedAnswer", model: "gemini/gemini-2.5-flash", stream: true,
			fake:       aitest.Error("gemini", 503, "UNAVAILABLE", "The model is overloaded.", "x-should-retry", "false"),
			wantStatus: 502, wantType: "overloaded_error"},
		{name: "GeminiUnavailableBeforeFirstPiece", model: "gemini/gemini-2.5-flash", stream: true,
			fake: aitest.Events(geminiUnavailable), wantStatus: 502, wantType: "overloaded_error"},
		{name: "GeminiExhaustedBeforeFirstPiece", model: "gemini/gemini-2.5-flash", stream: true,
			fake: aitest.Events(geminiExhausted), wantStatus: 429, wantType: "rate_limit_error"},
		{name: "GeminiUnavailableAfterText", model: "gemini/gemini-2.5-flash", stream: true,
			fake: aitest.Events(geminiText, geminiUnavailable), wantStatus: 200, wantEvent: true, wantType: "overloaded_error"},
		{name: "GeminiExhaustedAfterText", model: "gemini/gemini-2.5-flash", stream: true,
			fake: aitest.Events(geminiText, geminiExhausted), wantStatus: 200, wantEvent: true, wantType: "rate_limit_error"},
		{name: "OpenAIServerErrorAfterText", model: "openai/gpt-4o-mini", stream: true,
			fake: aitest.Events(openAIText, openAIServer), wantStatus: 200, wantEvent: true, wantType: "api_error"},
		{name: "OpenAIRateLimitedAfterText", model: "openai/gpt-4o-mini", stream: true,
			fake: aitest.Events(openAIText, openAIRate), wantStatus: 200, wantEvent: true, wantType: "rate_limit_error"},
		{name: "OpenAIRateLimitedAnswer", model: "openai/gpt-4o-mini",
			fake:       aitest.Error("openai", 429, "rate_limit_exceeded", "Rate limit reached.", "x-should-retry", "false"),
			wantStatus: 429, wantType: "rate_limit_error"},
		{name: "OpenAIServerErrorAnswer", model: "openai/gpt-4o-mini",
			fake:       aitest.Error("openai", 500, "server_error", "The server had an error.", "x-should-retry", "false"),
			wantStatus: 502, wantType: "api_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fx := newGWFixture(t, Options{}, tt.fake)
			_, tok := fx.user(t)
			model := tt.model
			if model == "" {
				model = "anthropic/claude-haiku-4-5"
			}
			rec := do(fx.h, "POST", "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":10,"stream":%t,
				"messages":[{"role":"user","content":"x"}]}`, model, tt.stream), tok)
			if got, want := rec.Code, tt.wantStatus; got != want {
				t.Fatalf("status=%d, want %d: %s", got, want, rec.Body)
			}
			body := rec.Body.Bytes()
			if tt.wantEvent {
				evs := events(t, rec.Body.String())
				if len(evs) == 0 || evs[len(evs)-1][0] != "error" {
					t.Fatalf("stream %s: want it to end with an error event", rec.Body)
				}
				body = []byte(evs[len(evs)-1][1])
			}
			e := decodeJSON[gateway.AnthropicErrorBody](t, body)
			if e.Type != "error" || e.Error.Type != tt.wantType || e.Error.Message == "" {
				t.Errorf("error %s, want type %q", body, tt.wantType)
			}
		})
	}
}

// Ensure parallel tool calls streamed by OpenAI reach a /v1/messages client as Anthropic
// streams them, one whole block after another, each tool_use block with its id, its name and
// all its arguments, also when OpenAI's fragments of two calls interleave.
func TestV1Messages_StreamParallelToolCalls(t *testing.T) {
	t.Parallel()
	chunk := func(index int, first bool, args string) string {
		call := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
		if first {
			call["id"], call["type"] = []string{"call_a", "call_b"}[index], "function"
			call["function"].(map[string]any)["name"] = []string{"get_weather", "get_time"}[index]
		}
		b, _ := json.Marshal(map[string]any{"id": "c", "choices": []any{map[string]any{"delta": map[string]any{"tool_calls": []any{call}}}}})
		return string(b)
	}
	end := []string{`{"id":"c","choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`, `[DONE]`}
	tests := []struct {
		name   string
		chunks []string
		// wantOrder is the blocks' events: s = start, d = delta, e = stop, and the block's index.
		wantOrder string
	}{
		{name: "OneAfterTheOther", chunks: []string{chunk(0, true, ""), chunk(0, false, `{"city":`), chunk(0, false, `"Paris"}`),
			chunk(1, true, `{"tz":`), chunk(1, false, `"CET"}`)}, wantOrder: "s0 d0 d0 e0 s1 d1 d1 e1"},
		{name: "Interleaved", chunks: []string{chunk(0, true, ""), chunk(0, false, `{"city":`), chunk(1, true, `{"tz":`),
			chunk(0, false, `"Paris"}`), chunk(1, false, `"CET"}`)}, wantOrder: "s0 d0 d0 e0 s1 d1 e1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fx := newGWFixture(t, Options{}, aitest.Events(append(tt.chunks, end...)...))
			_, tok := fx.user(t)
			rec := do(fx.h, "POST", "/v1/messages", `{"model":"openai/gpt-4o-mini","max_tokens":50,"stream":true,
				"messages":[{"role":"user","content":"Weather and time?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}},
				{"name":"get_time","input_schema":{"type":"object"}}]}`, tok)
			if got, want := rec.Code, 200; got != want {
				t.Fatalf("status=%d, want %d: %s", got, want, rec.Body)
			}
			type block struct{ ID, Name, Args string }
			var blocks []block
			var order []string
			for _, e := range events(t, rec.Body.String()) {
				var v struct {
					Index        int `json:"index"`
					ContentBlock struct {
						ID, Name string
					} `json:"content_block"`
					Delta struct {
						PartialJSON string `json:"partial_json"`
					} `json:"delta"`
				}
				if err := json.Unmarshal([]byte(e[1]), &v); err != nil {
					t.Fatalf("event %s: %v", e[1], err)
				}
				switch e[0] {
				case "content_block_start":
					if v.Index != len(blocks) {
						t.Fatalf("block %d started after %d blocks: %s", v.Index, len(blocks), rec.Body)
					}
					blocks = append(blocks, block{ID: v.ContentBlock.ID, Name: v.ContentBlock.Name})
					order = append(order, "s"+strconv.Itoa(v.Index))
				case "content_block_delta":
					blocks[v.Index].Args += v.Delta.PartialJSON
					order = append(order, "d"+strconv.Itoa(v.Index))
				case "content_block_stop":
					order = append(order, "e"+strconv.Itoa(v.Index))
				}
			}
			want := []block{{"call_a", "get_weather", `{"city":"Paris"}`}, {"call_b", "get_time", `{"tz":"CET"}`}}
			if diff := cmp.Diff(want, blocks); diff != "" {
				t.Errorf("tool_use blocks (-want +got):\n%s\n%s", diff, rec.Body)
			}
			if got := strings.Join(order, " "); got != tt.wantOrder {
				t.Errorf("block events %q, want %q", got, tt.wantOrder)
			}
		})
	}
}

// countTokensReq is POST /v1/messages/count_tokens as Anthropic's SDK sends it
// (client.messages.countTokens), the key in x-api-key.
func countTokensReq(h http.Handler, body, key string) *httptest.ResponseRecorder {
	return anthropicReq(h, "/v1/messages/count_tokens", body, key)
}

// Ensure /v1/messages/count_tokens answers Anthropic's {"input_tokens": N}, counted by the
// model's provider (Anthropic's count_tokens, Gemini's countTokens), refuses an OpenAI model
// in Anthropic's error shape, is authenticated and validated as /v1/messages is (max_tokens
// not required), and neither records usage nor needs budget.
func TestV1Messages_CountTokens(t *testing.T) {
	t.Parallel()
	const msgs = `"system":"Be brief.","messages":[{"role":"user","content":"Weather?"}],
		"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`
	tests := []struct {
		name       string
		body       string
		noKey      bool
		spent      bool // the caller's monthly budget is spent
		fake       aitest.Responder
		wantStatus int
		wantTokens int64  // on 200
		wantType   string // Anthropic's error type otherwise
		wantInMsg  string // in the error's message
		provider   string // the provider that must have been asked, "" for none
		wantPath   string
		wantSent   map[string]any // fields of the provider's request body, by their dotted path
	}{
		{name: "Anthropic", body: `{"model":"anthropic/claude-haiku-4-5",` + msgs + `}`,
			fake:       aitest.JSON(200, `{"input_tokens":42}`, "request-id", "req_count"),
			wantStatus: 200, wantTokens: 42, provider: "anthropic", wantPath: "/v1/messages/count_tokens",
			wantSent: map[string]any{"model": "claude-haiku-4-5", "system": "Be brief.", "max_tokens": nil, "stream": nil}},
		{name: "AnthropicSpentBudget", body: `{"model":"anthropic/claude-haiku-4-5",` + msgs + `}`, spent: true,
			fake:       aitest.JSON(200, `{"input_tokens":42}`),
			wantStatus: 200, wantTokens: 42, provider: "anthropic", wantPath: "/v1/messages/count_tokens"},
		{name: "Gemini", body: `{"model":"gemini/gemini-2.5-flash",` + msgs + `}`,
			fake:       aitest.CountTokens(17),
			wantStatus: 200, wantTokens: 17, provider: "gemini", wantPath: "/v1beta/models/gemini-2.5-flash:countTokens",
			wantSent: map[string]any{"generateContentRequest.model": "models/gemini-2.5-flash", "contents": nil,
				"generateContentRequest.systemInstruction.parts.0.text":      "Be brief.",
				"generateContentRequest.tools.0.functionDeclarations.0.name": "get_weather"}},
		{name: "MaxTokensAccepted", body: `{"model":"anthropic/claude-haiku-4-5","max_tokens":10,` + msgs + `}`,
			fake:       aitest.JSON(200, `{"input_tokens":9}`),
			wantStatus: 200, wantTokens: 9, provider: "anthropic", wantPath: "/v1/messages/count_tokens",
			wantSent: map[string]any{"max_tokens": nil}},
		{name: "OpenAIHasNoCounting", body: `{"model":"openai/gpt-4o-mini",` + msgs + `}`,
			wantStatus: 400, wantType: "invalid_request_error", wantInMsg: "Token counting is not available for the model 'openai/gpt-4o-mini': openai has no token counting endpoint; count with an anthropic/… or gemini/… model."},
		{name: "NoKey", body: `{"model":"anthropic/claude-haiku-4-5",` + msgs + `}`, noKey: true,
			wantStatus: 401, wantType: "authentication_error"},
		{name: "MalformedJSON", body: `{"model":`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "NoMessages", body: `{"model":"anthropic/claude-haiku-4-5"}`, wantStatus: 400, wantType: "invalid_request_error", wantInMsg: "messages"},
		{name: "UnsupportedField", body: `{"model":"anthropic/claude-haiku-4-5","thinking":{"type":"enabled"},` + msgs + `}`,
			wantStatus: 400, wantType: "invalid_request_error", wantInMsg: "thinking"},
		{name: "AnthropicRateLimited", body: `{"model":"anthropic/claude-haiku-4-5",` + msgs + `}`,
			fake:       aitest.Error("anthropic", 429, "rate_limit_error", "Number of requests has exceeded your rate limit", "retry-after", "30"),
			wantStatus: 429, wantType: "rate_limit_error", provider: "anthropic", wantPath: "/v1/messages/count_tokens"},
		{name: "AnthropicAnswersNoCount", body: `{"model":"anthropic/claude-haiku-4-5",` + msgs + `}`,
			fake:       aitest.JSON(200, `{"type":"message"}`),
			wantStatus: 502, wantType: "api_error", wantInMsg: "without input_tokens", provider: "anthropic", wantPath: "/v1/messages/count_tokens"},
		{name: "AnthropicAnswersTooMuch", body: `{"model":"anthropic/claude-haiku-4-5",` + msgs + `}`,
			fake:       aitest.JSON(200, `{"input_tokens":1,"pad":"`+strings.Repeat("x", 100<<10)+`"}`),
			wantStatus: 502, wantType: "api_error", wantInMsg: "larger than", provider: "anthropic", wantPath: "/v1/messages/count_tokens"},
		{name: "GeminiRefuses", body: `{"model":"gemini/gemini-2.5-flash",` + msgs + `}`,
			fake:       aitest.Error("gemini", 400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
			wantStatus: 400, wantType: "invalid_request_error", wantInMsg: "invalid argument", provider: "gemini", wantPath: "/v1beta/models/gemini-2.5-flash:countTokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var script []aitest.Responder
			if tt.fake != nil {
				script = append(script, tt.fake)
			}
			fx := newGWFixture(t, Options{}, script...)
			uid, tok := fx.user(t)
			if tt.spent {
				tok = fx.spentUser(t)
			}
			key := ""
			if !tt.noKey {
				k, err := fx.keys.Create(context.Background(), uid, "", keys.CreateInput{Name: "sdk"})
				if err != nil {
					t.Fatal(err)
				}
				key = k.Key
			}
			var rec *httptest.ResponseRecorder
			if tt.spent {
				rec = do(fx.h, "POST", "/v1/messages/count_tokens", tt.body, tok)
			} else {
				rec = countTokensReq(fx.h, tt.body, key)
			}
			if got, want := rec.Code, tt.wantStatus; got != want {
				t.Fatalf("status=%d, want %d: %s", got, want, rec.Body)
			}
			if tt.wantStatus == 200 {
				var got map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatalf("decode %s: %v", rec.Body, err)
				}
				if diff := cmp.Diff(map[string]any{"input_tokens": float64(tt.wantTokens)}, got); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
			} else {
				e := decodeJSON[gateway.AnthropicErrorBody](t, rec.Body.Bytes())
				if e.Type != "error" || e.Error.Type != tt.wantType || !strings.Contains(e.Error.Message, tt.wantInMsg) {
					t.Errorf("error %s, want type %q and a message with %q", rec.Body, tt.wantType, tt.wantInMsg)
				}
			}
			for p, f := range fx.fakes {
				calls := f.Calls()
				if p != tt.provider {
					if len(calls) != 0 {
						t.Errorf("%s received %d requests, want none", p, len(calls))
					}
					continue
				}
				if len(calls) == 0 {
					t.Fatalf("%s received no request", p)
				}
				last := calls[len(calls)-1]
				if last.Path != tt.wantPath {
					t.Errorf("%s was asked %s, want %s", p, last.Path, tt.wantPath)
				}
				for k, want := range tt.wantSent {
					var got any = last.Body
					for _, step := range strings.Split(k, ".") {
						switch v := got.(type) {
						case map[string]any:
							got = v[step]
						case []any:
							i, _ := strconv.Atoi(step)
							got = nil
							if i < len(v) {
								got = v[i]
							}
						}
					}
					if !cmp.Equal(got, want) {
						t.Errorf("%s received %s=%v, want %v: %s", p, k, got, want, last.Raw)
					}
				}
			}
			// A count is no call: nothing is recorded (give the recorder time to flush).
			time.Sleep(20 * time.Millisecond)
			sum := decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage?days=1", "", tok).Body.Bytes())
			if sum.TotalRequests != 0 || sum.TotalCost != 0 {
				t.Errorf("usage after a count: %+v, want none", sum)
			}
		})
	}
}
