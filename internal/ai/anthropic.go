package ai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// anthropicVersion is the API version the official Go SDK pins.
const anthropicVersion = "2023-06-01"

// anthropic speaks POST {base}/messages with x-api-key and anthropic-version. Anthropic has
// no embeddings API: anthropic does not implement embedder, and embeddings are refused.
type anthropic struct{}

func (anthropic) spec() spec {
	return spec{name: "anthropic", roles: []string{"user", "assistant"}, maxTemperature: 1, defaultTemperature: 0.7}
}

func (anthropic) path(*call) string { return "/messages" }

func (anthropic) headers(apiKey string) []string {
	return []string{"X-Api-Key", apiKey, "Anthropic-Version", anthropicVersion}
}

// anthropicRequest is the body of a message; max_tokens is required. System messages go to
// the top-level system text, the only place the API takes them.
type anthropicRequest struct {
	Model         string               `json:"model"`
	MaxTokens     int                  `json:"max_tokens"`
	System        string               `json:"system,omitempty"`
	Messages      []anthropicMessage   `json:"messages"`
	Temperature   *float64             `json:"temperature,omitempty"`
	TopP          *float64             `json:"top_p,omitempty"`
	StopSequences []string             `json:"stop_sequences,omitempty"`
	Stream        bool                 `json:"stream,omitempty"`
	Tools         []anthropicTool      `json:"tools,omitempty"`
	ToolChoice    *anthropicToolChoice `json:"tool_choice,omitempty"`
}

