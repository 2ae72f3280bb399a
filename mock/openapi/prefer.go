package openapi

import (
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
// do not parse, are ignored: a mock answers rather than refuses.
func ParsePrefer(values []string) Prefer {
	var p Prefer
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
				if n, err := strconv.Atoi(val); err == nil && n >= 100 && n <= 599 {
					p.Code = n
				}
			case "example":
				p.Example = val
			case "dynamic":
				if b, err := strconv.ParseBool(val); err == nil {
					p.Dynamic = &b
				}
			}
		}
	}
	return p
}
