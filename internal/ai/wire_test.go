package ai

import (
	"encoding/json"
	"math"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// The request bodies as structs, marshalled by JSON v2: the reference the hand-written bodies
// are held to.
type (
	openAIRequest struct {
		Model               string    `json:"model"`
		Messages            []Message `json:"messages"`
		Temperature         *float64  `json:"temperature,omitzero"`
		MaxCompletionTokens int       `json:"max_completion_tokens"`
	}
	anthropicRequest struct {
		Model       string    `json:"model"`
		MaxTokens   int       `json:"max_tokens"`
		Messages    []Message `json:"messages"`
		Temperature *float64  `json:"temperature,omitzero"`
	}
	geminiContent struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	}
	geminiRequest struct {
		Contents         []geminiContent `json:"contents"`
		GenerationConfig struct {
			Temperature     *float64 `json:"temperature,omitzero"`
			MaxOutputTokens int      `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
)

func referenceBody(p provider, c *call) ([]byte, error) {
	var temp *float64
	if c.sendTemperature {
		temp = &c.temperature
	}
	var v any
	switch p.(type) {
	case openAI:
		v = openAIRequest{Model: c.model, Messages: c.messages, Temperature: temp, MaxCompletionTokens: c.maxTokens}
	case anthropic:
		v = anthropicRequest{Model: c.model, MaxTokens: c.maxTokens, Messages: c.messages, Temperature: temp}
	case gemini:
		var g geminiRequest
		g.Contents = []geminiContent{}
		for _, m := range c.messages {
			role := m.Role
			if role == "assistant" {
				role = "model"
			}
			g.Contents = append(g.Contents, geminiContent{Role: role, Parts: []geminiPart{{Text: m.Content}}})
		}
		g.GenerationConfig.Temperature, g.GenerationConfig.MaxOutputTokens = temp, c.maxTokens
		v = g
	}
	return jsonv2.Marshal(v)
}

func handBody(p provider, c *call) ([]byte, error) {
	j := jsonBuf{}
	p.appendBody(&j, c)
	return j.b, j.err
}

// sameBody fails t unless the hand-written body of c is what JSON v2 writes (or both fail).
func sameBody(t *testing.T, c *call) {
	t.Helper()
	for _, p := range providerList {
		var j jsonBuf
		p.appendBody(&j, c)
		want, err := referenceBody(p, c)
		if (j.err != nil) != (err != nil) || err == nil && string(j.b) != string(want) {
			t.Fatalf("%T %+v:\nhand %s (%v)\nv2   %s (%v)", p, c, j.b, j.err, want, err)
		}
	}
}

// Ensure the hand-written bodies are byte for byte what JSON v2 writes for the request structs.
func TestAppendBodyMatchesMarshal(t *testing.T) {
	t.Parallel()
	msgs := []Message{{Role: "system", Content: "Be <terse> & \"exact\"\n\t\u2028 ünï 😀 \x01"}, {Role: "user", Content: ""}, {Role: "assistant", Content: "\\/"}}
	for _, temp := range []float64{0, 0.7, 1, 2, 1e-7, 0.000001, 1.5e-300, 123456789.125, 1e21} {
		for _, send := range []bool{true, false} {
			for _, m := range [][]Message{nil, msgs[:1], msgs, {{Role: "user", Content: "caf\xe9"}}} {
				sameBody(t, &call{model: "gpt-4o-mini", messages: m, temperature: temp, sendTemperature: send, maxTokens: 1000})
			}
		}
	}
}

func FuzzAppendBody(f *testing.F) {
	f.Add("gpt-4o", "user", "hi", 0.7, true, 1000)
	f.Add("m", "assistant", "<&>\u2028\xff", 1e-9, false, -1)
	f.Fuzz(func(t *testing.T, model, role, content string, temp float64, send bool, maxTokens int) {
		if math.IsNaN(temp) || math.IsInf(temp, 0) {
			return // a temperature is validated to 0–2
		}
		sameBody(t, &call{model: model, messages: []Message{{Role: role, Content: content}}, temperature: temp, sendTemperature: send, maxTokens: maxTokens})
	})
}

// sameCompletion fails t unless Completion.AppendJSON writes what encoding/json writes.
func sameCompletion(t *testing.T, c *Completion) {
	t.Helper()
	got, err := c.AppendJSON(nil)
	want, werr := json.Marshal(c)
	if (err != nil) != (werr != nil) || werr == nil && string(got) != string(want) {
		t.Fatalf("%+v:\nhand %s (%v)\nv1   %s (%v)", c, got, err, want, werr)
	}
}

func TestCompletionAppendJSONMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "Hello!", "<b>&amp;</b>", "\u2028\u2029", "caf\xe9 \ufffd", "\x00\x1f\x7f\"\\/", "😀 ünï"} {
		for _, cost := range []float64{0, 1.2e-5, 0.0000072, 1e-7, 3.5, 1e21, -0.5} {
			sameCompletion(t, &Completion{Text: text, Usage: Usage{12, 9, 21}, Model: "gpt-4o-mini<x>", Provider: "openai", Cost: cost, RequestID: "0b7c7f54-2d0a-4f3e-9a57-3f1c2f9b8a11"})
		}
	}
	sameCompletion(t, &Completion{Cost: math.NaN()})
}

func FuzzCompletionAppendJSON(f *testing.F) {
	f.Add("Hello <b>", "m", 1.5e-6, int64(3))
	f.Fuzz(func(t *testing.T, text, model string, cost float64, tokens int64) {
		sameCompletion(t, &Completion{Text: text, Usage: Usage{tokens, -tokens, 0}, Model: model, Provider: "p", Cost: cost, RequestID: text})
	})
}
