package httpapi

import (
	"net/http"
	"strings"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/gateway"
)

// handleV1Messages answers POST /v1/messages: Anthropic's Messages request in, Anthropic's
// message (or its event stream) out, whichever provider the model names; its failures are
// answered in Anthropic's error format (anthropicFormat).
func handleV1Messages(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, req, ok := v1Request(w, r, gw.ParseMessages)
		if !ok {
			return
		}
		w.Header().Set("Request-Id", req.Input.RequestID) // where Anthropic's SDKs look for it
		if req.Stream {
			serveStream(w, r, func(sw *sseWriter) error {
				return gw.StreamMessage(r.Context(), caller.ID, req, func(e *gateway.MessageEvent) error { return sw.event(e.Type, e) })
			}, nil, func(sw *sseWriter, body any) { _ = sw.event("error", body) })
			return
		}
		m, err := gw.CompleteMessage(r.Context(), caller.ID, req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, m)
	})
}

// handleV1CountTokens answers POST /v1/messages/count_tokens: a Messages request (max_tokens
// not required) in, Anthropic's {"input_tokens": N} out, counted by the model's provider.
// Nothing is recorded and no budget is charged; failures are in Anthropic's error format.
func handleV1CountTokens(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, req, ok := v1Request(w, r, gw.ParseCountTokens)
		if !ok {
			return
		}
		w.Header().Set("Request-Id", req.Input.RequestID)
		n, err := gw.CountMessageTokens(r.Context(), req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, n)
	})
}

// anthropicFormat is the error format of /v1/messages, Anthropic's {"type": "error",
// "error": {"type", "message"}}, with its types: invalid_request_error 400,
// authentication_error 401, permission_error 403, not_found_error 404, request_too_large
// 413, rate_limit_error 429, billing_error 402 (a spent budget, with X-Should-Retry: false),
// timeout_error 504, api_error for the other failures, except a provider's failure that
// came with one of Anthropic's types (overloaded_error, …), which keeps it, or with another
// provider's type that has an equivalent (Gemini's UNAVAILABLE overloaded_error), which gets it.
func anthropicFormat(h http.Header, err error) (int, any) {
	status, msgs, _ := clientMessages(err)
	msg := strings.Join(msgs, "; ")
	if msg == "" {
		msg = http.StatusText(status)
	}
	var code, upstreamType string
	if e := apperr.As(err); e != nil {
		code, upstreamType = e.Code, e.UpstreamType
	}
	status, body := gateway.AnthropicErrorOf(status, apperr.KindOf(err), code, upstreamType, msg)
	if body.Error.Type == "billing_error" && h != nil {
		h.Set("X-Should-Retry", "false")
	}
	return status, body
}
