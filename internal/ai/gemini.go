package ai

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// gemini speaks POST {base}/models/{model}:generateContent (streamed:
// :streamGenerateContent?alt=sse) with x-goog-api-key (never the ?key= query, which ends up
// in access logs).
type gemini struct{}

func (gemini) spec() spec {
	return spec{name: "gemini", roles: []string{"user", "assistant"}, maxTemperature: 2, defaultTemperature: 0.9}
}

// path escapes the model, which is validated against a strict pattern, as a second guard.
func (gemini) path(c *call) string {
	if c.stream {
		return "/models/" + url.PathEscape(c.model) + ":streamGenerateContent?alt=sse"
	}
	return "/models/" + url.PathEscape(c.model) + ":generateContent"
}

func (gemini) headers(apiKey string) []string { return []string{"X-Goog-Api-Key", apiKey} }

// geminiRequest is the body of generateContent: the assistant's role is named "model";
// system messages go to systemInstruction.
type geminiRequest struct {
	Contents          []geminiContent        `json:"contents"`
	SystemInstruction *geminiContent         `json:"systemInstruction,omitempty"`
	GenerationConfig  geminiGenerationConfig `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text    string `json:"text"`
	Thought bool   `json:"thought,omitempty"`
}

type geminiGenerationConfig struct {
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"topP,omitempty"`
	StopSequences   []string `json:"stopSequences,omitempty"`
	MaxOutputTokens int      `json:"maxOutputTokens"`
}

func (gemini) body(c *call) any {
	r := geminiRequest{Contents: make([]geminiContent, 0, len(c.messages)), GenerationConfig: geminiGenerationConfig{
		Temperature: c.temperatureParam(), TopP: c.topP, StopSequences: c.stop, MaxOutputTokens: c.maxTokens}}
	for _, m := range c.messages {
		part := geminiPart{Text: m.Content}
		switch m.Role {
		case "system":
			if r.SystemInstruction == nil {
				r.SystemInstruction = &geminiContent{}
			}
			r.SystemInstruction.Parts = append(r.SystemInstruction.Parts, part)
			continue
		case "assistant":
			r.Contents = append(r.Contents, geminiContent{Role: "model", Parts: []geminiPart{part}})
		default:
			r.Contents = append(r.Contents, geminiContent{Role: m.Role, Parts: []geminiPart{part}})
		}
	}
	return r
}

type geminiResponse struct {
	Candidates     []geminiCandidate `json:"candidates"`
	PromptFeedback struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *geminiUsage `json:"usageMetadata"`
	ModelVersion  string       `json:"modelVersion"`
	ResponseID    string       `json:"responseId"`
}

type geminiCandidate struct {
	Content struct {
		Parts []geminiPart `json:"parts"`
	} `json:"content"`
	FinishReason string `json:"finishReason"`
}

// text joins the candidate's parts that are not thoughts.
func (c *geminiCandidate) text() string {
	var b strings.Builder
	for _, p := range c.Content.Parts {
		if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"` // not read; decoded so that a non-integer is refused
}

// apply sets res's counts from u, refusing impossible ones.
func (u *geminiUsage) apply(res *result) error {
	if err := checkCounts("gemini", u.PromptTokenCount, u.CandidatesTokenCount, u.ThoughtsTokenCount,
		u.ToolUsePromptTokenCount, u.CachedContentTokenCount, u.TotalTokenCount); err != nil {
		return err
	}
	res.promptTokens = u.PromptTokenCount + u.ToolUsePromptTokenCount // cached content included
	res.completionTokens = u.CandidatesTokenCount + u.ThoughtsTokenCount
	res.cacheReadTokens = u.CachedContentTokenCount
	res.reasoningTokens = u.ThoughtsTokenCount
	return nil
}

// geminiFinish maps a finishReason to OpenAI's finish_reason words.
func geminiFinish(reason string) string {
	switch reason {
	case "", "FINISH_REASON_UNSPECIFIED":
		return ""
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL":
		return "tool_calls"
	}
	return "stop"
}

func (gemini) parse(_ http.Header, body []byte) (*result, error) {
	var r geminiResponse
	if err := decodeAnswer("gemini", body, &r); err != nil {
		return nil, err
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback.BlockReason != "" {
			return nil, &upstreamError{status: http.StatusOK, blocked: r.PromptFeedback.BlockReason}
		}
		return nil, malformed("gemini answered with no candidates")
	}
	res := &result{text: r.Candidates[0].text(), model: r.ModelVersion, providerRequestID: r.ResponseID,
		finishReason: geminiFinish(r.Candidates[0].FinishReason)}
	if r.UsageMetadata != nil {
		if err := r.UsageMetadata.apply(res); err != nil {
			return nil, err
		}
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

// geminiStream reads :streamGenerateContent?alt=sse: every event is a whole
// GenerateContentResponse with the text added and the usage so far; the body's end ends it.
type geminiStream struct {
	res  result
	text strings.Builder
}

func (gemini) newStream(http.Header) streamDecoder { return &geminiStream{} }

func (s *geminiStream) event(_ string, data []byte) (string, bool, error) {
	var r geminiResponse
	if err := decodeAnswer("gemini", data, &r); err != nil {
		return "", false, err
	}
	if r.ModelVersion != "" {
		s.res.model = r.ModelVersion
	}
	if r.ResponseID != "" {
		s.res.providerRequestID = r.ResponseID
	}
	if r.UsageMetadata != nil {
		if err := r.UsageMetadata.apply(&s.res); err != nil {
			return "", false, err
		}
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback.BlockReason != "" {
			return "", false, &upstreamError{status: http.StatusOK, blocked: r.PromptFeedback.BlockReason}
		}
		return "", false, nil
	}
	if f := geminiFinish(r.Candidates[0].FinishReason); f != "" {
		s.res.finishReason = f
	}
	delta := r.Candidates[0].text()
	s.text.WriteString(delta)
	return delta, false, nil
}

func (s *geminiStream) result() *result {
	s.res.text = s.text.String()
	return &s.res
}

func (s *geminiStream) endsAtEOF() bool { return true }
