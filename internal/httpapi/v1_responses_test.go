package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/usage"
)

// respModels are a model of each provider, as the client names it.
var respModels = map[string]string{
	"openai": "openai/gpt-4o-mini", "anthropic": "anthropic/claude-haiku-4-5", "gemini": "gemini/gemini-2.5-flash",
}

// waitUsage polls /api/ai/usage until it counts want requests (or 10 s pass), then checks
// that no further record arrives: each call is recorded once.
func waitUsage(t *testing.T, fx *gwFixture, tok string, want int64) usage.Summary {
	t.Helper()
	var sum usage.Summary
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && sum.TotalRequests < want; time.Sleep(5 * time.Millisecond) {
		sum = decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage?days=1", "", tok).Body.Bytes())
	}
	time.Sleep(50 * time.Millisecond) // a second record of the same call would be flushed by now
	return decodeJSON[usage.Summary](t, do(fx.h, "GET", "/api/ai/usage?days=1", "", tok).Body.Bytes())
}

// outputText is the SDKs' response.output_text: the text parts of the message items joined.
func outputText(r gateway.Response) string {
	var b strings.Builder
	for _, it := range r.Output {
		if it.Type == "message" {
			for _, p := range it.Content {
				if p.Type == "output_text" {
					b.WriteString(p.Text)
				}
			}
		}
	}
	return b.String()
}

// Ensure /v1/responses answers OpenAI's Response object for every provider, sends the
// provider the instructions and input as a conversation, and records each call once with
// its tokens.
func TestV1Responses(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	for _, p := range ai.Providers() {
		t.Run(p, func(t *testing.T) {
			body := `{"model":"` + respModels[p] + `","instructions":"Be brief.","input":"hi","max_output_tokens":50,"temperature":0.5,
				"metadata":{"k":"v"},"store":true,"user":"u1"}`
			rec := do(fx.h, "POST", "/v1/responses", body, tok)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			r := decodeJSON[gateway.Response](t, rec.Body.Bytes())
			if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || r.Status != "completed" || r.CreatedAt == 0 ||
				r.IncompleteDetails != nil || outputText(r) != "Hello from the fake" || !strings.HasPrefix(r.Model, p+"/") {
				t.Fatalf("answer %s", rec.Body)
			}
			if it := r.Output[0]; it.Type != "message" || it.Role != "assistant" || it.Status != "completed" || !strings.HasPrefix(it.ID, "msg_") ||
				it.Content[0].Annotations == nil {
				t.Errorf("message item %+v", it)
			}
			want := gateway.ResponseUsage{InputTokens: 11, OutputTokens: 7, TotalTokens: 18}
			if diff := cmp.Diff(want, *r.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if !strings.Contains(rec.Body.String(), `"instructions":"Be brief."`) || !strings.Contains(rec.Body.String(), `"metadata":{"k":"v"}`) ||
				!strings.Contains(rec.Body.String(), `"max_output_tokens":50`) || !strings.Contains(rec.Body.String(), `"store":false`) {
				t.Errorf("echoed fields %s", rec.Body)
			}
			sent := string(fx.fakes[p].Last().Raw)
			if !strings.Contains(sent, "Be brief.") || !strings.Contains(sent, `"hi"`) {
				t.Errorf("%s received %s", p, sent)
			}
		})
	}
	sum := waitUsage(t, fx, tok, 3)
	if sum.TotalRequests != 3 || sum.TotalTokens != 54 {
		t.Errorf("usage after three calls: %+v", sum)
	}
}

// respEvent is one event of a streamed Response: its name and its decoded data.
type respEvent struct {
	name string
	data map[string]any
	raw  string
}

func respEvents(t *testing.T, body string) []respEvent {
	t.Helper()
	var out []respEvent
	for _, e := range events(t, body) {
		var v map[string]any
		if err := json.Unmarshal([]byte(e[1]), &v); err != nil {
			t.Fatalf("event %q: %v", e[1], err)
		}
		out = append(out, respEvent{e[0], v, e[1]})
	}
	return out
}

// Ensure a streamed /v1/responses is OpenAI's event sequence for every provider: each event
// named as its type, numbered from 0, the text in output_text deltas, and the whole Response
// in response.completed, recorded once.
func TestV1Responses_Stream(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.Stream(aitest.StreamOptions{}))
	_, tok := fx.user(t)
	for _, p := range ai.Providers() {
		t.Run(p, func(t *testing.T) {
			rec := do(fx.h, "POST", "/v1/responses", `{"model":"`+respModels[p]+`","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true}`, tok)
			if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			evs := respEvents(t, rec.Body.String())
			var names []string
			var text strings.Builder
			for i, e := range evs {
				if e.data["type"] != e.name || e.data["sequence_number"] != float64(i) {
					t.Errorf("event %d %q: %s", i, e.name, e.raw)
				}
				if e.name == "response.output_text.delta" {
					text.WriteString(e.data["delta"].(string))
				}
				if len(names) == 0 || names[len(names)-1] != e.name {
					names = append(names, e.name)
				}
			}
			want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Fatalf("events (-want +got):\n%s\n%s", diff, rec.Body)
			}
			final := decodeJSON[struct{ Response gateway.Response }](t, []byte(evs[len(evs)-1].raw)).Response
			if text.String() != "Hello from the fake" || outputText(final) != text.String() || final.Status != "completed" ||
				final.Usage == nil || final.Usage.TotalTokens != 18 {
				t.Errorf("text %q, final %s", text.String(), evs[len(evs)-1].raw)
			}
			if created := decodeJSON[struct{ Response gateway.Response }](t, []byte(evs[0].raw)).Response; created.ID != final.ID ||
				created.Status != "in_progress" || len(created.Output) != 0 {
				t.Errorf("response.created %s", evs[0].raw)
			}
		})
	}
	if sum := waitUsage(t, fx, tok, 3); sum.TotalRequests != 3 || sum.TotalTokens != 54 {
		t.Errorf("usage after three streams: %+v", sum)
	}
}

const geminiToolAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"x"}}}]},
	"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7,"totalTokenCount":12}}`

// respWeatherTool is the function tool of the tool loops, in the Responses API's flat form.
const respWeatherTool = `{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`

// Ensure a two-step function tool loop works on every provider: the first answer is a
// function_call item, and the call and its output sent back reach the provider as its own
// tool call and tool result.
func TestV1Responses_ToolLoop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider, answer string
		inSecond         []string // what the provider's second request carries
	}{
		{"openai", openAIToolAnswer, []string{`"tool_call_id":"call_a"`, `"role":"tool"`, `"content":"sunny"`, `"tool_calls":[`}},
		{"anthropic", anthropicToolAnswer, []string{`"type":"tool_result"`, `"tool_use_id":"toolu_a"`, `"type":"tool_use"`}},
		{"gemini", geminiToolAnswer, []string{`"functionResponse"`, `"functionCall"`}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			fx := newGWFixture(t, Options{}, aitest.JSON(200, json.RawMessage(tc.answer)), aitest.OK("It is sunny."))
			_, tok := fx.user(t)
			model := respModels[tc.provider]
			rec := do(fx.h, "POST", "/v1/responses", `{"model":"`+model+`","input":"Weather?","tools":[`+respWeatherTool+`],"tool_choice":"auto","parallel_tool_calls":false}`, tok)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			r := decodeJSON[gateway.Response](t, rec.Body.Bytes())
			var call *gateway.OutputItem
			for i := range r.Output {
				if r.Output[i].Type == "function_call" {
					call = &r.Output[i]
				}
			}
			if call == nil || call.Name != "get_weather" || call.CallID == "" || !strings.HasPrefix(call.ID, "fc_") || call.Status != "completed" {
				t.Fatalf("no function_call item: %s", rec.Body)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || args["city"] != "x" {
				t.Fatalf("arguments %q", call.Arguments)
			}
			// The SDK's loop: the input so far, the output items as they came, the result.
			out, _ := json.Marshal(r.Output)
			second := `{"model":"` + model + `","tools":[` + respWeatherTool + `],"input":[{"role":"user","content":"Weather?"}` +
				`,` + strings.Trim(string(out), "[]") + `,{"type":"function_call_output","call_id":"` + call.CallID + `","output":"sunny"}]}`
			rec = do(fx.h, "POST", "/v1/responses", second, tok)
			if rec.Code != 200 {
				t.Fatalf("second step: %d %s", rec.Code, rec.Body)
			}
			if got := outputText(decodeJSON[gateway.Response](t, rec.Body.Bytes())); got != "It is sunny." {
				t.Errorf("second answer %q", got)
			}
			sent := strings.ReplaceAll(string(fx.fakes[tc.provider].Last().Raw), " ", "")
			for _, s := range tc.inSecond {
				if !strings.Contains(sent, s) {
					t.Errorf("%s's second request lacks %s: %s", tc.provider, s, sent)
				}
			}
		})
	}
}

