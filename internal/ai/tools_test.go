package ai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/usage"
)

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

// conversation is a tool loop as a client sends it back: a system text, a question with an
// image, the assistant's call, the tool's result and a follow-up.
func conversation() ai.ChatInput {
	no := false
	return ai.ChatInput{
		SystemAllowed: true,
		Messages: []ai.Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Parts: []ai.Part{{Text: "Weather here?"}, {Image: &ai.Image{URL: "data:image/png;base64,iVBO", MediaType: "image/png", Data: "iVBO"}}}},
			{Role: "assistant", ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			{Role: "tool", ToolCallID: "call_1", Content: "sunny"},
			{Role: "user", Content: "Thanks"},
		},
		Tools:             []ai.Tool{{Name: "get_weather", Description: "Weather in a city", Parameters: json.RawMessage(weatherSchema)}},
		ToolChoice:        ai.ToolChoice{Mode: ai.ToolNamed, Name: "get_weather"},
		ParallelToolCalls: &no,
	}
}

// sub returns the members of body named by keys, as JSON-decoded values.
func sub(body map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = body[k]
	}
	return out
}

func decode(t *testing.T, js string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	return v
}

// Ensure each provider receives the conversation in its own format: images, the assistant's
// calls, the tools' results, the tools and the tool choice.
func TestTools_RequestInEachFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		keys     []string
		want     string
	}{
		{"openai", []string{"messages", "tools", "tool_choice", "parallel_tool_calls"}, `{
			"messages":[
				{"role":"system","content":"Be brief."},
				{"role":"user","content":[{"type":"text","text":"Weather here?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},
				{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
				{"role":"tool","content":"sunny","tool_call_id":"call_1"},
				{"role":"user","content":"Thanks"}],
			"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":` + weatherSchema + `}}],
			"tool_choice":{"type":"function","function":{"name":"get_weather"}},
			"parallel_tool_calls":false}`},
		{"anthropic", []string{"system", "messages", "tools", "tool_choice"}, `{
			"system":"Be brief.",
			"messages":[
				{"role":"user","content":[{"type":"text","text":"Weather here?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"sunny"}]},
				{"role":"user","content":"Thanks"}],
			"tools":[{"name":"get_weather","description":"Weather in a city","input_schema":` + weatherSchema + `}],
			"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}}`},
		{"gemini", []string{"systemInstruction", "contents", "tools", "toolConfig"}, `{
			"systemInstruction":{"parts":[{"text":"Be brief."}]},
			"contents":[
				{"role":"user","parts":[{"text":"Weather here?"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}}]},
				{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny"}}}]},
				{"role":"user","parts":[{"text":"Thanks"}]}],
			"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Weather in a city","parametersJsonSchema":` + weatherSchema + `}]}],
			"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider, aitest.OK("done"))
			svc, _ := newService(t, fake, tt.provider, nil)
			in := conversation()
			in.Model = models[tt.provider]
			c, err := svc.Complete(context.Background(), "u", tt.provider, in)
			if err != nil || c.Text != "done" {
				t.Fatalf("%+v, %v", c, err)
			}
			if diff := cmp.Diff(decode(t, tt.want), sub(fake.Last().Body, tt.keys...)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// Ensure each provider's tool calls come back as calls with ids (made up, stable, for
// Gemini's), arguments as JSON text and finish reason tool_calls.
func TestTools_AnswerNormalized(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		answer   string
		wantIDs  []string // "" : a made-up one
	}{
		{"openai", `{"id":"c","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"x\"}"}},
			{"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"y\"}"}}]},"finish_reason":"tool_calls"}],
			"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`, []string{"call_a", "call_b"}},
		{"anthropic", `{"id":"m","type":"message","content":[
			{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{"city":"x"}},
			{"type":"tool_use","id":"toolu_b","name":"get_weather","input":{"city":"y"}}],
			"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`, []string{"toolu_a", "toolu_b"}},
		{"gemini", `{"candidates":[{"content":{"role":"model","parts":[
			{"functionCall":{"name":"get_weather","args":{"city":"x"}}},
			{"functionCall":{"name":"get_weather","args":{"city":"y"}}}]},"finishReason":"STOP"}],
			"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7}}`, []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider, aitest.JSON(200, json.RawMessage(tt.answer)))
			svc, rec := newService(t, fake, tt.provider, nil)
			in := conversation()
			in.Model, in.ToolChoice = models[tt.provider], ai.ToolChoice{}
			c, err := svc.Complete(context.Background(), "u", tt.provider, in)
			if err != nil {
				t.Fatal(err)
			}
			if c.FinishReason != "tool_calls" || len(c.ToolCalls) != 2 || c.Usage.TotalTokens != 12 {
				t.Fatalf("completion %+v", c)
			}
			for i, tc := range c.ToolCalls {
				want := tt.wantIDs[i]
				if want == "" && (!strings.HasPrefix(tc.ID, "call_") || tc.ID == c.ToolCalls[1-i].ID) {
					t.Errorf("call %d: made-up id %q is not call_… or not unique", i, tc.ID)
				} else if want != "" && tc.ID != want {
					t.Errorf("call %d: id %q, want %q", i, tc.ID, want)
				}
				if tc.Name != "get_weather" || tc.Arguments != `{"city":"`+[]string{"x", "y"}[i]+`"}` {
					t.Errorf("call %d: %+v", i, tc)
				}
			}
			if recs := rec.all(); len(recs) != 1 || recs[0].TotalTokens != 12 || recs[0].Status != "success" {
				t.Errorf("records %+v", recs)
			}
		})
	}
}

