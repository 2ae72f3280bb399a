package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/validate"
)

// Embedder is the AI service's embeddings, as the gateway uses them. The Completer given as
// Options.AI embeds when it implements Embedder (*ai.Service does).
type Embedder interface {
	Embed(ctx context.Context, userID, provider string, in ai.EmbedInput) (*ai.Embeddings, error)
}

// EmbeddingsRequest is a parsed /v1/embeddings request, ready for the AI service.
type EmbeddingsRequest struct {
	Provider string // one with embeddings (ai.Embeds)
	Model    string // as the client named it, answered back in `model`
	Input    ai.EmbedInput
	Base64   bool // encoding_format "base64": each vector answered as ai.EncodeBase64
}

// EmbeddingList is OpenAI's answer to POST /v1/embeddings.
type EmbeddingList struct {
	Object string          `json:"object"` // "list"
	Data   []Embedding     `json:"data"`
	Model  string          `json:"model"`
	Usage  EmbeddingsUsage `json:"usage"`
}

// Embedding is one vector of the list: Embedding is a []float32, or its base64 (a string).
type Embedding struct {
	Object    string `json:"object"` // "embedding"
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// EmbeddingsUsage is OpenAI's usage of an embeddings call (input tokens only).
type EmbeddingsUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// acceptedEmbeddings are the parameters of an embeddings request.
var acceptedEmbeddings = map[string]bool{"model": true, "input": true, "encoding_format": true, "dimensions": true, "user": true}

// ParseEmbeddings reads a /v1/embeddings body: {model, input, encoding_format?, dimensions?,
// user?}. input is a string, strings, or (for a provider that embeds tokens: openai/ models)
// a token array or token arrays. A model routes as on /v1/chat/completions; one of a
// provider without embeddings (anthropic/), or a bare name the price table lists as a chat
// model, is refused. Anything else refused is an Invalid *apperr.Error
// naming the parameter with OpenAI's code, as Parse's.
func (s *Service) ParseEmbeddings(body []byte) (*EmbeddingsRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, invalid("", "", "We could not parse the JSON body of your request: it must be one JSON object.")
	}
	for name, raw := range fields {
		if !acceptedEmbeddings[name] && !validate.IsNull(raw) {
			return nil, unsupported(name, "is not supported by this gateway.")
		}
	}
	req := &EmbeddingsRequest{}
	if err := s.routeEmbeddings(fields["model"], req); err != nil {
		return nil, err
	}
	if err := embeddingInput(fields["input"], &req.Input); err != nil {
		return nil, err
	}
	if req.Input.Tokens != nil && !ai.EmbedsTokens(req.Provider) {
		return nil, invalid("input", "invalid_type", "Invalid 'input': token arrays are for %s models; %s embeds text: send strings.",
			tokenEmbedders, req.Provider)
	}
	if raw := fields["encoding_format"]; !validate.IsNull(raw) {
		var f string
		if json.Unmarshal(raw, &f) != nil {
			return nil, invalid("encoding_format", "invalid_type", "Invalid type for 'encoding_format': expected 'float' or 'base64'.")
		}
		if f != "float" && f != "base64" {
			return nil, invalid("encoding_format", "invalid_value", "Invalid 'encoding_format': expected 'float' or 'base64'.")
		}
		req.Input.EncodingFormat, req.Base64 = f, f == "base64"
	}
	if raw := fields["dimensions"]; !validate.IsNull(raw) {
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) {
			return nil, invalid("dimensions", "invalid_type", "Invalid type for 'dimensions': expected an integer.")
		}
		if f < 1 || f > ai.MaxEmbedDimensions {
			return nil, invalid("dimensions", "invalid_value", "Invalid 'dimensions': expected an integer from 1 to %d.", ai.MaxEmbedDimensions)
		}
		n := int(f)
		req.Input.Dimensions = &n
	}
	if raw := fields["user"]; !validate.IsNull(raw) {
		if json.Unmarshal(raw, &req.Input.User) != nil {
			return nil, invalid("user", "invalid_type", "Invalid type for 'user': expected a string.")
		}
	}
	return req, nil
}

// routeEmbeddings reads `model`: provider/model names the provider, which must have
// embeddings (ai.Embeds; anthropic has none); a bare name goes to the provider the price
// table lists it under, and must be an embedding model there.
func (s *Service) routeEmbeddings(raw json.RawMessage, req *EmbeddingsRequest) error {
	model, p, m, err := s.modelOf(raw)
	if err != nil {
		return err
	}
	if !ai.Embeds(p) {
		return invalid("model", "model_not_supported", "The model '%s' is served by %s, which has no embeddings API; use %s.",
			model, p, ai.EmbeddingModels())
	}
	if bare := m == model; bare {
		if mode := s.prices.Mode(p, m); mode != "" && mode != "embedding" {
			return invalid("model", "invalid_value", "The model '%s' is a %s model, not an embedding model.", model, mode)
		}
	}
	req.Model, req.Provider, req.Input.Model = model, p, m
	return nil
}

