package ai

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/usage"
)

// Embedding limits. OpenAI's: at most MaxEmbedInputs inputs a request, each non-empty.
// Gemini's batchEmbedContents takes at most GeminiEmbedBatch texts a call: more are sent in
// consecutive batches of that size.
const (
	MaxEmbedInputs   = 2048
	GeminiEmbedBatch = 100
	// MaxEmbedDimensions bounds `dimensions` (the largest models answer 3072 floats).
	MaxEmbedDimensions = 65536
	// maxTokenID bounds a token of a token array (vocabularies are far smaller).
	maxTokenID = 1<<31 - 1
)

// maxEmbedAnswerBytes bounds what is read of an embeddings answer: 2048 vectors of 3072
// floats as JSON text are larger than maxAnswerBytes, and must still be read whole.
const maxEmbedAnswerBytes = 64 << 20

// embedAnswerTooLarge says what an answer past maxEmbedAnswerBytes was.
var embedAnswerTooLarge = fmt.Sprintf("an answer larger than %d MiB", maxEmbedAnswerBytes>>20)

// EmbedInput is one embeddings request, in OpenAI's terms. Exactly one of Texts and Tokens is
// set.
type EmbedInput struct {
	Model  string    // the provider's name of the model
	Texts  []string  // the texts to embed
	Tokens [][]int64 // or OpenAI's token arrays (openai only)
	// Single is true when the client sent one text (or one token array) rather than a list:
	// OpenAI is sent the input in the form it was received.
	Single bool
	// EncodingFormat is OpenAI's encoding_format as the client sent it ("", "float" or
	// "base64"); OpenAI is asked for it, Gemini always answers floats. Either way the
	// answer's vectors are decoded floats.
	EncodingFormat string
	Dimensions     *int   // the vectors' length (OpenAI dimensions, Gemini outputDimensionality)
	User           string // OpenAI's end-user id, sent to OpenAI only
	// RequestID, when a UUID, becomes the answer's request id; otherwise a new one is made.
	RequestID string
}

// Embeddings is the answer to an embeddings request: one vector per input, in order.
type Embeddings struct {
	Vectors  [][]float32
	Model    string // as the provider reported it (else the requested one)
	Provider string
	// Usage counts input tokens only (CompletionTokens is 0, TotalTokens = PromptTokens).
	Usage Usage
	// Estimated is true when the provider reported no token count (Gemini never does) and
	// Usage is EstimateTokens of the inputs.
	Estimated bool
	Cost      float64
	RequestID string
}

// EstimateTokens is the token count of a text whose provider reports none: one token per four
// bytes of UTF-8, rounded up (English averages about four characters a token).
func EstimateTokens(text string) int64 { return tokensOf(len(text)) }

// tokensOf is the tokens estimated for bytes of text: bytesPerToken a token, rounded up.
func tokensOf(bytes int) int64 { return int64((bytes + bytesPerToken - 1) / bytesPerToken) }

// inputs is the number of inputs.
func (in *EmbedInput) inputs() int {
	if in.Tokens != nil {
		return len(in.Tokens)
	}
	return len(in.Texts)
}

