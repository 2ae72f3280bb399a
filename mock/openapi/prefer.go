package openapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Prefer is what a request's Prefer header asks of the mock, as Prism reads it:
// "Prefer: code=404", "Prefer: example=bob", "Prefer: dynamic=true", or several of them
// separated by commas ("code=200, example=bob"). Without the header, the query parameters
// __code, __example and __dynamic ask the same.
type Prefer struct {
	// Code is the status asked for; 0 when none.
	Code int
	// Example names the example asked for; "" when none.
	Example string
	// Dynamic is set when the header says dynamic=true or dynamic=false.
	Dynamic *bool
}

// ParsePrefer reads the Prefer header values. Preferences it does not know, and values that
// do not parse, are ignored.
func ParsePrefer(values []string) Prefer {
	p, _ := readPrefer(values)
	if p.Code < 100 || p.Code > 599 {
		p.Code = 0
	}
	return p
}

// requestPrefer reads what a request asks of the mock, as Prism reads it: its Prefer header,
// else (a request without one, such as a browser's that wants no preflight) the query
// parameters __code, __example and __dynamic. A code that is not a number, or a dynamic that
// is not a boolean, is an error (Prism refuses them with 422).
func requestPrefer(h http.Header, q url.Values) (Prefer, error) {
	var p Prefer
	var bad []string
	from := "The Prefer header"
	if values := h.Values("Prefer"); len(values) > 0 {
		p, bad = readPrefer(values)
	} else {
		from = "The query"
		for _, k := range []string{"code", "example", "dynamic"} {
			if v := q["__"+k]; len(v) > 0 {
				p.set(k, strings.TrimSpace(v[0]), &bad)
			}
		}
	}
	if len(bad) > 0 {
		return p, errors.New(from + " asks for " + strings.Join(bad, " and ") + ".")
	}
	return p, nil
}

// readPrefer reads the preferences it knows, and words those whose value does not parse.
func readPrefer(values []string) (Prefer, []string) {
	var p Prefer
	var bad []string
	for _, v := range values {
		for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
			k, val, ok := strings.Cut(part, "=")
			if !ok {
				continue
			}
			p.set(strings.ToLower(strings.TrimSpace(k)), strings.Trim(strings.TrimSpace(val), `"`), &bad)
		}
	}
	return p, bad
}

// set records the preference k=val; a value that does not parse is worded in bad.
func (p *Prefer) set(k, val string, bad *[]string) {
	switch k {
	case "code":
		n, err := strconv.Atoi(val)
		if err != nil {
			*bad = append(*bad, "code "+strconv.Quote(val)+", which is not a status code (a number such as 404)")
			return
		}
		p.Code = n
	case "example":
		p.Example = val
	case "dynamic":
		b, err := strconv.ParseBool(val)
		if err != nil {
			*bad = append(*bad, "dynamic "+strconv.Quote(val)+", which is neither true nor false")
			return
		}
		p.Dynamic = &b
	}
}
