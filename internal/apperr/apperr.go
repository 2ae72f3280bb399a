// Package apperr defines the kinds of failure the services report. The edges translate a kind
// once: the HTTP layer into a status and the error format of the route (the envelope of /api,
// OpenAI's on /v1), the CLI into an exit code.
package apperr

import (
	"errors"
	"strings"
)

// Kind is the category of a failure.
type Kind int

// The kinds of failure. Internal is the default for any error that is not an *Error.
const (
	Internal Kind = iota
	Invalid
	Unauthorized
	Forbidden
	NotFound
	Conflict
	TooLarge
	RateLimited
	Unavailable     // a dependency (database, provider key) is missing or down: 503
	Upstream        // an upstream service failed or refused us: 502
	UpstreamTimeout // an upstream service did not answer in time: 504
	PaymentRequired // the caller's budget does not cover the call: 402
)

// Error is a failure with a kind and the messages a client may see.
type Error struct {
	Kind Kind
	// Messages are safe to show to a client. Several messages (validation) are answered as an
	// array; one message as a string.
	Messages []string
	// List forces an array answer even for one message (validation failures).
	List bool
	// RetryAfter, when positive, is sent as the Retry-After header (seconds).
	RetryAfter int
	// NoRetry says that sending the same request again soon cannot succeed (the server's
	// provider key refused, its provider account out of credit); it is sent as the header
	// X-Should-Retry: false, which the official OpenAI and Anthropic SDKs obey.
	NoRetry bool
	// Param names the request parameter the failure is about, as the request named it
	// ("temperature", "messages[0].role"); "" when none or several. Formats that have the
	// field (OpenAI's param) show it.
	Param string
	// Code is a stable, machine-readable reason within the kind ("unsupported_parameter",
	// "model_not_found"); "" when the kind says all. Formats that have the field (OpenAI's
	// code) show it.
	Code string
	// UpstreamType is the error type a provider reported for the failure, in its error answer
	// or its stream ("overloaded_error", "server_error"); "" when it reported none. It is the
	// provider's word, not a Code: only a format that speaks that provider's dialect (Anthropic's
	// on /v1/messages) shows it.
	UpstreamType string
	// Err is the cause, for logs only.
	Err error
}

// E returns an *Error of kind k with the given client-visible messages.
func E(k Kind, msgs ...string) *Error {
	return &Error{Kind: k, Messages: msgs}
}

// Validation returns an Invalid error whose messages are always answered as an array.
func Validation(msgs ...string) *Error {
	return &Error{Kind: Invalid, Messages: msgs, List: true}
}

// Wrap returns an *Error of kind k that keeps err as its cause (logged, never shown).
func Wrap(k Kind, err error, msgs ...string) *Error {
	return &Error{Kind: k, Messages: msgs, Err: err}
}

func (e *Error) Error() string {
	msg := strings.Join(e.Messages, "; ")
	if e.Err != nil {
		cause := e.Err.Error()
		if msg == "" {
			return cause
		}
		if strings.HasSuffix(msg, cause) { // the message already quotes its cause
			return msg
		}
		return msg + ": " + cause
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err: the kind of the first *Error in its chain, else Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// As returns the first *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
