package ai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// anthropicVersion is the API version the official Go SDK pins.
const anthropicVersion = "2023-06-01"

// anthropic speaks POST {base}/messages with x-api-key and anthropic-version.
type anthropic struct{}

func (anthropic) spec() spec {
	return spec{name: "anthropic", roles: []string{"user", "assistant"}, maxTemperature: 1, defaultTemperature: 0.7}
}

func (anthropic) path(*call) string { return "/messages" }

func (anthropic) headers(apiKey string) []string {
	return []string{"X-Api-Key", apiKey, "Anthropic-Version", anthropicVersion}
}

// anthropicRequest is the body of a message; max_tokens is required. System messages (which
// the endpoint's validation refuses, but a caller of the service may send) go to the
// top-level system text, the only place the API takes them.
type anthropicRequest struct {
	Model         string    `json:"model"`
	MaxTokens     int       `json:"max_tokens"`
	System        string    `json:"system,omitempty"`
	Messages      []Message `json:"messages"`
	Temperature   *float64  `json:"temperature,omitempty"`
	TopP          *float64  `json:"top_p,omitempty"`
	StopSequences []string  `json:"stop_sequences,omitempty"`
	Stream        bool      `json:"stream,omitempty"`
}

func (anthropic) body(c *call) any {
	r := anthropicRequest{Model: c.model, MaxTokens: c.maxTokens, Temperature: c.temperatureParam(), TopP: c.topP,
		StopSequences: c.stop, Stream: c.stream, Messages: make([]Message, 0, len(c.messages))}
	var system []string
	for _, m := range c.messages {
		if m.Role == "system" {
			system = append(system, m.Content)
			continue
		}
		r.Messages = append(r.Messages, m)
	}
	r.System = strings.Join(system, "\n\n")
	return r
}

type anthropicResponse struct {
	ID         string           `json:"id"`
	Type       string           `json:"type"`
	Model      string           `json:"model"`
	Content    []anthropicBlock `json:"content"`
	StopReason string           `json:"stop_reason"`
	Usage      *anthropicUsage  `json:"usage"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// apply sets res's counts from u, refusing impossible ones. input_tokens excludes cache reads
// and writes: every prompt token is their sum.
func (u *anthropicUsage) apply(res *result) error {
	if err := checkCounts("anthropic", u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens,
		u.CacheReadInputTokens); err != nil {
		return err
	}
	res.promptTokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	res.completionTokens = u.OutputTokens // thinking included
	res.cacheReadTokens = u.CacheReadInputTokens
	res.cacheWriteTokens = u.CacheCreationInputTokens
	return nil
}

// anthropicFinish maps a stop_reason to OpenAI's finish_reason words.
func anthropicFinish(reason string) string {
	switch reason {
	case "":
		return ""
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop" // end_turn, stop_sequence, pause_turn
}

func (anthropic) parse(header http.Header, body []byte) (*result, error) {
	var r anthropicResponse
	if err := decodeAnswer("anthropic", body, &r); err != nil {
		return nil, err
	}
	if r.Type == "error" {
		return nil, malformed("anthropic answered with an error object")
	}
	var text strings.Builder
	for _, b := range r.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	res := &result{text: text.String(), model: r.Model, providerRequestID: r.ID, finishReason: anthropicFinish(r.StopReason)}
	if r.Usage != nil {
		if err := r.Usage.apply(res); err != nil {
			return nil, err
		}
	}
	if res.providerRequestID == "" {
		res.providerRequestID = header.Get("request-id")
	}
	return res, nil
}

type anthropicError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
}

func (anthropic) failure(status int, header http.Header, body []byte) *upstreamError {
	var e anthropicError
	_ = json.Unmarshal(body, &e)
	u := &upstreamError{status: status, message: e.Error.Message,
		retryable: defaultRetryable(status, header), retryAfter: retryAfter(header, time.Now())}
	switch {
	case status == http.StatusUnauthorized || e.Error.Type == "authentication_error":
		u.authRejected, u.retryable = true, false
	case e.Error.Details.ErrorCode == "enforced_spend_limit_reached" || status == http.StatusPaymentRequired ||
		e.Error.Type == "billing_error":
		u.billing, u.retryable = true, false
	case status == 529 || e.Error.Type == "overloaded_error":
		u.retryable = !strings.EqualFold(header.Get("x-should-retry"), "false")
	}
	return u
}

// anthropicEvent is any event of a streamed message; the type says which fields are set.
type anthropicEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string          `json:"id"`
		Model string          `json:"model"`
		Usage *anthropicUsage `json:"usage"`
	} `json:"message"` // message_start
	Delta *struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"` // content_block_delta, message_delta
	Usage *struct {
		InputTokens              *int64 `json:"input_tokens"`
		OutputTokens             *int64 `json:"output_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	} `json:"usage"` // message_delta: cumulative counts
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anthropicStream struct {
	res   result
	usage anthropicUsage
	text  strings.Builder
}

func (anthropic) newStream(header http.Header) streamDecoder {
	return &anthropicStream{res: result{providerRequestID: header.Get("request-id")}}
}

func (s *anthropicStream) event(_ string, data []byte) (string, bool, error) {
	var e anthropicEvent
	if err := decodeAnswer("anthropic", data, &e); err != nil {
		return "", false, err
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			s.res.providerRequestID, s.res.model = e.Message.ID, e.Message.Model
			if e.Message.Usage != nil {
				s.usage = *e.Message.Usage
			}
		}
	case "content_block_delta":
		if e.Delta != nil && e.Delta.Type == "text_delta" {
			s.text.WriteString(e.Delta.Text)
			return e.Delta.Text, false, nil
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			s.res.finishReason = anthropicFinish(e.Delta.StopReason)
		}
		if u := e.Usage; u != nil {
			for _, f := range []struct {
				from *int64
				to   *int64
			}{{u.InputTokens, &s.usage.InputTokens}, {u.OutputTokens, &s.usage.OutputTokens},
				{u.CacheCreationInputTokens, &s.usage.CacheCreationInputTokens}, {u.CacheReadInputTokens, &s.usage.CacheReadInputTokens}} {
				if f.from != nil {
					*f.to = *f.from
				}
			}
		}
	case "message_stop":
		return "", true, nil
	case "error":
		u := &upstreamError{status: http.StatusOK, message: "mid-stream error"}
		if e.Error != nil {
			u.message = e.Error.Type + ": " + e.Error.Message
		}
		return "", false, u
	}
	if e.Type == "message_start" || e.Type == "message_delta" {
		if err := s.usage.apply(&s.res); err != nil {
			return "", false, err
		}
	}
	return "", false, nil
}

func (s *anthropicStream) result() *result {
	s.res.text = s.text.String()
	return &s.res
}

func (s *anthropicStream) endsAtEOF() bool { return false }
