package ai

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/acme/app/internal/validate"
)

// Message is one chat message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatInput is the body of the three AI endpoints: {messages, model?, temperature?, maxTokens?,
// stream?}.
// Decoding it never fails on a field's type: type problems are kept and reported by
// Complete with the other validation messages, in class-validator's wording.
type ChatInput struct {
	Messages    []Message `json:"messages"`
	Model       string    `json:"model,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	MaxTokens   *int      `json:"maxTokens,omitempty"`
	// Stream asks for the answer as server-sent events (the HTTP layer calls Stream).
	Stream bool `json:"stream,omitempty"`

	// TopP and Stop are not accepted on the three endpoints; other surfaces built on the
	// service (an OpenAI-compatible one) set them. They are sent as each provider names them.
	TopP *float64 `json:"-"`
	Stop []string `json:"-"`
	// SystemAllowed lets system messages through to every provider (Anthropic's system text,
	// Gemini's systemInstruction); the Anthropic and Gemini endpoints refuse the role, as the
	// service they replace did, and other surfaces set it.
	SystemAllowed bool `json:"-"`

	// RequestID, when a UUID, becomes the answer's requestId (the HTTP layer passes the
	// request's X-Request-Id); otherwise a new one is made.
	RequestID string `json:"-"`

	problems []string // type errors found while decoding
	decoded  bool     // set by UnmarshalJSON (which reports a missing messages itself)
}

// MaxTokensLimit is the largest maxTokens accepted.
const MaxTokensLimit = 1_000_000

var modelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)

// UnmarshalJSON decodes the body, noting (not failing on) fields of the wrong type.
func (in *ChatInput) UnmarshalJSON(data []byte) error { return in.decodeFields(data) }

// decodeFields decodes data field by field, keeping each type problem in class-validator's
// wording.
func (in *ChatInput) decodeFields(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	*in = ChatInput{decoded: true}

	if raw := fields["messages"]; validate.IsNull(raw) {
		in.problems = append(in.problems, validate.NotEmpty("messages"), validate.IsArray("messages"))
	} else {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			in.problems = append(in.problems, validate.NotEmpty("messages"), validate.IsArray("messages"))
		} else {
			in.Messages = make([]Message, len(items))
			for i, item := range items {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(item, &m); err != nil || m == nil {
					in.problems = append(in.problems, validate.EachNested("messages"))
					continue
				}
				// A role of the wrong type is reported by the role rule (it is in no list).
				if err := json.Unmarshal(m["role"], &in.Messages[i].Role); err != nil {
					in.Messages[i].Role = validate.Reported
				}
				content := fmt.Sprintf("messages.%d.content", i)
				if c := m["content"]; validate.IsNull(c) {
					in.problems = append(in.problems, validate.NotEmpty(content), validate.IsString(content))
				} else if s, ok := validate.String(c); !ok {
					in.problems = append(in.problems, validate.IsString(content))
					in.Messages[i].Content = validate.Reported // not empty: one message is enough
				} else {
					in.Messages[i].Content = s
				}
			}
		}
	}
	if raw := fields["model"]; !validate.IsNull(raw) {
		if model, ok := validate.String(raw); !ok {
			in.problems = append(in.problems, validate.IsString("model"))
		} else {
			in.Model = model
			if !modelPattern.MatchString(model) {
				in.problems = append(in.problems, validate.Matches("model", modelPattern))
			}
		}
	}
	if raw := fields["temperature"]; !validate.IsNull(raw) {
		var t float64
		if err := json.Unmarshal(raw, &t); err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
			in.problems = append(in.problems, validate.IsNumber("temperature"))
		} else {
			in.Temperature = &t
		}
	}
	if raw := fields["stream"]; !validate.IsNull(raw) {
		if err := json.Unmarshal(raw, &in.Stream); err != nil {
			in.problems = append(in.problems, validate.IsBoolean("stream"))
		}
	}
	if raw := fields["maxTokens"]; !validate.IsNull(raw) {
		if f, ok := validate.Integer(raw); !ok || math.Abs(f) > 1<<53 {
			in.problems = append(in.problems, validate.IsInt("maxTokens"))
		} else {
			n := int(f)
			in.MaxTokens = &n
		}
	}
	return nil
}

// validate returns the class-validator messages for in against an endpoint's rules.
func (in *ChatInput) validate(s *spec) []string {
	msgs := append([]string(nil), in.problems...)
	switch {
	case in.Messages == nil && !in.decoded:
		msgs = append(msgs, validate.NotEmpty("messages"), validate.IsArray("messages"))
	case in.Messages != nil && len(in.Messages) == 0:
		msgs = append(msgs, validate.NotEmpty("messages"))
	}
	for i, m := range in.Messages {
		if !slices.Contains(s.roles, m.Role) && (m.Role != "system" || !in.SystemAllowed) {
			msgs = append(msgs, validate.IsIn(fmt.Sprintf("messages.%d.role", i), s.roles))
		}
		if m.Content == "" {
			prefix := fmt.Sprintf("messages.%d.content", i)
			if !slices.ContainsFunc(in.problems, func(p string) bool { return strings.HasPrefix(p, prefix) }) {
				msgs = append(msgs, validate.NotEmpty(prefix))
			}
		}
	}
	if t := in.Temperature; t != nil {
		if *t < 0 {
			msgs = append(msgs, validate.Min("temperature", 0.0))
		}
		if *t > s.maxTemperature {
			msgs = append(msgs, validate.Max("temperature", s.maxTemperature))
		}
	}
	if n := in.MaxTokens; n != nil {
		if *n < 1 {
			msgs = append(msgs, validate.Min("maxTokens", 1))
		}
		if *n > MaxTokensLimit {
			msgs = append(msgs, validate.Max("maxTokens", MaxTokensLimit))
		}
	}
	return msgs
}
