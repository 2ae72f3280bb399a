package ai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// gemini speaks POST {base}/models/{model}:generateContent (streamed:
// :streamGenerateContent?alt=sse) with x-goog-api-key (never the ?key= query, which ends up
// in access logs), and embeddings (the end of this file).
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
	Tools             []geminiTool           `json:"tools,omitempty"`
	ToolConfig        *geminiToolConfig      `json:"toolConfig,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

// geminiPart is one part of a content: text, inline data, a function call or its response.
type geminiPart struct {
	Text             string                  `json:"text,omitempty"`
	Thought          bool                    `json:"thought,omitempty"`
	InlineData       *geminiInlineData       `json:"inlineData,omitempty"`
	FunctionCall     *geminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiFunctionResponse `json:"functionResponse,omitempty"`
}

type geminiInlineData struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type geminiTool struct {
	FunctionDeclarations []geminiFunctionDeclaration `json:"functionDeclarations"`
}

// geminiFunctionDeclaration declares a tool with its schema as JSON Schema
// (parametersJsonSchema), which Gemini takes as the client wrote it.
type geminiFunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type geminiToolConfig struct {
	FunctionCallingConfig geminiFunctionCallingConfig `json:"functionCallingConfig"`
}

type geminiFunctionCallingConfig struct {
	Mode                 string   `json:"mode"` // AUTO, ANY, NONE
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type geminiGenerationConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
}

// check refuses what Gemini cannot take: system messages alone, an image by URL (it reads
// inline data only) and arguments that are not an object.
func (gemini) check(c *call) error {
	if err := needConversation(c, "gemini"); err != nil {
		return err
	}
	for i := range c.messages {
		m := &c.messages[i]
		for j, p := range m.Parts {
			if p.Image != nil && !p.Image.Inline() {
				at := fmt.Sprintf("messages.%d.content.%d.image_url", i, j)
				return refuse(at, at+": gemini models read images sent inline (a data: URL), not by URL")
			}
		}
		for j, tc := range m.ToolCalls {
			if _, ok := argumentsObject(tc.Arguments); !ok {
				at := fmt.Sprintf("messages.%d.tool_calls.%d.function.arguments", i, j)
				return refuse(at, at+" must be a JSON object on gemini models")
			}
		}
	}
	return nil
}

func (gemini) body(c *call) any {
	r := geminiRequest{Contents: make([]geminiContent, 0, len(c.messages)), GenerationConfig: geminiGenerationConfig{
		Temperature: c.temperatureParam(), TopP: c.topP, StopSequences: c.stop, MaxOutputTokens: c.maxTokens}}
	var names map[string]string // tool call id: name, for the results
	for i := range c.messages {
		m := &c.messages[i]
		switch m.Role {
		case "system":
			if r.SystemInstruction == nil {
				r.SystemInstruction = &geminiContent{}
			}
			r.SystemInstruction.Parts = append(r.SystemInstruction.Parts, geminiPart{Text: m.text()})
		case "tool":
			if names == nil {
				names = toolNames(c.messages)
			}
			part := geminiPart{FunctionResponse: &geminiFunctionResponse{Name: names[m.ToolCallID], Response: geminiResult(m.Content)}}
			if n := len(r.Contents); n > 0 && i > 0 && c.messages[i-1].Role == "tool" {
				r.Contents[n-1].Parts = append(r.Contents[n-1].Parts, part)
				continue
			}
			r.Contents = append(r.Contents, geminiContent{Role: "user", Parts: []geminiPart{part}})
		case "assistant":
			r.Contents = append(r.Contents, geminiContent{Role: "model", Parts: geminiParts(m)})
		default:
			r.Contents = append(r.Contents, geminiContent{Role: m.Role, Parts: geminiParts(m)})
		}
	}
	if len(c.tools) > 0 {
		decl := make([]geminiFunctionDeclaration, len(c.tools))
		for i, t := range c.tools {
			decl[i] = geminiFunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Parameters}
		}
		r.Tools = []geminiTool{{FunctionDeclarations: decl}}
		switch c.toolChoice.Mode {
		case ToolNone:
			r.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "NONE"}}
		case ToolRequired:
			r.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "ANY"}}
		case ToolNamed:
			r.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{c.toolChoice.Name}}}
		case ToolAuto:
			r.ToolConfig = &geminiToolConfig{geminiFunctionCallingConfig{Mode: "AUTO"}}
		}
	}
	if f := c.format; f != nil {
		r.GenerationConfig.ResponseMimeType = "application/json"
		if f.Type == "json_schema" {
			r.GenerationConfig.ResponseJSONSchema = f.Schema
		}
	}
	return r
}

// geminiParts is m's content as parts: its text and images, then its function calls.
func geminiParts(m *Message) []geminiPart {
	var out []geminiPart
	if len(m.Parts) == 0 && (m.Content != "" || len(m.ToolCalls) == 0) {
		out = append(out, geminiPart{Text: m.Content})
	}
	for _, p := range m.Parts {
		if p.Image != nil {
			out = append(out, geminiPart{InlineData: &geminiInlineData{MimeType: p.Image.MediaType, Data: p.Image.Data}})
		} else {
			out = append(out, geminiPart{Text: p.Text})
		}
	}
	for _, tc := range m.ToolCalls {
		args, _ := argumentsObject(tc.Arguments) // check refused the others
		out = append(out, geminiPart{FunctionCall: &geminiFunctionCall{Name: tc.Name, Args: args}})
	}
	return out
}

// geminiResult is a tool's result as a functionResponse's response, which must be an object:
// the result when it is a JSON object, else {"result": the text}.
func geminiResult(content string) json.RawMessage {
	if obj, ok := argumentsObject(content); ok && content != "" {
		return obj
	}
	b, _ := json.Marshal(struct {
		Result string `json:"result"`
	}{content})
	return b
}

type geminiResponse struct {
	Candidates     []geminiCandidate `json:"candidates"`
	PromptFeedback struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *geminiUsage `json:"usageMetadata"`
	ModelVersion  string       `json:"modelVersion"`
	ResponseID    string       `json:"responseId"`
	// Error is set on an event that ends a stream with a failure.
	Error *struct {
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
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

// addCalls notes the candidate's function calls in b, appending each as a delta to out.
func (c *geminiCandidate) addCalls(b *toolCallBuilder, out []Delta) ([]Delta, error) {
	for _, p := range c.Content.Parts {
		fc := p.FunctionCall
		if fc == nil {
			continue
		}
		args := "{}"
		if len(fc.Args) > 0 && string(fc.Args) != "null" {
			if _, ok := argumentsObject(string(fc.Args)); !ok {
				return out, malformed("gemini sent a function call whose args are not an object")
			}
			args = string(fc.Args)
		}
		piece, err := b.add(b.next(), fc.ID, fc.Name, args)
		if err != nil {
			return out, err
		}
		out = append(out, Delta{ToolCall: piece})
	}
	return out, nil
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
	return res.checkTotals("gemini")
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

func (gemini) parse(_ *call, _ http.Header, body []byte) (*result, error) {
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
	var calls toolCallBuilder
	if _, err := r.Candidates[0].addCalls(&calls, nil); err != nil {
		return nil, err
	}
	if res.toolCalls = calls.calls(); res.toolCalls != nil && res.finishReason == "stop" {
		res.finishReason = "tool_calls"
	}
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
		Status  string `json:"status"` // its kind of failure: UNAVAILABLE, RESOURCE_EXHAUSTED, …
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
	u := &upstreamError{status: status, message: e.Error.Message, errType: e.Error.Status,
		retryable: defaultRetryable(status, header), retryAfter: retryAfter(header, time.Now())}
	for _, d := range e.Error.Details {
		if d.Reason == "API_KEY_INVALID" {
			u.authRejected, u.retryable = true, false
		}
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") && d.RetryDelay != "" && u.retryAfter == 0 {
			if dur, err := time.ParseDuration(d.RetryDelay); err == nil && dur > 0 {
				u.retryAfter = min(dur, maxRetryAfter)
			}
		}
	}
	if status == http.StatusUnauthorized {
		u.authRejected, u.retryable = true, false
	}
	return u
}

// geminiStream reads :streamGenerateContent?alt=sse: every event is a whole
// GenerateContentResponse with the text added and the usage so far; the body's end ends it,
// after an answer with a finish reason.
type geminiStream struct {
	res   result
	text  strings.Builder
	calls toolCallBuilder
}

func (gemini) newStream(*call, http.Header) streamDecoder { return &geminiStream{} }

func (s *geminiStream) event(_ string, data []byte, out []Delta) ([]Delta, bool, error) {
	var r geminiResponse
	if err := decodeAnswer("gemini", data, &r); err != nil {
		return out, false, err
	}
	if r.Error != nil {
		return out, false, &upstreamError{status: http.StatusOK, message: r.Error.Message, errType: r.Error.Status}
	}
	if r.ModelVersion != "" {
		s.res.model = r.ModelVersion
	}
	if r.ResponseID != "" {
		s.res.providerRequestID = r.ResponseID
	}
	if r.UsageMetadata != nil {
		if err := r.UsageMetadata.apply(&s.res); err != nil {
			return out, false, err
		}
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback.BlockReason != "" {
			return out, false, &upstreamError{status: http.StatusOK, blocked: r.PromptFeedback.BlockReason}
		}
		return out, false, nil
	}
	if f := geminiFinish(r.Candidates[0].FinishReason); f != "" {
		s.res.finishReason = f
	}
	if text := r.Candidates[0].text(); text != "" {
		s.text.WriteString(text)
		out = append(out, Delta{Text: text})
	}
	out, err := r.Candidates[0].addCalls(&s.calls, out)
	return out, false, err
}

func (s *geminiStream) result() *result {
	s.res.text = s.text.String()
	if s.res.toolCalls = s.calls.calls(); s.res.toolCalls != nil && s.res.finishReason == "stop" {
		s.res.finishReason = "tool_calls"
	}
	return &s.res
}

// endsAtEOF: the body's end ends a stream whose last answer gave a finish reason; without one
// the stream was cut short.
func (s *geminiStream) endsAtEOF() bool { return s.res.finishReason != "" }

// Gemini's embeddings (gemini implements embedder): POST
// {base}/models/{model}:batchEmbedContents, one request per text (texts only), at most
// GeminiEmbedBatch a call.

func (gemini) embedBatch() int { return GeminiEmbedBatch }

func (gemini) embedTokens() bool { return false }

// embedPath escapes the model, which is validated against a strict pattern, as a second
// guard.
func (gemini) embedPath(in *EmbedInput) string {
	return "/models/" + url.PathEscape(in.Model) + ":batchEmbedContents"
}

type geminiEmbedRequest struct {
	Requests []geminiEmbedContent `json:"requests"`
}

type geminiEmbedContent struct {
	Model                string        `json:"model"`
	Content              geminiContent `json:"content"`
	OutputDimensionality *int          `json:"outputDimensionality,omitempty"`
}

func (gemini) embedBody(in *EmbedInput) any {
	r := geminiEmbedRequest{Requests: make([]geminiEmbedContent, len(in.Texts))}
	for i, t := range in.Texts {
		r.Requests[i] = geminiEmbedContent{Model: "models/" + in.Model, Content: geminiContent{Parts: []geminiPart{{Text: t}}},
			OutputDimensionality: in.Dimensions}
	}
	return r
}

type geminiEmbedResponse struct {
	Embeddings []struct {
		Values json.RawMessage `json:"values"`
	} `json:"embeddings"`
}

func (gemini) parseEmbeddings(in *EmbedInput, _ http.Header, body []byte) ([][]float32, *result, bool, error) {
	var r geminiEmbedResponse
	if err := decodeAnswer("gemini", body, &r); err != nil {
		return nil, nil, false, err
	}
	n := in.inputs()
	if len(r.Embeddings) != n {
		return nil, nil, false, malformed(fmt.Sprintf("gemini answered %d embeddings for %d inputs", len(r.Embeddings), n))
	}
	vectors := make([][]float32, n)
	for i, e := range r.Embeddings {
		if len(e.Values) > 0 && e.Values[0] == '"' { // floats only: no base64 here
			return nil, nil, false, malformed(fmt.Sprintf("gemini sent an embedding (embeddings[%d].values) that is not an array of numbers", i))
		}
		v, err := readVector("gemini", fmt.Sprintf("embeddings[%d].values", i), e.Values)
		if err != nil {
			return nil, nil, false, err
		}
		vectors[i] = v
	}
	return vectors, &result{promptTokens: in.estimate()}, true, nil
}
