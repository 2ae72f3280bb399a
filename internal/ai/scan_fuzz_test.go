package ai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/acme/app/internal/ai/aitest"
)

// answerSeeds are answers of every provider, well-formed and not, for the scan fuzz tests.
func answerSeeds(f *testing.F) {
	marshal := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return string(b)
	}
	for _, s := range []string{
		marshal(aitest.OpenAIAnswer("gpt-4o-mini-2024-07-18", "Hello! How can I help you today?", 12, 9, 3)),
		marshal(aitest.AnthropicAnswer("claude-haiku-4-5", "Hi \u00e9\u2028 \"there\"", 5, 6, 7, 8)),
		marshal(aitest.GeminiAnswer("gemini-3.1-flash-lite", "Hi\n<b>&", 5, 6, 7, 8)),
		`{"candidates":[{"content":{"parts":[{"text":"a","thought":true},{"text":"b"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`,
		`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":null}`,
		`{"id":"x","choices":[],"usage":{}}`, `{"choices":null}`, `{}`, `null`, `[]`, ` {"id" : "a\u0041\n"} `,
		`{"id":"x","id":"y"}`, `{"i\u0064":"x"}`, `{"model":5}`, `{"usage":{"prompt_tokens":1.0}}`,
		`{"usage":{"prompt_tokens":1e2}}`, `{"usage":{"prompt_tokens":-0}}`, `{"usage":{"prompt_tokens":9223372036854775808}}`,
		`{"usage":{"prompt_tokens":-9223372036854775808}}`, `{"usage":{"prompt_tokens":01}}`,
		`{"choices":[{"message":{"content":null},"finish_reason":null}]}`, `{"choices":[{"message":null}]}`,
		`{"content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"y"}],"type":"message"}`,
		`{"x":[1,-2.5e+3,true,false,null,{"y":"\ud83d\ude00"}],"id":"z"}`, `{"x":"\ud800"}`, `{"x":"\q"}`,
		"{\"id\":\"caf\xe9\"}", "{\"x\":\"caf\xe9\"}", `{"id":"a"} x`, `{"id":"a",}`, `{,}`, `{"a" 1}`, `{"a":[1,]}`,
		`{"a":tru}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, "{\"a\":\"\x01\"}",
	} {
		f.Add([]byte(s))
	}
}

// scanMatches fails t when scan accepts data but decodeAnswer reads it differently or not at all.
func scanMatches[T any](t *testing.T, data []byte, scan func(*T, []byte) bool, reset func(*T, []byte)) {
	var fast T
	if !scan(&fast, data) {
		return
	}
	var slow T
	reset(&slow, data)
	if err := decodeAnswer(data, &slow); err != nil {
		t.Fatalf("scanner accepted %q, which decodeAnswer refuses: %v", data, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nscanner      %+v\ndecodeAnswer %+v", data, fast, slow)
	}
}

func FuzzOpenAIScan(f *testing.F) {
	answerSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		scanMatches(t, data, (*openAIResponse).scan, func(r *openAIResponse, b []byte) { r.Usage.src = b })
	})
}

func FuzzAnthropicScan(f *testing.F) {
	answerSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		scanMatches(t, data, (*anthropicResponse).scan, func(r *anthropicResponse, b []byte) { r.Usage.src = b })
	})
}

func FuzzGeminiScan(f *testing.F) {
	answerSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		scanMatches(t, data, (*geminiResponse).scan, func(r *geminiResponse, b []byte) { r.UsageMetadata.src = b })
	})
}

// TestScanTakesProviderAnswers keeps the scanner from going dead: the providers' usual answers
// take it, and what it must leave to decodeAnswer does not.
func TestScanTakesProviderAnswers(t *testing.T) {
	t.Parallel()
	answer := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		scan func([]byte) bool
		body []byte
		want bool
	}{
		{"OpenAI", func(b []byte) bool { return new(openAIResponse).scan(b) }, answer(aitest.OpenAIAnswer("m", "hi", 1, 2, 0)), true},
		{"Anthropic", func(b []byte) bool { return new(anthropicResponse).scan(b) }, answer(aitest.AnthropicAnswer("m", "hi", 1, 2, 3, 4)), true},
		{"Gemini", func(b []byte) bool { return new(geminiResponse).scan(b) }, answer(aitest.GeminiAnswer("m", "hi", 1, 2, 3, 4)), true},
		{"DuplicateField", func(b []byte) bool { return new(openAIResponse).scan(b) }, []byte(`{"model":"a","model":"b"}`), false},
		{"FractionalTokens", func(b []byte) bool { return new(anthropicResponse).scan(b) }, []byte(`{"usage":{"input_tokens":1.5}}`), false},
		{"InvalidUTF8Kept", func(b []byte) bool { return new(geminiResponse).scan(b) }, []byte("{\"modelVersion\":\"\xff\"}"), false},
		{"TrailingData", func(b []byte) bool { return new(openAIResponse).scan(b) }, []byte(`{} {}`), false},
	}
	for _, tt := range tests {
		if got := tt.scan(tt.body); got != tt.want {
			t.Errorf("%s: scan(%s) = %v, want %v", tt.name, tt.body, got, tt.want)
		}
	}
}
