package ai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// openAI speaks POST {base}/chat/completions with a Bearer key.
type openAI struct{}

func (openAI) spec() spec {
	return spec{name: "openai", roles: []string{"user", "assistant", "system"}, maxTemperature: 2, defaultTemperature: 0.7}
}

func (openAI) path(*call) string { return "/chat/completions" }

func (openAI) headers(apiKey string) []string { return []string{"Authorization", "Bearer " + apiKey} }

// openAIRequest is the body of a chat completion. max_completion_tokens, not max_tokens: the
// latter is refused by reasoning models.
type openAIRequest struct {
	Model               string               `json:"model"`
	Messages            []Message            `json:"messages"`
	Temperature         *float64             `json:"temperature,omitempty"`
	TopP                *float64             `json:"top_p,omitempty"`
	Stop                []string             `json:"stop,omitempty"`
	MaxCompletionTokens int                  `json:"max_completion_tokens"`
	Stream              bool                 `json:"stream,omitempty"`
	StreamOptions       *openAIStreamOptions `json:"stream_options,omitempty"`
}

type openAIStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

func (openAI) body(c *call) any {
	r := openAIRequest{Model: c.model, Messages: c.messages, Temperature: c.temperatureParam(), TopP: c.topP,
		Stop: c.stop, MaxCompletionTokens: c.maxTokens}
	if c.stream {
		r.Stream, r.StreamOptions = true, &openAIStreamOptions{IncludeUsage: true}
	}
	return r
}

type openAIResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Choices []openAIChoice `json:"choices"`
	Usage   *openAIUsage   `json:"usage"`
}

type openAIChoice struct {
	Message struct {
		Content string `json:"content"` // null (a refusal or a tool call) is an empty text
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

type openAIUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"` // not read; decoded so that a non-integer is refused
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// apply sets res's counts from u, refusing impossible ones.
func (u *openAIUsage) apply(res *result) error {
	if err := checkCounts("openai", u.PromptTokens, u.CompletionTokens, u.TotalTokens,
		u.PromptTokensDetails.CachedTokens, u.CompletionTokensDetails.ReasoningTokens); err != nil {
		return err
	}
	res.promptTokens = u.PromptTokens // cached_tokens are a subset already
	res.completionTokens = u.CompletionTokens
	res.cacheReadTokens = u.PromptTokensDetails.CachedTokens
	res.reasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	return nil
}

// openAIFinish maps a finish_reason to the four values the normalized answer uses.
func openAIFinish(reason string) string {
	if reason == "function_call" {
		return "tool_calls"
	}
	return reason
}

func (openAI) parse(header http.Header, body []byte) (*result, error) {
	var r openAIResponse
	if err := decodeAnswer("openai", body, &r); err != nil {
		return nil, err
	}
	if len(r.Choices) == 0 {
		return nil, malformed("openai answered with no choices")
	}
	res := &result{text: r.Choices[0].Message.Content, model: r.Model, providerRequestID: r.ID,
		finishReason: openAIFinish(r.Choices[0].FinishReason)}
	if r.Usage != nil {
		if err := r.Usage.apply(res); err != nil {
			return nil, err
		}
	}
	if res.providerRequestID == "" {
		res.providerRequestID = header.Get("x-request-id")
	}
	return res, nil
}

type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param"`
		Code    any    `json:"code"` // a string, a number or null
	} `json:"error"`
}

func (openAI) failure(status int, header http.Header, body []byte) *upstreamError {
	var e openAIError
	_ = json.Unmarshal(body, &e)
	code, _ := e.Error.Code.(string)
	u := &upstreamError{status: status, message: e.Error.Message, retryable: defaultRetryable(status, header),
		retryAfter: retryAfter(header, time.Now())}
	switch {
	case status == http.StatusUnauthorized:
		u.authRejected, u.retryable = true, false
	case status == http.StatusTooManyRequests && (e.Error.Type == "insufficient_quota" || code == "insufficient_quota" ||
		strings.Contains(code, "spend_limit") || strings.Contains(code, "credit_balance")):
		u.billing, u.retryable = true, false
	case status == http.StatusBadRequest && e.Error.Param == "temperature" &&
		(code == "unsupported_value" || code == "unsupported_parameter"):
		u.dropParam = "temperature"
	}
	return u
}

// openAIChunk is one event of a streamed chat completion: a piece of the answer, the final
// usage (choices empty), or an error.
type openAIChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openAIUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

type openAIStream struct {
	res  result
	text strings.Builder
}

func (openAI) newStream(header http.Header) streamDecoder {
	return &openAIStream{res: result{providerRequestID: header.Get("x-request-id")}}
}

func (s *openAIStream) event(_ string, data []byte) (string, bool, error) {
	if string(data) == "[DONE]" {
		return "", true, nil
	}
	var c openAIChunk
	if err := decodeAnswer("openai", data, &c); err != nil {
		return "", false, err
	}
	if c.Error != nil {
		return "", false, &upstreamError{status: http.StatusOK, message: c.Error.Message}
	}
	if c.ID != "" {
		s.res.providerRequestID = c.ID
	}
	if c.Model != "" {
		s.res.model = c.Model
	}
	if c.Usage != nil {
		if err := c.Usage.apply(&s.res); err != nil {
			return "", false, err
		}
	}
	if len(c.Choices) == 0 {
		return "", false, nil
	}
	if f := c.Choices[0].FinishReason; f != "" {
		s.res.finishReason = openAIFinish(f)
	}
	s.text.WriteString(c.Choices[0].Delta.Content)
	return c.Choices[0].Delta.Content, false, nil
}

func (s *openAIStream) result() *result {
	s.res.text = s.text.String()
	return &s.res
}
func (s *openAIStream) endsAtEOF() bool { return false }
