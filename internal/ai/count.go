package ai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/acme/app/internal/apperr"
)

// maxCountAnswerBytes bounds what is read of a token count's answer: a number and, from
// Gemini, a few lines of details per modality.
const maxCountAnswerBytes = 64 << 10

// countTooLarge says what a count past maxCountAnswerBytes was.
var countTooLarge = fmt.Sprintf("a token count larger than %d KiB", maxCountAnswerBytes>>10)

// counter is the optional capability of a provider with a token-counting endpoint
// (Anthropic's messages/count_tokens, Gemini's countTokens): its wire format for a count,
// next to its chat code. A provider that does not implement it refuses counts.
type counter interface {
	provider
	// countPath is the request path of c's count below the configured base URL, escaped.
	countPath(c *call) string
	// countBody is the typed JSON request body of c's count: the prompt only.
	countBody(c *call) any
	// parseCount reads a 2xx answer: the prompt's input tokens.
	parseCount(body []byte) (int64, error)
}

// CountsTokens reports whether the named provider has a token-counting endpoint.
func CountsTokens(provider string) bool {
	ep, ok := providers[provider]
	if !ok {
		return false
	}
	_, ok = ep.provider.(counter)
	return ok
}

// TokenCounters returns the names of the providers with a token-counting endpoint, in
// Providers' order.
func TokenCounters() []string {
	return slices.DeleteFunc(Providers(), func(p string) bool { return !CountsTokens(p) })
}

// CountTokens asks the named provider how many input tokens in's prompt (its messages,
// system text and tools) is for in.Model (the provider's default model when empty). A count
// is not a call: it is neither priced, held to a budget nor recorded.
//
// Returns NotFound for an unknown provider; Invalid, naming the parameter model with code
// model_not_supported, for a provider without a counting endpoint (openai); Invalid when in
// breaks the endpoint's rules; Unavailable when the provider has no API key; otherwise the
// errors Complete returns for the provider's failures.
func (s *Service) CountTokens(ctx context.Context, providerName string, in ChatInput) (int64, error) {
	ep, ok := providers[providerName]
	if !ok {
		return 0, apperr.E(apperr.NotFound, "unknown AI provider "+providerName)
	}
	ct, ok := ep.provider.(counter)
	if !ok {
		return 0, &apperr.Error{Kind: apperr.Invalid, Param: "model", Code: "model_not_supported", Messages: []string{
			providerName + " has no token counting endpoint."}}
	}
	if err := in.validate(&ep.spec); err != nil {
		return 0, err
	}
	cfg := s.cfg[providerName]
	if cfg.APIKey == "" {
		_, err := s.ready(providerName) // its message names the setting
		return 0, err
	}
	c := &call{model: in.Model, messages: in.Messages, tools: in.Tools, toolChoice: in.ToolChoice,
		parallel: in.ParallelToolCalls, format: in.ResponseFormat}
	if err := ct.check(c); err != nil {
		return 0, err
	}
	if c.model == "" {
		c.model = cfg.DefaultModel
	}
	cc := &countCall{counter: ct}
	n, uerr := s.doCount(ctx, &endpoint{provider: cc, spec: ep.spec}, cc, cfg, c)
	if uerr != nil {
		return 0, s.toAppErr(providerName, uerr, describe(uerr))
	}
	return n, nil
}

// doCount is do for a token count: the same retries within ai.timeout, a small bound on the
// answer.
func (s *Service) doCount(parent context.Context, ep *endpoint, cc *countCall, cfg ProviderConfig, c *call) (int64, *upstreamError) {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var n int64
	_, uerr := s.retry(parent, ctx, deadline, ep, c, func() *upstreamError {
		return s.exchange(ctx, ep, cfg, c, maxCountAnswerBytes, countTooLarge,
			func(_ http.Header, body []byte) (err error) {
				n, err = cc.parseCount(body)
				return err
			})
	})
	return n, uerr
}

// countCall is a token count as a provider of the chat path (whose sending, retries and
// failure classification it reuses): its path and body are the counter's.
type countCall struct{ counter }

func (cc *countCall) path(c *call) string { return cc.countPath(c) }
func (cc *countCall) body(c *call) any    { return cc.countBody(c) }

func (cc *countCall) newStream(*call, http.Header) streamDecoder { return nil } // never streamed

// anthropicCountRequest is the body of messages/count_tokens: a message's prompt, without
// max_tokens or sampling parameters, which the endpoint refuses.
type anthropicCountRequest struct {
	Model      string               `json:"model"`
	System     string               `json:"system,omitempty"`
	Messages   []anthropicMessage   `json:"messages"`
	Tools      []anthropicTool      `json:"tools,omitempty"`
	ToolChoice *anthropicToolChoice `json:"tool_choice,omitempty"`
}

type anthropicCountResponse struct {
	InputTokens *int64 `json:"input_tokens"`
}

func (anthropic) countPath(*call) string { return "/messages/count_tokens" }

func (a anthropic) countBody(c *call) any {
	r := a.body(c).(anthropicRequest)
	return anthropicCountRequest{Model: r.Model, System: r.System, Messages: r.Messages, Tools: r.Tools, ToolChoice: r.ToolChoice}
}

func (anthropic) parseCount(body []byte) (int64, error) {
	var r anthropicCountResponse
	if err := decodeAnswer("anthropic", body, &r); err != nil {
		return 0, err
	}
	if r.InputTokens == nil {
		return 0, malformed("anthropic answered a token count without input_tokens")
	}
	if err := checkCounts("anthropic", *r.InputTokens); err != nil {
		return 0, err
	}
	return *r.InputTokens, nil
}

// geminiCountRequest is the body of countTokens: the whole generateContent request (system
// instruction and tools are counted only there), which names its model.
type geminiCountRequest struct {
	GenerateContentRequest geminiCountContent `json:"generateContentRequest"`
}

type geminiCountContent struct {
	Model string `json:"model"` // models/{model}
	geminiRequest
}

type geminiCountResponse struct {
	TotalTokens *int64 `json:"totalTokens"`
}

// countPath escapes the model as path does.
func (gemini) countPath(c *call) string { return "/models/" + url.PathEscape(c.model) + ":countTokens" }

func (g gemini) countBody(c *call) any {
	r := g.body(c).(geminiRequest)
	r.GenerationConfig = geminiGenerationConfig{} // nothing of it is counted
	return geminiCountRequest{GenerateContentRequest: geminiCountContent{Model: "models/" + c.model, geminiRequest: r}}
}

func (gemini) parseCount(body []byte) (int64, error) {
	var r geminiCountResponse
	if err := decodeAnswer("gemini", body, &r); err != nil {
		return 0, err
	}
	if r.TotalTokens == nil {
		return 0, malformed("gemini answered a token count without totalTokens")
	}
	if err := checkCounts("gemini", *r.TotalTokens); err != nil {
		return 0, err
	}
	return *r.TotalTokens, nil
}
