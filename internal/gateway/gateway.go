// Package gateway speaks OpenAI's chat-completions dialect on top of the AI service, so that
// code written against the official OpenAI SDKs only changes its base URL: it reads OpenAI's
// request, routes the model to a provider, and answers OpenAI's chat.completion, its streamed
// chat.completion.chunk events and its model list. Cost, recording, rate limits and budgets
// are the AI service's, the same as on /api/ai/*.
package gateway

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
)

// Completer is the AI service as the gateway uses it.
type Completer interface {
	Complete(ctx context.Context, userID, provider string, in ai.ChatInput) (*ai.Completion, error)
	Stream(ctx context.Context, userID, provider string, in ai.ChatInput, onDelta func(ai.Delta) error) (*ai.Completion, error)
}

// TokenCounter is the AI service's token counting, as the gateway uses it. The Completer
// given as Options.AI counts when it implements TokenCounter (*ai.Service does).
type TokenCounter interface {
	CountTokens(ctx context.Context, provider string, in ai.ChatInput) (int64, error)
}

// Options configure the service.
type Options struct {
	AI     Completer
	Prices *ai.Prices // routes bare model names and lists models
	// Providers are the configured providers (those with an API key) and their default
	// models: /v1/models lists only their models.
	Providers map[string]string
	// MaxImageBytes is ai.max_image_bytes: the largest inline image, decoded (0: 20 MB).
	MaxImageBytes int64
	Now           func() time.Time // nil: time.Now
}

// DefaultMaxImageBytes is the largest inline image when Options.MaxImageBytes is 0.
const DefaultMaxImageBytes = 20 << 20

// Service answers the OpenAI-compatible endpoints.
type Service struct {
	ai       Completer
	prices   *ai.Prices
	models   ModelList
	maxImage int64
	now      func() time.Time
}

