package mock

import (
	"context"
	"fmt"
	"sort"
)

// Middleware runs around mocked requests (the seed's MockMiddleware).
// Middleware with a higher Priority runs earlier, for every hook; equal
// priorities keep their order in Config.Middleware. A hook that returns an
// error or panics fails the request with [CodeMiddleware].
type Middleware struct {
	// Name identifies the middleware in errors and logs.
	Name string
	// Priority orders the middleware: higher runs earlier.
	Priority int
	// OnRequest sees the request before the handler and may change it in
	// place. A non-nil response answers the request at once: the handler,
	// the cache and later OnRequest hooks are skipped, OnResponse hooks
	// still run.
	OnRequest func(ctx context.Context, req *Request) (*Response, error)
	// OnResponse sees each response; a non-nil result replaces it.
	OnResponse func(ctx context.Context, resp *Response, req *Request) (*Response, error)
	// OnError sees a handler or middleware failure; a non-nil response
	// recovers from it and is answered instead.
	OnError func(ctx context.Context, err error, req *Request) (*Response, error)
}

// sortMiddleware returns the middleware ordered by priority, higher first.
func sortMiddleware(mw []Middleware) []Middleware {
	out := append([]Middleware(nil), mw...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority > out[j].Priority })
	return out
}

// callHook runs one hook, turning a panic into an error.
func callHook(f func() (*Response, error)) (resp *Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}
