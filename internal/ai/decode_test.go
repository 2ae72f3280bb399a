package ai

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Golden answers of the typed decoders: what each provider's answer (well-formed or not)
// reads as, or the malformed-answer message it gives.
func TestParseGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, provider, body string
		want                 result
		wantErr              string
	}{
		{"OpenAIFull", "openai", `{"id":"chatcmpl-1","model":"gpt-4o-mini-2024-07-18","choices":[{"message":{"role":"assistant","content":"Hi \u00e9\u2028 \"x\""},"finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":4}}}`,
			result{text: "Hi \u00e9\u2028 \"x\"", model: "gpt-4o-mini-2024-07-18", promptTokens: 12, completionTokens: 9, cacheReadTokens: 3, reasoningTokens: 4, finishReason: "length", providerRequestID: "chatcmpl-1"}, ""},
		{"OpenAINullContent", "openai", `{"choices":[{"message":{"content":null},"finish_reason":null}]}`, result{}, ""},
		{"OpenAIFunctionCall", "openai", `{"choices":[{"message":{},"finish_reason":"function_call"}]}`, result{finishReason: "tool_calls"}, ""},
		{"OpenAIEscapedName", "openai", `{"i\u0064":"x","choices":[{}]}`, result{providerRequestID: "x"}, ""},
		{"OpenAIDuplicateLastWins", "openai", `{"id":"x","id":"y","choices":[{}]}`, result{providerRequestID: "y"}, ""},
		{"OpenAIInvalidUTF8", "openai", "{\"choices\":[{\"message\":{\"content\":\"caf\xe9\"}}]}", result{text: "caf\uFFFD"}, ""},
		{"OpenAINoChoices", "openai", `{"id":"x","choices":[],"usage":{}}`, result{}, "no choices"},
		{"OpenAIChoicesNull", "openai", `{"choices":null}`, result{}, "no choices"},
		{"OpenAIModelNotString", "openai", `{"model":5,"choices":[{}]}`, result{}, "unreadable model"},
		{"OpenAIFloatCount", "openai", `{"choices":[{}],"usage":{"prompt_tokens":1.0}}`, result{}, "unreadable usage.prompt_tokens"},
		{"OpenAIExponentCount", "openai", `{"choices":[{}],"usage":{"prompt_tokens":1e2}}`, result{}, "unreadable usage.prompt_tokens"},
		{"OpenAIMinusZero", "openai", `{"choices":[{}],"usage":{"prompt_tokens":-0}}`, result{}, ""},
		{"OpenAIOverflow", "openai", `{"choices":[{}],"usage":{"prompt_tokens":9223372036854775808}}`, result{}, "unreadable usage.prompt_tokens"},
		{"OpenAIMinInt64", "openai", `{"choices":[{}],"usage":{"prompt_tokens":-9223372036854775808}}`, result{}, "impossible token count"},
		{"OpenAILeadingZero", "openai", `{"choices":[{}],"usage":{"prompt_tokens":01}}`, result{}, "not valid JSON"},
		{"OpenAITrailingData", "openai", `{"choices":[{}]} x`, result{}, "not valid JSON"},
		{"OpenAITrailingComma", "openai", `{"choices":[{}],}`, result{}, "not valid JSON"},
		{"OpenAIBadEscape", "openai", `{"x":"\q","choices":[{}]}`, result{}, "not valid JSON"},
		{"OpenAIControlChar", "openai", "{\"x\":\"\x01\",\"choices\":[{}]}", result{}, "not valid JSON"},
		{"OpenAINotObject", "openai", `[]`, result{}, "not a JSON object"},
		{"OpenAINull", "openai", `null`, result{}, "no choices"},
		{"AnthropicTextBlocksJoined", "anthropic", `{"id":"msg_1","type":"message","model":"claude-haiku-4-5","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"a"},{"type":"tool_use","id":"t"},{"type":"text","text":"b"}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":7,"cache_creation_input_tokens":8}}`,
			result{text: "ab", toolCalls: []ToolCall{{ID: "t", Arguments: "{}"}}, model: "claude-haiku-4-5", promptTokens: 20, completionTokens: 6, cacheReadTokens: 7, cacheWriteTokens: 8, finishReason: "tool_calls", providerRequestID: "msg_1"}, ""},
		{"OpenAIToolCalls", "openai", `{"id":"c","choices":[{"message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			result{toolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}, {ID: "call_2", Name: "g", Arguments: "{}"}}, finishReason: "tool_calls", providerRequestID: "c"}, ""},
		{"AnthropicToolUse", "anthropic", `{"id":"m","content":[{"type":"text","text":"Let me see."},{"type":"tool_use","id":"toolu_1","name":"f","input":{"city":"x"}}],"stop_reason":"tool_use"}`,
			result{text: "Let me see.", toolCalls: []ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"city":"x"}`}}, finishReason: "tool_calls", providerRequestID: "m"}, ""},
		{"GeminiFunctionCalls", "gemini", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"functionCall":{"name":"g"}}]},"finishReason":"STOP"}]}`,
			result{toolCalls: []ToolCall{{Name: "f", Arguments: `{"a":1}`}, {Name: "g", Arguments: "{}"}}, finishReason: "tool_calls"}, ""},
		{"GeminiFunctionCallArgsNotObject", "gemini", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":[1]}}]}}]}`, result{}, "not an object"},
		{"AnthropicErrorObject", "anthropic", `{"type":"error","error":{"type":"api_error","message":"x"}}`, result{}, "error object"},
		{"AnthropicTruncated", "anthropic", `{"id":"msg_1","content":[{"type":"te`, result{}, "not valid JSON"},
		{"GeminiThoughtsSkipped", "gemini", `{"candidates":[{"content":{"parts":[{"text":"a","thought":true},{"text":"b"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"thoughtsTokenCount":3,"toolUsePromptTokenCount":4,"cachedContentTokenCount":1},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`,
			result{text: "b", model: "gemini-2.5-flash", promptTokens: 5, completionTokens: 5, cacheReadTokens: 1, reasoningTokens: 3, finishReason: "length", providerRequestID: "r1"}, ""},
		{"GeminiSafety", "gemini", `{"candidates":[{"content":{"parts":[]},"finishReason":"SAFETY"}]}`, result{finishReason: "content_filter"}, ""},
		{"GeminiBlocked", "gemini", `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":null}`, result{}, "blocked: SAFETY"},
		{"GeminiSurrogate", "gemini", `{"candidates":[{"content":{"parts":[{"text":"\ud83d\ude00\ud800"}]}}]}`, result{text: "\U0001F600\uFFFD"}, ""},
		{"GeminiThoughtNotBool", "gemini", `{"candidates":[{"content":{"parts":[{"text":"a","thought":"yes"}]}}]}`, result{}, "unreadable candidates.content.parts.thought"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := providers[tt.provider].provider.parse(&call{}, http.Header{}, []byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(describe(asUpstream(err)), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// Golden streams: each provider's events read as deltas, an end, and the usage so far.
func TestStreamDecodersGolden(t *testing.T) {
	t.Parallel()
	type ev struct{ name, data string }
	tests := []struct {
		name, provider string
		events         []ev
		wantDeltas     string
		wantEnd        bool
		want           result
		wantErr        string
	}{
		{"OpenAIWithUsage", "openai", []ev{
			{"", `{"id":"c1","model":"m-1","choices":[{"delta":{"role":"assistant","content":""}}],"usage":null}`},
			{"", `{"id":"c1","choices":[{"delta":{"content":"He"}}]}`},
			{"", `{"id":"c1","choices":[{"delta":{"content":"llo"},"finish_reason":"stop"}]}`},
			{"", `{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`},
			{"", `[DONE]`}}, "He|llo", true,
			result{text: "Hello", model: "m-1", promptTokens: 3, completionTokens: 2, finishReason: "stop", providerRequestID: "c1"}, ""},
		{"OpenAIErrorMidStream", "openai", []ev{{"", `{"choices":[{"delta":{"content":"a"}}]}`}, {"", `{"error":{"message":"boom","type":"server_error"}}`}},
			"a", false, result{}, "boom"},
		{"AnthropicEvents", "anthropic", []ev{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":5,"cache_read_input_tokens":2,"output_tokens":1}}}`},
			{"ping", `{"type":"ping"}`},
			{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hmm"}}`},
			{"content_block_delta", `{"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}`},
			{"message_stop", `{"type":"message_stop"}`}}, "Hi", true,
			result{text: "Hi", model: "claude", promptTokens: 7, completionTokens: 9, cacheReadTokens: 2, finishReason: "length", providerRequestID: "msg_1"}, ""},
		{"AnthropicHugeDelta", "anthropic", []ev{{"message_delta", `{"type":"message_delta","usage":{"output_tokens":1000000001}}`}},
			"", false, result{}, "impossible token count"},
		{"AnthropicError", "anthropic", []ev{{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}},
			"", false, result{}, "overloaded_error: Overloaded"},
		{"GeminiChunks", "gemini", []ev{
			{"", `{"candidates":[{"content":{"parts":[{"text":"think","thought":true},{"text":"A"}]}}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":1},"modelVersion":"g","responseId":"r"}`},
			{"", `{"candidates":[{"content":{"parts":[{"text":"B"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2,"thoughtsTokenCount":1}}`}}, "A|B", false,
			result{text: "AB", model: "g", promptTokens: 4, completionTokens: 3, reasoningTokens: 1, finishReason: "stop", providerRequestID: "r"}, ""},
		{"OpenAIToolCallPieces", "openai", []ev{
			{"", `{"id":"c","choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`},
			{"", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]}`},
			{"", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}},{"index":1,"id":"call_2","function":{"name":"g","arguments":"{}"}}]}}]}`},
			{"", `{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`},
			{"", `[DONE]`}}, `#0:call_1:f:|#0:::{"a"|#0::::1}|#1:call_2:g:{}`, true,
			result{toolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}, {ID: "call_2", Name: "g", Arguments: "{}"}}, finishReason: "tool_calls", providerRequestID: "c"}, ""},
		{"OpenAIToolCallIndexOutOfBounds", "openai", []ev{{"", `{"choices":[{"delta":{"tool_calls":[{"index":100000,"function":{"arguments":"x"}}]}}]}`}},
			"", false, result{}, "tool call numbered 100000"},
		{"AnthropicToolUse", "anthropic", []ev{
			{"message_start", `{"type":"message_start","message":{"id":"m","model":"claude","usage":{"input_tokens":5,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hm."}}`},
			{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":":1}"}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":1}`},
			{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"g","input":{}}}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`},
			{"message_stop", `{"type":"message_stop"}`}}, `Hm.|#0:toolu_1:f:|#0:::{"a"|#0::::1}|#1:toolu_2:g:`, true,
			result{text: "Hm.", toolCalls: []ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"a":1}`}, {ID: "toolu_2", Name: "g", Arguments: "{}"}},
				model: "claude", promptTokens: 5, completionTokens: 9, finishReason: "tool_calls", providerRequestID: "m"}, ""},
		{"AnthropicInputForNoTool", "anthropic", []ev{{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}}`}},
			"", false, result{}, "no tool call"},
		{"GeminiFunctionCalls", "gemini", []ev{
			{"", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"functionCall":{"id":"x","name":"g","args":{}}}]},"finishReason":"STOP"}]}`}},
			`#0::f:{"a":1}|#1:x:g:{}`, false, result{toolCalls: []ToolCall{{Name: "f", Arguments: `{"a":1}`}, {ID: "x", Name: "g", Arguments: "{}"}}, finishReason: "tool_calls"}, ""},
		{"GeminiNegative", "gemini", []ev{{"", `{"usageMetadata":{"promptTokenCount":-5}}`}}, "", false, result{}, "impossible token count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dec := providers[tt.provider].provider.newStream(&call{}, http.Header{})
			var deltas []string
			end := false
			var err error
			for _, e := range tt.events {
				var ds []Delta
				if ds, end, err = dec.event(e.name, []byte(e.data), nil); err != nil {
					break
				}
				for _, d := range ds {
					if tc := d.ToolCall; tc != nil {
						deltas = append(deltas, fmt.Sprintf("#%d:%s:%s:%s", tc.Index, tc.ID, tc.Name, tc.Arguments))
					} else {
						deltas = append(deltas, d.Text)
					}
				}
			}
			if strings.Join(deltas, "|") != tt.wantDeltas {
				t.Errorf("deltas %q, want %q", deltas, tt.wantDeltas)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if end != tt.wantEnd || !reflect.DeepEqual(*dec.result(), tt.want) {
				t.Errorf("end %v, got %+v\nwant %+v", end, *dec.result(), tt.want)
			}
		})
	}
}

