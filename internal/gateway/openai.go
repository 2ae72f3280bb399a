package gateway

// The OpenAI chat-completions shapes the gateway answers, as the official SDKs read them.

// ChatCompletion is OpenAI's `chat.completion` object.
type ChatCompletion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"` // "chat.completion"
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage"`
}

// Choice is one choice of a completion.
type Choice struct {
	Index        int           `json:"index"`
	Message      AnswerMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
	Logprobs     *struct{}     `json:"logprobs"`
}

// AnswerMessage is the assistant's message of a choice: its text (null when it only calls
// tools) and its tool calls.
type AnswerMessage struct {
	Role      string     `json:"role"` // "assistant"
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one call of a function tool in an answer.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a tool call calls, its arguments a JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is OpenAI's usage object: cached tokens are a part of the prompt tokens, reasoning
// tokens a part of the completion tokens.
type Usage struct {
	PromptTokens            int64        `json:"prompt_tokens"`
	CompletionTokens        int64        `json:"completion_tokens"`
	TotalTokens             int64        `json:"total_tokens"`
	PromptTokensDetails     PromptDetail `json:"prompt_tokens_details"`
	CompletionTokensDetails OutputDetail `json:"completion_tokens_details"`
}

// PromptDetail breaks the prompt tokens down.
type PromptDetail struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputDetail breaks the completion tokens down.
type OutputDetail struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// Chunk is OpenAI's `chat.completion.chunk`, one event of a streamed answer.
type Chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage"`
}

// ChunkChoice is the one choice of a chunk.
type ChunkChoice struct {
	Index        int       `json:"index"`
	Delta        Delta     `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

// Delta is a piece of the assistant's message: text, or a piece of a tool call.
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	Refusal   string          `json:"refusal,omitempty"`
	ToolCalls []DeltaToolCall `json:"tool_calls,omitempty"`
}

// DeltaToolCall is a piece of the tool call numbered Index: the first carries its id, type
// and name, the following ones fragments of its arguments.
type DeltaToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function DeltaFunction `json:"function"`
}

// DeltaFunction is a piece of a tool call's function.
type DeltaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ModelList is OpenAI's answer to GET /v1/models.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

// Model is one model of the list, its id in the provider/model form.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ErrorBody is OpenAI's error answer: {"error": {message, type, param, code}}.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is OpenAI's error object. Param and Code are null when there is none.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
