package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/gateway"
)

// handleV1Embeddings answers POST /v1/embeddings: OpenAI's embeddings request in, OpenAI's
// list of embeddings out; its failures in OpenAI's error format (see openAIFormat).
func handleV1Embeddings(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		body, err := readJSONBody(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		req, err := gw.ParseEmbeddings(body)
		if err != nil {
			writeError(w, r, err)
			return
		}
		req.Input.RequestID = RequestID(r.Context())
		list, err := gw.Embed(r.Context(), caller.ID, req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, list)
	})
}