// Ensure streamed tool calls are handed out piece by piece as they arrive: the first piece of
// a call with its id and name, then the fragments of its arguments, which join to the whole.
func TestTools_StreamedPieces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		provider string
		events   []string
		want     []string // the pieces, as index:id:name:arguments
	}{
		{"openai", []string{
			`{"id":"c","choices":[{"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
			`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}}]}`,
			`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"x\"}"}}]}}]}`,
			`{"id":"c","choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
			`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
			`[DONE]`}, []string{`0:call_a:get_weather:`, `0:::{"ci`, `0:::ty":"x"}`}},
		{"anthropic", []string{
			`message_start|{"type":"message_start","message":{"id":"m","usage":{"input_tokens":5,"output_tokens":1}}}`,
			`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}`,
			`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ty\":\"x\"}"}}`,
			`content_block_stop|{"type":"content_block_stop","index":0}`,
			`message_delta|{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}`,
			`message_stop|{"type":"message_stop"}`}, []string{`0:toolu_a:get_weather:`, `0:::{"ci`, `0:::ty":"x"}`}},
		{"gemini", []string{
			`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"x"}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7}}`},
			[]string{`0:*:get_weather:{"city":"x"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider, aitest.Events(tt.events...))
			svc, _ := newService(t, fake, tt.provider, nil)
			in := conversation()
			in.Model, in.ToolChoice = models[tt.provider], ai.ToolChoice{}
			var got []string
			var ids []string
			c, err := svc.Stream(context.Background(), "u", tt.provider, in, func(d ai.Delta) error {
				if tc := d.ToolCall; tc != nil {
					id := tc.ID
					if id != "" && tt.provider == "gemini" {
						ids, id = append(ids, id), "*"
					}
					got = append(got, strings.Join([]string{string(rune('0' + tc.Index)), id, tc.Name, tc.Arguments}, ":"))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pieces (-want +got):\n%s", diff)
			}
			if c.FinishReason != "tool_calls" || len(c.ToolCalls) != 1 || c.ToolCalls[0].Arguments != `{"city":"x"}` || c.Usage.TotalTokens != 12 {
				t.Errorf("completion %+v", c)
			}
			if tt.provider == "gemini" && (len(ids) != 1 || c.ToolCalls[0].ID != ids[0] || !strings.HasPrefix(ids[0], "call_")) {
				t.Errorf("gemini: streamed id %q, answer's %q: want one made-up id, the same", ids, c.ToolCalls[0].ID)
			}
		})
	}
}