// FuzzParse holds the decoders to their contract on any input: no panic, and an answer they
// accept has counts within bounds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":1}}`,
		`{"content":[{"type":"text","text":"a"}],"usage":{"input_tokens":1}}`,
		`{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"promptTokenCount":1}}`, `{}`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, ep := range providers {
			res, err := ep.provider.parse(&call{}, http.Header{}, []byte(body))
			if err != nil {
				continue
			}
			for _, n := range []int64{res.promptTokens, res.completionTokens, res.cacheReadTokens, res.cacheWriteTokens} {
				if n < 0 || n > 4*maxTokensPerCall {
					t.Fatalf("%s accepted a count of %d from %q", ep.spec.name, n, body)
				}
			}
		}
	})
}

// Ensure a hostile stream (any bytes as a provider's event stream) never panics a decoder,
// never yields a token count out of bounds, and never a tool call index past maxToolCalls.
func FuzzStream(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"},{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]}}],\"usageMetadata\":{\"promptTokenCount\":1}}\n\n",
		"data: {}\n\n", "data: null\n\n", ": comment\n\n", "data: [DONE]\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, ep := range providers {
			dec := ep.provider.newStream(&call{}, http.Header{})
			events := newSSEReader(strings.NewReader(body))
			var deltas []Delta
			for range 10_000 {
				name, data, err := events.next()
				if err != nil {
					break
				}
				var end bool
				deltas, end, err = dec.event(name, data, deltas[:0])
				if err != nil || end {
					break
				}
				for _, d := range deltas {
					if d.ToolCall != nil && (d.ToolCall.Index < 0 || d.ToolCall.Index >= maxToolCalls) {
						t.Fatalf("%s: tool call index %d from %q", ep.spec.name, d.ToolCall.Index, body)
					}
				}
			}
			res := dec.result()
			for _, n := range []int64{res.promptTokens, res.completionTokens, res.cacheReadTokens, res.cacheWriteTokens} {
				if n < 0 || n > 4*maxTokensPerCall {
					t.Fatalf("%s: a count of %d from %q", ep.spec.name, n, body)
				}
			}
			if len(res.toolCalls) > maxToolCalls {
				t.Fatalf("%s: %d tool calls from %q", ep.spec.name, len(res.toolCalls), body)
			}
		}
	})
}