// Ensure a streamed function call is an output item with its arguments in
// function_call_arguments deltas, done, and whole in response.completed.
func TestV1Responses_StreamToolCall(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.Events(
		`{"id":"c","choices":[{"delta":{"role":"assistant","content":"Hm"}}]}`,
		`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`,
		`{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}}]}`,
		`{"id":"c","choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
		`[DONE]`))
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"Weather?","stream":true,"tools":[`+respWeatherTool+`]}`, tok)
	evs := respEvents(t, rec.Body.String())
	var names []string
	var args strings.Builder
	for _, e := range evs {
		names = append(names, e.name)
		if e.name == "response.function_call_arguments.delta" {
			args.WriteString(e.data["delta"].(string))
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("events (-want +got):\n%s\n%s", diff, rec.Body)
	}
	final := decodeJSON[struct{ Response gateway.Response }](t, []byte(evs[len(evs)-1].raw)).Response
	if args.String() != `{"city":"x"}` || len(final.Output) != 2 || final.Output[1].Arguments != `{"city":"x"}` ||
		final.Output[1].CallID != "call_a" || final.Output[1].Name != "get_weather" || final.Output[0].Content[0].Text != "Hm" {
		t.Errorf("args %q final %s", args.String(), evs[len(evs)-1].raw)
	}
	if done := evs[11].data; done["arguments"] != `{"city":"x"}` || done["item_id"] != final.Output[1].ID || done["output_index"] != float64(1) {
		t.Errorf("arguments.done %s", evs[11].raw)
	}
}

// Ensure text.format json_schema reaches every provider as chat's response_format does
// (OpenAI's json_schema, Anthropic's forced tool, Gemini's responseJsonSchema) and the JSON
// comes back as the output text.
func TestV1Responses_JSONSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider string
		answer   aitest.Responder
		sent     string
	}{
		{"openai", aitest.OK(`{"name":"Ada"}`), `"response_format":{"json_schema":{"name":"person","schema":{"properties":{"name":{"type":"string"}},"type":"object"},"strict":true},"type":"json_schema"}`},
		{"anthropic", aitest.JSON(200, json.RawMessage(`{"id":"m","type":"message","content":[{"type":"tool_use","id":"t","name":"person","input":{"name":"Ada"}}],
			"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":7}}`)), `"tool_choice":{"name":"person","type":"tool"}`},
		{"gemini", aitest.OK(`{"name":"Ada"}`), `"responseJsonSchema":{"properties":{"name":{"type":"string"}},"type":"object"}`},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			fx := newGWFixture(t, Options{}, tc.answer)
			_, tok := fx.user(t)
			rec := do(fx.h, "POST", "/v1/responses", `{"model":"`+respModels[tc.provider]+`","input":"Invent a person",
				"text":{"format":{"type":"json_schema","name":"person","schema":{"type":"object","properties":{"name":{"type":"string"}}},"strict":true}}}`, tok)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			r := decodeJSON[gateway.Response](t, rec.Body.Bytes())
			var v map[string]any
			if err := json.Unmarshal([]byte(outputText(r)), &v); err != nil || v["name"] != "Ada" || r.Status != "completed" {
				t.Errorf("answer %s", rec.Body)
			}
			if !strings.Contains(rec.Body.String(), `"text":{"format":{"type":"json_schema"`) {
				t.Errorf("text.format not echoed: %s", rec.Body)
			}
			var sent any
			_ = json.Unmarshal([]byte(fx.fakes[tc.provider].Last().Raw), &sent)
			norm, _ := json.Marshal(sent) // keys sorted
			if !strings.Contains(string(norm), tc.sent) {
				t.Errorf("%s received %s", tc.provider, norm)
			}
		})
	}
}

