package ai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/acme/app/internal/usage"
)

// openAI speaks POST {base}/chat/completions with a Bearer key.
type openAI struct{}

func (openAI) spec() spec {
	return spec{name: "openai", roles: []string{"user", "assistant", "system"}, maxTemperature: 2, defaultTemperature: 0.7}
}

func (openAI) path(string) string { return "/chat/completions" }

func (openAI) headers(apiKey string) []string { return []string{"Authorization", "Bearer " + apiKey} }

// appendBody writes {"model","messages","temperature"?,"max_completion_tokens"}: max_tokens is
// refused by reasoning models.
func (openAI) appendBody(j *jsonBuf, c *call) {
	j.raw(`{"model":`)
	j.str(c.model)
	j.raw(`,"messages":`)
	j.messages(c.messages)
	if c.sendTemperature {
		j.raw(`,"temperature":`)
		j.float(c.temperature)
	}
	j.raw(`,"max_completion_tokens":`)
	j.int(int64(c.maxTokens))
	j.raw("}")
}

type openAIResponse struct {
	ID      string                   `json:"id"`
	Model   string                   `json:"model"`
	Choices []openAIChoice           `json:"choices"`
	Usage   usageObject[openAIUsage] `json:"usage"`
}

type openAIChoice struct {
	Message struct {
		Content string `json:"content"` // null (a refusal or a tool call) is an empty text
	} `json:"message"`
	// FinishReason is not read; it is decoded so that an answer where it is not a string is
	// refused as malformed.
	FinishReason string `json:"finish_reason"`
}

type openAIUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"` // not read; decoded so that a non-integer is refused
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// decode reads body with the scanner, or with decodeAnswer when the scanner gives up.
func (r *openAIResponse) decode(body []byte) error {
	if r.scan(body) {
		return nil
	}
	slow := &openAIResponse{} // its own, so that r stays off the heap on the fast path
	slow.Usage.src = body
	err := decodeAnswer(body, slow)
	*r = *slow
	return err
}

// scan reads body as decodeAnswer would, or reports false.
func (r *openAIResponse) scan(body []byte) bool {
	s := &scanner{b: body}
	if s.peek() != '{' {
		return false
	}
	r.Usage.src = body
	var seen uint32
	s.object(func(name []byte) {
		switch string(name) {
		case "id":
			s.strInto(&seen, 1<<0, &r.ID)
		case "model":
			s.strInto(&seen, 1<<1, &r.Model)
		case "choices":
			if s.once(&seen, 1<<2) {
				r.Choices = scanSlice(s, func(c *openAIChoice) {
					var seen uint32
					s.object(func(name []byte) {
						switch string(name) {
						case "message":
							if s.once(&seen, 1<<0) {
								var seen uint32
								s.object(func(name []byte) {
									if string(name) == "content" && s.once(&seen, 1<<0) {
										c.Message.Content = s.str()
									} else {
										s.skip()
									}
								})
							}
						case "finish_reason":
							s.strInto(&seen, 1<<1, &c.FinishReason)
						default:
							s.skip()
						}
					})
				})
			}
		case "usage":
			if s.once(&seen, 1<<3) {
				r.Usage.raw = s.raw(func() { r.Usage.v.scan(s) })
			}
		default:
			s.skip()
		}
	})
	return s.ok()
}

func (u *openAIUsage) scan(s *scanner) {
	var seen uint32
	s.object(func(name []byte) {
		switch string(name) {
		case "prompt_tokens":
			if s.once(&seen, 1<<0) {
				u.PromptTokens = s.int()
			}
		case "completion_tokens":
			if s.once(&seen, 1<<1) {
				u.CompletionTokens = s.int()
			}
		case "total_tokens":
			if s.once(&seen, 1<<2) {
				u.TotalTokens = s.int()
			}
		case "prompt_tokens_details":
			if s.once(&seen, 1<<3) {
				var seen uint32
				s.object(func(name []byte) {
					if string(name) == "cached_tokens" && s.once(&seen, 1<<0) {
						u.PromptTokensDetails.CachedTokens = s.int()
					} else {
						s.skip()
					}
				})
			}
		default:
			s.skip()
		}
	})
}

func (openAI) parse(header http.Header, body []byte) (*result, error) {
	var r openAIResponse
	if err := r.decode(body); err != nil {
		return nil, malformed("openai sent an answer that is not valid JSON")
	}
	if len(r.Choices) == 0 {
		return nil, malformed("openai answered with no choices")
	}
	if r.Usage.err != nil {
		return nil, malformed("openai sent an unreadable usage object")
	}
	u := &r.Usage.v
	res := &result{
		text:              r.Choices[0].Message.Content,
		model:             r.Model,
		promptTokens:      u.PromptTokens, // cached_tokens are a subset already
		completionTokens:  u.CompletionTokens,
		cacheReadTokens:   u.PromptTokensDetails.CachedTokens,
		rawUsage:          usage.RawJSON(r.Usage.raw),
		providerRequestID: r.ID,
	}
	if id := header.Get("x-request-id"); id != "" && res.providerRequestID == "" {
		res.providerRequestID = id
	}
	return res, nil
}

type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param"`
		Code    any    `json:"code"`
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