// Ensure a hostile embeddings answer never panics a decoder: it is refused, or it gives one
// vector per input, all of one length, with a count in bounds.
func FuzzEmbeddings(f *testing.F) {
	f.Add(`{"data":[{"index":0,"embedding":[0.1,0.2]},{"index":1,"embedding":[0.3,0.4]}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}`)
	f.Add(`{"data":[{"embedding":"AAAAAAAAgD8="},{"embedding":"AACAPwAAAAA="}]}`)
	f.Add(`{"embeddings":[{"values":[0.1,0.2]},{"values":[0.3,0.4]}]}`)
	f.Add(`{"embedding":{"values":[1]}}`)
	f.Add(`{"data":[{"index":1,"embedding":[1]},{"index":1,"embedding":[1]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		for name, em := range embedders {
			for _, in := range []*EmbedInput{{Texts: []string{"a", "b"}}, {Texts: []string{"a"}, Single: true}, {Texts: []string{"a", "b"}, EncodingFormat: "base64"}} {
				ec := &embedCall{em: em, in: in, part: *in}
				res, err := ec.parse(nil, http.Header{}, []byte(body))
				if err != nil {
					continue
				}
				vectors := ec.batchVectors
				if len(vectors) != in.inputs() {
					t.Fatalf("%s: %d vectors for %d inputs from %q", name, len(vectors), in.inputs(), body)
				}
				for _, v := range vectors {
					if v == nil || len(v) != len(vectors[0]) {
						t.Fatalf("%s: vectors of lengths differing or missing from %q", name, body)
					}
				}
				if res.promptTokens < 0 || res.promptTokens > 4*maxTokensPerCall {
					t.Fatalf("%s: a count of %d from %q", name, res.promptTokens, body)
				}
			}
		}
	})
}

// Ensure an embeddings answer whose vectors differ in length, within a batch or from an
// earlier batch's, is malformed (a 502), not passed on.
func TestEmbeddingsOfDifferentLengths(t *testing.T) {
	t.Parallel()
	in := &EmbedInput{Texts: []string{"a", "b"}}
	for _, tc := range []struct {
		name, body string
		earlier    [][]float32
		wantErr    bool
	}{
		{"one length", `{"data":[{"embedding":[1,2]},{"embedding":[3,4]}]}`, nil, false},
		{"two lengths", `{"data":[{"embedding":[1,2]},{"embedding":[3]}]}`, nil, true},
		{"an earlier batch's length", `{"data":[{"embedding":[1,2]},{"embedding":[3,4]}]}`, [][]float32{{1, 2, 3}}, true},
	} {
		ec := &embedCall{em: openAI{}, in: in, part: *in, vectors: tc.earlier}
		_, err := ec.parse(nil, http.Header{}, []byte(tc.body))
		if u, ok := err.(*upstreamError); tc.wantErr != (err != nil) || (err != nil && (!ok || !u.malformed)) {
			t.Errorf("%s: err %v, want malformed: %v", tc.name, err, tc.wantErr)
		}
	}
}
