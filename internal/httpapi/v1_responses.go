package httpapi

import (
	"net/http"

	"github.com/acme/app/internal/gateway"
)

// handleV1Responses answers POST /v1/responses: OpenAI's Responses request in (stateless:
// the whole conversation in input), OpenAI's Response (or its event stream) out, whichever
// provider the model names; its failures are answered in OpenAI's error format
// (openAIFormat), and a failure after the stream started ends it with an error event and
// response.failed.
func handleV1Responses(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, req, ok := v1Request(w, r, gw.ParseResponses)
		if !ok {
			return
		}
		if req.Stream {
			var st *gateway.ResponseStream
			serveStream(w, r, func(sw *sseWriter) error {
				st = gw.NewResponseStream(req, func(e *gateway.ResponseEvent) error { return sw.event(e.Type, e) })
				return st.Run(r.Context(), caller.ID)
			}, nil, func(_ *sseWriter, body any) {
				if b, ok := body.(gateway.ErrorBody); ok {
					_ = st.Fail(b.Error)
				}
			})
			return
		}
		resp, err := gw.CompleteResponse(r.Context(), caller.ID, req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, resp)
	})
}