// validate refuses what no provider takes, naming the parameter as OpenAI does (input.3 is
// input[3] in OpenAI's notation).
func (in *EmbedInput) validate(provider string, em embedder) error {
	bad := func(param, format string, args ...any) error {
		return &apperr.Error{Kind: apperr.Invalid, Messages: []string{fmt.Sprintf(format, args...)}, Param: param, Code: "invalid_value"}
	}
	if in.Model == "" {
		return bad("model", "You must provide a model parameter.")
	}
	if !modelPattern.MatchString(in.Model) {
		return bad("model", "Invalid 'model': %q is not a model name (letters, digits and . _ : @ -, at most 128).", in.Model)
	}
	n := in.inputs()
	switch {
	case in.Texts != nil && in.Tokens != nil:
		return bad("input", "Invalid 'input': texts and token arrays at once.")
	case n == 0:
		return bad("input", "Invalid 'input': expected a non-empty string or a non-empty array of them.")
	case n > MaxEmbedInputs:
		return bad("input", "Invalid 'input': %d inputs; at most %d a request.", n, MaxEmbedInputs)
	case in.Tokens != nil && !em.embedTokens():
		return bad("input", "Invalid 'input': %s embeds texts only, not token arrays.", provider)
	}
	for i, t := range in.Texts {
		if t == "" {
			return bad(fmt.Sprintf("input.%d", i), "Invalid 'input[%d]': empty string; every input must be non-empty.", i)
		}
	}
	for i, toks := range in.Tokens {
		if len(toks) == 0 {
			return bad(fmt.Sprintf("input.%d", i), "Invalid 'input[%d]': empty token array; every input must be non-empty.", i)
		}
		for _, t := range toks {
			if t < 0 || t > maxTokenID {
				return bad(fmt.Sprintf("input.%d", i), "Invalid 'input[%d]': %d is not a token.", i, t)
			}
		}
	}
	switch in.EncodingFormat {
	case "", "float", "base64":
	default:
		return bad("encoding_format", "Invalid 'encoding_format': expected 'float' or 'base64'.")
	}
	if d := in.Dimensions; d != nil && (*d < 1 || *d > MaxEmbedDimensions) {
		return bad("dimensions", "Invalid 'dimensions': expected an integer from 1 to %d.", MaxEmbedDimensions)
	}
	return nil
}

// embedder is the optional capability of a provider with an embeddings API: its wire format
// for embeddings, next to its chat code. A provider that does not implement it refuses
// embeddings.
type embedder interface {
	provider
	// embedBatch is the most inputs one call takes (0: any number).
	embedBatch() int
	// embedTokens reports whether token arrays (OpenAI's) are taken, besides texts.
	embedTokens() bool
	// embedPath is the request path of in below the configured base URL, escaped.
	embedPath(in *EmbedInput) string
	// embedBody is the typed JSON request body of in.
	embedBody(in *EmbedInput) any
	// parseEmbeddings reads a 2xx answer into one vector per input and the provider's usage
	// and model; estimated is true when the usage is EstimateTokens of the inputs.
	parseEmbeddings(in *EmbedInput, header http.Header, body []byte) (vectors [][]float32, res *result, estimated bool, err error)
}

// embedders are the providers that implement embedder, by name; embedderNames their names
// in providerList's order.
var embedders, embedderNames = indexEmbedders(providerList)

func indexEmbedders(list []provider) (map[string]embedder, []string) {
	byName := map[string]embedder{}
	var names []string
	for _, p := range list {
		if em, ok := p.(embedder); ok {
			name := p.spec().name
			byName[name] = em
			names = append(names, name)
		}
	}
	return byName, names
}

// EmbeddingProviders returns the names of the providers with an embeddings API, in
// Providers' order.
func EmbeddingProviders() []string { return slices.Clone(embedderNames) }

// Embeds reports whether the named provider has an embeddings API.
func Embeds(provider string) bool { return embedders[provider] != nil }

// EmbedsTokens reports whether the named provider embeds token arrays (OpenAI's), besides
// texts.
func EmbedsTokens(provider string) bool {
	em := embedders[provider]
	return em != nil && em.embedTokens()
}

// EmbeddingModels names, for messages, the models that embed: "an openai/… or gemini/…
// embedding model".
func EmbeddingModels() string { return embeddingModels }

var embeddingModels = func() string {
	names := make([]string, len(embedderNames))
	for i, n := range embedderNames {
		names[i] = n + "/…"
	}
	list := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	article := "a"
	if list != "" && strings.ContainsRune("aeiou", rune(list[0])) {
		article = "an"
	}
	return article + " " + list + " embedding model"
}()

