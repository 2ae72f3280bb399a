package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/ai"
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
		req.Input.RequestID = ai.RequestIDFor(RequestID(r.Context()))
		if req.Input.RequestID != RequestID(r.Context()) { // the client's id is not a UUID: the answer's is
			w.Header().Set("X-Request-Id", req.Input.RequestID)
		}
		list, err := gw.Embed(r.Context(), caller.ID, req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, list)
	})
}
