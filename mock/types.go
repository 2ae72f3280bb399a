package mock

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// HTTP status codes that mocks answer most, named for short. They equal the net/http
// constants of the same meaning.
const (
	StatusOK                  = http.StatusOK                  // 200
	StatusCreated             = http.StatusCreated             // 201
	StatusNoContent           = http.StatusNoContent           // 204
	StatusBadRequest          = http.StatusBadRequest          // 400
	StatusUnauthorized        = http.StatusUnauthorized        // 401
	StatusForbidden           = http.StatusForbidden           // 403
	StatusNotFound            = http.StatusNotFound            // 404
	StatusConflict            = http.StatusConflict            // 409
	StatusInternalServerError = http.StatusInternalServerError // 500
)

// Request is the request a [Handler] sees: the matched route, its parameters, the query,
// the headers and the decoded body.
// Handlers and middleware must treat Header and Query as read-only unless
// they own the request.
type Request struct {
	// Method is the HTTP method, upper-case.
	Method string
	// URL is the full request URL, as sent by the client.
	URL string
	// Path is the request path after the base URL and strip prefix were
	// removed: the path the route was matched against.
	Path string
	// Route is the route key that matched, such as "GET /users/:id".
	Route string
	// Params holds the path parameters by name. A trailing wildcard's match
	// is under "*".
	Params map[string]string
	// Query holds the query parameters.
	Query url.Values
	// Header holds the request headers.
	Header http.Header
	// Body is the parsed JSON body when the body is JSON, else the body as a
	// string, or nil when there is no body.
	Body any
	// RawBody is the body as sent.
	RawBody []byte
	// RemoteAddr is the client's network address (Handler face only).
	RemoteAddr string
	// Timestamp is when the interceptor received the request.
	Timestamp time.Time
	// RequestID identifies the request; it is generated automatically.
	RequestID string
}

// Param returns the path parameter name, or "" if there is none.
func (r *Request) Param(name string) string { return r.Params[name] }

// Response is what a [Handler] answers.
type Response struct {
	// Status is the HTTP status code; 0 means 200.
	Status int
	// Data is encoded as JSON, unless it is a []byte or json.RawMessage,
	// which are written as they are, or a string while the Content-Type is
	// not JSON, which is written as text.
	Data any
	// Body, when non-nil, is written as is and Data is ignored.
	Body []byte
	// Headers are set on the response, over the default headers.
	Headers map[string]string
	// Delay, when positive, replaces the configured delay for this response.
	Delay time.Duration
	// StatusText replaces the standard reason phrase, e.g. "I'm a teapot".
	StatusText string
}

// Handler answers a mocked request. A handler that answers later blocks until its
// answer is ready and returns early with ctx.Err() when ctx is done. A returned error,
// or a panic, surfaces as [CodeHandlerExecution].
type Handler func(ctx context.Context, req *Request) (*Response, error)

// Definitions maps route keys to handlers. A route key is a method, a space and a path
// pattern: "GET /users/:id", "POST /orders", "* /health" (any method), "GET /files/*"
// (trailing wildcard).
type Definitions map[string]Handler

// JSON returns a handler that always answers status with data encoded as
// JSON.
func JSON(status int, data any) Handler {
	return func(context.Context, *Request) (*Response, error) {
		return &Response{Status: status, Data: data}, nil
	}
}

// Static returns a handler that always answers a copy of resp.
func Static(resp Response) Handler {
	return func(context.Context, *Request) (*Response, error) {
		r := resp
		return &r, nil
	}
}

// Fail returns a handler that always fails with err; the interceptor
// reports it as [CodeHandlerExecution].
func Fail(err error) Handler {
	return func(context.Context, *Request) (*Response, error) { return nil, err }
}

// errChanClosed is returned by FromChan when the channel closes empty.
var errChanClosed = errors.New("response channel closed without a response")

// FromChan adapts a handler that delivers its response later on a channel
// (a result computed in another goroutine, a stream of updates). The first value
// received is the answer; a channel closed without a value is a handler error, and
// a done ctx ends the wait with ctx.Err().
func FromChan(h func(ctx context.Context, req *Request) <-chan *Response) Handler {
	return func(ctx context.Context, req *Request) (*Response, error) {
		ch := h(ctx, req)
		select {
		case resp, ok := <-ch:
			if !ok {
				return nil, errChanClosed
			}
			return resp, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Delay is a response delay: fixed when Max is not above Min, otherwise
// uniform in [Min, Max].
type Delay struct {
	Min, Max time.Duration
}

// Fixed returns a fixed delay of d.
func Fixed(d time.Duration) Delay { return Delay{Min: d, Max: d} }

// Between returns a delay drawn uniformly from [min, max].
func Between(min, max time.Duration) Delay { return Delay{Min: min, Max: max} }

// IsZero reports whether the delay is zero.
func (d Delay) IsZero() bool { return d.Min <= 0 && d.Max <= 0 }

// IsRange reports whether the delay is a [min, max] range.
func (d Delay) IsRange() bool { return d.Max > d.Min }

// Pick returns one delay: Min when fixed, else a uniform draw.
func (d Delay) Pick() time.Duration {
	if !d.IsRange() {
		return max(d.Min, 0)
	}
	lo := max(d.Min, 0)
	return lo + time.Duration(rand.Int64N(int64(d.Max-lo)+1))
}

// sleep waits for d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RouteMatchResult is the outcome of matching one pattern against one URL.
type RouteMatchResult struct {
	// Matches reports whether the pattern matches.
	Matches bool `json:"matches"`
	// Params holds the extracted path parameters.
	Params map[string]string `json:"params"`
	// Score ranks matches: higher is a better (more specific) match.
	Score int64 `json:"score"`
}

// RouteMatchInfo describes how the interceptor routed one request.
type RouteMatchInfo struct {
	// Matched reports whether a route matched.
	Matched bool `json:"matched"`
	// MatchedRoute is the route key that matched.
	MatchedRoute string `json:"matchedRoute,omitempty"`
	// ExtractedParams holds the path parameters.
	ExtractedParams map[string]string `json:"extractedParams,omitempty"`
	// ProcessingTime is how long the lookup took.
	ProcessingTime time.Duration `json:"processingTime,omitempty"`
	// Score is the score of the matched route.
	Score int64 `json:"score,omitempty"`
}