// Ensure a provider that stopped at the output cap makes an incomplete Response with
// incomplete_details.reason max_output_tokens, answered and streamed, on every provider.
func TestV1Responses_Incomplete(t *testing.T) {
	t.Parallel()
	openai := aitest.OpenAIAnswer("gpt-4o-mini", "Hello fr", 5, 3, 0)
	openai["choices"].([]any)[0].(map[string]any)["finish_reason"] = "length"
	anthropic := aitest.AnthropicAnswer("claude-haiku-4-5", "Hello fr", 5, 3, 0, 0)
	anthropic["stop_reason"] = "max_tokens"
	gemini := aitest.GeminiAnswer("gemini-2.5-flash", "Hello fr", 5, 3, 0, 0)
	gemini["candidates"].([]any)[0].(map[string]any)["finishReason"] = "MAX_TOKENS"
	for p, answer := range map[string]map[string]any{"openai": openai, "anthropic": anthropic, "gemini": gemini} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			fx := newGWFixture(t, Options{}, aitest.JSON(200, answer))
			_, tok := fx.user(t)
			rec := do(fx.h, "POST", "/v1/responses", `{"model":"`+respModels[p]+`","input":"hi","max_output_tokens":3}`, tok)
			r := decodeJSON[gateway.Response](t, rec.Body.Bytes())
			if rec.Code != 200 || r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" ||
				outputText(r) != "Hello fr" || r.Output[0].Status != "incomplete" {
				t.Errorf("%d %s", rec.Code, rec.Body)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		fx := newGWFixture(t, Options{}, aitest.Events(
			`{"id":"c","choices":[{"delta":{"role":"assistant","content":"Hel"}}]}`,
			`{"id":"c","choices":[{"delta":{},"finish_reason":"length"}]}`,
			`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, `[DONE]`))
		_, tok := fx.user(t)
		rec := do(fx.h, "POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"hi","max_output_tokens":3,"stream":true}`, tok)
		evs := respEvents(t, rec.Body.String())
		last := evs[len(evs)-1]
		r := decodeJSON[struct{ Response gateway.Response }](t, []byte(last.raw)).Response
		if last.name != "response.incomplete" || r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" {
			t.Errorf("last event %s", last.raw)
		}
	})
}

