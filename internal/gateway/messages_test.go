package gateway

import (
	"encoding/json"
	"testing"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
)

func bptr(b bool) *bool { return &b }

// Ensure a Messages request reaches the AI service's input as Anthropic defines it: system
// text, tool_use and tool_result blocks, tools, each tool_choice.
func TestParseMessagesAccepted(t *testing.T) {
	t.Parallel()
	s := newTestService(t)
	const tools = `"tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object"}}]`
	weather := []ai.Tool{{Name: "get_weather", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}}
	hi := []ai.Message{{Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		name, body string
		want       Request
	}{
		{"system blocks, stop sequences, stream", `{"model":"anthropic/claude-haiku-4-5","max_tokens":20,"stream":true,
			"system":[{"type":"text","text":"be "},{"type":"text","text":"brief"}],"stop_sequences":["x"],"metadata":{"user_id":"u"},
			"messages":[{"role":"user","content":"hi"}]}`,
			Request{Provider: "anthropic", Model: "anthropic/claude-haiku-4-5", Stream: true,
				Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "claude-haiku-4-5", MaxTokens: iptr(20), Stop: []string{"x"},
					Messages: []ai.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}}}},
		{"a tool loop", `{"model":"openai/gpt-4o-mini","max_tokens":20,` + tools + `,"messages":[
			{"role":"user","content":"weather?"},
			{"role":"assistant","content":[{"type":"text","text":"let me see"},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"x"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"sunny"}]},{"type":"text","text":"thanks"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"get_weather"}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"no such city","is_error":true}]}]}`,
			Request{Provider: "openai", Model: "openai/gpt-4o-mini",
				Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", MaxTokens: iptr(20), Tools: weather, Messages: []ai.Message{
					{Role: "user", Content: "weather?"},
					{Role: "assistant", Content: "let me see", ToolCalls: []ai.ToolCall{{ID: "t1", Name: "get_weather", Arguments: `{"city":"x"}`}}},
					{Role: "tool", ToolCallID: "t1", Content: "sunny"},
					{Role: "user", Content: "thanks"},
					{Role: "assistant", ToolCalls: []ai.ToolCall{{ID: "t2", Name: "get_weather", Arguments: "{}"}}},
					{Role: "tool", ToolCallID: "t2", Content: "Error: no such city"}}}}},
		{"tool_choice auto", `{"model":"openai/gpt-4o-mini","max_tokens":1,` + tools + `,"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":"hi"}]}`,
			Request{Provider: "openai", Model: "openai/gpt-4o-mini", Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", MaxTokens: iptr(1),
				Tools: weather, ToolChoice: ai.ToolChoice{Mode: ai.ToolAuto}, Messages: hi}}},
		{"tool_choice any without parallel calls", `{"model":"openai/gpt-4o-mini","max_tokens":1,` + tools + `,
			"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"hi"}]}`,
			Request{Provider: "openai", Model: "openai/gpt-4o-mini", Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", MaxTokens: iptr(1),
				Tools: weather, ToolChoice: ai.ToolChoice{Mode: ai.ToolRequired}, ParallelToolCalls: bptr(false), Messages: hi}}},
		{"tool_choice none", `{"model":"openai/gpt-4o-mini","max_tokens":1,` + tools + `,"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"hi"}]}`,
			Request{Provider: "openai", Model: "openai/gpt-4o-mini", Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", MaxTokens: iptr(1),
				Tools: weather, ToolChoice: ai.ToolChoice{Mode: ai.ToolNone}, Messages: hi}}},
		{"tool_choice tool", `{"model":"openai/gpt-4o-mini","max_tokens":1,` + tools + `,"tool_choice":{"type":"tool","name":"get_weather"},"messages":[{"role":"user","content":"hi"}]}`,
			Request{Provider: "openai", Model: "openai/gpt-4o-mini", Input: ai.ChatInput{SystemAllowed: true, ProviderDefaults: true, Model: "gpt-4o-mini", MaxTokens: iptr(1),
				Tools: weather, ToolChoice: ai.ToolChoice{Mode: ai.ToolNamed, Name: "get_weather"}, Messages: hi}}},
	} {
		checkParsed(t, tc.name, s.ParseMessages, tc.body, tc.want)
	}
}