// Embed embeds in's inputs with the named provider (one that implements embedder) on behalf
// of userID. The call is priced by its input tokens, held to the budget, recorded and
// observed as any AI call (Complete's path); a provider that reports no token counts
// (Gemini) is counted EstimateTokens of the texts.
//
// Returns Invalid (naming the parameter) for a provider without embeddings (anthropic) or
// an input that breaks the rules; otherwise Complete's errors. An answer with the wrong
// number of vectors, an empty vector or a value that is not a finite float32 is Upstream.
func (s *Service) Embed(ctx context.Context, userID, providerName string, in EmbedInput) (*Embeddings, error) {
	ep, ok := providers[providerName]
	if !ok {
		return nil, apperr.E(apperr.NotFound, "unknown AI provider "+providerName)
	}
	em, ok := ep.provider.(embedder)
	if !ok {
		return nil, &apperr.Error{Kind: apperr.Invalid, Param: "model", Code: "model_not_supported", Messages: []string{
			providerName + " has no embeddings API: name " + embeddingModels + "."}}
	}
	ec := &embedCall{em: em, in: &in}
	if err := in.validate(providerName, em); err != nil {
		return nil, err
	}
	cfg, err := s.ready(providerName)
	if err != nil {
		return nil, err
	}
	c := &call{model: in.Model}
	id := RequestIDFor(in.RequestID)
	hold, err := s.reserve(ctx, userID, func() float64 { return s.embedWorstCase(providerName, &in) })
	if err != nil {
		return nil, err
	}
	start := s.now()
	ee := &endpoint{provider: ec, spec: ep.spec}
	res, attempts, uerr := s.doEmbed(ctx, ee, ec, cfg, c)
	comp, err := s.finish(ctx, finished{
		id: id, userID: userID, provider: providerName, model: c.model, cfg: cfg, start: start,
		upstream: s.now().Sub(start), attempts: attempts, res: res, err: uerr, hold: hold,
	})
	if err != nil {
		return nil, err
	}
	return &Embeddings{Vectors: ec.vectors, Model: comp.Model, Provider: providerName, Usage: comp.Usage,
		Estimated: res.estimated, Cost: comp.Cost, RequestID: comp.RequestID}, nil
}

// embedWorstCase is the most an embeddings call can cost: every input byte (every token of a
// token array) a token at the model's dearest input price.
func (s *Service) embedWorstCase(provider string, in *EmbedInput) float64 {
	_, pr, ok := s.prices.Lookup(provider, in.Model)
	if !ok {
		return Unpriced
	}
	price := pr.Input
	for _, t := range pr.tiers {
		if t.input != nil {
			price = max(price, *t.input)
		}
	}
	var units int
	for _, t := range in.Texts {
		units += len(t)
	}
	for _, t := range in.Tokens {
		units += len(t)
	}
	return usage.RoundCost(float64(units) * price)
}

// doEmbed is do for an embeddings call: the same retries, with a larger bound on the answer,
// which is refused (not cut) when it is larger. Inputs past the provider's batch size are sent
// in consecutive batches, all within one ai.timeout; the answer is their vectors in order and
// their summed usage. When a batch fails, the result holds what the batches before it were
// answered (priced and recorded with the failure).
func (s *Service) doEmbed(parent context.Context, ep *endpoint, ec *embedCall, cfg ProviderConfig, c *call) (*result, int, *upstreamError) {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	n := ec.in.inputs()
	size := ec.em.embedBatch()
	if size <= 0 || ec.in.Tokens != nil {
		size = n
	}
	var total *result
	attempts := 0
	for lo := 0; lo < n; lo += size {
		ec.part = *ec.in
		if ec.in.Texts != nil {
			ec.part.Texts = ec.in.Texts[lo:min(lo+size, n)]
		}
		var res *result
		a, uerr := s.retry(parent, ctx, deadline, ep, c, func() *upstreamError {
			return s.exchange(ctx, ep, cfg, c, maxEmbedAnswerBytes, embedAnswerTooLarge,
				func(h http.Header, body []byte) (err error) {
					res, err = ep.provider.parse(c, h, body)
					return err
				})
		})
		attempts += a
		if uerr != nil {
			if (uerr.canceled || uerr.timeout || uerr.full) && !uerr.between {
				// The caller left, or ai.timeout passed, while the provider had this batch, or
				// its answer did not fit in memory: it bills what it received, so the batch's
				// estimate is charged with those answered before it.
				if total == nil {
					total = &result{}
				}
				total.promptTokens += ec.part.estimate()
				total.estimated = true
			}
			return total, attempts, uerr
		}
		ec.vectors = append(ec.vectors, ec.batchVectors...)
		if total == nil {
			total = res
			continue
		}
		total.promptTokens += res.promptTokens
		total.estimated = total.estimated || res.estimated
	}
	return total, attempts, nil
}