// Ensure Anthropic answers JSON output with a forced tool whose input becomes the text, and
// Gemini and OpenAI get the format in their own fields.
func TestResponseFormat(t *testing.T) {
	t.Parallel()
	const person = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	format := &ai.ResponseFormat{Type: "json_schema", Name: "person", Schema: json.RawMessage(person)}
	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		fake := aitest.New(t, "anthropic", aitest.JSON(200, json.RawMessage(`{"id":"m","type":"message","content":[
			{"type":"tool_use","id":"toolu_a","name":"person","input":{"name":"Ada"}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`)),
			aitest.Events(`message_start|{"type":"message_start","message":{"id":"m","usage":{"input_tokens":5}}}`,
				`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"person","input":{}}}`,
				`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"name\":"}}`,
				`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"Ada\"}"}}`,
				`message_delta|{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}`,
				`message_stop|{"type":"message_stop"}`))
		svc, _ := newService(t, fake, "anthropic", nil)
		in := ai.ChatInput{Model: models["anthropic"], Messages: []ai.Message{{Role: "user", Content: "Who?"}}, ResponseFormat: format}
		c, err := svc.Complete(context.Background(), "u", "anthropic", in)
		if err != nil || c.Text != `{"name":"Ada"}` || len(c.ToolCalls) != 0 || c.FinishReason != "stop" {
			t.Fatalf("%+v, %v", c, err)
		}
		want := decode(t, `{"tools":[{"name":"person","input_schema":`+person+`}],"tool_choice":{"type":"tool","name":"person"}}`)
		if diff := cmp.Diff(want, sub(fake.Last().Body, "tools", "tool_choice")); diff != "" {
			t.Errorf("body (-want +got):\n%s", diff)
		}
		var text strings.Builder
		c, err = svc.Stream(context.Background(), "u", "anthropic", in, func(d ai.Delta) error {
			if d.ToolCall != nil {
				t.Errorf("a tool call piece %+v in a JSON answer", d.ToolCall)
			}
			text.WriteString(d.Text)
			return nil
		})
		if err != nil || text.String() != `{"name":"Ada"}` || c.Text != text.String() || c.FinishReason != "stop" {
			t.Fatalf("streamed %q, %+v, %v", text.String(), c, err)
		}
	})
	for _, tc := range []struct{ provider, key, want string }{
		{"gemini", "generationConfig", `{"maxOutputTokens":1000,"temperature":0.9,"responseMimeType":"application/json","responseJsonSchema":` + person + `}`},
		{"openai", "response_format", `{"type":"json_schema","json_schema":{"name":"person","schema":` + person + `}}`},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tc.provider, aitest.OK(`{"name":"Ada"}`))
			svc, _ := newService(t, fake, tc.provider, nil)
			in := ai.ChatInput{Model: models[tc.provider], Messages: []ai.Message{{Role: "user", Content: "Who?"}}, ResponseFormat: format}
			if _, err := svc.Complete(context.Background(), "u", tc.provider, in); err != nil {
				t.Fatal(err)
			}
			var want any
			_ = json.Unmarshal([]byte(tc.want), &want)
			if diff := cmp.Diff(want, fake.Last().Body[tc.key]); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}

