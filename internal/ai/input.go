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

// ChatInput is the body of the three AI endpoints: {messages, model?, temperature?, maxTokens?}.
// Decoding it never fails on a field's type: type problems are kept and reported by
// Complete with the other validation messages, in class-validator's wording.
type ChatInput struct {
	Messages    []Message `json:"messages"`
	Model       string    `json:"model,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	MaxTokens   *int      `json:"maxTokens,omitempty"`

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
//
// A well-formed body (every field of its expected type, no duplicate names) takes one typed
// pass; anything else takes the field-by-field path that words each problem. Both give the
// same result for any body the typed pass accepts (FuzzChatInput holds them to it).
func (in *ChatInput) UnmarshalJSON(data []byte) error {
	if in.decodeTyped(data) {
		return nil
	}
	return in.decodeFields(data)
}

// decodeTyped decodes data in one strict pass of the scanner (names matched exactly). It
// reports false, leaving in untouched, when the body needs decodeFields to word a problem (a
// type error, a missing or null messages list or message field, a non-integral maxTokens) or
// when the scanner gives up (see scanner).
func (in *ChatInput) decodeTyped(data []byte) bool {
	s := &scanner{b: data}
	if s.peek() != '{' {
		return false
	}
	out := ChatInput{decoded: true}
	hasModel := false // a model that is not null
	var maxTokens *float64
	complete := true // every message has a role and a content
	var seen uint32
	s.object(func(name []byte) {
		switch string(name) {
		case "messages":
			if s.once(&seen, 1<<0) {
				out.Messages = scanSlice(s, func(m *Message) {
					var seen, set uint32
					s.object(func(name []byte) {
						switch string(name) {
						case "role":
							if s.once(&seen, 1<<0) && !s.null() {
								m.Role, set = s.str(), set|1<<0
							}
						case "content":
							if s.once(&seen, 1<<1) && !s.null() {
								m.Content, set = s.str(), set|1<<1
							}
						default:
							s.skip()
						}
					})
					complete = complete && set == 1<<0|1<<1
				})
			}
		case "model":
			if s.once(&seen, 1<<1) && !s.null() {
				out.Model, hasModel = s.str(), true
			}
		case "temperature":
			if s.once(&seen, 1<<2) {
				out.Temperature = s.float()
			}
		case "maxTokens":
			if s.once(&seen, 1<<3) {
				maxTokens = s.float()
			}
		default:
			s.skip()
		}
	})
	if !s.ok() || !complete || len(out.Messages) == 0 {
		return false
	}
	if hasModel {
		if !modelPattern.MatchString(out.Model) {
			out.problems = append(out.problems, "model must match "+modelPattern.String()+" regular expression")
		}
	}
	if f := maxTokens; f != nil {
		if *f != math.Trunc(*f) || math.Abs(*f) > 1<<53 {
			return false
		}
		n := int(*f)
		out.MaxTokens = &n
	}
	*in = out
	return true
}

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
		if !slices.Contains(s.roles, m.Role) {
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
