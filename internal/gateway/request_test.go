package gateway

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
)

func newTestService(t *testing.T) *Service {
	t.Helper()
	prices, err := ai.LoadPrices("", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Prices: prices, Providers: map[string]string{"openai": "gpt-4o-mini", "gemini": "gemini-3.1-flash-lite"}})
}

func fptr(f float64) *float64 { return &f }
func iptr(n int) *int         { return &n }

// Ensure what the gateway honours reaches the AI service's input, routed to its provider.
func TestParseAccepted(t *testing.T) {
	t.Parallel()
	s := newTestService(t)
	for _, tc := range []struct {
		name, body string
		want       Request
	}{
		{"prefixed", `{"model":"anthropic/claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}`,
			Request{Provider: "anthropic", Model: "anthropic/claude-haiku-4-5",
				Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "claude-haiku-4-5", Messages: []ai.Message{{Role: "user", Content: "hi"}}}}},
		{"bare routed by the price table", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
			Request{Provider: "openai", Model: "gpt-4o-mini",
				Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", Messages: []ai.Message{{Role: "user", Content: "hi"}}}}},
		{"every honoured parameter", `{"model":"openai/gpt-4o-mini","messages":[
			{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
			{"role":"assistant","content":"ok"}],
			"temperature":0.5,"top_p":0.9,"max_completion_tokens":50,"stop":["x","y"],"stream":true,
			"stream_options":{"include_usage":true},"user":"u-1","n":1,"presence_penalty":0,"store":false,"response_format":{"type":"text"},"tools":null}`,
			Request{Provider: "openai", Model: "openai/gpt-4o-mini", Stream: true, IncludeUsage: true,
				Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", Temperature: fptr(0.5), TopP: fptr(0.9), MaxTokens: iptr(50), Stop: []string{"x", "y"},
					Messages: []ai.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "ab"}, {Role: "assistant", Content: "ok"}}}}},
		{"max_tokens and a single stop", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":7,"stop":"\n"}`,
			Request{Provider: "openai", Model: "openai/gpt-4o-mini",
				Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", MaxTokens: iptr(7), Stop: []string{"\n"}, Messages: []ai.Message{{Role: "user", Content: "hi"}}}}},
	} {
		checkParsed(t, tc.name, s.Parse, tc.body, tc.want)
	}
}

