package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/ai"
)

// handleAIComplete proxies a chat to provider for the caller and answers the normalized
// completion. The answer's requestId is also the X-Request-Id header.
func handleAIComplete(svc *ai.Service, provider string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		var in ai.ChatInput
		if err := decodeInto(w, r, &in); err != nil {
			writeError(w, r, err)
			return
		}
		in.RequestID = RequestID(r.Context())
		c, err := svc.Complete(r.Context(), caller.ID, provider, in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if c.RequestID != in.RequestID { // observe has set the request's own id
			w.Header().Set("X-Request-Id", c.RequestID)
		}
		encode(w, http.StatusOK, c)
	})
}
