package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/gateway"
)

// errorFormat is how a group of routes answers a failure: the status and the JSON body
// answering err. It may set headers of the answer on h, which is nil when the answer is
// already under way (an error event ending a stream). A format never logs (writeError does)
// and never shows the text of an internal error.
//
// The formats are envelopeFormat (/api, and every request no route matched), openAIFormat
// (/v1) and anthropicFormat (/v1/messages); a route group of another dialect is one more
// errorFormat, given to its routes with withFormat.
type errorFormat func(h http.Header, err error) (status int, body any)

// formatted is a route's handler, its middleware included, with the error format of its
// group. route finds the format with the handler, before anything runs, so that what the
// middleware refuses (the global rate limit, authentication, a body over the limit, a panic)
// is answered in the format of the route's own failures.
type formatted struct {
	http.Handler
	format errorFormat
}

// withFormat gives h, a route's handler, the error format f.
func withFormat(f errorFormat, h http.Handler) http.Handler { return formatted{Handler: h, format: f} }

// ServeHTTP serves the route in its format (also when route did not run, as in tests that
// mount a handler alone).
func (f formatted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ri := infoFrom(r.Context()); ri != nil {
		ri.format = f.format
	}
	f.Handler.ServeHTTP(w, r)
}

// formatFrom returns the error format of the request's route: the envelope unless its group
// chose another.
func formatFrom(ctx context.Context) errorFormat {
	if ri := infoFrom(ctx); ri != nil && ri.format != nil {
		return ri.format
	}
	return envelopeFormat
}

// writeError logs err as its status calls for and answers it in the format of the request's
// route. Internal errors are logged and never show their text.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	logFailure(r, err)
	writeFailure(w, formatFrom(r.Context()), err)
}

// writeFailure answers err in format f, with its Retry-After and X-Should-Retry, without
// logging it.
func writeFailure(w http.ResponseWriter, f errorFormat, err error) {
	if e := apperr.As(err); e != nil && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e := apperr.As(err); e != nil && e.NoRetry {
		w.Header().Set("X-Should-Retry", "false")
	}
	status, body := f(w.Header(), err)
	encode(w, status, body)
}

// failureBody logs err as writeError does and returns its body in the format of the request's
// route, for an answer already under way (the error event ending a stream).
func failureBody(r *http.Request, err error) any {
	logFailure(r, err)
	_, body := formatFrom(r.Context())(nil, err)
	return body
}

// logFailure logs an internal error (its text, which the client never sees) as an error, and
// the other 5xx answers (a dependency or a provider failing) as warnings.
func logFailure(r *http.Request, err error) {
	status := StatusOf(err)
	switch {
	case apperr.As(err) == nil || status == http.StatusInternalServerError:
		loggerFrom(r.Context()).Error("internal error", "err", err, "method", r.Method, "path", logPath(r))
	case status >= 500:
		loggerFrom(r.Context()).Warn("request failed", "status", status, "err", err)
	}
}

// clientMessages returns the status of err's kind and what a client may see of it: its
// messages, and whether they are a list (validation failures) even when there is one. An
// internal error shows only "Internal server error".
func clientMessages(err error) (status int, msgs []string, list bool) {
	status = StatusOf(err)
	e := apperr.As(err)
	if e == nil || status == http.StatusInternalServerError {
		return http.StatusInternalServerError, []string{"Internal server error"}, false
	}
	return status, e.Messages, e.List
}

// envelopeFormat is the error format of /api: {"statusCode", "message", "error"}, the message
// a string, or an array for validation failures and several messages.
func envelopeFormat(_ http.Header, err error) (int, any) {
	status, msgs, list := clientMessages(err)
	var message any
	switch {
	case list || len(msgs) > 1:
		message = msgs
	case len(msgs) == 1:
		message = msgs[0]
	default:
		message = http.StatusText(status)
	}
	return status, envelope{StatusCode: status, Message: message, Error: reasonOf(status)}
}

// openAIFormat is the error format of /v1, OpenAI's {"error": {"message", "type", "param",
// "code"}}: the type and code follow the kind as OpenAI's API answers them, the param and a
// code the error names itself are shown as set. A spent budget is OpenAI's 429
// insufficient_quota, with X-Should-Retry: false (the SDKs retry 429s and 5xx unless told
// not to, and a spent budget is not worth retrying).
func openAIFormat(h http.Header, err error) (int, any) {
	status, msgs, _ := clientMessages(err)
	obj := gateway.ErrorObject{Message: strings.Join(msgs, "; "), Type: "invalid_request_error"}
	var param, code string
	if e := apperr.As(err); e != nil {
		param, code = e.Param, e.Code
	}
	switch kind := apperr.KindOf(err); {
	case kind == apperr.PaymentRequired:
		status, obj.Type, code = http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota"
		if h != nil {
			h.Set("X-Should-Retry", "false")
		}
	case kind == apperr.Unauthorized:
		code = "invalid_api_key"
		obj.Message = "Incorrect API key provided: use a personal API key (sk-app-…) or an access token from /api/auth/login."
	case kind == apperr.Forbidden:
		obj.Type = "permission_error"
	case kind == apperr.NotFound:
		if code == "" {
			code = "not_found"
		}
	case kind == apperr.RateLimited:
		obj.Type, code = "requests", "rate_limit_exceeded"
	case kind == apperr.UpstreamTimeout:
		obj.Type, code = "server_error", "timeout"
	case status >= 500:
		obj.Type = "server_error"
	}
	if obj.Message == "" {
		obj.Message = http.StatusText(status)
	}
	if param != "" {
		obj.Param = &param
	}
	if code != "" {
		obj.Code = &code
	}
	return status, gateway.ErrorBody{Error: obj}
}
