package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/gateway"
	"github.com/acme/app/internal/keys"
)

// KeyAuthenticator resolves a personal API key to its owner.
type KeyAuthenticator interface {
	Authenticate(ctx context.Context, key string) (keys.Owner, error)
}

// openAIFailures wraps the middleware mw of a /v1 route so that what it refuses (a bad key or
// token, a rate limit) is answered in OpenAI's error format instead of the envelope; the
// route's handler itself writes to the connection unchanged.
func openAIFailures(mw func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tw := &openAIErrorWriter{ResponseWriter: w}
			mw(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				tw.passed = true
				next.ServeHTTP(w, r)
			})).ServeHTTP(tw, r)
		})
	}
}

// openAIErrorWriter rewrites an error envelope written before the handler was reached.
type openAIErrorWriter struct {
	http.ResponseWriter
	passed bool
	status int
}

func (w *openAIErrorWriter) WriteHeader(code int) {
	if w.passed || code < 400 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.status = code
}

func (w *openAIErrorWriter) Write(b []byte) (int, error) {
	if w.passed || w.status == 0 {
		return w.ResponseWriter.Write(b)
	}
	var env envelope
	_ = json.Unmarshal(b, &env)
	msg, _ := env.Message.(string)
	writeOpenAI(w.ResponseWriter, openAIError(w.status, apperr.Internal, msg))
	w.passed = true // written once
	return len(b), nil
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *openAIErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// openAIError is the OpenAI error for an answer of status (the kind tells a budget's refusal
// from the others) with message.
func openAIError(status int, kind apperr.Kind, message string) *gateway.Error {
	e := &gateway.Error{Status: status, Message: message, Type: "invalid_request_error"}
	code := ""
	switch {
	case kind == apperr.PaymentRequired:
		e.Status, e.Type, code = http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota"
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
		e.Message = "Incorrect API key provided: use a personal API key (sk-app-…) or an access token from /api/auth/login."
	case status == http.StatusForbidden:
		e.Type = "permission_error"
	case status == http.StatusNotFound:
		code = "not_found"
	case status == http.StatusTooManyRequests:
		e.Type, code = "requests", "rate_limit_exceeded"
	case status == http.StatusGatewayTimeout:
		e.Type, code = "server_error", "timeout"
	case status >= 500:
		e.Type = "server_error"
	}
	if code != "" {
		e.Code = &code
	}
	if e.Message == "" {
		e.Message = http.StatusText(e.Status)
	}
	return e
}

// writeOpenAI answers e in OpenAI's format. The SDKs retry 429s and 5xx unless told not to: a
// spent budget is not worth retrying.
func writeOpenAI(w http.ResponseWriter, e *gateway.Error) {
	if e.Type == "insufficient_quota" {
		w.Header().Set("X-Should-Retry", "false")
	}
	encode(w, e.Status, gateway.ErrorBody{Error: *e})
}
