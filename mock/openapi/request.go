package openapi

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"mime"
	"slices"
	"strconv"
	"strings"

	"github.com/pb33f/jsonschema/v6"
	"github.com/pb33f/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/acme/app/mock"
)

var printer = message.NewPrinter(language.English)

// errUnsupportedMedia is a request body of a media type the operation does not take.
var errUnsupportedMedia = errors.New("unsupported media type")

// validate checks the request's parameters and body against the operation. It returns the
// violations found, or errUnsupportedMedia for a body the operation does not take.
func (op *operation) validate(req *mock.Request, pathVals map[string]string) ([]Violation, error) {
	var out []Violation
	for _, p := range op.params {
		var raw []string
		switch p.in {
		case "path":
			if v, ok := pathVals[p.name]; ok {
				raw = []string{v}
			}
		case "query":
			raw = req.Query[p.name]
		case "header":
			raw = req.Header.Values(p.name)
		default:
			continue // cookies are not checked
		}
		if len(raw) == 0 {
			if p.required {
				out = append(out, Violation{Location: []string{p.in}, Severity: "Error", Code: "required",
					Message: fmt.Sprintf("Request %s must have required property '%s'", p.in, p.name)})
			}
			continue
		}
		if p.schema == nil {
			continue
		}
		v, ok := p.value(raw)
		if !ok {
			continue
		}
		if err := p.schema.Validate(v); err != nil {
			out = appendViolations(out, err, []string{p.in, p.name}, fmt.Sprintf("Request %s parameter %s", p.in, p.name))
		}
	}
	body, err := op.validateBody(req)
	if err != nil {
		return nil, err
	}
	return append(out, body...), nil
}

// value turns a parameter's text into the JSON value its schema describes: numbers and
// booleans parsed when the schema allows them, arrays split (repeated, or comma-separated
// when not exploded). Objects are not checked (ok false).
func (p *param) value(raw []string) (any, bool) {
	if slices.Contains(p.kinds, "object") {
		return nil, false
	}
	if slices.Contains(p.kinds, "array") {
		items := raw
		if !p.explode || len(raw) == 1 {
			items = strings.Split(strings.Join(raw, ","), ",")
		}
		out := make([]any, len(items))
		for i, s := range items {
			out[i] = coerce(p.items, s)
		}
		return out, true
	}
	return coerce(p.kinds, raw[0]), true
}

// coerce reads s as the first of kinds it parses as; a string otherwise.
func coerce(kinds []string, s string) any {
	if slices.Contains(kinds, "integer") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	if slices.Contains(kinds, "number") {
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	if slices.Contains(kinds, "boolean") && (s == "true" || s == "false") {
		return s == "true"
	}
	if slices.Contains(kinds, "null") && s == "null" {
		return nil
	}
	return s
}

// validateBody checks the request body against the media type it is sent as.
func (op *operation) validateBody(req *mock.Request) ([]Violation, error) {
	rb := op.body
	if rb == nil {
		return nil, nil
	}
	if len(bytes.TrimSpace(req.RawBody)) == 0 {
		if rb.required {
			return []Violation{{Location: []string{"body"}, Severity: "Error", Code: "required", Message: "Body parameter is required"}}, nil
		}
		return nil, nil
	}
	ct := req.Header.Get("Content-Type")
	typ := ""
	if ct != "" {
		t, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, errUnsupportedMedia
		}
		typ = t
	}
	m := rb.find(typ)
	if m == nil {
		return nil, errUnsupportedMedia
	}
	if !m.json || m.schema == nil {
		return nil, nil
	}
	v := req.Body // the interceptor decodes a JSON body once; a string or nil may be its failure
	switch v.(type) {
	case nil, string:
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(req.RawBody)); err != nil {
			return []Violation{{Location: []string{"body"}, Severity: "Error", Code: "type", Message: "Request body is not valid JSON: " + err.Error()}}, nil
		}
	}
	if err := m.schema.Validate(v); err != nil {
		return appendViolations(nil, err, []string{"body"}, "Request body"), nil
	}
	return nil, nil
}

