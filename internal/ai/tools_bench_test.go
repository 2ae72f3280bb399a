package ai

import (
	"net/http"
	"testing"
)

// BenchmarkToolCallVsPlain is a diagnostic of what a tool call adds to the provider's part of
// a call, in process (no network, no HTTP server, no store): reading OpenAI's whole answer, and
// a stream of 50 pieces, each as a text answer and as a tool call of the same content. The
// end-to-end figure (the shipped binary, every service on) is bench/tools_cpu.sh's.
func BenchmarkToolCallVsPlain(b *testing.B) {
	const (
		plain = `{"id":"c","choices":[{"message":{"role":"assistant","content":"Hello! The weather in Paris is mild, sunny and dry for three days."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}`
		tool  = `{"id":"c","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":3}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}`

		textChunk = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}`
		toolChunk = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"word "}}]},"finish_reason":null}]}`
		toolStart = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`
	)
	p := openAI{}
	for _, tc := range []struct{ name, body string }{{"whole/plain", plain}, {"whole/tool", tool}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.parse(&call{}, http.Header{}, []byte(tc.body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, tc := range []struct{ name, first, piece string }{{"stream50/plain", textChunk, textChunk}, {"stream50/tool", toolStart, toolChunk}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			first, piece := []byte(tc.first), []byte(tc.piece)
			var out []Delta
			for b.Loop() {
				dec := p.newStream(&call{}, http.Header{})
				var err error
				if out, _, err = dec.event("", first, out[:0]); err != nil {
					b.Fatal(err)
				}
				for range 50 {
					if out, _, err = dec.event("", piece, out[:0]); err != nil {
						b.Fatal(err)
					}
				}
				_ = dec.result()
			}
		})
	}
}