// Ensure what the Messages surface cannot honour is a 400 naming the parameter in
// Anthropic's dotted form.
func TestParseMessagesRefused(t *testing.T) {
	t.Parallel()
	s := newTestService(t)
	const head = `"model":"anthropic/claude-haiku-4-5","max_tokens":10`
	const msg = `"messages":[{"role":"user","content":"hi"}]`
	const tools = `"tools":[{"name":"a","input_schema":{"type":"object"}}]`
	for _, tc := range []struct {
		body, param, code string
	}{
		{`{` + head + `,` + msg + `,"top_k":5}`, "top_k", "unsupported_parameter"},
		// Prompt-caching marks and unknown fields inside blocks, the system and tools: refused.
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]}`, "messages.0.content.0.cache_control", "unsupported_parameter"},
		{`{` + head + `,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],` + msg + `}`, "system.0.cache_control", "unsupported_parameter"},
		{`{` + head + `,` + msg + `,"tools":[{"name":"a","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]}`, "tools.0.cache_control", "unsupported_parameter"},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"text","text":"a","bogus":1}]}]}`, "messages.0.content.0.bogus", "unsupported_parameter"},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r","citations":[]}]}]}]}`, "messages.0.content.0.content.0.citations", "unsupported_parameter"},
		{`{"model":"anthropic/claude-haiku-4-5",` + msg + `}`, "max_tokens", ""},
		{`{` + head + `,` + msg + `,"temperature":2}`, "temperature", "invalid_value"},
		{`{` + head + `,` + msg + `,"stop_sequences":"x"}`, "stop_sequences", "invalid_type"},
		{`{` + head + `,` + msg + `,"stream":"yes"}`, "stream", "invalid_type"},
		{`{` + head + `,` + msg + `,"metadata":"u"}`, "metadata", "invalid_type"},
		{`{` + head + `}`, "messages", ""},
		{`{` + head + `,"messages":[]}`, "messages", ""},
		{`{` + head + `,"messages":[{"role":"system","content":"x"}]}`, "messages.0.role", "invalid_value"},
		{`{` + head + `,"messages":[{"role":"user","content":5}]}`, "messages.0.content", "invalid_type"},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"document"}]}]}`, "messages.0.content.0.type", "unsupported_parameter"},
		{`{` + head + `,"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"a"}]}]}`, "messages.0.content.0", ""},
		{`{` + head + `,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":[1]}]}]}`, "messages.0.content.0.input", "invalid_type"},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}`, "messages.0.content.0.tool_use_id", ""},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image"}]}]}]}`,
			"messages.0.content.0.content.0.type", "unsupported_parameter"},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"text/plain","data":"eA=="}}]}]}`,
			"messages.0.content.0.source", "invalid_value"},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`,
			"messages.0.content.0.source.type", "unsupported_parameter"},
		{`{` + head + `,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]}]}`,
			"messages.0.content.0.source.data", "invalid_image_url"},
		{`{` + head + `,"system":5,` + msg + `}`, "system", "invalid_type"},
		{`{` + head + `,` + msg + `,"tools":{}}`, "tools", "invalid_type"},
		{`{` + head + `,` + msg + `,"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "tools.0.type", "unsupported_parameter"},
		{`{` + head + `,` + msg + `,"tools":[{"name":"a b","input_schema":{}}]}`, "tools.0.name", "invalid_value"},
		{`{` + head + `,` + msg + `,"tools":[{"name":"a"}]}`, "tools.0.input_schema", ""},
		{`{` + head + `,` + msg + `,` + tools + `,"tool_choice":"auto"}`, "tool_choice", "invalid_type"},
		{`{` + head + `,` + msg + `,` + tools + `,"tool_choice":{"type":"always"}}`, "tool_choice.type", "invalid_value"},
		{`{` + head + `,` + msg + `,` + tools + `,"tool_choice":{"type":"tool","name":"b"}}`, "tool_choice.name", "invalid_value"},
	} {
		checkRefused(t, s.ParseMessages, tc.body, tc.param, tc.code)
	}
}

// Ensure a tool call's arguments become a tool_use input object whatever the provider sent.
func TestToolInput(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		`{"city":"x"}`: `{"city":"x"}`,
		"":             `{}`,
		"  ":           `{}`,
		`[1,2]`:        `{"arguments":"[1,2]"}`,
		`not json`:     `{"arguments":"not json"}`,
	} {
		if got := string(toolInput(args)); got != want {
			t.Errorf("toolInput(%q) = %s, want %s", args, got, want)
		}
	}
}

// Ensure each failure has Anthropic's error type, and a validation failure its 400; a
// provider's failure the type Anthropic would give it (Gemini's UNAVAILABLE overloaded_error).
func TestAnthropicErrorOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status       int
		kind         apperr.Kind
		code         string
		upstreamType string
		wantStatus   int
		wantType     string
	}{
		{402, apperr.PaymentRequired, "", "", 402, "billing_error"},
		{504, apperr.UpstreamTimeout, "", "", 504, "timeout_error"},
		{422, apperr.Invalid, "", "", 400, "invalid_request_error"},
		{400, apperr.Invalid, "", "", 400, "invalid_request_error"},
		{401, apperr.Unauthorized, "", "", 401, "authentication_error"},
		{403, apperr.Forbidden, "", "", 403, "permission_error"},
		{404, apperr.NotFound, "", "", 404, "not_found_error"},
		{413, apperr.TooLarge, "", "", 413, "request_too_large"},
		{429, apperr.RateLimited, "", "", 429, "rate_limit_error"},
		{429, apperr.RateLimited, "", "rate_limit_error", 429, "rate_limit_error"},
		{502, apperr.Upstream, "", "", 502, "api_error"},
		{500, apperr.Internal, "", "", 500, "api_error"},
		// A provider's failure with Anthropic's own type keeps it; another type does not, nor
		// does a code of ours that happens to be spelled as one.
		{502, apperr.Upstream, "", "overloaded_error", 502, "overloaded_error"},
		{502, apperr.Upstream, "", "server_error", 502, "api_error"},
		{502, apperr.Upstream, "overloaded_error", "", 502, "api_error"},
		{400, apperr.Invalid, "", "overloaded_error", 400, "invalid_request_error"},
		// Another provider's type with an Anthropic equivalent gets it; one without keeps
		// the kind's; a refusal of the caller's request stays one whatever the provider said.
		{502, apperr.Upstream, "", "UNAVAILABLE", 502, "overloaded_error"},
		{502, apperr.Upstream, "", "RESOURCE_EXHAUSTED", 502, "rate_limit_error"},
		{502, apperr.Upstream, "", "rate_limit_exceeded", 502, "rate_limit_error"},
		{502, apperr.Upstream, "", "INTERNAL", 502, "api_error"},
		{429, apperr.RateLimited, "", "RESOURCE_EXHAUSTED", 429, "rate_limit_error"},
		{400, apperr.Invalid, "", "UNAVAILABLE", 400, "invalid_request_error"},
		// The server's own bound on buffered bytes; another unavailability stays api_error.
		{503, apperr.Unavailable, "overloaded", "", 503, "overloaded_error"},
		{503, apperr.Unavailable, "", "", 503, "api_error"},
	} {
		status, body := AnthropicErrorOf(tc.status, tc.kind, tc.code, tc.upstreamType, "m")
		if status != tc.wantStatus || body.Type != "error" || body.Error.Type != tc.wantType || body.Error.Message != "m" {
			t.Errorf("AnthropicErrorOf(%d, %v, %q, %q) = %d %+v, want %d %s", tc.status, tc.kind, tc.code, tc.upstreamType, status, body, tc.wantStatus, tc.wantType)
		}
	}
}
