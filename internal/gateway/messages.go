package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/validate"
)

// Anthropic's Messages API (POST /v1/messages) on top of the AI service: the request is read
// into the service's conversation, routed by its model like a chat completion (anthropic/…,
// openai/…, gemini/… or a bare name), and the answer is written as Anthropic's message or
// its event stream, whichever provider answered.

// messagesAccepted are the parameters of a Messages request the gateway honours; metadata is
// read and not forwarded (it only tags the request for Anthropic's abuse detection).
var messagesAccepted = map[string]bool{
	"model": true, "max_tokens": true, "messages": true, "system": true, "tools": true, "tool_choice": true,
	"stream": true, "temperature": true, "top_p": true, "stop_sequences": true, "metadata": true,
}

// ParseMessages reads a Messages request. Anything the gateway cannot honour is an Invalid
// *apperr.Error naming the parameter.
func (s *Service) ParseMessages(body []byte) (*Request, error) { return s.parseMessages(body, false) }

// ParseCountTokens reads a token-count request (POST /v1/messages/count_tokens): a Messages
// request whose max_tokens is not required (nor used); its errors are ParseMessages'.
func (s *Service) ParseCountTokens(body []byte) (*Request, error) { return s.parseMessages(body, true) }

// parseMessages is ParseMessages; count leaves max_tokens optional.
func (s *Service) parseMessages(body []byte, count bool) (*Request, error) {
	var fields chatRequest
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, invalid("", "", "The request body is not one JSON object.")
	}
	for name, raw := range fields {
		if !messagesAccepted[name] && !validate.IsNull(raw) {
			return nil, unsupported(name, "is not supported by this gateway.")
		}
	}
	req := &Request{}
	if err := s.route(fields, req); err != nil {
		return nil, err
	}
	in := &req.Input
	in.SystemAllowed, in.ProviderDefaults = true, true
	if validate.IsNull(fields["max_tokens"]) && !count {
		return nil, invalid("max_tokens", "", "max_tokens: Field required")
	}
	var err error
	if in.MaxTokens, err = maxTokens(chatRequest{"max_tokens": fields["max_tokens"]}); err != nil {
		return nil, err
	}
	if in.Temperature, err = number(fields, "temperature", 0, 1); err != nil {
		return nil, err
	}
	if in.TopP, err = number(fields, "top_p", 0, 1); err != nil {
		return nil, err
	}
	if raw := fields["stop_sequences"]; !validate.IsNull(raw) {
		if json.Unmarshal(raw, &in.Stop) != nil {
			return nil, invalid("stop_sequences", "invalid_type", "stop_sequences: Input should be a list of strings")
		}
	}
	if raw := fields["stream"]; !validate.IsNull(raw) && json.Unmarshal(raw, &req.Stream) != nil {
		return nil, invalid("stream", "invalid_type", "stream: Input should be a valid boolean")
	}
	if raw := fields["metadata"]; !validate.IsNull(raw) && !isObject(raw) {
		return nil, invalid("metadata", "invalid_type", "metadata: Input should be an object")
	}
	if in.Messages, err = s.anthropicMessages(fields["system"], fields["messages"]); err != nil {
		return nil, err
	}
	if raw := fields["tools"]; !validate.IsNull(raw) {
		if in.Tools, err = anthropicTools(raw); err != nil {
			return nil, err
		}
	}
	if raw := fields["tool_choice"]; !validate.IsNull(raw) {
		if err := anthropicToolChoice(raw, in); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// anthropicMessages reads `system` (a string or text blocks) and `messages` into the
// conversation: a user message's tool_result blocks become tool messages, its other blocks a
// user message after them; an assistant's tool_use blocks become its tool calls.
func (s *Service) anthropicMessages(system, raw json.RawMessage) ([]ai.Message, error) {
	var out []ai.Message
	if !validate.IsNull(system) {
		text, err := blocksText("system", system)
		if err != nil {
			return nil, err
		}
		out = append(out, ai.Message{Role: "system", Content: text})
	}
	if validate.IsNull(raw) {
		return nil, invalid("messages", "", "messages: Field required")
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return nil, invalid("messages", "invalid_type", "messages: Input should be a list of {role, content}")
	}
	if len(items) == 0 {
		return nil, invalid("messages", "", "messages: at least one message is required")
	}
	for i, item := range items {
		at := fmt.Sprintf("messages.%d", i)
		if item.Role != "user" && item.Role != "assistant" {
			return nil, invalid(at+".role", "invalid_value", "%s.role: Input should be 'user' or 'assistant'", at)
		}
		var text string
		if json.Unmarshal(item.Content, &text) == nil {
			out = append(out, ai.Message{Role: item.Role, Content: text})
			continue
		}
		var blocks []json.RawMessage
		if json.Unmarshal(item.Content, &blocks) != nil {
			return nil, invalid(at+".content", "invalid_type", "%s.content: Input should be a string or a list of content blocks", at)
		}
		msg := ai.Message{Role: item.Role}
		for j, raw := range blocks {
			bat := fmt.Sprintf("%s.content.%d", at, j)
			if err := s.anthropicBlock(bat, raw, &msg, &out); err != nil {
				return nil, err
			}
		}
		if msg.Content != "" || len(msg.Parts) > 0 || len(msg.ToolCalls) > 0 {
			out = append(out, msg)
		}
	}
	return out, nil
}

// anthropicBlock reads one content block at `at` into msg, or, a tool_result, into out as a
// tool message.
func (s *Service) anthropicBlock(at string, raw json.RawMessage, msg *ai.Message, out *[]ai.Message) error {
	var b struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text"`
		Source    json.RawMessage `json:"source"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return invalid(at, "invalid_type", "%s: Input should be a content block object", at)
	}
	if err := onlyFields(at, raw, blockFields[b.Type]...); err != nil {
		return err
	}
	switch {
	case b.Type == "text" && b.Text != nil:
		if len(msg.Parts) > 0 {
			msg.Parts = append(msg.Parts, ai.Part{Text: *b.Text})
		} else {
			msg.Content += *b.Text
		}
	case b.Type == "image" && msg.Role == "user":
		im, err := s.anthropicImage(at+".source", b.Source)
		if err != nil {
			return err
		}
		if len(msg.Parts) == 0 && msg.Content != "" {
			msg.Parts = append(msg.Parts, ai.Part{Text: msg.Content})
			msg.Content = ""
		}
		msg.Parts = append(msg.Parts, ai.Part{Image: im})
	case b.Type == "tool_use" && msg.Role == "assistant":
		if b.ID == "" || b.Name == "" {
			return invalid(at, "", "%s: a tool_use block needs an id and a name", at)
		}
		input := "{}"
		if !validate.IsNull(b.Input) {
			if !isObject(b.Input) {
				return invalid(at+".input", "invalid_type", "%s.input: Input should be an object", at)
			}
			input = string(b.Input)
		}
		msg.ToolCalls = append(msg.ToolCalls, ai.ToolCall{ID: b.ID, Name: b.Name, Arguments: input})
	case b.Type == "tool_result" && msg.Role == "user":
		if b.ToolUseID == "" {
			return invalid(at+".tool_use_id", "", "%s.tool_use_id: Field required", at)
		}
		text := ""
		if !validate.IsNull(b.Content) {
			var err error
			if text, err = blocksText(at+".content", b.Content); err != nil {
				return err
			}
		}
		if b.IsError && !strings.HasPrefix(text, "Error") {
			text = "Error: " + text
		}
		*out = append(*out, ai.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
	default:
		return unsupported(at+".type", fmt.Sprintf("a %q block is not supported in a %s message by this gateway.", b.Type, msg.Role))
	}
	return nil
}

// blockFields are the fields read of each content block type.
var blockFields = map[string][]string{
	"text":        {"type", "text"},
	"image":       {"type", "source"},
	"tool_use":    {"type", "id", "name", "input"},
	"tool_result": {"type", "tool_use_id", "content", "is_error"},
}

// anthropicImage reads an image block's source: base64 data, or a URL.
func (s *Service) anthropicImage(at string, raw json.RawMessage) (*ai.Image, error) {
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if json.Unmarshal(raw, &src) != nil {
		return nil, invalid(at, "invalid_type", "%s: Input should be an image source object", at)
	}
	switch src.Type {
	case "base64":
		if err := onlyFields(at, raw, "type", "media_type", "data"); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(src.MediaType, "image/") || src.Data == "" {
			return nil, invalid(at, "invalid_value", "%s: a base64 source needs an image media_type and data", at)
		}
		// A too-large image is refused naming source.data, where the client put it.
		return dataImage(at, "data:"+src.MediaType+";base64,"+src.Data, s.maxImage, at+".data")
	case "url":
		if err := onlyFields(at, raw, "type", "url"); err != nil {
			return nil, err
		}
		return imagePart(at, json.RawMessage(fmt.Sprintf(`{"url":%q}`, src.URL)), s.maxImage)
	}
	return nil, unsupported(at+".type", "only base64 and url image sources are supported by this gateway.")
}

// blocksText reads a string, or a list of text blocks joined.
func blocksText(at string, raw json.RawMessage) (string, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	var raws []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil || json.Unmarshal(raw, &raws) != nil {
		return "", invalid(at, "invalid_type", "%s: Input should be a string or a list of text blocks", at)
	}
	var b strings.Builder
	for j, blk := range blocks {
		if blk.Type != "text" || blk.Text == nil {
			return "", unsupported(fmt.Sprintf("%s.%d.type", at, j), "only text blocks are supported here by this gateway.")
		}
		if err := onlyFields(fmt.Sprintf("%s.%d", at, j), raws[j], "type", "text"); err != nil {
			return "", err
		}
		b.WriteString(*blk.Text)
	}
	return b.String(), nil
}

// anthropicTools reads `tools`: custom tools {name, description, input_schema}.
func anthropicTools(raw json.RawMessage) ([]ai.Tool, error) {
	var items []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	var raws []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || json.Unmarshal(raw, &raws) != nil {
		return nil, invalid("tools", "invalid_type", "tools: Input should be a list of tools")
	}
	if len(items) > MaxTools {
		return nil, invalid("tools", "", "tools: at most %d tools", MaxTools)
	}
	out := make([]ai.Tool, len(items))
	for i, t := range items {
		at := fmt.Sprintf("tools.%d", i)
		if t.Type != "" && t.Type != "custom" {
			return nil, unsupported(at+".type", fmt.Sprintf("the server tool %q is not supported by this gateway (custom tools only).", t.Type))
		}
		if err := onlyFields(at, raws[i], "type", "name", "description", "input_schema"); err != nil {
			return nil, err
		}
		switch {
		case !toolName.MatchString(t.Name):
			return nil, invalid(at+".name", "invalid_value", "%s.name: expected 1 to 64 letters, digits, underscores or dashes", at)
		case !isObject(t.InputSchema):
			return nil, invalid(at+".input_schema", "", "%s.input_schema: Field required (a JSON Schema object)", at)
		}
		out[i] = ai.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}
	}
	return out, nil
}

// anthropicToolChoice reads `tool_choice`: {type: auto | any | tool (with name) | none,
// disable_parallel_tool_use?}.
func anthropicToolChoice(raw json.RawMessage, in *ai.ChatInput) error {
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return invalid("tool_choice", "invalid_type", "tool_choice: Input should be an object")
	}
	switch c.Type {
	case "auto":
		in.ToolChoice = ai.ToolChoice{Mode: ai.ToolAuto}
	case "any":
		in.ToolChoice = ai.ToolChoice{Mode: ai.ToolRequired}
	case "none":
		in.ToolChoice = ai.ToolChoice{Mode: ai.ToolNone}
	case "tool":
		found := false
		for _, t := range in.Tools {
			found = found || t.Name == c.Name
		}
		if !found {
			return invalid("tool_choice.name", "invalid_value", "tool_choice.name: no tool named %q is in tools", c.Name)
		}
		in.ToolChoice = ai.ToolChoice{Mode: ai.ToolNamed, Name: c.Name}
	default:
		return invalid("tool_choice.type", "invalid_value", "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
	}
	if c.DisableParallelToolUse {
		no := false
		in.ParallelToolCalls = &no
	}
	return nil
}

// CompleteMessage answers a non-streamed Messages request.
func (s *Service) CompleteMessage(ctx context.Context, userID string, req *Request) (*Message, error) {
	c, err := s.ai.Complete(ctx, userID, req.Provider, req.Input)
	if err != nil {
		return nil, err
	}
	reason, seq := stopOf(c)
	m := &Message{ID: messageID(c.RequestID), Type: "message", Role: "assistant", Model: s.answerModel(req, c.Model),
		Content: make([]ContentBlock, 0, 1+len(c.ToolCalls)), StopReason: reason, StopSequence: seq, Usage: messageUsage(c)}
	if text := c.Text + c.Refusal; text != "" { // a refusal is Anthropic's text, stop_reason refusal
		m.Content = append(m.Content, ContentBlock{Type: "text", Text: &text})
	}
	for _, tc := range c.ToolCalls {
		m.Content = append(m.Content, ContentBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)})
	}
	return m, nil
}

// TokenCount is Anthropic's answer to POST /v1/messages/count_tokens.
type TokenCount struct {
	InputTokens int64 `json:"input_tokens"`
}

// CountMessageTokens answers a token-count request with the count of the model's provider
// (Anthropic's count_tokens, Gemini's countTokens). A count is not recorded and costs no
// budget. A model of a provider without a counting endpoint (OpenAI) is Invalid, naming the
// parameter model; the other errors are the AI service's.
func (s *Service) CountMessageTokens(ctx context.Context, req *Request) (*TokenCount, error) {
	if !ai.CountsTokens(req.Provider) {
		names := ai.TokenCounters()
		for i, n := range names {
			names[i] = n + "/…"
		}
		models := strings.Join(names, " or ")
		article := "a"
		if models != "" && strings.ContainsRune("aeiou", rune(models[0])) {
			article = "an"
		}
		return nil, &apperr.Error{Kind: apperr.Invalid, Param: "model", Code: "model_not_supported", Messages: []string{fmt.Sprintf(
			"Token counting is not available for the model '%s': %s has no token counting endpoint; count with %s %s model.",
			req.Model, req.Provider, article, models)}}
	}
	tc, ok := s.ai.(TokenCounter)
	if !ok {
		return nil, apperr.E(apperr.Unavailable, "token counting is not served here")
	}
	n, err := tc.CountTokens(ctx, req.Provider, req.Input)
	if err != nil {
		return nil, err
	}
	return &TokenCount{InputTokens: n}, nil
}

// StreamMessage answers a streamed Messages request as Anthropic streams it: message_start
// and a ping before the first piece, a content block per text run and per tool call
// (content_block_start, its deltas, content_block_stop), then message_delta with the stop
// reason and the final usage, and message_stop. emit receives each event; an error before
// its first call means nothing was sent.
func (s *Service) StreamMessage(ctx context.Context, userID string, req *Request, emit func(*MessageEvent) error) error {
	st := messageStream{emit: emit, id: messageID(req.Input.RequestID), block: -1, kind: "",
		model: func(reported string) string { return s.answerModel(req, reported) }}
	c, err := s.ai.Stream(ctx, userID, req.Provider, req.Input, st.delta)
	if err != nil {
		return err
	}
	if err := st.start(c.Usage.PromptTokens-c.CachedTokens-c.CacheWriteTokens, c.Model); err != nil {
		return err
	}
	if err := st.closeBlock(); err != nil {
		return err
	}
	u := messageUsage(c)
	reason, seq := stopOf(c)
	if err := emit(&MessageEvent{Type: "message_delta", Delta: &StopDelta{StopReason: reason, StopSequence: seq}, Usage: &u}); err != nil {
		return err
	}
	return emit(&MessageEvent{Type: "message_stop"})
}

// messageStream turns the AI service's deltas into Anthropic's events.
type messageStream struct {
	emit    func(*MessageEvent) error
	id      string
	model   func(reported string) string // the answer's model for the model the provider reported
	started bool
	block   int    // the open block's index (-1: none)
	kind    string // the open block's type: text, tool_use
	tool    int    // the open tool_use block's call index
	args    []byte // the open tool_use block's arguments so far

	// Anthropic streams one block after another; OpenAI may interleave the fragments of
	// parallel calls. A call that starts while the open one's arguments are still incomplete
	// JSON is held here, in order, and sent whole once the open block closes.
	held    []*heldCall
	heldIdx map[int]*heldCall
	closed  map[int]bool // the calls whose block is closed
}

// heldCall is a tool call held back while another call's block is open.
type heldCall struct {
	id, name string
	args     strings.Builder
}

// start sends message_start, naming the model the provider reported (reported), and a ping,
// once.
func (m *messageStream) start(inputTokens int64, reported string) error {
	if m.started {
		return nil
	}
	m.started = true
	msg := &Message{ID: m.id, Type: "message", Role: "assistant", Model: m.model(reported), Content: []ContentBlock{},
		Usage: MessageUsage{InputTokens: max(inputTokens, 0)}}
	if err := m.emit(&MessageEvent{Type: "message_start", Message: msg}); err != nil {
		return err
	}
	return m.emit(&MessageEvent{Type: "ping"})
}

func (m *messageStream) delta(d ai.Delta) error {
	if err := m.start(d.PromptTokens, d.Model); err != nil {
		return err
	}
	switch tc := d.ToolCall; {
	case tc != nil && m.kind == "tool_use" && m.tool == tc.Index:
		return m.toolDelta(tc.Arguments)
	case tc != nil && m.heldIdx[tc.Index] != nil:
		h := m.heldIdx[tc.Index]
		h.id, h.name = cmp.Or(h.id, tc.ID), cmp.Or(h.name, tc.Name)
		h.args.WriteString(tc.Arguments)
		return nil
	case tc != nil && m.closed[tc.Index]:
		// A fragment of a call whose arguments were already a whole JSON value: nothing valid
		// can follow them (whitespace at most), and its block is closed.
		return nil
	case tc != nil && (len(m.held) > 0 || m.kind == "tool_use" && !json.Valid(m.args)):
		h := &heldCall{id: tc.ID, name: tc.Name}
		h.args.WriteString(tc.Arguments)
		if m.heldIdx == nil {
			m.heldIdx = map[int]*heldCall{}
		}
		m.held, m.heldIdx[tc.Index] = append(m.held, h), h
		return nil
	case tc != nil:
		if err := m.closeBlock(); err != nil {
			return err
		}
		return m.toolBlock(tc.Index, tc.ID, tc.Name, tc.Arguments)
	case d.Text != "" || d.Refusal != "":
		text := d.Text + d.Refusal
		if m.kind != "text" {
			if err := m.closeBlock(); err != nil {
				return err
			}
			m.block, m.kind = m.block+1, "text"
			idx, empty := m.block, ""
			if err := m.emit(&MessageEvent{Type: "content_block_start", Index: &idx, ContentBlock: &ContentBlock{Type: "text", Text: &empty}}); err != nil {
				return err
			}
		}
		idx := m.block
		return m.emit(&MessageEvent{Type: "content_block_delta", Index: &idx, Delta: &EventDelta{Type: "text_delta", Text: &text}})
	}
	return nil
}

// toolBlock opens the tool_use block of call index, with its first arguments.
func (m *messageStream) toolBlock(index int, id, name, args string) error {
	m.block, m.kind, m.tool, m.args = m.block+1, "tool_use", index, m.args[:0]
	idx := m.block
	if err := m.emit(&MessageEvent{Type: "content_block_start", Index: &idx,
		ContentBlock: &ContentBlock{Type: "tool_use", ID: id, Name: name, Input: json.RawMessage("{}")}}); err != nil {
		return err
	}
	return m.toolDelta(args)
}

func (m *messageStream) toolDelta(args string) error {
	if args == "" {
		return nil
	}
	m.args = append(m.args, args...)
	idx := m.block
	return m.emit(&MessageEvent{Type: "content_block_delta", Index: &idx, Delta: &EventDelta{Type: "input_json_delta", PartialJSON: &args}})
}

// closeBlock closes the open block, then sends the calls held meanwhile, each whole.
func (m *messageStream) closeBlock() error {
	if m.kind == "" {
		return nil
	}
	if m.kind == "tool_use" {
		if m.closed == nil {
			m.closed = map[int]bool{}
		}
		m.closed[m.tool] = true
	}
	m.kind = ""
	idx := m.block
	if err := m.emit(&MessageEvent{Type: "content_block_stop", Index: &idx}); err != nil {
		return err
	}
	held := m.held
	m.held = nil
	for index := range m.heldIdx {
		delete(m.heldIdx, index)
		m.closed[index] = true
	}
	for _, h := range held {
		if err := m.toolBlock(-1, h.id, h.name, h.args.String()); err != nil {
			return err
		}
		m.kind = ""
		idx := m.block
		if err := m.emit(&MessageEvent{Type: "content_block_stop", Index: &idx}); err != nil {
			return err
		}
	}
	return nil
}

// messageID is the answer's id: msg_ and the request id.
func messageID(requestID string) string { return "msg_" + strings.ReplaceAll(requestID, "-", "") }

// stopOf is the stop_reason and stop_sequence of c: the stop sequence the provider met (only
// Anthropic names it), or the reason of its finish_reason (stop_sequence null).
func stopOf(c *ai.Completion) (reason, sequence *string) {
	if c.StopSequence != "" {
		r, seq := "stop_sequence", c.StopSequence
		return &r, &seq
	}
	r := "end_turn"
	if c.Refusal != "" {
		r = "refusal"
		return &r, nil
	}
	switch c.FinishReason {
	case "length":
		r = "max_tokens"
	case "tool_calls":
		r = "tool_use"
	case "content_filter":
		r = "refusal"
	}
	return &r, nil
}

// messageUsage is c's usage in Anthropic's terms: input tokens without the cache's.
func messageUsage(c *ai.Completion) MessageUsage {
	return MessageUsage{InputTokens: max(c.Usage.PromptTokens-c.CachedTokens-c.CacheWriteTokens, 0), OutputTokens: c.Usage.CompletionTokens,
		CacheReadInputTokens: c.CachedTokens, CacheCreationInputTokens: c.CacheWriteTokens}
}

// toolInput is a tool call's arguments as a tool_use input, which must be an object: the
// arguments when they are one, else {"arguments": the text} (a provider that sends other
// JSON, or none).
func toolInput(args string) json.RawMessage {
	if isObject(json.RawMessage(args)) {
		return json.RawMessage(args)
	}
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}")
	}
	b, _ := json.Marshal(map[string]string{"arguments": args})
	return b
}

// anthropicErrorTypes are the error types of Anthropic's API.
var anthropicErrorTypes = map[string]bool{"invalid_request_error": true, "authentication_error": true,
	"permission_error": true, "not_found_error": true, "request_too_large": true, "rate_limit_error": true,
	"api_error": true, "overloaded_error": true, "billing_error": true, "timeout_error": true}

// anthropicTypeOf is the Anthropic error type that says what another provider's error type
// says: Gemini's UNAVAILABLE (its 503, overloaded) and RESOURCE_EXHAUSTED (its 429, a rate or
// quota limit), OpenAI's rate_limit_exceeded (the type of a rate limit in its stream) and
// server_error.
var anthropicTypeOf = map[string]string{"UNAVAILABLE": "overloaded_error", "RESOURCE_EXHAUSTED": "rate_limit_error",
	"rate_limit_exceeded": "rate_limit_error", "server_error": "api_error"}

// AnthropicErrorOf is err as Anthropic's error answer: its status and body. Budgets spent
// are billing_error (402), timeouts timeout_error (504), a request refused for the server's
// bound on buffered bytes (code memlimit.Overloaded) overloaded_error (503). A provider's
// failure that came with one of Anthropic's error types (upstreamType: in its error answer or
// an error event of its stream: overloaded_error) keeps that type, and one that came with
// another provider's type that has an equivalent (anthropicTypeOf: Gemini's UNAVAILABLE) gets
// it; the status stays the kind's (502).
func AnthropicErrorOf(status int, kind apperr.Kind, code, upstreamType, message string) (int, AnthropicErrorBody) {
	typ := "api_error"
	switch {
	case kind == apperr.Upstream && anthropicErrorTypes[upstreamType]:
		typ = upstreamType
	case kind == apperr.Upstream && anthropicTypeOf[upstreamType] != "":
		typ = anthropicTypeOf[upstreamType]
	case kind == apperr.PaymentRequired:
		typ = "billing_error"
	case kind == apperr.UpstreamTimeout:
		typ = "timeout_error"
	case kind == apperr.Unavailable && code == memlimit.Overloaded:
		typ = "overloaded_error"
	case status == 400 || status == 422:
		typ, status = "invalid_request_error", 400
	case status == 401:
		typ = "authentication_error"
	case status == 403:
		typ = "permission_error"
	case status == 404 || status == 405:
		typ = "not_found_error"
	case status == 413:
		typ = "request_too_large"
	case status == 429:
		typ = "rate_limit_error"
	}
	return status, AnthropicErrorBody{Type: "error", Error: AnthropicError{Type: typ, Message: message}}
}
