package aitest

import "github.com/acme/app/internal/ai/fakeprovider"

// Embeddings answers an embeddings request in the server's own format (fakeprovider.Embeddings).
func Embeddings() Responder { return fakeprovider.Embeddings() }

// EmbeddingVector is the fake's vector of text (fakeprovider.EmbeddingVector).
func EmbeddingVector(text string, dims int) []float32 {
	return fakeprovider.EmbeddingVector(text, dims)
}
