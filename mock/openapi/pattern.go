package openapi

import (
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/pb33f/jsonschema/v6"
)

// patternTimeout bounds one match of a schema's pattern.
const patternTimeout = 100 * time.Millisecond

// ecmaPattern is a JSON Schema pattern, compiled as the ECMA-262 regular expression JSON
// Schema says it is (look-ahead, back-references, \p{…} with the u flag), not as RE2.
type ecmaPattern struct {
	re *regexp2.Regexp
	// slow is set once a match has run past patternTimeout (a pattern that backtracks
	// catastrophically on some value): the pattern is not checked again, so it costs each
	// description at most one timeout, not one per value of every request.
	slow atomic.Bool
}

// compilePattern is the pattern engine of the request validator.
func compilePattern(expr string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(expr, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = patternTimeout
	return &ecmaPattern{re: re}, nil
}

// MatchString reports whether s holds a match. A match that cannot finish in time counts as
// one: a mock lets the value through rather than hang the request.
func (p *ecmaPattern) MatchString(s string) bool {
	if p.slow.Load() {
		return true
	}
	ok, err := p.re.MatchString(s)
	if err != nil {
		p.slow.Store(true)
		return true
	}
	return ok
}

// String is the pattern as written.
func (p *ecmaPattern) String() string { return p.re.String() }
