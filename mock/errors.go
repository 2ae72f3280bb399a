package mock

import (
	"fmt"
	"strings"
)

// ErrorCode names the kind of failure carried by an [*Error].
type ErrorCode string

// The five error codes: every [*Error] carries one.
const (
	// CodeInvalidMockDefinition means a mock definition failed validation.
	CodeInvalidMockDefinition ErrorCode = "INVALID_MOCK_DEFINITION"
	// CodeRouteMatchFailed means no route matched the request.
	CodeRouteMatchFailed ErrorCode = "ROUTE_MATCH_FAILED"
	// CodeHandlerExecution means a mock handler returned an error or panicked.
	CodeHandlerExecution ErrorCode = "HANDLER_EXECUTION_ERROR"
	// CodeMiddleware means a middleware returned an error or panicked.
	CodeMiddleware ErrorCode = "MIDDLEWARE_ERROR"
	// CodePersistence means a cache or storage operation failed.
	CodePersistence ErrorCode = "PERSISTENCE_ERROR"
)

// Sentinel errors, one per code, for use with errors.Is: an [*Error] is
// equal to the sentinel with the same Code.
var (
	ErrInvalidMockDefinition = &Error{Code: CodeInvalidMockDefinition, Message: "invalid mock definition"}
	ErrRouteMatchFailed      = &Error{Code: CodeRouteMatchFailed, Message: "no route matched the request"}
	ErrHandlerExecution      = &Error{Code: CodeHandlerExecution, Message: "mock handler failed"}
	ErrMiddleware            = &Error{Code: CodeMiddleware, Message: "middleware failed"}
	ErrPersistence           = &Error{Code: CodePersistence, Message: "cache storage failed"}
)

// Error is the error type of the package: a code, a message and, when a request
// failed, the request's method, URL and route.
// Use errors.As to get at its fields, or errors.Is with one of the
// sentinels such as [ErrRouteMatchFailed] to test its code.
type Error struct {
	// Code is one of the five error codes.
	Code ErrorCode
	// Message describes the failure in one line.
	Message string
	// Route is the route key involved, if any.
	Route string
	// Method and URL identify the request involved, if any.
	Method, URL string
	// Closest lists the registered routes nearest to an unmatched request
	// (near-miss hints), best first. It is set for CodeRouteMatchFailed only.
	Closest []string
	// Validation holds the validation result behind a
	// CodeInvalidMockDefinition error.
	Validation *ValidationResult
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the message, prefixed by the code and followed by the
// near-miss hints and the cause.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("mock: ")
	b.WriteString(string(e.Code))
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Route != "" && !strings.Contains(e.Message, e.Route) {
		fmt.Fprintf(&b, " (route %q)", e.Route)
	}
	if len(e.Closest) > 0 {
		fmt.Fprintf(&b, "; closest registered routes: %s", strings.Join(e.Closest, ", "))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an [*Error] with the same code, so that
// errors.Is(err, mock.ErrRouteMatchFailed) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// reqError returns an error of code about the request req: its route,
// method and URL are filled in.
func reqError(code ErrorCode, req *Request, msg string, cause error) *Error {
	return &Error{Code: code, Route: req.Route, Method: req.Method, URL: req.URL, Message: msg, Err: cause}
}