// anthropicMessage is a message on the wire: content a string, or an array of blocks.
type anthropicMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// anthropicContent is a content block of a request: text, image, tool_use or tool_result.
type anthropicContent struct {
	Type      string           `json:"type"`
	Text      string           `json:"text,omitempty"`
	Source    *anthropicSource `json:"source,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     json.RawMessage  `json:"input,omitempty"`
	ToolUseID string           `json:"tool_use_id,omitempty"`
	Content   string           `json:"content,omitempty"`
}

type anthropicSource struct {
	Type      string `json:"type"` // base64, url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicToolChoice struct {
	Type                   string `json:"type"` // auto, any, tool, none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// anthropicImageTypes are the media types of inline images Anthropic reads.
var anthropicImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// emptyObjectSchema is the input schema of a tool declared without parameters.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// anthropicJSONTool is the name of the tool forced for a json_object answer.
const anthropicJSONTool = "json_object"

// check refuses what Anthropic cannot take: system messages alone, an input schema that is
// not an object schema, arguments that are not an object, an image type it does not read,
// JSON output beside tools.
func (anthropic) check(c *call) error {
	if err := needConversation(c, "anthropic"); err != nil {
		return err
	}
	if c.format != nil && len(c.tools) > 0 {
		return refuse("response_format", "response_format cannot be combined with tools on anthropic models (the JSON answer is itself a forced tool call)")
	}
	if f := c.format; f != nil && f.Type == "json_schema" && !isObjectSchema(f.Schema) {
		return refuse("response_format.json_schema.schema", "response_format.json_schema.schema must be an object schema ({\"type\": \"object\"}) on anthropic models")
	}
	for i, t := range c.tools {
		if t.Parameters != nil && !isObjectSchema(t.Parameters) {
			return refuse(fmt.Sprintf("tools.%d.function.parameters", i), fmt.Sprintf(
				"tools.%d.function.parameters must be an object schema ({\"type\": \"object\"}) on anthropic models", i))
		}
	}
	for i := range c.messages {
		m := &c.messages[i]
		for j, tc := range m.ToolCalls {
			if _, ok := argumentsObject(tc.Arguments); !ok {
				at := fmt.Sprintf("messages.%d.tool_calls.%d.function.arguments", i, j)
				return refuse(at, at+" must be a JSON object on anthropic models")
			}
		}
		for j, p := range m.Parts {
			if p.Image != nil && p.Image.Inline() && !slices.Contains(anthropicImageTypes, p.Image.MediaType) {
				at := fmt.Sprintf("messages.%d.content.%d.image_url", i, j)
				return refuse(at, fmt.Sprintf("%s: anthropic models read %s images, not %s", at,
					strings.Join(anthropicImageTypes, ", "), p.Image.MediaType))
			}
		}
	}
	return nil
}

func (anthropic) body(c *call) any {
	r := anthropicRequest{Model: c.model, MaxTokens: cmp.Or(c.maxTokens, openMaxTokens), Temperature: c.temperatureParam(), TopP: c.topP,
		StopSequences: c.stop, Stream: c.stream, Messages: make([]anthropicMessage, 0, len(c.messages))}
	var system []string
	for i := range c.messages {
		m := &c.messages[i]
		switch {
		case m.Role == "system":
			system = append(system, m.text())
		case m.Role == "tool":
			block := anthropicContent{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content}
			if n := len(r.Messages); n > 0 && i > 0 && c.messages[i-1].Role == "tool" {
				prev := &r.Messages[n-1]
				prev.Content = append(prev.Content.([]anthropicContent), block)
				continue
			}
			r.Messages = append(r.Messages, anthropicMessage{Role: "user", Content: []anthropicContent{block}})
		case len(m.Parts) == 0 && len(m.ToolCalls) == 0:
			r.Messages = append(r.Messages, anthropicMessage{Role: m.Role, Content: m.Content})
		default:
			r.Messages = append(r.Messages, anthropicMessage{Role: m.Role, Content: anthropicBlocks(m)})
		}
	}
	r.System = strings.Join(system, "\n\n")
	for _, t := range c.tools {
		schema := t.Parameters
		if schema == nil {
			schema = emptyObjectSchema
		}
		r.Tools = append(r.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if len(c.tools) > 0 {
		switch c.toolChoice.Mode {
		case ToolNone:
			r.ToolChoice = &anthropicToolChoice{Type: "none"}
		case ToolRequired:
			r.ToolChoice = &anthropicToolChoice{Type: "any"}
		case ToolNamed:
			r.ToolChoice = &anthropicToolChoice{Type: "tool", Name: c.toolChoice.Name}
		case ToolAuto:
			r.ToolChoice = &anthropicToolChoice{Type: "auto"}
		}
		if c.parallel != nil && !*c.parallel && c.toolChoice.Mode != ToolNone {
			if r.ToolChoice == nil {
				r.ToolChoice = &anthropicToolChoice{Type: "auto"}
			}
			r.ToolChoice.DisableParallelToolUse = true
		}
	}
	if name, schema, desc := anthropicJSONOutput(c); name != "" {
		r.Tools = []anthropicTool{{Name: name, Description: desc, InputSchema: schema}}
		r.ToolChoice = &anthropicToolChoice{Type: "tool", Name: name}
	}
	return r
}

// anthropicJSONOutput is the tool forced for c's JSON output (name "" when c asks for none):
// the schema's name and schema, or any object.
func anthropicJSONOutput(c *call) (name string, schema json.RawMessage, description string) {
	switch f := c.format; {
	case f == nil:
		return "", nil, ""
	case f.Type == "json_schema":
		name, schema = f.Name, f.Schema
		if name == "" {
			name = "json_output"
		}
		if schema == nil {
			schema = emptyObjectSchema
		}
		return name, schema, f.Description
	case f.Type == "json_object":
		return anthropicJSONTool, json.RawMessage(`{"type":"object"}`), "Answer with a JSON object."
	}
	return "", nil, ""
}

// anthropicBlocks is the content of m as blocks: its text and images, then its tool calls.
func anthropicBlocks(m *Message) []anthropicContent {
	var out []anthropicContent
	if len(m.Parts) == 0 && m.Content != "" {
		out = append(out, anthropicContent{Type: "text", Text: m.Content})
	}
	for _, p := range m.Parts {
		switch {
		case p.Image == nil:
			out = append(out, anthropicContent{Type: "text", Text: p.Text})
		case p.Image.Inline():
			out = append(out, anthropicContent{Type: "image", Source: &anthropicSource{Type: "base64", MediaType: p.Image.MediaType, Data: p.Image.Data}})
		default:
			out = append(out, anthropicContent{Type: "image", Source: &anthropicSource{Type: "url", URL: p.Image.URL}})
		}
	}
	for _, tc := range m.ToolCalls {
		input, _ := argumentsObject(tc.Arguments) // check refused the others
		out = append(out, anthropicContent{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
	}
	return out
}

// isObjectSchema reports whether schema is a JSON Schema of type "object".
func isObjectSchema(schema json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &s) == nil && s.Type == "object"
}

type anthropicResponse struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        *anthropicUsage  `json:"usage"`
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`    // tool_use
	Name  string          `json:"name"`  // tool_use
	Input json.RawMessage `json:"input"` // tool_use
}

