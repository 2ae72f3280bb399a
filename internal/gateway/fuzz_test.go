package gateway

import (
	"log/slog"
	"testing"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
)

// FuzzParse holds both request decoders to their contract on any body: no panic, and a body
// they refuse is an Invalid (or TooLarge) *apperr.Error, never another failure.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"anthropic/claude-haiku-4-5","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"model":"gemini/x","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{}}}}`,
		`{"model":"openai/gpt-4o-mini","max_tokens":5,"system":"s","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`,
		`{}`, `null`, `[]`,
	} {
		f.Add(s)
	}
	prices, err := ai.LoadPrices("", slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	s := New(Options{Prices: prices, Providers: map[string]string{"openai": "gpt-4o-mini"}, MaxImageBytes: 64})
	f.Fuzz(func(t *testing.T, body string) {
		for name, parse := range map[string]func([]byte) (*Request, error){"chat": s.Parse, "messages": s.ParseMessages} {
			req, err := parse([]byte(body))
			if err != nil {
				if k := apperr.KindOf(err); k != apperr.Invalid && k != apperr.TooLarge {
					t.Fatalf("%s: %q refused with %v (kind %d)", name, body, err, k)
				}
				continue
			}
			if req.Provider == "" || req.Input.Model == "" {
				t.Fatalf("%s: %q accepted without a provider and model: %+v", name, body, req)
			}
		}
	})
}
