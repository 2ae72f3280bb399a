package fakeprovider

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"strings"
)

// EmbeddingDims is the length of the fake's vectors when the request does not ask for one.
const EmbeddingDims = 8

// maxFakeDims bounds the length the fake answers, whatever it is asked.
const maxFakeDims = 4096

// isEmbeddings reports whether path is an embeddings request: OpenAI's /v1/embeddings or
// Gemini's :batchEmbedContents.
func isEmbeddings(path string) bool {
	return path == "/v1/embeddings" || strings.HasSuffix(path, ":batchEmbedContents")
}

// EmbeddingVector is the fake's vector of text: dims floats k/128 (-1 ≤ v < 1, exact in
// float32) from SHA-256 of "counter:text".
func EmbeddingVector(text string, dims int) []float32 {
	out := make([]float32, 0, dims+sha256.Size)
	for counter := 0; len(out) < dims; counter++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%d:%s", counter, text)))
		for _, b := range sum {
			out = append(out, float32(int(b)-128)/128)
		}
	}
	return out[:dims]
}

// EmbeddingBase64 is a vector as OpenAI's encoding_format "base64" sends it: the base64 of its
// little-endian float32s.
func EmbeddingBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Embeddings answers an embeddings request in the server's own format, each text's vector
// EmbeddingVector(text, n), n the request's dimensions (OpenAI) or outputDimensionality
// (Gemini), else EmbeddingDims:
//   - OpenAI: {object "list", data [{object "embedding", index, embedding}], model, usage
//     {prompt_tokens, total_tokens}}, tokens the words of the inputs (a token array counts
//     its tokens); encoding_format "base64" answers each embedding as EmbeddingBase64;
//   - Gemini: {embeddings: [{values}]}, and, as the real API, no token counts.
//
// A body the provider would refuse is its 400.
func Embeddings() Responder {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		if strings.HasSuffix(r.URL.Path, ":batchEmbedContents") {
			geminiEmbeddings(w, r, c)
			return
		}
		texts, tokens, ok := openAIInputs(c.Body["input"])
		model, _ := c.Body["model"].(string)
		if !ok || model == "" {
			Error("openai", http.StatusBadRequest, "invalid_request_error",
				"'input' must be a string or an array of strings or tokens, and 'model' a string")(w, r, c)
			return
		}
		dims := fakeDims(c.Body["dimensions"])
		data := make([]any, len(texts))
		for i, t := range texts {
			v := EmbeddingVector(t, dims)
			var emb any = v
			if c.Body["encoding_format"] == "base64" {
				emb = EmbeddingBase64(v)
			}
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
		}
		JSON(http.StatusOK, map[string]any{"object": "list", "data": data, "model": model,
			"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}}, "x-request-id", "req_fake")(w, r, c)
	}
}

// openAIInputs reads OpenAI's input: a string, strings, a token array or token arrays (each
// array's text its tokens joined by spaces), and the words (or tokens) it counts.
func openAIInputs(v any) (texts []string, tokens int, ok bool) {
	switch in := v.(type) {
	case string:
		return []string{in}, len(strings.Fields(in)), true
	case []any:
		if len(in) == 0 {
			return nil, 0, false
		}
		if _, isNum := in[0].(float64); isNum {
			t, ok := tokenText(in)
			return []string{t}, len(in), ok
		}
		for _, item := range in {
			switch x := item.(type) {
			case string:
				texts, tokens = append(texts, x), tokens+len(strings.Fields(x))
			case []any:
				t, ok := tokenText(x)
				if !ok {
					return nil, 0, false
				}
				texts, tokens = append(texts, t), tokens+len(x)
			default:
				return nil, 0, false
			}
		}
		return texts, tokens, true
	}
	return nil, 0, false
}

func tokenText(toks []any) (string, bool) {
	parts := make([]string, len(toks))
	for i, t := range toks {
		f, ok := t.(float64)
		if !ok {
			return "", false
		}
		parts[i] = fmt.Sprint(int64(f))
	}
	return strings.Join(parts, " "), true
}

// fakeDims is a requested vector length when it is one, else EmbeddingDims.
func fakeDims(v any) int {
	if f, ok := v.(float64); ok && f >= 1 && f <= maxFakeDims && f == math.Trunc(f) {
		return int(f)
	}
	return EmbeddingDims
}

func geminiEmbeddings(w http.ResponseWriter, r *http.Request, c Call) {
	reqs, _ := c.Body["requests"].([]any)
	out := make([]any, 0, len(reqs))
	for _, item := range reqs {
		req, _ := item.(map[string]any)
		content, _ := req["content"].(map[string]any)
		parts, _ := content["parts"].([]any)
		if content == nil {
			out = nil
			break
		}
		var text strings.Builder
		for _, p := range parts {
			if pm, ok := p.(map[string]any); ok {
				s, _ := pm["text"].(string)
				text.WriteString(s)
			}
		}
		out = append(out, map[string]any{"values": EmbeddingVector(text.String(), fakeDims(req["outputDimensionality"]))})
	}
	if len(out) == 0 {
		Error("gemini", http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload: requests[].content is required")(w, r, c)
		return
	}
	JSON(http.StatusOK, map[string]any{"embeddings": out})(w, r, c)
}
