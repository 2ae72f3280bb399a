package ai

import (
	"reflect"
	"testing"
)

// FuzzChatInput holds the typed pass to the field-by-field decoder: whenever decodeTyped
// accepts a body, the result must be exactly what decodeFields makes of it, problems included.
func FuzzChatInput(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o","temperature":0.5,"maxTokens":10}`,
		`{"Messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"ROLE":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi","content":"again"}]}`,
		`{"messages":[{"role":"user","content":null}]}`,
		`{"messages":[{"role":1,"content":"hi"}]}`,
		`{"messages":[null]}`, `{"messages":[]}`, `{"messages":null}`, `{"messages":{}}`, `null`, `[]`, `{}`,
		`{"messages":[{"role":"user","content":"hi"}],"model":""}`,
		`{"messages":[{"role":"user","content":"hi"}],"model":"bad model"}`,
		`{"messages":[{"role":"user","content":"hi"}],"maxTokens":1.5}`,
		`{"messages":[{"role":"user","content":"hi"}],"maxTokens":1e300}`,
		`{"messages":[{"role":"user","content":"hi"}],"temperature":"0.5"}`,
		`{"messages":[{"role":"user","content":"\ud800"}]}`,
		"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
		`{"messages":[{"role":"user","content":"hi"}],"maxTokens":null,"temperature":null,"model":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast ChatInput
		if !fast.decodeTyped(data) {
			return
		}
		var slow ChatInput
		if err := slow.decodeFields(data); err != nil {
			t.Fatalf("typed pass accepted %q, which the field decoder refuses: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\ntyped  %#v\nfields %#v", data, fast, slow)
		}
	})
}

// TestDecodeTypedTakesWellFormedBodies keeps the typed pass from going dead: well-formed
// bodies take it, and what only the field decoder can word does not.
func TestDecodeTypedTakesWellFormedBodies(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o","temperature":0.5,"maxTokens":10}`: true,
		`{"messages":[{"role":"user","content":"hi"}],"model":"bad model"}`:                               true,
		`{"Messages":[{"role":"user","content":"hi"}]}`:                                                   false,
		`{"messages":[{"role":"user","content":null}]}`:                                                   false,
		`{"messages":[{"role":"user","content":"hi"}],"temperature":"0.5"}`:                               false,
		`{"messages":[{"role":"user","content":"a","content":"b"}]}`:                                      false,
	} {
		var in ChatInput
		if got := in.decodeTyped([]byte(body)); got != want {
			t.Errorf("decodeTyped(%s) = %v, want %v", body, got, want)
		}
	}
}
