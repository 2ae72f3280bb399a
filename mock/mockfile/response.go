package mockfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/acme/app/mock"
)

// header is one response header: a constant or a template.
type header struct {
	name   string
	static string
	t      *tmpl
}

// response is one compiled response spec.
type response struct {
	status     int
	statusText string
	headers    []header
	delay      mock.Delay

	data    *tree  // JSON data (constant or templated)
	body    *tmpl  // body: a raw templated body
	rawBody []byte // body: a raw constant body

	staticHeaders map[string]string // when no header is templated (shared, never written)
	static        *mock.Response    // when nothing at all is templated
}

// finish precomputes what does not depend on the request.
func (r *response) finish() {
	dynamic := false
	r.staticHeaders = make(map[string]string, len(r.headers))
	for _, h := range r.headers {
		if h.t != nil {
			dynamic = true
			r.staticHeaders = nil
			break
		}
		r.staticHeaders[h.name] = h.static
	}
	if len(r.headers) == 0 {
		r.staticHeaders = nil
	}
	if r.body != nil || (r.data != nil && !r.data.isStatic()) {
		dynamic = true
	}
	if !dynamic {
		resp := &mock.Response{Status: r.status, StatusText: r.statusText, Headers: r.staticHeaders}
		switch {
		case r.data != nil:
			resp.Body = r.data.static
		case r.rawBody != nil:
			resp.Body = r.rawBody
		default:
			resp.Body = []byte{}
		}
		r.static = resp
	}
}

// respond builds the answer to req.
func (r *response) respond(req *mock.Request) (*mock.Response, error) {
	var resp *mock.Response
	if r.static != nil {
		c := *r.static // the interceptor never writes to Body or Headers
		resp = &c
	} else {
		v := newView(req)
		resp = &mock.Response{Status: r.status, StatusText: r.statusText, Headers: r.staticHeaders}
		if resp.Headers == nil && len(r.headers) > 0 {
			resp.Headers = make(map[string]string, len(r.headers))
			for _, h := range r.headers {
				val := h.static
				if h.t != nil {
					s, err := h.t.exec(v)
					if err != nil {
						return nil, err
					}
					val = s
				}
				resp.Headers[h.name] = val
			}
		}
		switch {
		case r.data != nil:
			b, err := r.data.appendJSON(make([]byte, 0, 256), v)
			if err != nil {
				return nil, err
			}
			resp.Body = b
		case r.body != nil:
			s, err := r.body.exec(v)
			if err != nil {
				return nil, err
			}
			resp.Body = []byte(s)
		case r.rawBody != nil:
			resp.Body = r.rawBody
		default:
			resp.Body = []byte{}
		}
	}
	if !r.delay.IsZero() {
		resp.Delay = r.delay.Pick()
	}
	return resp, nil
}

func (r *response) handler() mock.Handler {
	return func(_ context.Context, req *mock.Request) (*mock.Response, error) { return r.answer(req) }
}

// answer is respond, with a template that read {{.Body.x}} of a request body that is not a
// JSON object answered 400 in the error envelope, naming the route (any other template
// failure stays an error: 500 HANDLER_EXECUTION_ERROR).
func (r *response) answer(req *mock.Request) (*mock.Response, error) {
	resp, err := r.respond(req)
	if !errors.Is(err, errBodyNotObject) {
		return resp, err
	}
	b, _ := json.Marshal(map[string]any{"statusCode": http.StatusBadRequest, "error": "Bad Request",
		"message": fmt.Sprintf("%s: %v", req.Route, err)})
	return &mock.Response{Status: http.StatusBadRequest, Headers: map[string]string{"Content-Type": "application/json"}, Body: b}, nil
}

// sequenceHandler answers the steps in turn; the last one repeats (as Hoverfly's sequences do).
func sequenceHandler(steps []*response, n *atomic.Int64) mock.Handler {
	last := int64(len(steps) - 1)
	return func(_ context.Context, req *mock.Request) (*mock.Response, error) {
		i := n.Add(1) - 1
		if i > last {
			i = last
			n.Store(last + 1) // keep the counter bounded
		}
		return steps[i].answer(req)
	}
}
