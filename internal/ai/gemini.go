package ai

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acme/app/internal/usage"
)

// gemini speaks POST {base}/models/{model}:generateContent with x-goog-api-key (never the
// ?key= query, which ends up in access logs).
type gemini struct{}

func (gemini) spec() spec {
	return spec{name: "gemini", roles: []string{"user", "assistant"}, maxTemperature: 2, defaultTemperature: 0.9}
}

type geminiPart struct {
	Text    string `json:"text"`
	Thought bool   `json:"thought,omitzero"`
}

// path escapes the model, which is validated against a strict pattern, as a second guard.
func (gemini) path(model string) string {
	return "/models/" + url.PathEscape(model) + ":generateContent"
}

func (gemini) headers(apiKey string) []string { return []string{"X-Goog-Api-Key", apiKey} }

// appendBody writes {"contents":[{"role","parts":[{"text"}]}],"generationConfig":{…}}, with
// the assistant's role named "model".
func (gemini) appendBody(j *jsonBuf, c *call) {
	j.raw(`{"contents":[`)
	for i, m := range c.messages {
		if i > 0 {
			j.raw(",")
		}
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		j.raw(`{"role":`)
		j.str(role)
		j.raw(`,"parts":[{"text":`)
		j.str(m.Content)
		j.raw("}]}")
	}
	j.raw(`],"generationConfig":{`)
	if c.sendTemperature {
		j.raw(`"temperature":`)
		j.float(c.temperature)
		j.raw(",")
	}
	j.raw(`"maxOutputTokens":`)
	j.int(int64(c.maxTokens))
	j.raw("}}")
}

type geminiResponse struct {
	Candidates     []geminiCandidate `json:"candidates"`
	PromptFeedback struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata usageObject[geminiUsage] `json:"usageMetadata"`
	ModelVersion  string                   `json:"modelVersion"`
	ResponseID    string                   `json:"responseId"`
}

type geminiCandidate struct {
	Content struct {
		Parts []geminiPart `json:"parts"`
	} `json:"content"`
	// FinishReason is not read; it is decoded so that an answer where it is not a string is
	// refused as malformed.
	FinishReason string `json:"finishReason"`
}

type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"` // not read; decoded so that a non-integer is refused
}

// decode reads body with the scanner, or with decodeAnswer when the scanner gives up.
func (r *geminiResponse) decode(body []byte) error {
	if r.scan(body) {
		return nil
	}
	slow := &geminiResponse{} // its own, so that r stays off the heap on the fast path
	slow.UsageMetadata.src = body
	err := decodeAnswer(body, slow)
	*r = *slow
	return err
}

// scan reads body as decodeAnswer would, or reports false.
func (r *geminiResponse) scan(body []byte) bool {
	s := &scanner{b: body}
	if s.peek() != '{' {
		return false
	}
	r.UsageMetadata.src = body
	var seen uint32
	s.object(func(name []byte) {
		switch string(name) {
		case "candidates":
			if s.once(&seen, 1<<0) {
				r.Candidates = scanSlice(s, func(c *geminiCandidate) { c.scan(s) })
			}
		case "promptFeedback":
			if s.once(&seen, 1<<1) {
				var seen uint32
				s.object(func(name []byte) {
					if string(name) == "blockReason" && s.once(&seen, 1<<0) {
						r.PromptFeedback.BlockReason = s.str()
					} else {
						s.skip()
					}
				})
			}
		case "usageMetadata":
			if s.once(&seen, 1<<2) {
				u := &r.UsageMetadata.v
				r.UsageMetadata.raw = s.raw(func() {
					s.ints(geminiUsageNames, &u.PromptTokenCount, &u.CandidatesTokenCount, &u.ThoughtsTokenCount,
						&u.ToolUsePromptTokenCount, &u.CachedContentTokenCount, &u.TotalTokenCount)
				})
			}
		case "modelVersion":
			s.strInto(&seen, 1<<3, &r.ModelVersion)
		case "responseId":
			s.strInto(&seen, 1<<4, &r.ResponseID)
		default:
			s.skip()
		}
	})
	return s.ok()
}

var geminiUsageNames = []string{"promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
	"toolUsePromptTokenCount", "cachedContentTokenCount", "totalTokenCount"}

func (c *geminiCandidate) scan(s *scanner) {
	var seen uint32
	s.object(func(name []byte) {
		switch string(name) {
		case "content":
			if s.once(&seen, 1<<0) {
				var seen uint32
				s.object(func(name []byte) {
					if string(name) == "parts" && s.once(&seen, 1<<0) {
						c.Content.Parts = scanSlice(s, func(p *geminiPart) {
							var seen uint32
							s.object(func(name []byte) {
								switch string(name) {
								case "text":
									s.strInto(&seen, 1<<0, &p.Text)
								case "thought":
									if s.once(&seen, 1<<1) {
										p.Thought = s.bool()
									}
								default:
									s.skip()
								}
							})
						})
					} else {
						s.skip()
					}
				})
			}
		case "finishReason":
			s.strInto(&seen, 1<<1, &c.FinishReason)
		default:
			s.skip()
		}
	})
}

func (gemini) parse(_ http.Header, body []byte) (*result, error) {
	var r geminiResponse
	if err := r.decode(body); err != nil {
		return nil, malformed("gemini sent an answer that is not valid JSON")
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback.BlockReason != "" {
			return nil, &upstreamError{status: http.StatusOK, blocked: r.PromptFeedback.BlockReason}
		}
		return nil, malformed("gemini answered with no candidates")
	}
	if r.UsageMetadata.err != nil {
		return nil, malformed("gemini sent an unreadable usageMetadata")
	}
	u := &r.UsageMetadata.v
	var text strings.Builder
	for _, p := range r.Candidates[0].Content.Parts {
		if !p.Thought {
			text.WriteString(p.Text)
		}
	}
	res := &result{
		text:              text.String(),
		model:             r.ModelVersion,
		promptTokens:      u.PromptTokenCount + u.ToolUsePromptTokenCount, // cached content included
		completionTokens:  u.CandidatesTokenCount + u.ThoughtsTokenCount,
		cacheReadTokens:   u.CachedContentTokenCount,
		rawUsage:          usage.RawJSON(r.UsageMetadata.raw),
		providerRequestID: r.ResponseID,
	}
	return res, nil
}

type geminiError struct {
	Error struct {
		Message string `json:"message"`
		Details []struct {
			Type       string `json:"@type"`
			Reason     string `json:"reason"`
			RetryDelay string `json:"retryDelay"`
		} `json:"details"`
	} `json:"error"`
}

func (gemini) failure(status int, header http.Header, body []byte) *upstreamError {
	var e geminiError
	_ = json.Unmarshal(body, &e)
	u := &upstreamError{status: status, message: e.Error.Message,
		retryable: defaultRetryable(status, header), retryAfter: retryAfter(header, time.Now())}
	for _, d := range e.Error.Details {
		if d.Reason == "API_KEY_INVALID" {
			u.authRejected, u.retryable = true, false
		}
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") && d.RetryDelay != "" && u.retryAfter == 0 {
			if dur, err := time.ParseDuration(d.RetryDelay); err == nil && dur > 0 {
				u.retryAfter = dur
			}
		}
	}
	if status == http.StatusUnauthorized {
		u.authRejected, u.retryable = true, false
	}
	return u
}