// checkParsed checks that parse reads body as want.
func checkParsed(t *testing.T, name string, parse func([]byte) (*Request, error), body string, want Request) {
	t.Helper()
	got, err := parse([]byte(body))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if diff := cmp.Diff(want, *got, cmpopts.IgnoreUnexported(ai.ChatInput{})); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// checkRefused checks that parse refuses body as an Invalid *apperr.Error with one message,
// naming param with code.
func checkRefused(t *testing.T, parse func([]byte) (*Request, error), body, param, code string) {
	t.Helper()
	_, err := parse([]byte(body))
	e := apperr.As(err)
	if e == nil {
		t.Errorf("%s: err %v, want an *apperr.Error", body, err)
		return
	}
	if e.Kind != apperr.Invalid || e.Param != param || e.Code != code || len(e.Messages) != 1 || e.Messages[0] == "" {
		t.Errorf("%s: got kind %d param %q code %q %q, want param %q code %q", body, e.Kind, e.Param, e.Code, e.Messages, param, code)
	}
}

// Ensure what the gateway cannot honour is a 400 naming the parameter, never dropped.
func TestParseRefused(t *testing.T) {
	t.Parallel()
	s := newTestService(t)
	const msg = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		body, param, code string
	}{
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"n":2}`, "n", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"store":true}`, "store", "unsupported_parameter"},
		// A field inside a part or a tool is refused like one at the top: never dropped.
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":[{"type":"text","text":"a","bogus":1}]}]}`, "messages[0].content[0].bogus", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png","fidelity":"max"}}]}]}`, "messages[0].content[0].image_url.fidelity", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function","function":{"name":"a"},"cache_control":{"type":"ephemeral"}}]}`, "tools[0].cache_control", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function","function":{"name":"a","examples":[]}}]}`, "tools[0].function.examples", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function"}]}`, "tools[0].function.name", ""},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"web_search"}]}`, "tools[0].type", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":{"type":"function"}}`, "tools", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function","function":{"name":"a b"}}]}`, "tools[0].function.name", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}]}`, "tools[1].function.name", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function","function":{"name":"a","parameters":"x"}}]}`, "tools[0].function.parameters", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tool_choice":"auto"}`, "tool_choice", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":"always"}`, "tool_choice", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}`, "tool_choice", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"parallel_tool_calls":"no"}`, "parallel_tool_calls", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"response_format":{"type":"xml"}}`, "response_format.type", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"response_format":{"type":"json_schema"}}`, "response_format.json_schema.name", ""},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":[]}}}`, "response_format.json_schema.schema", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`,
			"messages[0].content[0].image_url.url", "invalid_image_url"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,eA=="}}]}]}`,
			"messages[0].content[0].image_url.url", "invalid_image_url"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!!"}}]}]}`,
			"messages[0].content[0].image_url.url", "invalid_image_url"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"max"}}]}]}`,
			"messages[0].content[0].image_url.detail", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
			"messages[0].content[0].type", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`,
			"messages[0].content[0].type", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", ""},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"function","content":"x"}]}`, "messages[0].role", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"x","tool_calls":[]}]}`, "messages[0].tool_calls", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f"}}]}]}`, "messages[0].tool_calls[0].id", ""},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{}}]}]}`, "messages[0].tool_calls[0].function.name", ""},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"assistant","tool_calls":"x"}]}`, "messages[0].tool_calls", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"x","name":"bob"}]}`, "messages[0].name", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"robot","content":"x"}]}`, "messages[0].role", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini","messages":[]}`, "messages", "empty_array"},
		{`{"model":"openai/gpt-4o-mini","messages":"hi"}`, "messages", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini"}`, "messages", ""},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user"}]}`, "messages[0].content", ""},
		{`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":5}]}`, "messages[0].content", "invalid_type"},
		{`{` + msg + `}`, "model", ""},
		{`{"model":7,` + msg + `}`, "model", "invalid_type"},
		{`{"model":"no-such-model",` + msg + `}`, "model", "model_not_found"},
		{`{"model":"openai/",` + msg + `}`, "model", "model_not_found"},
		{`{"model":"openai/` + strings.Repeat("A", 3000) + `",` + msg + `}`, "model", "invalid_value"},
		{`{"model":"anthropic/<img src=x onerror=alert(1)>",` + msg + `}`, "model", "invalid_value"},
		{`{"model":"openai/\u202egpt-5-mini",` + msg + `}`, "model", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"temperature":"hot"}`, "temperature", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"temperature":3}`, "temperature", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"top_p":1.5}`, "top_p", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"max_tokens":0}`, "max_tokens", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"max_completion_tokens":1.5}`, "max_completion_tokens", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"max_tokens":5,"max_completion_tokens":6}`, "max_completion_tokens", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"stop":["a","b","c","d","e"]}`, "stop", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"stream":"yes"}`, "stream", "invalid_type"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"stream_options":{"include_usage":true}}`, "stream_options", "invalid_value"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"stream":true,"stream_options":{"chunk":1}}`, "stream_options.chunk", "unsupported_parameter"},
		{`{"model":"openai/gpt-4o-mini",` + msg + `,"user":5}`, "user", "invalid_type"},
	} {
		checkRefused(t, s.Parse, tc.body, tc.param, tc.code)
	}
	if _, err := s.Parse([]byte(`[1]`)); apperr.KindOf(err) != apperr.Invalid || apperr.As(err).Param != "" {
		t.Errorf("a JSON array: %v", err)
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	s := newTestService(t)
	list := s.Models()
	if list.Object != "list" || len(list.Data) == 0 {
		t.Fatalf("list %+v", list)
	}
	seen := map[string]bool{}
	for _, m := range list.Data {
		if m.Object != "model" || m.OwnedBy == "anthropic" || m.ID != m.OwnedBy+"/"+m.ID[len(m.OwnedBy)+1:] {
			t.Fatalf("model %+v (anthropic is not configured)", m)
		}
		seen[m.ID] = true
	}
	if !seen["openai/gpt-4o-mini"] || !seen["gemini/gemini-3.1-flash-lite"] {
		t.Fatalf("defaults missing from %v", seen)
	}
	if _, err := s.Model("openai/gpt-4o-mini"); err != nil {
		t.Fatalf("Model(openai/gpt-4o-mini): %v", err)
	}
	_, err := s.Model("anthropic/claude-haiku-4-5") // anthropic is not configured
	if e := apperr.As(err); e == nil || e.Kind != apperr.NotFound || e.Param != "model" || e.Code != "model_not_found" {
		t.Fatalf("Model of an unconfigured provider: %v", err)
	}
}

// failing is an AI service that refuses every call with err.
type failing struct{ err error }

func (f failing) Complete(context.Context, string, string, ai.ChatInput) (*ai.Completion, error) {
	return nil, f.err
}

func (f failing) Stream(context.Context, string, string, ai.ChatInput, func(ai.Delta) error) (*ai.Completion, error) {
	return nil, f.err
}

// Ensure the AI service's refusals name the parameter as the OpenAI request names it, keep
// their kind, messages and code, and leave the service's error as it was.
func TestServiceErrorsNameOpenAIParams(t *testing.T) {
	t.Parallel()
	prices, err := ai.LoadPrices("", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ param, want string }{
		{"temperature", "temperature"},
		{"maxTokens", "max_tokens"},
		{"messages", "messages"},
		{"messages.0.content", "messages[0].content"},
		{"messages.12.role", "messages[12].role"},
		{"", ""},
	} {
		cause := &apperr.Error{Kind: apperr.Invalid, Messages: []string{"x must be y"}, List: true, Param: tc.param}
		s := New(Options{AI: failing{cause}, Prices: prices, Providers: map[string]string{"openai": ""}})
		req, err := s.Parse([]byte(`{"model":"openai/m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		_, cerr := s.Complete(context.Background(), "u", req)
		serr := s.Stream(context.Background(), "u", req, func(*Chunk) error { return nil })
		for _, err := range []error{cerr, serr} {
			e := apperr.As(err)
			if e == nil || e.Param != tc.want || e.Kind != apperr.Invalid || !e.List || e.Messages[0] != "x must be y" {
				t.Errorf("param %q: got %+v, want param %q", tc.param, e, tc.want)
			}
		}
		if cause.Param != tc.param {
			t.Errorf("the AI service's error was changed: param %q", cause.Param)
		}
	}
}
