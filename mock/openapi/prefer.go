package openapi

import (
	"errors"
	"strconv"
	"strings"
)

// Prefer is what a request's Prefer header asks of the mock, as Prism reads it:
// "Prefer: code=404", "Prefer: example=bob", "Prefer: dynamic=true", or several of them
// separated by commas ("code=200, example=bob").
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

// parsePrefer reads the Prefer header values as the mock answers them: a code that is not a
// number, or a dynamic that is not a boolean, is an error (Prism refuses them with 422).
func parsePrefer(values []string) (Prefer, error) {
	p, bad := readPrefer(values)
	if len(bad) > 0 {
		return p, errors.New("The Prefer header asks for " + strings.Join(bad, " and ") + ".")
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
			k = strings.ToLower(strings.TrimSpace(k))
			val = strings.Trim(strings.TrimSpace(val), `"`)
			switch k {
			case "code":
				n, err := strconv.Atoi(val)
				if err != nil {
					bad = append(bad, "code "+strconv.Quote(val)+", which is not a status code (a number such as 404)")
					continue
				}
				p.Code = n
			case "example":
				p.Example = val
			case "dynamic":
				b, err := strconv.ParseBool(val)
				if err != nil {
					bad = append(bad, "dynamic "+strconv.Quote(val)+", which is neither true nor false")
					continue
				}
				p.Dynamic = &b
			}
		}
	}
	return p, bad
}
