package openapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/munnerz/goautoneg"

	"github.com/acme/app/mock"
)

// Options steer how a description answers.
type Options struct {
	// Dynamic answers random data generated from the schemas by default, as Prism's
	// --dynamic (a request's "Prefer: dynamic=false" still gets the static answer).
	Dynamic bool
	// Seed seeds the random data, so two mocks started alike answer alike; 0 picks a seed
	// from the clock.
	Seed uint64
}

// Route is one route a description serves.
type Route struct {
	// Key is the route key of the interceptor: "GET /pets/:id"; "* /pets/:id" answers the
	// methods the path does not define (405).
	Key string
	// Method and Path are the operation's, as the description writes them ("GET",
	// "/pets/{id}"); Method is "*" for the 405 route of a path.
	Method, Path string
	// OperationID is the operation's operationId, if any.
	OperationID string
	// Line is where the operation is defined in the description.
	Line int
	// Handler answers the route.
	Handler mock.Handler
}

// Routes returns a route for every operation of the description, and for every path one
// that answers the methods it does not define with 405. Each call makes its own random
// source for generated answers.
func (s *Spec) Routes(opts Options) []Route {
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	a := &answerer{s: s, opts: opts, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	out := make([]Route, 0, len(s.ops)+len(s.paths))
	for _, op := range s.ops {
		out = append(out, Route{Key: op.key, Method: op.method, Path: op.path, OperationID: op.id, Line: op.line, Handler: a.handler(op)})
	}
	for _, p := range s.paths {
		allow := strings.Join(p.methods, ", ")
		path := p.path
		out = append(out, Route{Key: "* " + p.key, Method: "*", Path: p.path, Line: p.line,
			Handler: func(_ context.Context, req *mock.Request) (*mock.Response, error) {
				r := problem(http.StatusMethodNotAllowed, TypeNoMethodMatched, "Route resolved, but no method matched",
					"The route "+path+" has been matched, but it does not have \""+strings.ToLower(req.Method)+"\" method defined", nil)
				if allow != "" {
					r.Headers["Allow"] = allow
				}
				return r, nil
			}})
	}
	return out
}

// Definitions returns the routes as definitions of a mock.Interceptor.
func (s *Spec) Definitions(opts Options) mock.Definitions {
	d := mock.Definitions{}
	for _, r := range s.Routes(opts) {
		d[r.Key] = r.Handler
	}
	return d
}

// answerer answers the operations of one description.
type answerer struct {
	s    *Spec
	opts Options
	mu   sync.Mutex
	rnd  *rand.Rand
}

func (a *answerer) handler(op *operation) mock.Handler {
	return func(_ context.Context, req *mock.Request) (*mock.Response, error) {
		return a.answer(op, req), nil
	}
}

// answer runs Prism's steps: security, request validation, then the response the request
// prefers (or the operation's default one) in the media type it accepts.
func (a *answerer) answer(op *operation, req *mock.Request) *mock.Response {
	pathVals := make(map[string]string, len(op.names))
	for k, name := range op.names {
		pathVals[name] = req.Params[k]
	}
	for _, sm := range op.segs {
		m := sm.re.FindStringSubmatch(req.Params[sm.key])
		if m == nil {
			return problem(http.StatusNotFound, TypeNoPathMatched, "Route not resolved, no path matched",
				"The route "+req.Path+" hasn't been found in the specification file", nil)
		}
		for i, n := range sm.names {
			pathVals[n] = m[i+1]
		}
	}
	pref, err := requestPrefer(req.Header, req.Query)
	if err != nil {
		return problem(http.StatusUnprocessableEntity, TypeUnprocessable, "Invalid request", err.Error(), nil)
	}
	if ok, challenges := op.authorized(req.Header, req.Query); !ok {
		if r, status := op.declared(http.StatusUnauthorized); r != nil {
			return a.respond(op, r, status, req, Prefer{Dynamic: pref.Dynamic})
		}
		p := problem(http.StatusUnauthorized, TypeUnauthorized, "Invalid security scheme used",
			"The request lacks the credentials the operation's security requirements ask for, and the operation defines no 401 answer.", nil)
		if len(challenges) > 0 {
			p.Headers["WWW-Authenticate"] = strings.Join(challenges, ", ")
		}
		return p
	}
	violations, err := op.validate(req, pathVals)
	if err != nil {
		return problem(http.StatusUnsupportedMediaType, TypeContentType, "Invalid content type",
			"The request body's Content-Type "+strconv.Quote(req.Header.Get("Content-Type"))+" is not one this operation accepts: "+op.bodyTypes(), nil)
	}
	if len(violations) > 0 {
		// Prism's order: 422, else 4XX answered 422, else 400, else default answered 422
		for _, code := range []int{http.StatusUnprocessableEntity, http.StatusBadRequest} {
			if r, status := op.declared(code); r != nil {
				return a.respond(op, r, status, req, Prefer{Dynamic: pref.Dynamic})
			}
		}
		if r := op.byCode["DEFAULT"]; r != nil {
			return a.respond(op, r, http.StatusUnprocessableEntity, req, Prefer{Dynamic: pref.Dynamic})
		}
		return problem(http.StatusUnprocessableEntity, TypeUnprocessable, "Invalid request",
			"The request does not match the description (see validation), and the operation defines no 422, 4XX, 400 or default answer.", violations)
	}
	r, status := op.chosen, 0
	if pref.Code != 0 {
		r, status = op.pick(pref.Code)
		if r == nil {
			return problem(http.StatusNotFound, TypeNotFound, "The server cannot find the requested content",
				"Requested status code "+strconv.Itoa(pref.Code)+" is not defined in the document.", nil)
		}
	}
	if r == nil {
		return problem(http.StatusInternalServerError, TypeNoResponse, "No response defined",
			"The operation "+op.method+" "+op.path+" defines no response.", nil)
	}
	if status == 0 {
		status = r.status
	}
	return a.respond(op, r, status, req, pref)
}

// pick finds the response for a status the request asks for: that code, else its range
// (4XX), else default answered with that status.
func (op *operation) pick(code int) (*response, int) {
	if r, status := op.declared(code); r != nil {
		return r, status
	}
	if r := op.byCode["DEFAULT"]; r != nil && code >= 100 && code <= 599 {
		return r, code
	}
	return nil, 0
}

// declared finds the response the operation declares for a status: that code, else its
// range (4XX) answered with that status.
func (op *operation) declared(code int) (*response, int) {
	if code < 100 || code > 599 {
		return nil, 0
	}
	c := strconv.Itoa(code)
	if r := op.byCode[c]; r != nil {
		return r, code
	}
	if r := op.byCode[c[:1]+"XX"]; r != nil {
		return r, code
	}
	return nil, 0
}

func (op *operation) bodyTypes() string {
	if op.body == nil {
		return "none"
	}
	ts := make([]string, len(op.body.media))
	for i, m := range op.body.media {
		ts[i] = m.typ
	}
	return strings.Join(ts, ", ")
}

// respond answers r with status in the media type the request accepts.
func (a *answerer) respond(op *operation, r *response, status int, req *mock.Request, pref Prefer) *mock.Response {
	if len(r.media) == 0 {
		return &mock.Response{Status: status, Headers: r.bodyless, Body: []byte{}}
	}
	m := negotiate(r.media, req.Header.Values("Accept"))
	if m == nil {
		return problem(http.StatusNotAcceptable, TypeNotAcceptable, "The server cannot produce a representation for your accept header",
			"Unable to find content for "+strings.Join(req.Header.Values("Accept"), ", "), nil)
	}
	chosen := m.static
	switch dynamic := a.opts.Dynamic; {
	case pref.Example != "":
		b, ok := m.examples[pref.Example]
		if !ok {
			return problem(http.StatusNotFound, TypeNotFound, "The server cannot find the requested content",
				"Response for contentType: "+m.typ+" and exampleKey: "+pref.Example+" does not exist.", nil)
		}
		chosen = b
	case (pref.Dynamic != nil && *pref.Dynamic || pref.Dynamic == nil && dynamic) && m.schema.v != nil:
		a.mu.Lock()
		g := &generator{s: a.s, rnd: a.rnd}
		v := g.value(m.schema, 0)
		a.mu.Unlock()
		if g.over {
			chosen = body{tooLarge: true}
		} else {
			chosen = body{lazy: true, val: v}
		}
	}
	b, ok := a.s.bytes(m, chosen)
	if !ok {
		return problem(http.StatusInternalServerError, TypeAnswerTooLarge, "Answer too large",
			fmt.Sprintf("The answer of %s %s for status %d in %s would pass %d MB, the most a mock answer may hold: give it a smaller example.",
				op.method, op.path, status, m.typ, MaxAnswer>>20), nil)
	}
	return &mock.Response{Status: status, Headers: m.headers, Body: b}
}

// negotiate picks the media type for the Accept header: application/json (else the first
// listed) when the client accepts anything, nil when it accepts none of them.
func negotiate(media []*media, accept []string) *media {
	header := strings.TrimSpace(strings.Join(accept, ","))
	if header == "" || header == "*/*" {
		return media[0]
	}
	alts := make([]string, len(media))
	for i, m := range media {
		t, _, _ := strings.Cut(m.typ, ";")
		alts[i] = strings.ToLower(strings.TrimSpace(t))
	}
	best := goautoneg.Negotiate(header, alts)
	for i, t := range alts {
		if t == best {
			return media[i]
		}
	}
	return nil
}