// Ensure a provider failing after the stream started ends it with OpenAI's error event and
// response.failed, the Response's error set.
func TestV1Responses_StreamFailure(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.Stream(aitest.StreamOptions{FailAfter: 2}))
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"hi","stream":true}`, tok)
	evs := respEvents(t, rec.Body.String())
	if rec.Code != 200 || len(evs) < 3 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	errEv, failed := evs[len(evs)-2], evs[len(evs)-1]
	r := decodeJSON[struct{ Response gateway.Response }](t, []byte(failed.raw)).Response
	if errEv.name != "error" || errEv.data["code"] != "server_error" || errEv.data["message"] == "" ||
		failed.name != "response.failed" || r.Status != "failed" || r.Error == nil || r.Error.Code != "server_error" || r.Error.Message == "" {
		t.Errorf("end of stream:\n%s\n%s", errEv.raw, failed.raw)
	}
	for i, e := range evs {
		if e.data["sequence_number"] != float64(i) {
			t.Errorf("event %d numbered %v", i, e.data["sequence_number"])
		}
	}
}

// Ensure what /v1/responses cannot honour is refused in OpenAI's error format, naming the
// parameter, and a spent budget is chat's 429 insufficient_quota; nothing reaches a provider.
func TestV1Responses_Refusals(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	spentTok := fx.spentUser(t)
	ok := `"model":"openai/gpt-4o-mini","input":"hi"`
	for _, tc := range []struct {
		name, body, token        string
		status                   int
		typ, code, param, inText string
	}{
		{"previous_response_id", `{` + ok + `,"previous_response_id":"resp_123"}`, tok, 400, "invalid_request_error", "unsupported_parameter", "previous_response_id", "no conversation state"},
		{"web_search tool", `{` + ok + `,"tools":[{"type":"web_search"}]}`, tok, 400, "invalid_request_error", "unsupported_parameter", "tools[0].type", "web_search"},
		{"tool without a name", `{` + ok + `,"tools":[{"type":"function"}]}`, tok, 400, "invalid_request_error", "", "tools[0].name", "tools[0].name"},
		{"tool name outside the rule", `{` + ok + `,"tools":[{"type":"function","name":"a b"}]}`, tok, 400, "invalid_request_error", "invalid_value", "tools[0].name", "64 letters"},
		{"tool declared twice", `{` + ok + `,"tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`, tok, 400, "invalid_request_error", "invalid_value", "tools[1].name", "declared twice"},
		{"unknown parameter", `{` + ok + `,"reasoning":{"effort":"low"}}`, tok, 400, "invalid_request_error", "unsupported_parameter", "reasoning", ""},
		{"unknown input item", `{"model":"openai/gpt-4o-mini","input":[{"type":"item_reference","id":"x"}]}`, tok, 400, "invalid_request_error", "unsupported_parameter", "input[0].type", ""},
		{"no input", `{"model":"openai/gpt-4o-mini"}`, tok, 400, "invalid_request_error", "", "input", ""},
		{"unknown text format", `{` + ok + `,"text":{"format":{"type":"xml"}}}`, tok, 400, "invalid_request_error", "invalid_value", "text.format.type", ""},
		{"max_output_tokens", `{` + ok + `,"max_output_tokens":0}`, tok, 400, "invalid_request_error", "invalid_value", "max_output_tokens", ""},
		// The AI service's rule, named as this request names it: instructions are message 0.
		{"empty content", `{"model":"openai/gpt-4o-mini","instructions":"Be brief.","input":[{"role":"user","content":"hi"},{"role":"user","content":""}]}`, tok, 400, "invalid_request_error", "", "input[1].content", ""},
		// The AI service's refusal of a function call or its output names the item it came
		// from, in this request's terms: consecutive calls are one assistant message there.
		{"second call's arguments", `{"model":"anthropic/claude-haiku-4-5","input":[{"role":"user","content":"hi"},
			{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"f","arguments":"[1]"},
			{"type":"function_call_output","call_id":"c1","output":"a"},{"type":"function_call_output","call_id":"c2","output":"b"}]}`,
			tok, 400, "invalid_request_error", "", "input[2].arguments", "input[2].arguments"},
		{"call after a message", `{"model":"anthropic/claude-haiku-4-5","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"Let me look."},
			{"type":"function_call","call_id":"c1","name":"f","arguments":"[1]"},{"type":"function_call_output","call_id":"c1","output":"a"}]}`,
			tok, 400, "invalid_request_error", "", "input[2].arguments", ""},
		{"output without its call", `{"model":"openai/gpt-4o-mini","input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"nope","output":"a"}]}`,
			tok, 400, "invalid_request_error", "", "input[1].call_id", "input[1].call_id"},
		// A field of the wrong type is named, not its item.
		{"arguments an object", `{"model":"openai/gpt-4o-mini","input":[{"type":"function_call","call_id":"c1","name":"f","arguments":{"city":"Paris"}}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "input[0].arguments", "expected a string"},
		{"role a number", `{"model":"openai/gpt-4o-mini","input":[{"role":5,"content":"hi"}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "input[0].role", ""},
		{"item type a number", `{"model":"openai/gpt-4o-mini","input":[{"type":5,"role":"user","content":"hi"}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "input[0].type", ""},
		{"output's call_id a number", `{"model":"openai/gpt-4o-mini","input":[{"type":"function_call_output","call_id":1,"output":"a"}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "input[0].call_id", ""},
		{"tool description a number", `{` + ok + `,"tools":[{"type":"function","name":"f","description":5}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "tools[0].description", ""},
		{"tool strict a string", `{` + ok + `,"tools":[{"type":"function","name":"f","strict":"yes"}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "tools[0].strict", ""},
		{"tool name a number", `{` + ok + `,"tools":[{"type":"function","name":5}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "tools[0].name", ""},
		{"image detail a number", `{"model":"openai/gpt-4o-mini","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png","detail":5}]}]}`,
			tok, 400, "invalid_request_error", "invalid_type", "input[0].content[0].detail", ""},
		// A provider's rule about tools or the JSON output names them as this request does.
		{"JSON schema beside tools on anthropic", `{"model":"anthropic/claude-haiku-4-5","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],
			"text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"}}}}`, tok, 400, "invalid_request_error", "", "text.format", "text.format cannot"},
		{"array schema on anthropic", `{"model":"anthropic/claude-haiku-4-5","input":"hi","text":{"format":{"type":"json_schema","name":"p","schema":{"type":"array"}}}}`,
			tok, 400, "invalid_request_error", "", "text.format.schema", "text.format.schema must"},
		{"string parameters on anthropic", `{"model":"anthropic/claude-haiku-4-5","input":"hi","tools":[{"type":"function","name":"f"},{"type":"function","name":"g","parameters":{"type":"string"}}]}`,
			tok, 400, "invalid_request_error", "", "tools[1].parameters", "tools[1].parameters must"},
		// A tool call cannot be required without a tool to call; auto and none stay harmless.
		{"required without tools", `{` + ok + `,"tool_choice":"required"}`, tok, 400, "invalid_request_error", "invalid_value", "tool_choice", "tools"},
		{"required with empty tools", `{` + ok + `,"tools":[],"tool_choice":"required"}`, tok, 400, "invalid_request_error", "invalid_value", "tool_choice", "tools"},
		{"temperature past the provider's", `{"model":"anthropic/claude-haiku-4-5","input":"hi","temperature":1.5}`, tok, 400, "invalid_request_error", "", "temperature", ""},
		{"malformed JSON", `{"model":`, tok, 400, "invalid_request_error", "", "", ""},
		{"no token", `{` + ok + `}`, "", 401, "invalid_request_error", "invalid_api_key", "", ""},
		{"spent budget", `{` + ok + `}`, spentTok, 429, "insufficient_quota", "insufficient_quota", "", "Monthly AI budget"},
		{"spent budget, streamed", `{` + ok + `,"stream":true}`, spentTok, 429, "insufficient_quota", "insufficient_quota", "", "Monthly AI budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(fx.h, "POST", "/v1/responses", tc.body, tc.token)
			e := openAIErr(t, rec, rec.Body.Bytes())
			param := ""
			if e.Param != nil {
				param = *e.Param
			}
			if rec.Code != tc.status || e.Type != tc.typ || code(e) != tc.code || param != tc.param || !strings.Contains(e.Message, tc.inText) {
				t.Errorf("%d %s", rec.Code, rec.Body)
			}
			if tc.code == "insufficient_quota" && rec.Header().Get("X-Should-Retry") != "false" {
				t.Errorf("a spent budget lets the SDKs retry")
			}
		})
	}
	// The same spent budget on chat completions answers the same error.
	chat := do(fx.h, "POST", "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, spentTok)
	resp := do(fx.h, "POST", "/v1/responses", `{`+ok+`}`, spentTok)
	if chat.Code != resp.Code || chat.Body.String() != resp.Body.String() {
		t.Errorf("chat answers %d %s, responses %d %s", chat.Code, chat.Body, resp.Code, resp.Body)
	}
	for p, f := range fx.fakes {
		if n := len(f.Calls()); n != 0 {
			t.Errorf("%s received %d requests", p, n)
		}
	}
}

// Ensure the input forms reach the provider as a conversation: developer and system roles
// as system, an image part as chat's image_url, assistant output_text parts as its text.
func TestV1Responses_InputItems(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{})
	_, tok := fx.user(t)
	body := `{"model":"openai/gpt-4o-mini","instructions":"Be brief.","input":[
		{"role":"developer","content":"Answer in French."},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"What is this?"},{"type":"input_image","image_url":"https://example.com/cat.png","detail":"low"}]},
		{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"A cat.","annotations":[]}]},
		{"role":"user","content":"Sure?"}]}`
	rec := do(fx.h, "POST", "/v1/responses", body, tok)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var want []any
	_ = json.Unmarshal([]byte(`[{"role":"system","content":"Be brief."},{"role":"system","content":"Answer in French."},
		{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"low"}}]},
		{"role":"assistant","content":"A cat."},{"role":"user","content":"Sure?"}]`), &want)
	if diff := cmp.Diff(want, fx.fakes["openai"].Last().Body["messages"]); diff != "" {
		t.Errorf("openai received (-want +got):\n%s", diff)
	}
	if got := fmt.Sprint(decodeJSON[map[string]any](t, rec.Body.Bytes())["instructions"]); got != "Be brief." {
		t.Errorf("instructions echoed as %q", got)
	}
}

// Ensure OpenAI's refusal reaches a /v1/responses client as OpenAI's Responses API answers
// it: a refusal part of the message (no output_text), and refusal deltas when streamed.
func TestV1Responses_Refusal(t *testing.T) {
	t.Parallel()
	const answer = `{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"stop",
		"message":{"role":"assistant","content":null,"refusal":"I cannot help."}}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`
	fx := newGWFixture(t, Options{}, aitest.JSON(200, answer), aitest.Events(
		`{"id":"c","choices":[{"delta":{"role":"assistant","refusal":"I cannot"}}]}`,
		`{"id":"c","choices":[{"delta":{"refusal":" help."}}]}`,
		`{"id":"c","choices":[{"delta":{},"finish_reason":"stop"}]}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, `[DONE]`))
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"x"}`, tok)
	r := decodeJSON[gateway.Response](t, rec.Body.Bytes())
	if rec.Code != 200 || len(r.Output) != 1 || len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Type != "refusal" ||
		r.Output[0].Content[0].Refusal != "I cannot help." || !strings.Contains(rec.Body.String(), `"content":[{"type":"refusal","refusal":"I cannot help."}]`) {
		t.Errorf("answer %d %s", rec.Code, rec.Body)
	}
	rec = do(fx.h, "POST", "/v1/responses", `{"model":"openai/gpt-4o-mini","input":"x","stream":true}`, tok)
	var deltas []string
	done := ""
	for _, e := range respEvents(t, rec.Body.String()) {
		switch e.name {
		case "response.refusal.delta":
			deltas = append(deltas, e.data["delta"].(string))
		case "response.refusal.done":
			done = e.data["refusal"].(string)
		}
	}
	if fmt.Sprint(deltas) != "[I cannot  help.]" || done != "I cannot help." {
		t.Errorf("stream: deltas %q done %q\n%s", deltas, done, rec.Body)
	}
}

// Ensure a streamed call whose provider sent no argument fragments (Anthropic's tool_use of
// a tool without parameters: no input_json_delta but an empty one) ends with the arguments
// the answer without streaming has, "{}": the deltas add up to them and the done events and
// the final response carry them, so that the SDKs' JSON.parse(arguments) works.
func TestV1Responses_StreamCallWithoutArguments(t *testing.T) {
	t.Parallel()
	fx := newGWFixture(t, Options{}, aitest.Events(`message_start|{"type":"message_start","message":{"id":"m","usage":{"input_tokens":5}}}`,
		`content_block_start|{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"now","input":{}}}`,
		`content_block_delta|{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`content_block_stop|{"type":"content_block_stop","index":0}`,
		`message_delta|{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`,
		`message_stop|{"type":"message_stop"}`))
	_, tok := fx.user(t)
	rec := do(fx.h, "POST", "/v1/responses", `{"model":"anthropic/claude-haiku-4-5","input":"Time?","stream":true,"tools":[{"type":"function","name":"now"}]}`, tok)
	evs := respEvents(t, rec.Body.String())
	var deltas strings.Builder
	var done map[string]any
	for _, e := range evs {
		switch e.name {
		case "response.function_call_arguments.delta":
			deltas.WriteString(e.data["delta"].(string))
		case "response.function_call_arguments.done":
			done = e.data
		}
	}
	final := decodeJSON[struct{ Response gateway.Response }](t, []byte(evs[len(evs)-1].raw)).Response
	if deltas.String() != "{}" || done == nil || done["arguments"] != "{}" || len(final.Output) != 1 || final.Output[0].Arguments != "{}" {
		t.Errorf("deltas %q, done %v, final %s", deltas.String(), done, evs[len(evs)-1].raw)
	}
}