// embedCall is one embeddings call as a provider of the chat path (whose sending, retries,
// failure classification and recording it reuses): the request is in, the batch being sent
// part; the vectors of the batch last read are batchVectors, those of every batch answered
// vectors.
type embedCall struct {
	em           embedder
	in           *EmbedInput
	part         EmbedInput
	batchVectors [][]float32
	vectors      [][]float32
}

func (e *embedCall) spec() spec                     { return e.em.spec() }
func (e *embedCall) path(*call) string              { return e.em.embedPath(&e.part) }
func (e *embedCall) headers(apiKey string) []string { return e.em.headers(apiKey) }
func (e *embedCall) body(*call) any                 { return e.em.embedBody(&e.part) }

func (e *embedCall) failure(status int, header http.Header, body []byte) *upstreamError {
	return e.em.failure(status, header, body)
}

func (e *embedCall) check(*call) error { return nil } // EmbedInput.validate ran before

func (e *embedCall) newStream(*call, http.Header) streamDecoder { return nil } // never streamed

func (e *embedCall) parse(_ *call, header http.Header, body []byte) (*result, error) {
	vectors, res, estimated, err := e.em.parseEmbeddings(&e.part, header, body)
	if err != nil {
		return nil, err
	}
	// One model gives vectors of one length: any other answer is malformed (batches included).
	var want int
	if len(e.vectors) > 0 {
		want = len(e.vectors[0])
	} else if len(vectors) > 0 {
		want = len(vectors[0])
	}
	for i, v := range vectors {
		if len(v) != want {
			return nil, malformed(fmt.Sprintf("%s answered embeddings of different lengths (%d for input %d, %d before)",
				e.em.spec().name, len(v), i, want))
		}
	}
	e.batchVectors, res.estimated = vectors, estimated
	return res, nil
}

// estimate is EstimateTokens of every text, or the number of tokens of the token arrays.
func (in *EmbedInput) estimate() int64 {
	var n int64
	for _, t := range in.Texts {
		n += EstimateTokens(t)
	}
	for _, t := range in.Tokens {
		n += int64(len(t))
	}
	return n
}

// readVector reads an embedding: an array of numbers, or (OpenAI's encoding_format base64) the
// base64 of little-endian float32s. An empty vector or a value that is not a finite float32 is
// malformed.
func readVector(name, field string, raw json.RawMessage) ([]float32, error) {
	bad := func(why string) error {
		return malformed(fmt.Sprintf("%s sent an embedding (%s) that %s", name, field, why))
	}
	var v []float32
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, bad("is not a string")
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b)%4 != 0 {
			return nil, bad("is not base64 of float32s")
		}
		v = make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	default:
		var fs []float64
		if json.Unmarshal(raw, &fs) != nil {
			return nil, bad("is not an array of numbers")
		}
		v = make([]float32, len(fs))
		for i, f := range fs {
			if math.Abs(f) > math.MaxFloat32 {
				return nil, bad("has a value out of float32's range")
			}
			v[i] = float32(f)
		}
	}
	if len(v) == 0 {
		return nil, bad("is empty")
	}
	for _, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, bad("has a value that is not a finite number")
		}
	}
	return v, nil
}

// EncodeBase64 is a vector as OpenAI's encoding_format "base64" sends it: the base64 of its
// little-endian float32s.
func EncodeBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Mode returns the table's mode of a provider's model, in LiteLLM's words ("chat",
// "embedding", …), or "" when the table has no entry or the entry does not say.
func (p *Prices) Mode(provider, model string) string {
	if p == nil {
		return ""
	}
	return p.find(provider, model).price.mode
}
