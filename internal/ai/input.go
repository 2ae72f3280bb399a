package ai

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/validate"
)

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
	// ProviderDefaults leaves to the provider what the request leaves out: temperature and the
	// output cap are not sent unless set (the OpenAI- and Anthropic-compatible surfaces set it;
	// the three endpoints send their own defaults, 0.7 or 0.9 and 1,000 tokens). See
	// openMaxTokens for when a cap is sent all the same.
	ProviderDefaults bool `json:"-"`

	// Tools, ToolChoice, ParallelToolCalls and ResponseFormat are set by the surfaces that
	// speak a provider's dialect (the three endpoints take none of them).
	Tools             []Tool          `json:"-"`
	ToolChoice        ToolChoice      `json:"-"`
	ParallelToolCalls *bool           `json:"-"`
	ResponseFormat    *ResponseFormat `json:"-"`

	// RequestID, when a UUID, becomes the answer's requestId (the HTTP layer passes the
	// request's X-Request-Id); otherwise a new one is made.
	RequestID string `json:"-"`

	problems problems // type errors found while decoding
	decoded  bool     // set by UnmarshalJSON (which reports a missing messages itself)
}

// problems are class-validator messages and the parameter the first is about.
type problems struct {
	msgs  []string
	param string // as the message names it: temperature, maxTokens, messages.0.content
}

// add notes msgs about param.
func (p *problems) add(param string, msgs ...string) {
	if len(p.msgs) == 0 {
		p.param = param
	}
	p.msgs = append(p.msgs, msgs...)
}

// err is the validation failure (nil: none), its Param the first message's parameter.
func (p *problems) err() error {
	if len(p.msgs) == 0 {
		return nil
	}
	e := apperr.Validation(p.msgs...)
	e.Param = p.param
	return e
}

// MaxTokensLimit is the largest maxTokens accepted.
const MaxTokensLimit = 1_000_000

var modelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)

// ValidModel reports whether name may be sent to a provider as a model and recorded in usage:
// letters, digits and . _ : @ -, starting with a letter or digit, at most 128 bytes.
func ValidModel(name string) bool { return modelPattern.MatchString(name) }

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
		in.problems.add("messages", validate.NotEmpty("messages"), validate.IsArray("messages"))
	} else {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			in.problems.add("messages", validate.NotEmpty("messages"), validate.IsArray("messages"))
		} else {
			in.Messages = make([]Message, len(items))
			for i, item := range items {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(item, &m); err != nil || m == nil {
					in.problems.add(fmt.Sprintf("messages.%d", i), validate.EachNested("messages"))
					continue
				}
				// A role of the wrong type is reported by the role rule (it is in no list).
				if err := json.Unmarshal(m["role"], &in.Messages[i].Role); err != nil {
					in.Messages[i].Role = validate.Reported
				}
				content := fmt.Sprintf("messages.%d.content", i)
				if c := m["content"]; validate.IsNull(c) {
					in.problems.add(content, validate.NotEmpty(content), validate.IsString(content))
				} else if s, ok := validate.String(c); !ok {
					in.problems.add(content, validate.IsString(content))
					in.Messages[i].Content = validate.Reported // not empty: one message is enough
				} else {
					in.Messages[i].Content = s
				}
			}
		}
	}
	if raw := fields["model"]; !validate.IsNull(raw) {
		if model, ok := validate.String(raw); !ok {
			in.problems.add("model", validate.IsString("model"))
		} else {
			in.Model = model
			if !modelPattern.MatchString(model) {
				in.problems.add("model", validate.Matches("model", modelPattern))
			}
		}
	}
	if raw := fields["temperature"]; !validate.IsNull(raw) {
		var t float64
		if err := json.Unmarshal(raw, &t); err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
			in.problems.add("temperature", validate.IsNumber("temperature"))
		} else {
			in.Temperature = &t
		}
	}
	if raw := fields["stream"]; !validate.IsNull(raw) {
		if err := json.Unmarshal(raw, &in.Stream); err != nil {
			in.problems.add("stream", validate.IsBoolean("stream"))
		}
	}
	if raw := fields["maxTokens"]; !validate.IsNull(raw) {
		if f, ok := validate.Integer(raw); !ok || math.Abs(f) > 1<<53 {
			in.problems.add("maxTokens", validate.IsInt("maxTokens"))
		} else {
			n := int(f)
			in.MaxTokens = &n
		}
	}
	return nil
}

// validate returns the Invalid error (class-validator's messages, naming the parameter of the
// first) of in against an endpoint's rules, or nil.
func (in *ChatInput) validate(s *spec) error {
	p := problems{msgs: slices.Clone(in.problems.msgs), param: in.problems.param}
	if !in.decoded && in.Model != "" && !ValidModel(in.Model) { // decoded input was checked as it was read
		p.add("model", validate.Matches("model", modelPattern))
	}
	switch {
	case in.Messages == nil && !in.decoded:
		p.add("messages", validate.NotEmpty("messages"), validate.IsArray("messages"))
	case in.Messages != nil && len(in.Messages) == 0:
		p.add("messages", validate.NotEmpty("messages"))
	}
	called := map[string]bool{}
	for i, m := range in.Messages {
		if !slices.Contains(s.roles, m.Role) && (m.Role != "system" || !in.SystemAllowed) && (m.Role != "tool" || m.ToolCallID == "") {
			at := fmt.Sprintf("messages.%d.role", i)
			p.add(at, validate.IsIn(at, s.roles))
		}
		for _, c := range m.ToolCalls {
			called[c.ID] = true
		}
		if m.Role == "tool" && m.ToolCallID != "" {
			if !called[m.ToolCallID] {
				at := fmt.Sprintf("messages.%d.tool_call_id", i)
				p.add(at, fmt.Sprintf("%s %q answers no tool call of an earlier assistant message", at, m.ToolCallID))
			}
			continue // a tool's result may be empty
		}
		if !m.hasContent() {
			at := fmt.Sprintf("messages.%d.content", i)
			if !slices.ContainsFunc(in.problems.msgs, func(msg string) bool { return strings.HasPrefix(msg, at) }) {
				p.add(at, validate.NotEmpty(at))
			}
		}
	}
	if t := in.Temperature; t != nil {
		if *t < 0 {
			p.add("temperature", validate.Min("temperature", 0.0))
		}
		if *t > s.maxTemperature {
			p.add("temperature", validate.Max("temperature", s.maxTemperature))
		}
	}
	if n := in.MaxTokens; n != nil {
		if *n < 1 {
			p.add("maxTokens", validate.Min("maxTokens", 1))
		}
		if *n > MaxTokensLimit {
			p.add("maxTokens", validate.Max("maxTokens", MaxTokensLimit))
		}
	}
	return p.err()
}