// New returns the service.
func New(opts Options) *Service {
	s := &Service{ai: opts.AI, prices: opts.Prices, maxImage: opts.MaxImageBytes, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxImage <= 0 {
		s.maxImage = DefaultMaxImageBytes
	}
	s.models = ModelList{Object: "list", Data: []Model{}}
	created := s.now().Unix()
	for _, p := range ai.Providers() {
		def, ok := opts.Providers[p]
		if !ok {
			continue
		}
		names := s.prices.Models(p)
		if def != "" && !slices.Contains(names, def) {
			names = append([]string{def}, names...)
		}
		for _, m := range names {
			s.models.Data = append(s.models.Data, Model{ID: p + "/" + m, Object: "model", Created: created, OwnedBy: p})
		}
	}
	return s
}

// Models returns the models of the configured providers.
func (s *Service) Models() ModelList { return s.models }

// Model returns one model of the list by its id; an unknown one is NotFound (param model,
// code model_not_found).
func (s *Service) Model(id string) (Model, error) {
	for _, m := range s.models.Data {
		if m.ID == id {
			return m, nil
		}
	}
	return Model{}, &apperr.Error{Kind: apperr.NotFound, Messages: []string{"The model '" + id + "' does not exist or is not served here."},
		Param: "model", Code: "model_not_found"}
}

// Complete answers a non-streamed request. Errors are the AI service's (apperr kinds), the
// parameter they name as this request names it.
func (s *Service) Complete(ctx context.Context, userID string, req *Request) (*ChatCompletion, error) {
	c, err := s.ai.Complete(ctx, userID, req.Provider, req.Input)
	if err != nil {
		return nil, openAIParam(err)
	}
	return &ChatCompletion{
		ID: completionID(c.RequestID), Object: "chat.completion", Created: s.now().Unix(), Model: s.answerModel(req, c.Model),
		Choices: []Choice{{Message: answerMessage(c), FinishReason: finish(c)}},
		Usage:   usageOf(c),
	}, nil
}

// answerMessage is the assistant's message of c: its text (null beside tool calls or a
// refusal when there is none), its refusal and its tool calls.
func answerMessage(c *ai.Completion) AnswerMessage {
	m := AnswerMessage{Role: "assistant"}
	if c.Text != "" || len(c.ToolCalls) == 0 && c.Refusal == "" {
		m.Content = &c.Text
	}
	if c.Refusal != "" {
		m.Refusal = &c.Refusal
	}
	if len(c.ToolCalls) > 0 {
		m.ToolCalls = make([]ToolCall, len(c.ToolCalls))
		for i, tc := range c.ToolCalls {
			m.ToolCalls[i] = ToolCall{ID: tc.ID, Type: "function", Function: FunctionCall{Name: tc.Name, Arguments: tc.Arguments}}
		}
	}
	return m
}

// Stream answers a streamed request: emit receives each chunk as it is ready, the assistant's
// role with the first piece, the finish reason last, then the usage chunk when asked for.
// An error before emit was first called means nothing was sent. Errors are Complete's.
func (s *Service) Stream(ctx context.Context, userID string, req *Request, emit func(*Chunk) error) error {
	chunk := &Chunk{ID: completionID(req.Input.RequestID), Object: "chat.completion.chunk", Created: s.now().Unix(),
		Model: req.Model, Choices: make([]ChunkChoice, 1)}
	first := true
	piece := make([]DeltaToolCall, 1)
	c, err := s.ai.Stream(ctx, userID, req.Provider, req.Input, func(d ai.Delta) error {
		chunk.Choices[0].Delta = Delta{Content: d.Text, Refusal: d.Refusal}
		if tc := d.ToolCall; tc != nil {
			// The first piece of a call carries its id, type and name; the others a fragment
			// of its arguments, as OpenAI streams them.
			piece[0] = DeltaToolCall{Index: tc.Index, ID: tc.ID, Function: DeltaFunction{Name: tc.Name, Arguments: tc.Arguments}}
			if tc.ID != "" {
				piece[0].Type = "function"
			}
			chunk.Choices[0].Delta.ToolCalls = piece
		}
		if first {
			// Every chunk names the model the provider reported first, as OpenAI's do.
			chunk.Model = s.answerModel(req, d.Model)
			chunk.Choices[0].Delta.Role, first = "assistant", false
		}
		return emit(chunk)
	})
	if err != nil {
		return openAIParam(err)
	}
	if first { // no piece came: the provider's last word names the model
		chunk.Model = s.answerModel(req, c.Model)
	}
	reason := finish(c)
	chunk.Choices[0] = ChunkChoice{FinishReason: &reason}
	if first {
		chunk.Choices[0].Delta.Role = "assistant"
	}
	if err := emit(chunk); err != nil {
		return err
	}
	if req.IncludeUsage {
		chunk.Choices, chunk.Usage = []ChunkChoice{}, usageOf(c)
		return emit(chunk)
	}
	return nil
}

// answerModel is the model named in the answer: m, the one the provider reports (the
// requested one when it reports none), in the form the client used (provider/model when it
// named the provider).
func (s *Service) answerModel(req *Request, m string) string {
	if m == "" {
		m = req.Input.Model
	}
	if strings.HasPrefix(req.Model, req.Provider+"/") {
		return req.Provider + "/" + m
	}
	return m
}

// openAIParam returns err with the parameter the AI service named (in the /api request's
// terms: maxTokens, messages.0.content) in this request's terms (max_tokens,
// messages[0].content). The AI service's own error is copied, never changed.
func openAIParam(err error) error {
	e, ok := err.(*apperr.Error)
	if !ok || e.Param == "" {
		return err
	}
	out := *e
	out.Param = paramName(e.Param)
	return &out
}

// paramName is the AI service's parameter path in OpenAI's notation.
func paramName(p string) string {
	parts := strings.Split(p, ".")
	var b strings.Builder
	for i, part := range parts {
		switch {
		case i == 0 && part == "maxTokens":
			b.WriteString("max_tokens")
		case i > 0 && part != "" && strings.Trim(part, "0123456789") == "":
			b.WriteString("[" + part + "]")
		case i > 0:
			b.WriteString("." + part)
		default:
			b.WriteString(part)
		}
	}
	return b.String()
}

// completionID is the answer's id: chatcmpl- and the request id.
func completionID(requestID string) string {
	return "chatcmpl-" + strings.ReplaceAll(requestID, "-", "")
}

// finish is the answer's finish_reason ("stop" when the provider did not say).
func finish(c *ai.Completion) string {
	if c.FinishReason == "" {
		return "stop"
	}
	return c.FinishReason
}

func usageOf(c *ai.Completion) *Usage {
	return &Usage{
		PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, TotalTokens: c.Usage.TotalTokens,
		PromptTokensDetails: PromptDetail{CachedTokens: c.CachedTokens}, CompletionTokensDetails: OutputDetail{ReasoningTokens: c.ReasoningTokens},
	}
}
