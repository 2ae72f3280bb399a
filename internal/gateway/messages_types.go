package gateway

import "encoding/json"

// The shapes of Anthropic's Messages API the gateway answers, as the official SDKs read them.

// Message is Anthropic's `message` object, the answer of POST /v1/messages.
type Message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"` // "assistant"
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        MessageUsage   `json:"usage"`
}

// ContentBlock is a block of an answer: text, or a tool_use with its input object.
type ContentBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// MessageUsage is Anthropic's usage: input_tokens exclude the cache reads and writes.
type MessageUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// MessageEvent is one event of a streamed message; Type names the event and the fields it
// carries.
type MessageEvent struct {
	Type         string          `json:"type"`
	Message      *Message        `json:"message,omitempty"`       // message_start
	Index        *int            `json:"index,omitempty"`         // content_block_*
	ContentBlock *ContentBlock   `json:"content_block,omitempty"` // content_block_start
	Delta        any             `json:"delta,omitempty"`         // content_block_delta (*EventDelta), message_delta (*StopDelta)
	Usage        *MessageUsage   `json:"usage,omitempty"`         // message_delta: the final counts
	Error        *AnthropicError `json:"error,omitempty"`         // error
}

// EventDelta is the delta of a content_block_delta: text_delta or input_json_delta.
type EventDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

// StopDelta is the delta of a message_delta: why the message stopped, and the stop sequence
// met (null for another reason), both always present as Anthropic sends them.
type StopDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// AnthropicErrorBody is Anthropic's error answer: {"type": "error", "error": {type, message}}.
type AnthropicErrorBody struct {
	Type  string         `json:"type"` // "error"
	Error AnthropicError `json:"error"`
}

// AnthropicError is Anthropic's error object.
type AnthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
