package ai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	isNull := func(raw json.RawMessage) bool { return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

	if raw := fields["messages"]; isNull(raw) {
		in.problems = append(in.problems, "messages should not be empty", "messages must be an array")
	} else {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			in.problems = append(in.problems, "messages should not be empty", "messages must be an array")
		} else {
			in.Messages = make([]Message, len(items))
			for i, item := range items {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(item, &m); err != nil || m == nil {
					in.problems = append(in.problems, "each value in nested property messages must be either object or array")
					continue
				}
				// A role of the wrong type is reported by the role rule (it is in no list).
				if err := json.Unmarshal(m["role"], &in.Messages[i].Role); err != nil {
					in.Messages[i].Role = "\x00"
				}
				if c := m["content"]; isNull(c) {
					in.problems = append(in.problems, fmt.Sprintf("messages.%d.content should not be empty", i),
						fmt.Sprintf("messages.%d.content must be a string", i))
				} else if err := json.Unmarshal(c, &in.Messages[i].Content); err != nil {
					in.problems = append(in.problems, fmt.Sprintf("messages.%d.content must be a string", i))
					in.Messages[i].Content = "\x00" // not empty: one message is enough
				}
			}
		}
	}
	if raw := fields["model"]; !isNull(raw) {
		if err := json.Unmarshal(raw, &in.Model); err != nil {
			in.problems = append(in.problems, "model must be a string")
			in.Model = ""
		} else if !modelPattern.MatchString(in.Model) {
			in.problems = append(in.problems, "model must match "+modelPattern.String()+" regular expression")
		}
	}
	if raw := fields["temperature"]; !isNull(raw) {
		var t float64
		if err := json.Unmarshal(raw, &t); err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
			in.problems = append(in.problems, "temperature must be a number conforming to the specified constraints")
		} else {
			in.Temperature = &t
		}
	}
	if raw := fields["stream"]; !isNull(raw) {
		if err := json.Unmarshal(raw, &in.Stream); err != nil {
			in.problems = append(in.problems, "stream must be a boolean value")
		}
	}
	if raw := fields["maxTokens"]; !isNull(raw) {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			in.problems = append(in.problems, "maxTokens must be an integer number")
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
		msgs = append(msgs, "messages should not be empty", "messages must be an array")
	case in.Messages != nil && len(in.Messages) == 0:
		msgs = append(msgs, "messages should not be empty")
	}
	for i, m := range in.Messages {
		if !slices.Contains(s.roles, m.Role) && (m.Role != "system" || !in.SystemAllowed) {
			msgs = append(msgs, fmt.Sprintf("messages.%d.role must be one of the following values: %s", i,
				strings.Join(s.roles, ", ")))
		}
		if m.Content == "" {
			prefix := fmt.Sprintf("messages.%d.content", i)
			if !slices.ContainsFunc(in.problems, func(p string) bool { return strings.HasPrefix(p, prefix) }) {
				msgs = append(msgs, fmt.Sprintf("messages.%d.content should not be empty", i))
			}
		}
	}
	if t := in.Temperature; t != nil {
		if *t < 0 {
			msgs = append(msgs, "temperature must not be less than 0")
		}
		if *t > s.maxTemperature {
			msgs = append(msgs, "temperature must not be greater than "+strconv.FormatFloat(s.maxTemperature, 'f', -1, 64))
		}
	}
	if n := in.MaxTokens; n != nil {
		if *n < 1 {
			msgs = append(msgs, "maxTokens must not be less than 1")
		}
		if *n > MaxTokensLimit {
			msgs = append(msgs, fmt.Sprintf("maxTokens must not be greater than %d", MaxTokensLimit))
		}
	}
	return msgs
}