// Ensure what a provider cannot take is refused before anything is sent, naming the
// parameter.
func TestCheck_RefusedBeforeSending(t *testing.T) {
	t.Parallel()
	byURL := ai.Message{Role: "user", Parts: []ai.Part{{Text: "x"}, {Image: &ai.Image{URL: "https://example.com/a.png"}}}}
	notObject := []ai.Message{{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []ai.ToolCall{{ID: "c", Name: "f", Arguments: "[1]"}}},
		{Role: "tool", ToolCallID: "c", Content: "r"}}
	tests := []struct {
		name, provider string
		in             ai.ChatInput
		param          string
	}{
		{"GeminiImageByURL", "gemini", ai.ChatInput{Messages: []ai.Message{byURL}}, "messages.0.content.1.image_url"},
		{"GeminiArgumentsNotObject", "gemini", ai.ChatInput{Messages: notObject}, "messages.1.tool_calls.0.function.arguments"},
		{"AnthropicArgumentsNotObject", "anthropic", ai.ChatInput{Messages: notObject}, "messages.1.tool_calls.0.function.arguments"},
		{"AnthropicImageType", "anthropic", ai.ChatInput{Messages: []ai.Message{{Role: "user", Parts: []ai.Part{{Image: &ai.Image{URL: "data:image/bmp;base64,Qk0=", MediaType: "image/bmp", Data: "Qk0="}}}}}},
			"messages.0.content.0.image_url"},
		{"AnthropicSchemaNotObject", "anthropic", ai.ChatInput{Messages: []ai.Message{{Role: "user", Content: "x"}},
			Tools: []ai.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"string"}`)}}}, "tools.0.function.parameters"},
		{"AnthropicFormatWithTools", "anthropic", ai.ChatInput{Messages: []ai.Message{{Role: "user", Content: "x"}},
			Tools: []ai.Tool{{Name: "f"}}, ResponseFormat: &ai.ResponseFormat{Type: "json_object"}}, "response_format"},
		{"AnthropicSystemOnly", "anthropic", ai.ChatInput{SystemAllowed: true, Messages: []ai.Message{{Role: "system", Content: "Be brief."}}}, "messages"},
		{"GeminiSystemOnly", "gemini", ai.ChatInput{SystemAllowed: true, Messages: []ai.Message{{Role: "system", Content: "Be brief."}}}, "messages"},
		{"ResultOfNoCall", "openai", ai.ChatInput{SystemAllowed: true, Messages: []ai.Message{{Role: "user", Content: "x"}, {Role: "tool", ToolCallID: "nope", Content: "r"}}},
			"messages.1.tool_call_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := aitest.New(t, tt.provider)
			svc, _ := newService(t, fake, tt.provider, nil)
			_, err := svc.Complete(context.Background(), "u", tt.provider, tt.in)
			e := apperr.As(err)
			if e == nil || e.Kind != apperr.Invalid || e.Param != tt.param || !strings.Contains(strings.Join(e.Messages, " "), tt.param) {
				t.Fatalf("err %#v, want Invalid naming %s", err, tt.param)
			}
			if n := len(fake.Calls()); n != 0 {
				t.Errorf("the provider received %d requests", n)
			}
		})
	}
}

// Ensure a call's worst case counts what it sends besides text: the tools offered and the
// assistant's calls byte for byte, and an image as 5,000 prompt tokens whatever its size (not
// its bytes, which would hold a budget thousands of times over).
func TestBudget_WorstCaseOfToolsAndImages(t *testing.T) {
	t.Parallel()
	fake := aitest.New(t, "openai")
	b := &budget{limit: 1}
	svc, _ := newService(t, fake, "openai", func(o *ai.Options) { o.Budget = b })
	big := strings.Repeat("A", 4<<20) // a 3 MB image
	in := ai.ChatInput{Model: "gpt-4o-mini", MaxTokens: ptrInt(100), SystemAllowed: true, Messages: []ai.Message{
		{Role: "user", Parts: []ai.Part{{Text: "0123456789"}, {Image: &ai.Image{URL: "data:image/png;base64," + big, MediaType: "image/png", Data: big}}}},
		{Role: "assistant", ToolCalls: []ai.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c", Content: "ok"},
	}, Tools: []ai.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	if _, err := svc.Complete(context.Background(), "u", "openai", in); err != nil {
		t.Fatal(err)
	}
	// prompt: 10 text + 5,000 image + 3 call ("f", "{}") + 2 result + 18 tool ("f" and its
	// schema), and the overhead: 16 for the call, 8 for each of its 3 messages, 512 + 16 for
	// its one tool.
	const want = (10+5000+3+2+18+16+3*8+512+16)*0.15e-6 + 100*0.6e-6
	if len(b.reserved) != 1 || b.reserved[0] != usage.RoundCost(want) {
		t.Errorf("reserved %v, want %v", b.reserved, usage.RoundCost(want))
	}
}

func ptrInt(n int) *int { return &n }
