package gateway

import "encoding/json"

// The shapes of OpenAI's Responses API the gateway answers, as the official SDKs read them.

// Response is OpenAI's `response` object, the answer of POST /v1/responses and the payload
// of its lifecycle events. The request's settings are echoed as OpenAI echoes them.
type Response struct {
	ID                 string             `json:"id"`     // resp_…
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"` // in_progress, completed, incomplete, failed
	CompletedAt        *int64             `json:"completed_at"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Store              bool               `json:"store"` // always false: nothing is stored
	Temperature        *float64           `json:"temperature"`
	Text               ResponseText       `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"` // "disabled"
	Usage              *ResponseUsage     `json:"usage"`
	User               *string            `json:"user,omitempty"`
	Metadata           json.RawMessage    `json:"metadata"`
}

// ResponseError is the error of a failed Response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails say why a Response is incomplete: max_output_tokens, content_filter.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseText is the Response's text settings: the format of its output text.
type ResponseText struct {
	Format json.RawMessage `json:"format"`
}

// OutputItem is an item of a Response's output: a `message` (Role, Content) or a
// `function_call` (CallID, Name, Arguments).
type OutputItem struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`   // message, function_call
	Status    string        `json:"status"` // in_progress, completed, incomplete
	Role      string        `json:"role,omitempty"`
	Content   []ContentPart `json:"content,omitempty"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments string        `json:"arguments,omitempty"`
}

// MarshalJSON writes a message's content as an array even when it is empty, and a function
// call's arguments even when they are "".
func (it OutputItem) MarshalJSON() ([]byte, error) {
	type plain OutputItem
	if it.Type == "message" {
		content := it.Content
		if content == nil {
			content = []ContentPart{}
		}
		return json.Marshal(struct {
			plain
			Content []ContentPart `json:"content"`
		}{plain(it), content})
	}
	return json.Marshal(struct {
		plain
		Arguments string `json:"arguments"`
	}{plain(it), it.Arguments})
}

// ContentPart is a part of an output message: output_text (Text, Annotations) or refusal.
type ContentPart struct {
	Type        string `json:"type"` // output_text, refusal
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Refusal     string `json:"refusal,omitempty"`
}

// MarshalJSON writes a refusal part as {type, refusal}, an output_text part as {type, text,
// annotations, logprobs}.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	if p.Type == "refusal" {
		return json.Marshal(struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{p.Type, p.Refusal})
	}
	type plain ContentPart
	if p.Annotations == nil {
		p.Annotations = []any{}
	}
	if p.Logprobs == nil {
		p.Logprobs = []any{}
	}
	return json.Marshal(plain(p))
}

// ResponseUsage is a Response's usage: cached tokens are a part of the input tokens,
// reasoning tokens a part of the output tokens.
type ResponseUsage struct {
	InputTokens         int64        `json:"input_tokens"`
	InputTokensDetails  PromptDetail `json:"input_tokens_details"`
	OutputTokens        int64        `json:"output_tokens"`
	OutputTokensDetails OutputDetail `json:"output_tokens_details"`
	TotalTokens         int64        `json:"total_tokens"`
}

// ResponseEvent is one event of a streamed Response; Type names the event and the fields it
// carries, SequenceNumber numbers the events of a stream from 0.
type ResponseEvent struct {
	Type           string       `json:"type"`
	SequenceNumber int          `json:"sequence_number"`
	Response       *Response    `json:"response,omitempty"`      // response.created, …, response.completed
	OutputIndex    *int         `json:"output_index,omitempty"`  // the item's index in output
	ItemID         string       `json:"item_id,omitempty"`       // deltas and done events of an item
	ContentIndex   *int         `json:"content_index,omitempty"` // the part's index in the item's content
	Item           *OutputItem  `json:"item,omitempty"`          // response.output_item.added / .done
	Part           *ContentPart `json:"part,omitempty"`          // response.content_part.added / .done
	Delta          *string      `json:"delta,omitempty"`         // text, refusal and arguments deltas
	Text           *string      `json:"text,omitempty"`          // response.output_text.done
	Refusal        *string      `json:"refusal,omitempty"`       // response.refusal.done
	Name           string       `json:"name,omitempty"`          // response.function_call_arguments.done
	Arguments      *string      `json:"arguments,omitempty"`     // response.function_call_arguments.done
	Code           *string      `json:"code,omitempty"`          // error
	Message        string       `json:"message,omitempty"`       // error
	Param          *string      `json:"param,omitempty"`         // error
}
