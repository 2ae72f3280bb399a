package ai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/acme/app/internal/usage"
)

// anthropicVersion is the API version the official Go SDK pins.
const anthropicVersion = "2023-06-01"

// anthropic speaks POST {base}/messages with x-api-key and anthropic-version.
type anthropic struct{}

func (anthropic) spec() spec {
	return spec{name: "anthropic", roles: []string{"user", "assistant"}, maxTemperature: 1, defaultTemperature: 0.7}
}

func (anthropic) path(string) string { return "/messages" }

func (anthropic) headers(apiKey string) []string {
	return []string{"X-Api-Key", apiKey, "Anthropic-Version", anthropicVersion}
}

// appendBody writes {"model","max_tokens","messages","temperature"?}: max_tokens is required.
func (anthropic) appendBody(j *jsonBuf, c *call) {
	j.raw(`{"model":`)
	j.str(c.model)
	j.raw(`,"max_tokens":`)
	j.int(int64(c.maxTokens))
	j.raw(`,"messages":`)
	j.messages(c.messages)
	if c.sendTemperature {
		j.raw(`,"temperature":`)
		j.float(c.temperature)
	}
	j.raw("}")
}

type anthropicResponse struct {
	ID      string                      `json:"id"`
	Type    string                      `json:"type"`
	Model   string                      `json:"model"`
	Content []anthropicBlock            `json:"content"`
	Usage   usageObject[anthropicUsage] `json:"usage"`
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

// decode reads body with the scanner, or with decodeAnswer when the scanner gives up.
func (r *anthropicResponse) decode(body []byte) error {
	if r.scan(body) {
		return nil
	}
	slow := &anthropicResponse{} // its own, so that r stays off the heap on the fast path
	slow.Usage.src = body
	err := decodeAnswer(body, slow)
	*r = *slow
	return err
}

// scan reads body as decodeAnswer would, or reports false.
func (r *anthropicResponse) scan(body []byte) bool {
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
		case "type":
			s.strInto(&seen, 1<<1, &r.Type)
		case "model":
			s.strInto(&seen, 1<<2, &r.Model)
		case "content":
			if s.once(&seen, 1<<3) {
				r.Content = scanSlice(s, func(b *anthropicBlock) {
					var seen uint32
					s.object(func(name []byte) {
						switch string(name) {
						case "type":
							s.strInto(&seen, 1<<0, &b.Type)
						case "text":
							s.strInto(&seen, 1<<1, &b.Text)
						default:
							s.skip()
						}
					})
				})
			}
		case "usage":
			if s.once(&seen, 1<<4) {
				r.Usage.raw = s.raw(func() { r.Usage.v.scan(s) })
			}
		default:
			s.skip()
		}
	})
	return s.ok()
}

var anthropicUsageNames = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}

func (u *anthropicUsage) scan(s *scanner) {
	s.ints(anthropicUsageNames, &u.InputTokens, &u.OutputTokens, &u.CacheCreationInputTokens, &u.CacheReadInputTokens)
}

func (anthropic) parse(header http.Header, body []byte) (*result, error) {
	var r anthropicResponse
	if err := r.decode(body); err != nil {
		return nil, malformed("anthropic sent an answer that is not valid JSON")
	}
	if r.Type == "error" {
		return nil, malformed("anthropic answered with an error object")
	}
	if r.Usage.err != nil {
		return nil, malformed("anthropic sent an unreadable usage object")
	}
	u := &r.Usage.v
	var text strings.Builder
	for _, b := range r.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	res := &result{
		text:  text.String(),
		model: r.Model,
		// input_tokens excludes cache reads and writes: every prompt token is their sum.
		promptTokens:      u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		completionTokens:  u.OutputTokens, // thinking included
		cacheReadTokens:   u.CacheReadInputTokens,
		cacheWriteTokens:  u.CacheCreationInputTokens,
		rawUsage:          usage.RawJSON(r.Usage.raw),
		providerRequestID: r.ID,
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