type anthropicUsage struct {
	InputTokens              int64                   `json:"input_tokens"`
	OutputTokens             int64                   `json:"output_tokens"`
	CacheCreationInputTokens int64                   `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64                   `json:"cache_read_input_tokens"`
	CacheCreation            *anthropicCacheCreation `json:"cache_creation"`
}

// anthropicCacheCreation splits the cache writes by how long they are kept: those kept an hour
// cost more.
type anthropicCacheCreation struct {
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
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
	if u.CacheCreation != nil {
		if err := checkCounts("anthropic", u.CacheCreation.Ephemeral1h); err != nil {
			return err
		}
		res.cacheWrite1h = min(u.CacheCreation.Ephemeral1h, u.CacheCreationInputTokens)
	}
	return res.checkTotals("anthropic")
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

func (anthropic) parse(c *call, header http.Header, body []byte) (*result, error) {
	var r anthropicResponse
	if err := decodeAnswer("anthropic", body, &r); err != nil {
		return nil, err
	}
	if r.Type == "error" {
		return nil, malformed("anthropic answered with an error object")
	}
	if r.Content == nil { // a null body or no content at all; an empty list is an answer
		return nil, malformed("anthropic answered without content")
	}
	jsonTool, _, _ := anthropicJSONOutput(c)
	res := &result{model: r.Model, providerRequestID: r.ID, finishReason: anthropicFinish(r.StopReason)}
	if r.StopReason == "stop_sequence" && r.StopSequence != nil {
		res.stopSequence = *r.StopSequence
	}
	var text strings.Builder
	for _, b := range r.Content {
		switch {
		case b.Type == "text":
			text.WriteString(b.Text)
		case b.Type == "tool_use" && jsonTool != "" && b.Name == jsonTool:
			text.Write(b.Input) // the JSON answer asked for
			res.finishReason = "stop"
		case b.Type == "tool_use":
			if len(res.toolCalls) == maxToolCalls {
				return nil, malformed("anthropic answered with too many tool calls")
			}
			args := string(b.Input)
			if len(b.Input) == 0 {
				args = "{}"
			}
			res.toolCalls = append(res.toolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	res.text = text.String()
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
	u := &upstreamError{status: status, message: e.Error.Message, errType: e.Error.Type,
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
	Index        int `json:"index"` // content_block_*
	ContentBlock *struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"` // content_block_start
	Delta *struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		PartialJSON  string  `json:"partial_json"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"` // content_block_delta, message_delta
	Usage *struct {
		InputTokens              *int64                  `json:"input_tokens"`
		OutputTokens             *int64                  `json:"output_tokens"`
		CacheCreationInputTokens *int64                  `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64                  `json:"cache_read_input_tokens"`
		CacheCreation            *anthropicCacheCreation `json:"cache_creation"`
	} `json:"usage"` // message_delta: cumulative counts
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anthropicStream struct {
	res      result
	usage    anthropicUsage
	text     strings.Builder
	calls    toolCallBuilder
	blocks   map[int]int // a tool_use block's index: its call's
	jsonTool string      // the tool forced for a JSON answer ("" for none)
	jsonIdx  int         // its block's index (-1 until it starts)
}

func (anthropic) newStream(c *call, header http.Header) streamDecoder {
	name, _, _ := anthropicJSONOutput(c)
	return &anthropicStream{res: result{providerRequestID: header.Get("request-id")}, jsonTool: name, jsonIdx: -1}
}

func (s *anthropicStream) event(_ string, data []byte, out []Delta) ([]Delta, bool, error) {
	var e anthropicEvent
	if err := decodeAnswer("anthropic", data, &e); err != nil {
		return out, false, err
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			s.res.providerRequestID, s.res.model = e.Message.ID, e.Message.Model
			s.res.countsSoFar = true // the completion's final count comes in message_delta
			if e.Message.Usage != nil {
				s.usage = *e.Message.Usage
			}
		}
	case "content_block_start":
		if b := e.ContentBlock; b != nil && b.Type == "tool_use" {
			if s.jsonTool != "" && b.Name == s.jsonTool {
				s.jsonIdx = e.Index
				break
			}
			piece, err := s.calls.add(s.calls.next(), b.ID, b.Name, "")
			if err != nil {
				return out, false, err
			}
			if s.blocks == nil {
				s.blocks = map[int]int{}
			}
			s.blocks[e.Index] = piece.Index
			out = append(out, Delta{ToolCall: piece})
		}
	case "content_block_delta":
		switch d := e.Delta; {
		case d == nil:
		case d.Type == "text_delta" && d.Text != "":
			s.text.WriteString(d.Text)
			out = append(out, Delta{Text: d.Text})
		case d.Type == "input_json_delta" && d.PartialJSON != "" && e.Index == s.jsonIdx:
			s.text.WriteString(d.PartialJSON) // the JSON answer asked for, as text
			out = append(out, Delta{Text: d.PartialJSON})
		case d.Type == "input_json_delta" && d.PartialJSON != "":
			call, ok := s.blocks[e.Index]
			if !ok {
				return out, false, malformed("anthropic sent tool input for a block that is no tool call")
			}
			piece, err := s.calls.add(call, "", "", d.PartialJSON)
			if err != nil {
				return out, false, err
			}
			out = append(out, Delta{ToolCall: piece})
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			s.res.finishReason = anthropicFinish(e.Delta.StopReason)
			if e.Delta.StopReason == "stop_sequence" && e.Delta.StopSequence != nil {
				s.res.stopSequence = *e.Delta.StopSequence
			}
			if s.jsonIdx >= 0 && s.res.finishReason == "tool_calls" {
				s.res.finishReason = "stop"
			}
		}
		if u := e.Usage; u != nil {
			s.res.countsSoFar = s.res.countsSoFar && u.OutputTokens == nil
			for _, f := range []struct {
				from *int64
				to   *int64
			}{{u.InputTokens, &s.usage.InputTokens}, {u.OutputTokens, &s.usage.OutputTokens},
				{u.CacheCreationInputTokens, &s.usage.CacheCreationInputTokens}, {u.CacheReadInputTokens, &s.usage.CacheReadInputTokens}} {
				if f.from != nil {
					*f.to = *f.from
				}
			}
			if u.CacheCreation != nil {
				s.usage.CacheCreation = u.CacheCreation
			}
		}
	case "message_stop":
		return out, true, nil
	case "error":
		u := &upstreamError{status: http.StatusOK, message: "mid-stream error"}
		if e.Error != nil {
			u.message, u.errType = e.Error.Type+": "+e.Error.Message, e.Error.Type
		}
		return out, false, u
	}
	if e.Type == "message_start" || e.Type == "message_delta" {
		if err := s.usage.apply(&s.res); err != nil {
			return out, false, err
		}
	}
	return out, false, nil
}

func (s *anthropicStream) result() *result {
	s.res.text = s.text.String()
	s.res.toolCalls = s.calls.calls()
	for i := range s.res.toolCalls {
		if s.res.toolCalls[i].Arguments == "" {
			s.res.toolCalls[i].Arguments = "{}"
		}
	}
	return &s.res
}

func (s *anthropicStream) endsAtEOF() bool { return false }
