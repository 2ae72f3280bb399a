package ai

import (
	"math"
	"slices"
	"testing"

	"github.com/acme/app/internal/apperr"
)

// Ensure any body sent to an /api AI route either is refused as Invalid or reads as a request
// every provider can be sent: at least one message, each of an accepted role and with
// content, a finite temperature in the endpoint's range, a token limit in range and a model
// name of the allowed form; and that nothing panics.
func FuzzChatInput(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini","temperature":0.7,"maxTokens":10,"stream":true}`,
		`{"messages":[{"role":"system","content":"x"},{"role":"assistant","content":""}]}`,
		`{"messages":[],"temperature":-1,"maxTokens":1.5}`, `{"messages":"x","model":5}`, `{}`, `null`, `[]`,
		`{"messages":[{"role":"user","content":["a"]}],"temperature":1e309}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var in ChatInput
		if err := in.UnmarshalJSON([]byte(body)); err != nil {
			return // not JSON: the handler answers a syntax error before the service sees it
		}
		for name, ep := range providers {
			err := in.validate(&ep.spec)
			if err != nil {
				if apperr.KindOf(err) != apperr.Invalid {
					t.Fatalf("%s: %q refused as %v, want Invalid", name, body, err)
				}
				continue
			}
			if len(in.Messages) == 0 {
				t.Fatalf("%s: %q accepted without messages", name, body)
			}
			for i, m := range in.Messages {
				if !slices.Contains(ep.spec.roles, m.Role) || m.Content == "" {
					t.Fatalf("%s: %q accepted with message %d %+v", name, body, i, m)
				}
			}
			if tp := in.Temperature; tp != nil && (math.IsNaN(*tp) || *tp < 0 || *tp > ep.spec.maxTemperature) {
				t.Fatalf("%s: %q accepted with temperature %v", name, body, *tp)
			}
			if n := in.MaxTokens; n != nil && (*n < 1 || *n > MaxTokensLimit) {
				t.Fatalf("%s: %q accepted with maxTokens %d", name, body, *n)
			}
			if in.Model != "" && !modelPattern.MatchString(in.Model) {
				t.Fatalf("%s: %q accepted with model %q", name, body, in.Model)
			}
		}
	})
}