// tokenEmbedders are the model prefixes of the providers that embed token arrays, for
// messages: "openai/".
var tokenEmbedders = func() string {
	var names []string
	for _, p := range ai.EmbeddingProviders() {
		if ai.EmbedsTokens(p) {
			names = append(names, p+"/")
		}
	}
	return strings.Join(names, " or ")
}()

// embeddingInput reads `input` into in: a string, an array of strings, a token array (an
// array of integers) or an array of token arrays, bounded as OpenAI bounds it.
func embeddingInput(raw json.RawMessage, in *ai.EmbedInput) error {
	if validate.IsNull(raw) {
		return invalid("input", "", "Missing required parameter: 'input'.")
	}
	const want = "Invalid type for 'input': expected a string, an array of strings, an array of integers (tokens) or an array of such arrays."
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return invalid("input", "invalid_value", "Invalid 'input': empty string; every input must be non-empty.")
		}
		in.Texts, in.Single = []string{one}, true
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return invalid("input", "invalid_type", want)
	}
	switch {
	case len(items) == 0:
		return invalid("input", "empty_array", "Invalid 'input': empty array. Expected an array with minimum length 1.")
	case len(items) > ai.MaxEmbedInputs:
		return invalid("input", "invalid_value", "Invalid 'input': %d inputs; at most %d a request.", len(items), ai.MaxEmbedInputs)
	}
	first := strings.TrimLeft(string(items[0]), " \t\r\n")
	switch {
	case strings.HasPrefix(first, `"`):
		in.Texts = make([]string, len(items))
		for i, item := range items {
			if json.Unmarshal(item, &in.Texts[i]) != nil {
				return invalid(fmt.Sprintf("input[%d]", i), "invalid_type", "Invalid type for 'input[%d]': expected a string, as input[0].", i)
			}
			if in.Texts[i] == "" {
				return invalid(fmt.Sprintf("input[%d]", i), "invalid_value", "Invalid 'input[%d]': empty string; every input must be non-empty.", i)
			}
		}
	case strings.HasPrefix(first, `[`):
		in.Tokens = make([][]int64, len(items))
		for i, item := range items {
			at := fmt.Sprintf("input[%d]", i)
			var toks []json.RawMessage
			if json.Unmarshal(item, &toks) != nil {
				return invalid(at, "invalid_type", "Invalid type for '%s': expected an array of integers (tokens), as input[0].", at)
			}
			if len(toks) == 0 {
				return invalid(at, "invalid_value", "Invalid '%s': empty array; every input must be non-empty.", at)
			}
			if in.Tokens[i] = tokens(toks); in.Tokens[i] == nil {
				return invalid(at, "invalid_type", "Invalid type for '%s': expected an array of non-negative integers (tokens).", at)
			}
		}
	default:
		if in.Tokens = [][]int64{tokens(items)}; in.Tokens[0] == nil {
			return invalid("input", "invalid_type", want)
		}
		in.Single = true
	}
	return nil
}

// tokens reads a token array: non-negative integers (nil: not one).
func tokens(items []json.RawMessage) []int64 {
	out := make([]int64, len(items))
	for i, item := range items {
		var f float64
		if json.Unmarshal(item, &f) != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return nil
		}
		out[i] = int64(f)
	}
	return out
}

// Embed answers an embeddings request. Errors are the AI service's (apperr kinds), the
// parameter they name in OpenAI's notation (input[3]).
func (s *Service) Embed(ctx context.Context, userID string, req *EmbeddingsRequest) (*EmbeddingList, error) {
	e, ok := s.ai.(Embedder)
	if !ok {
		return nil, apperr.E(apperr.Unavailable, "embeddings are not served here")
	}
	out, err := e.Embed(ctx, userID, req.Provider, req.Input)
	if err != nil {
		return nil, openAIParam(err)
	}
	list := &EmbeddingList{Object: "list", Data: make([]Embedding, len(out.Vectors)), Model: out.Model,
		Usage: EmbeddingsUsage{PromptTokens: out.Usage.PromptTokens, TotalTokens: out.Usage.PromptTokens}}
	if list.Model == "" {
		list.Model = req.Input.Model
	}
	if strings.HasPrefix(req.Model, req.Provider+"/") {
		list.Model = req.Provider + "/" + list.Model
	}
	for i, v := range out.Vectors {
		list.Data[i] = Embedding{Object: "embedding", Index: i, Embedding: v}
		if req.Base64 {
			list.Data[i].Embedding = ai.EncodeBase64(v)
		}
	}
	return list, nil
}

// chatModel refuses, on /v1/chat/completions, a model the price table lists as an embedding
// model: the provider would refuse it after the call was made and recorded.
func (s *Service) chatModel(provider, model string) error {
	if s.prices.Mode(provider, model) == "embedding" {
		return invalid("model", "invalid_value", "The model '%s' is an embedding model: send it to /v1/embeddings.", model)
	}
	return nil
}
