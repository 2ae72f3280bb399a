package ai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// openAI speaks POST {base}/chat/completions with a Bearer key, and embeddings (the end of
// this file).
type openAI struct{}

func (openAI) spec() spec {
	return spec{name: "openai", roles: []string{"user", "assistant", "system"}, maxTemperature: 2, defaultTemperature: 0.7}
}

func (openAI) path(*call) string { return "/chat/completions" }

func (openAI) headers(apiKey string) []string { return []string{"Authorization", "Bearer " + apiKey} }

// openAIRequest is the body of a chat completion. max_completion_tokens, not max_tokens: the
// latter is refused by reasoning models.
type openAIRequest struct {
	Model               string                `json:"model"`
	Messages            []openAIMessage       `json:"messages"`
	Temperature         *float64              `json:"temperature,omitempty"`
	TopP                *float64              `json:"top_p,omitempty"`
	Stop                []string              `json:"stop,omitempty"`
	MaxCompletionTokens int                   `json:"max_completion_tokens,omitempty"`
	Stream              bool                  `json:"stream,omitempty"`
	StreamOptions       *openAIStreamOptions  `json:"stream_options,omitempty"`
	Tools               []openAITool          `json:"tools,omitempty"`
	ToolChoice          any                   `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool                 `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *openAIResponseFormat `json:"response_format,omitempty"`
}

type openAIStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// openAIMessage is a message on the wire: content a string, an array of parts, or null (an
// assistant's tool calls alone).
type openAIMessage struct {
	Role       string           `json:"role"`
	Content    any              `json:"content"`
	ToolCalls  []openAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openAIPart struct {
	Type     string          `json:"type"` // text, image_url
	Text     string          `json:"text,omitempty"`
	ImageURL *openAIImageURL `json:"image_url,omitempty"`
}

type openAIImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // function
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type openAITool struct {
	Type     string         `json:"type"` // function
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type openAIResponseFormat struct {
	Type       string            `json:"type"`
	JSONSchema *openAIJSONSchema `json:"json_schema,omitempty"`
}

type openAIJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// check takes everything: OpenAI's own format is the conversation's.
func (openAI) check(*call) error { return nil }

func (openAI) body(c *call) any {
	r := openAIRequest{Model: c.model, Messages: make([]openAIMessage, len(c.messages)), Temperature: c.temperatureParam(),
		TopP: c.topP, Stop: c.stop, MaxCompletionTokens: c.maxTokens}
	for i := range c.messages {
		r.Messages[i] = openAIMessageOf(&c.messages[i])
	}
	if c.stream {
		r.Stream, r.StreamOptions = true, &openAIStreamOptions{IncludeUsage: true}
	}
	if len(c.tools) > 0 {
		r.Tools = make([]openAITool, len(c.tools))
		for i, t := range c.tools {
			r.Tools[i] = openAITool{Type: "function", Function: openAIFunction{Name: t.Name, Description: t.Description,
				Parameters: t.Parameters, Strict: t.Strict}}
		}
		r.ParallelToolCalls = c.parallel
		switch c.toolChoice.Mode {
		case ToolAuto, ToolNone, ToolRequired:
			r.ToolChoice = c.toolChoice.Mode
		case ToolNamed:
			r.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": c.toolChoice.Name}}
		}
	}
	if f := c.format; f != nil {
		r.ResponseFormat = &openAIResponseFormat{Type: f.Type}
		if f.Type == "json_schema" {
			r.ResponseFormat.JSONSchema = &openAIJSONSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
		}
	}
	return r
}

// openAIMessageOf is m on OpenAI's wire.
func openAIMessageOf(m *Message) openAIMessage {
	out := openAIMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	switch {
	case len(m.Parts) > 0:
		parts := make([]openAIPart, len(m.Parts))
		for i, p := range m.Parts {
			if p.Image != nil {
				parts[i] = openAIPart{Type: "image_url", ImageURL: &openAIImageURL{URL: p.Image.URL, Detail: p.Image.Detail}}
			} else {
				parts[i] = openAIPart{Type: "text", Text: p.Text}
			}
		}
		out.Content = parts
	case len(m.ToolCalls) > 0 && m.Content == "":
		out.Content = nil
	}
	if len(m.ToolCalls) > 0 {
		out.ToolCalls = make([]openAIToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			out.ToolCalls[i].ID, out.ToolCalls[i].Type = tc.ID, "function"
			out.ToolCalls[i].Function.Name, out.ToolCalls[i].Function.Arguments = tc.Name, tc.Arguments
		}
	}
	return out
}

type openAIResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Choices []openAIChoice `json:"choices"`
	Usage   *openAIUsage   `json:"usage"`
}

type openAIChoice struct {
	Message struct {
		Content   string           `json:"content"` // null (a refusal or a tool call) is an empty text
		Refusal   string           `json:"refusal"`
		ToolCalls []openAIToolCall `json:"tool_calls"`
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
	return res.checkTotals("openai")
}

// openAIFinish maps a finish_reason to the four values the normalized answer uses.
func openAIFinish(reason string) string {
	if reason == "function_call" {
		return "tool_calls"
	}
	return reason
}

func (openAI) parse(_ *call, header http.Header, body []byte) (*result, error) {
	var r openAIResponse
	if err := decodeAnswer("openai", body, &r); err != nil {
		return nil, err
	}
	if len(r.Choices) == 0 {
		return nil, malformed("openai answered with no choices")
	}
	res := &result{text: r.Choices[0].Message.Content, model: r.Model, providerRequestID: r.ID,
		finishReason: openAIFinish(r.Choices[0].FinishReason), refusal: r.Choices[0].Message.Refusal}
	if calls := r.Choices[0].Message.ToolCalls; len(calls) > 0 {
		res.toolCalls = make([]ToolCall, len(calls))
		for i, tc := range calls {
			res.toolCalls[i] = ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
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

// openAIError is OpenAI's error answer.
type openAIError struct {
	Error openAIErrorObject `json:"error"`
}

// openAIErrorObject is OpenAI's error object, in an error answer or a stream's error chunk.
type openAIErrorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
	Code    any    `json:"code"` // a string, a number or null
}

// code is the object's code when it is a string that says more than its type, else "".
func (o *openAIErrorObject) code() string {
	code, _ := o.Code.(string)
	if code == o.Type {
		return ""
	}
	return code
}

func (openAI) failure(status int, header http.Header, body []byte) *upstreamError {
	var e openAIError
	_ = json.Unmarshal(body, &e)
	code := e.Error.code()
	u := &upstreamError{status: status, message: e.Error.Message, param: e.Error.Param, code: code,
		retryable: defaultRetryable(status, header), retryAfter: retryAfter(header, time.Now())}
	switch {
	case status == http.StatusUnauthorized || code == "invalid_api_key":
		// OpenAI answers a bad key 401; a server speaking its format behind base_url may say
		// so in a 400: either way it is the server's key, not the caller's request.
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
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openAIUsage       `json:"usage"`
	Error *openAIErrorObject `json:"error"`
}

type openAIStream struct {
	res     result
	text    strings.Builder
	refusal strings.Builder
	calls   toolCallBuilder
}

func (openAI) newStream(_ *call, header http.Header) streamDecoder {
	return &openAIStream{res: result{providerRequestID: header.Get("x-request-id")}}
}

func (s *openAIStream) event(_ string, data []byte, out []Delta) ([]Delta, bool, error) {
	if string(data) == "[DONE]" {
		return out, true, nil
	}
	var c openAIChunk
	if err := decodeAnswer("openai", data, &c); err != nil {
		return out, false, err
	}
	if e := c.Error; e != nil {
		// Read as an error answer is (failure): its param and code too.
		code := e.code()
		return out, false, &upstreamError{status: http.StatusOK, message: e.Message, errType: e.Type, param: e.Param, code: code,
			billing: e.Type == "insufficient_quota", authRejected: code == "invalid_api_key"}
	}
	if c.ID != "" {
		s.res.providerRequestID = c.ID
	}
	if c.Model != "" {
		s.res.model = c.Model
	}
	if c.Usage != nil {
		if err := c.Usage.apply(&s.res); err != nil {
			return out, false, err
		}
	}
	if len(c.Choices) == 0 {
		return out, false, nil
	}
	ch := &c.Choices[0]
	if f := ch.FinishReason; f != "" {
		s.res.finishReason = openAIFinish(f)
	}
	if ch.Delta.Content != "" {
		s.text.WriteString(ch.Delta.Content)
		out = append(out, Delta{Text: ch.Delta.Content})
	}
	if ch.Delta.Refusal != "" {
		s.refusal.WriteString(ch.Delta.Refusal)
		out = append(out, Delta{Refusal: ch.Delta.Refusal})
	}
	for _, tc := range ch.Delta.ToolCalls {
		piece, err := s.calls.add(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
		if err != nil {
			return out, false, err
		}
		out = append(out, Delta{ToolCall: piece})
	}
	return out, false, nil
}

func (s *openAIStream) result() *result {
	s.res.text, s.res.refusal = s.text.String(), s.refusal.String()
	s.res.toolCalls = s.calls.calls()
	return &s.res
}
func (s *openAIStream) endsAtEOF() bool { return false }

// OpenAI's embeddings (openAI implements embedder): POST {base}/embeddings, any number of
// inputs, texts or token arrays.

func (openAI) embedBatch() int { return 0 }

func (openAI) embedTokens() bool { return true }

func (openAI) embedPath(*EmbedInput) string { return "/embeddings" }

// openAIEmbedRequest is OpenAI's embeddings body; input is sent in the form it came.
type openAIEmbedRequest struct {
	Model          string `json:"model"`
	Input          any    `json:"input"`
	EncodingFormat string `json:"encoding_format,omitempty"`
	Dimensions     *int   `json:"dimensions,omitempty"`
	User           string `json:"user,omitempty"`
}

func (openAI) embedBody(in *EmbedInput) any {
	r := openAIEmbedRequest{Model: in.Model, EncodingFormat: in.EncodingFormat, Dimensions: in.Dimensions, User: in.User}
	switch {
	case in.Tokens != nil && in.Single:
		r.Input = in.Tokens[0]
	case in.Tokens != nil:
		r.Input = in.Tokens
	case in.Single:
		r.Input = in.Texts[0]
	default:
		r.Input = in.Texts
	}
	return r
}

type openAIEmbedResponse struct {
	Model string `json:"model"`
	Data  []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"` // not read; decoded so that a non-integer is refused
	} `json:"usage"`
}

func (openAI) parseEmbeddings(in *EmbedInput, header http.Header, body []byte) ([][]float32, *result, bool, error) {
	var r openAIEmbedResponse
	if err := decodeAnswer("openai", body, &r); err != nil {
		return nil, nil, false, err
	}
	n := in.inputs()
	if len(r.Data) != n {
		return nil, nil, false, malformed(fmt.Sprintf("openai answered %d embeddings for %d inputs", len(r.Data), n))
	}
	vectors := make([][]float32, n)
	for i, d := range r.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n || vectors[at] != nil {
			return nil, nil, false, malformed(fmt.Sprintf("openai answered an embedding with a wrong index (data[%d])", i))
		}
		v, err := readVector("openai", fmt.Sprintf("data[%d].embedding", i), d.Embedding)
		if err != nil {
			return nil, nil, false, err
		}
		vectors[at] = v
	}
	res := &result{model: r.Model, providerRequestID: header.Get("x-request-id")}
	if r.Usage == nil {
		res.promptTokens = in.estimate()
		return vectors, res, true, nil
	}
	if err := checkCounts("openai", r.Usage.PromptTokens, r.Usage.TotalTokens); err != nil {
		return nil, nil, false, err
	}
	res.promptTokens = r.Usage.PromptTokens
	return vectors, res, false, nil
}
