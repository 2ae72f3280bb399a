package ai

import (
	"encoding/json"
	"strconv"
)

// The one representation of a conversation every provider file converts to its wire format
// and back: messages of text, image parts, the assistant's tool calls and the tools' results,
// the tools offered, the tool choice and the answer's format.

// Message is one message of a conversation.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string `json:"role"`
	// Content is the message's text when Parts is empty.
	Content string `json:"content"`
	// Parts are the text and image parts of a user message, in order; when set, Content is
	// not used.
	Parts []Part `json:"-"`
	// ToolCalls are the tools an assistant message called.
	ToolCalls []ToolCall `json:"-"`
	// ToolCallID is, on a tool message, the id of the call it answers (Content is its result).
	ToolCallID string `json:"-"`
}

// Part is one part of a message's content: a text, or an image when Image is set.
type Part struct {
	Text  string
	Image *Image
}

// Image is an image part: inline data (a data: URL), or a URL the provider fetches.
type Image struct {
	// URL is the URL as the client sent it (a data: URL included).
	URL string
	// MediaType and Data (base64) are the inline data of a data: URL ("" for another URL).
	MediaType string
	Data      string
	// Detail is OpenAI's image detail (low, high, auto), "" when not given.
	Detail string
}

// Inline reports whether the image is inline data rather than a URL to fetch.
func (im *Image) Inline() bool { return im.Data != "" }

// ToolCall is one call of a tool by the assistant.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the call's arguments, a JSON text (an object for every provider but
	// OpenAI, which passes any text).
	Arguments string
}

// Tool is a function the assistant may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, as the client sent it (nil: none).
	Parameters json.RawMessage
	// Strict is OpenAI's strict flag (nil: not given).
	Strict *bool
}

// Tool choice modes: let the model choose, call no tool, call one of them, call the named one.
const (
	ToolAuto     = "auto"
	ToolNone     = "none"
	ToolRequired = "required"
	ToolNamed    = "function"
)

// ToolChoice is which tools the model may or must call; the zero value is the provider's
// default (auto when tools are offered).
type ToolChoice struct {
	Mode string // "", ToolAuto, ToolNone, ToolRequired or ToolNamed
	Name string // the tool, for ToolNamed
}

// ResponseFormat asks for the answer as JSON: any object (Type "json_object"), or one that
// matches Schema (Type "json_schema").
type ResponseFormat struct {
	Type        string
	Name        string
	Description string
	Schema      json.RawMessage
	Strict      *bool
}

// Delta is a piece of a streamed answer: text, or a piece of a tool call.
type Delta struct {
	Text     string
	Refusal  string // a piece of the model's refusal to answer (OpenAI), in place of text
	ToolCall *ToolCallDelta
	// PromptTokens, on the first delta only, are the prompt tokens the provider reported
	// before it (0 when it reports them at the end, as OpenAI does).
	PromptTokens int64
	// Model, on the first delta only, is the model the provider reported before it ("" when
	// it has not named one yet); the Completion carries its last word.
	Model string
}

// ToolCallDelta is a piece of the tool call numbered Index (from 0, in the order the calls
// start): its first piece carries the ID and Name, the following ones fragments of the
// Arguments text, which joined are the whole.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

func (d Delta) empty() bool { return d.Text == "" && d.ToolCall == nil }

// text is the message's text: Content, or its text parts joined.
func (m *Message) text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	n := 0
	for _, p := range m.Parts {
		if p.Image == nil {
			n += len(p.Text)
		}
	}
	b := make([]byte, 0, n)
	for _, p := range m.Parts {
		if p.Image == nil {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// imageWorstCase is what an image counts for in a call's worst-case cost, in prompt tokens:
// more than any provider bills for one image (Anthropic about 1,600, OpenAI's high detail
// about 1,100 for 1024², Gemini 258 a tile), far less than its bytes.
const imageWorstCase = 5000

// size is what the message sends, for a call's worst-case cost: the bytes of its text and tool
// calls (a token is at least a byte), and imageWorstCase per image.
func (m *Message) size() int {
	n, images := m.textSize()
	return n + images*imageWorstCase
}

// textSize returns the bytes of m's text (its content, text parts and tool calls) and how
// many images it holds.
func (m *Message) textSize() (bytes, images int) {
	bytes = len(m.Content)
	for _, p := range m.Parts {
		bytes += len(p.Text)
		if p.Image != nil {
			images++
		}
	}
	for _, c := range m.ToolCalls {
		bytes += len(c.Name) + len(c.Arguments)
	}
	return bytes, images
}

// hasContent reports whether the message carries something: a text, a part or a tool call.
func (m *Message) hasContent() bool {
	return m.Content != "" || len(m.Parts) > 0 || len(m.ToolCalls) > 0
}

// toolNames returns, by call id, the name of every tool call of the messages (a tool result
// names its tool for Gemini).
func toolNames(msgs []Message) map[string]string {
	var names map[string]string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if names == nil {
				names = map[string]string{}
			}
			names[c.ID] = c.Name
		}
	}
	return names
}

// argumentsObject returns a call's arguments as a JSON object ("{}" when empty); ok is false
// when they are not one.
func argumentsObject(args string) (json.RawMessage, bool) {
	if args == "" {
		return json.RawMessage("{}"), true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return nil, false
	}
	return json.RawMessage(args), true
}

// maxToolCalls bounds the tool calls one answer may make.
const maxToolCalls = 128

// toolCallBuilder joins the pieces of streamed tool calls.
type toolCallBuilder struct {
	list []ToolCall
	args [][]byte
}

// add notes a piece of call index (its id and name when the piece starts it, else "") and
// returns it as a delta. An index out of bounds is a malformed answer.
func (b *toolCallBuilder) add(index int, id, name, args string) (*ToolCallDelta, error) {
	if index < 0 || index >= maxToolCalls {
		return nil, malformed("the provider sent a tool call numbered " + strconv.Itoa(index))
	}
	for len(b.list) <= index {
		b.list = append(b.list, ToolCall{})
		b.args = append(b.args, nil)
	}
	c := &b.list[index]
	if id != "" {
		c.ID = id
	}
	if name != "" {
		c.Name = name
	}
	b.args[index] = append(b.args[index], args...)
	return &ToolCallDelta{Index: index, ID: id, Name: name, Arguments: args}, nil
}

// next is the index the next call started gets.
func (b *toolCallBuilder) next() int { return len(b.list) }

// calls returns the calls, whole.
func (b *toolCallBuilder) calls() []ToolCall {
	if len(b.list) == 0 {
		return nil
	}
	out := make([]ToolCall, len(b.list))
	for i, c := range b.list {
		c.Arguments = string(b.args[i])
		out[i] = c
	}
	return out
}