// find picks the media type a body sent as typ is read as: the same type, else a wildcard
// one (text/*, */*); a body sent without a Content-Type is read as the first JSON type.
func (rb *requestBody) find(typ string) *reqMedia {
	if typ == "" {
		for _, m := range rb.media {
			if m.json {
				return m
			}
		}
		if len(rb.media) > 0 {
			return rb.media[0]
		}
		return nil
	}
	major, _, _ := strings.Cut(typ, "/")
	var wild *reqMedia
	for _, m := range rb.media {
		mt, _, _ := strings.Cut(m.typ, ";")
		mt = strings.TrimSpace(mt)
		switch {
		case mt == typ:
			return m
		case mt == major+"/*", mt == "*/*":
			if wild == nil {
				wild = m
			}
		}
	}
	return wild
}

// appendViolations turns a validation error into violations located under prefix.
func appendViolations(out []Violation, err error, prefix []string, where string) []Violation {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return append(out, Violation{Location: prefix, Severity: "Error", Code: "schema", Message: where + " " + err.Error()})
	}
	n := len(out)
	out = collect(out, ve, prefix, where)
	// the validator walks objects in map order: sort by location, so answers repeat
	slices.SortStableFunc(out[n:], func(a, b Violation) int {
		return slices.Compare(a.Location, b.Location)
	})
	return out
}

func collect(out []Violation, e *jsonschema.ValidationError, prefix []string, where string) []Violation {
	loc := append(slices.Clone(prefix), e.InstanceLocation...)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			out = append(out, Violation{Location: loc, Severity: "Error", Code: "required",
				Message: fmt.Sprintf("%s must have required property '%s'", subject(where, e.InstanceLocation), name)})
		}
		return out
	case *kind.OneOf, *kind.AnyOf:
		code := "oneOf"
		if _, any := k.(*kind.AnyOf); any {
			code = "anyOf"
		}
		return append(out, Violation{Location: loc, Severity: "Error", Code: code,
			Message: fmt.Sprintf("%s must match %s schema in %s", subject(where, e.InstanceLocation), map[string]string{"oneOf": "exactly one", "anyOf": "a"}[code], code)})
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			out = collect(out, c, prefix, where)
		}
		return out
	}
	kp := e.ErrorKind.KeywordPath()
	code := "schema"
	if len(kp) > 0 {
		code = kp[len(kp)-1]
	}
	var msg string
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		msg = "must be " + strings.Join(k.Want, " or ")
	case *kind.AdditionalProperties:
		msg = "must NOT have additional properties: " + strings.Join(k.Properties, ", ")
	case *kind.Enum:
		allowed := make([]string, len(k.Want))
		for i, v := range k.Want {
			allowed[i] = "null"
			if v != nil {
				allowed[i] = scalarString(v)
			}
		}
		msg = "must be equal to one of the allowed values: " + strings.Join(allowed, ", ")
	case *kind.Minimum:
		msg = "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		msg = "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		msg = "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		msg = "must be < " + ratString(k.Want)
	case *kind.MinLength:
		msg = fmt.Sprintf("must NOT have fewer than %d characters", k.Want)
	case *kind.MaxLength:
		msg = fmt.Sprintf("must NOT have more than %d characters", k.Want)
	case *kind.MinItems:
		msg = fmt.Sprintf("must NOT have fewer than %d items", k.Want)
	case *kind.MaxItems:
		msg = fmt.Sprintf("must NOT have more than %d items", k.Want)
	case *kind.Pattern:
		msg = fmt.Sprintf("must match pattern %q", k.Want)
	case *kind.Format:
		msg = fmt.Sprintf("must match format %q", k.Want)
	default:
		msg = e.ErrorKind.LocalizedString(printer)
	}
	return append(out, Violation{Location: loc, Severity: "Error", Code: code, Message: subject(where, e.InstanceLocation) + " " + msg})
}

// subject names the value a message is about: "Request body property owner.email".
func subject(where string, path []string) string {
	if len(path) == 0 {
		return where
	}
	return where + " property " + strings.Join(path, ".")
}

// ratString writes a schema bound as JSON would: 50, 0.5.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
