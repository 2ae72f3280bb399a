package mockfile

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/acme/app/mock"
)

// reqView is what a response template sees as its dot: {{.Params.id}}, {{.Query.page}},
// {{.Body.email}}, {{.Headers.Authorization}}, {{.Method}}, {{.Path}}, {{.URL}}, {{.Route}},
// {{.RequestID}}. Query, Headers and Body are methods so that a template that does not use
// them costs nothing; each is computed once per request.
type reqView struct {
	req    *mock.Request
	Params map[string]string

	query    map[string]string
	queryAll map[string]jsonStrings
	headers  map[string]string
	body     any
	hasBody  bool // body is computed (it may be nil: a "null" body)
}

func newView(req *mock.Request) *reqView {
	p := req.Params
	if p == nil {
		p = map[string]string{}
	}
	return &reqView{req: req, Params: p}
}

// Method is the request method.
func (v *reqView) Method() string { return v.req.Method }

// Path is the request path the route was matched against.
func (v *reqView) Path() string { return v.req.Path }

// URL is the full request URL.
func (v *reqView) URL() string { return v.req.URL }

// Route is the matched route key.
func (v *reqView) Route() string { return v.req.Route }

// RequestID is the interceptor's id of the request.
func (v *reqView) RequestID() string { return v.req.RequestID }

// Query holds the first value of each query parameter.
func (v *reqView) Query() map[string]string {
	if v.query == nil {
		v.query = make(map[string]string, len(v.req.Query))
		for k, vs := range v.req.Query {
			if len(vs) > 0 {
				v.query[k] = vs[0]
			}
		}
	}
	return v.query
}

// QueryAll holds every value of each query parameter, a list that prints as JSON
// ({{.QueryAll.tag}} gives ["a","b"]) as the body's arrays do; a parameter not sent is [].
func (v *reqView) QueryAll() map[string]jsonStrings {
	if v.queryAll == nil {
		v.queryAll = make(map[string]jsonStrings, len(v.req.Query))
		for k, vs := range v.req.Query {
			v.queryAll[k] = vs
		}
	}
	return v.queryAll
}

// jsonStrings is a list of strings for index, range and len, printed as JSON.
type jsonStrings []string

func (s jsonStrings) String() string {
	if s == nil {
		return "[]"
	}
	return jsonText([]string(s))
}

// Headers holds the first value of each request header, under its canonical name
// (Authorization) and its lower-case name (authorization).
func (v *reqView) Headers() map[string]string {
	if v.headers == nil {
		v.headers = make(map[string]string, 2*len(v.req.Header))
		for k, vs := range v.req.Header {
			if len(vs) > 0 {
				v.headers[http.CanonicalHeaderKey(k)] = vs[0]
				v.headers[strings.ToLower(k)] = vs[0]
			}
		}
	}
	return v.headers
}

// Body is the parsed JSON body (an object is a map, so {{.Body.email}} works), the body as a
// string when it is not JSON, or an empty object when there is none. Objects and arrays in
// it print as JSON: {{.Body.user}} gives {"name":"Ada"}, not Go's map[name:Ada].
func (v *reqView) Body() any {
	if !v.hasBody {
		v.body, v.hasBody = jsonView(parseViewBody(v.req)), true
	}
	return v.body
}

// jsonObject and jsonArray are a body's objects and arrays as a template sees them: a map and
// a slice for field access, index, range and len, printed as JSON.
type (
	jsonObject map[string]any
	jsonArray  []any
)

func (o jsonObject) String() string { return jsonText(map[string]any(o)) }
func (a jsonArray) String() string  { return jsonText([]any(a)) }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// jsonView copies a decoded JSON value with its objects and arrays as jsonObject and
// jsonArray (a copy: the request's own body stays as it was decoded).
func jsonView(v any) any {
	switch x := v.(type) {
	case map[string]any:
		o := make(jsonObject, len(x))
		for k, e := range x {
			o[k] = jsonView(e)
		}
		return o
	case []any:
		a := make(jsonArray, len(x))
		for i, e := range x {
			a[i] = jsonView(e)
		}
		return a
	}
	return v
}

func parseViewBody(req *mock.Request) any {
	switch b := req.Body.(type) {
	case nil:
		return map[string]any{}
	case string:
		// A JSON body sent without a JSON Content-Type, or a form.
		var j any
		if json.Unmarshal([]byte(b), &j) == nil {
			return j
		}
		if strings.Contains(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			if vals, err := url.ParseQuery(b); err == nil {
				m := make(map[string]any, len(vals))
				for k, vs := range vals {
					m[k] = vs[0]
				}
				return m
			}
		}
		return b
	default:
		return b
	}
}

// RawBody is the body as sent.
func (v *reqView) RawBody() string { return string(v.req.RawBody) }
