package mock

import (
	"fmt"
	"strings"
)

// Severity tells a validation error from a warning.
type Severity string

// The two severities of a [ValidationError].
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Validation codes of [ValidationError].
const (
	// VInvalidRouteKey: the route key is not "METHOD /path".
	VInvalidRouteKey = "INVALID_ROUTE_KEY"
	// VInvalidMethod: the method is not an upper-case HTTP method or "*".
	VInvalidMethod = "INVALID_METHOD"
	// VEmptyPath: the path is empty.
	VEmptyPath = "EMPTY_PATH"
	// VMalformedPath: the path does not start with "/", holds a space, a
	// query, a fragment, an empty or invalid parameter name, or a "*"
	// that is not a whole segment.
	VMalformedPath = "MALFORMED_PATH"
	// VDuplicateParam: a parameter name appears twice in one pattern.
	VDuplicateParam = "DUPLICATE_PARAM"
	// VNilHandler: the handler is nil.
	VNilHandler = "NIL_HANDLER"
	// VShadowedRoute (warning): another route matches exactly the same
	// URLs with the same text after normalisation; this one is never used.
	VShadowedRoute = "SHADOWED_ROUTE"
	// VConflictingRoute (warning): another route has the same shape with
	// other parameter names; the one whose key sorts first wins.
	VConflictingRoute = "CONFLICTING_ROUTE"
)

// ValidationError is one finding of a validation.
type ValidationError struct {
	// Message explains the finding in one sentence.
	Message string `json:"message"`
	// Code is one of the V… codes, such as VInvalidMethod.
	Code string `json:"code"`
	// Route is the route key concerned, if any.
	Route string `json:"route,omitempty"`
	// Severity is SeverityError or SeverityWarning.
	Severity Severity `json:"severity"`
}

// ValidationResult is the outcome of a validation. Valid is false when
// Errors is not empty; warnings never make a result invalid.
type ValidationResult struct {
	// Valid reports whether there are no errors.
	Valid bool `json:"isValid"`
	// Errors lists the findings that make the definitions unusable.
	Errors []ValidationError `json:"errors"`
	// Warnings lists findings that do not.
	Warnings []ValidationError `json:"warnings"`
}

func (r *ValidationResult) add(sev Severity, code, route, format string, args ...any) {
	e := ValidationError{Message: fmt.Sprintf(format, args...), Code: code, Route: route, Severity: sev}
	if sev == SeverityError {
		r.Errors = append(r.Errors, e)
	} else {
		r.Warnings = append(r.Warnings, e)
	}
}

func (r *ValidationResult) merge(o ValidationResult) {
	r.Errors = append(r.Errors, o.Errors...)
	r.Warnings = append(r.Warnings, o.Warnings...)
}

func (r ValidationResult) done() ValidationResult {
	r.Valid = len(r.Errors) == 0
	if r.Errors == nil {
		r.Errors = []ValidationError{}
	}
	if r.Warnings == nil {
		r.Warnings = []ValidationError{}
	}
	return r
}

// Error summarises the errors in one line, or returns "" when valid.
func (r ValidationResult) Error() string {
	msgs := make([]string, len(r.Errors))
	for i, e := range r.Errors {
		msgs[i] = e.Code + ": " + e.Message
	}
	return strings.Join(msgs, "; ")
}

var validMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true, "CONNECT": true, "TRACE": true, "*": true,
}

var defaultMatcher = NewMatcher(DefaultRouteMatchingConfig())

// ValidateRoutePattern checks one route key ("GET /users/:id") or path
// pattern ("/users/:id") under the default matching configuration.
func ValidateRoutePattern(pattern string) ValidationResult {
	return validatePattern(defaultMatcher, pattern, false).done()
}

func validatePattern(m *Matcher, key string, needMethod bool) ValidationResult {
	var r ValidationResult
	method, p := splitRouteKey(key)
	if strings.TrimSpace(key) == "" {
		r.add(SeverityError, VEmptyPath, key, "route is empty")
		return r
	}
	if method != "" || needMethod {
		switch {
		case method == "":
			r.add(SeverityError, VInvalidRouteKey, key, "route %q has no method: write \"METHOD /path\"", key)
		case !validMethods[method] && validMethods[strings.ToUpper(method)]:
			r.add(SeverityError, VInvalidMethod, key, "method %q must be upper-case: %q", method, strings.ToUpper(method))
		case !validMethods[method]:
			r.add(SeverityError, VInvalidMethod, key, "method %q is not an HTTP method", method)
		}
	}
	if p == "" {
		r.add(SeverityError, VEmptyPath, key, "route %q has an empty path", key)
		return r
	}
	if !strings.HasPrefix(p, "/") {
		r.add(SeverityError, VMalformedPath, key, "path %q must start with /", p)
	}
	if strings.ContainsAny(p, " \t\r\n?#") {
		r.add(SeverityError, VMalformedPath, key, "path %q must not hold spaces, a query or a fragment", p)
	}
	seen := map[string]bool{}
	prefix := m.cfg.ParameterPrefix
	for _, s := range strings.Split(strings.Trim(p, "/"), "/") {
		var name string
		isParam := false
		switch {
		case prefix == "{" && strings.HasPrefix(s, "{"):
			if !strings.HasSuffix(s, "}") {
				r.add(SeverityError, VMalformedPath, key, "parameter segment %q lacks its closing }", s)
				continue
			}
			name, isParam = s[1:len(s)-1], true
		case prefix != "{" && strings.HasPrefix(s, prefix):
			name, isParam = s[len(prefix):], true
		}
		if isParam {
			if !validParamName(name) {
				r.add(SeverityError, VMalformedPath, key, "parameter name %q in %q is empty or invalid (use letters, digits, _)", name, p)
				continue
			}
			if seen[name] {
				r.add(SeverityError, VDuplicateParam, key, "parameter %q appears twice in %q", name, p)
			}
			seen[name] = true
			continue
		}
		if m.cfg.SupportWildcards && s != "*" && strings.Contains(s, "*") {
			r.add(SeverityError, VMalformedPath, key, "wildcard in %q must be a whole segment", s)
		}
	}
	return r
}

func validParamName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// ValidateHandler checks one route key and its handler.
func ValidateHandler(route string, h Handler) ValidationResult {
	r := validatePattern(defaultMatcher, route, true)
	if h == nil {
		r.add(SeverityError, VNilHandler, route, "route %q has a nil handler", route)
	}
	return r.done()
}

// ValidateDefinitions checks a definition set under the default matching
// configuration: every route key and handler, then shadowed and
// conflicting routes (as warnings).
func ValidateDefinitions(defs Definitions) ValidationResult {
	return validateRoutes(defaultMatcher, compileRoutes(defaultMatcher, defs))
}

// validateRoutes checks compiled routes (from compileRoutes, in key order): each key and
// handler, then shadowed and conflicting routes.
func validateRoutes(m *Matcher, routes []*entry) ValidationResult {
	var r ValidationResult
	firstExact := map[string]string{}
	firstLoose := map[string]string{}
	for _, e := range routes {
		k := e.key
		r.merge(validatePattern(m, k, true))
		if e.handler == nil {
			r.add(SeverityError, VNilHandler, k, "route %q has a nil handler", k)
		}
		var exact, loose strings.Builder
		exact.WriteString(e.method)
		loose.WriteString(e.method)
		for _, s := range e.segs {
			switch s.kind {
			case kindStatic:
				exact.WriteString("/" + s.text)
				loose.WriteString("/" + s.text)
			case kindParam:
				exact.WriteString("/:" + s.text)
				loose.WriteString("/:")
			case kindWildcard:
				exact.WriteString("/*")
				loose.WriteString("/*")
			case kindRest:
				exact.WriteString("/**")
				loose.WriteString("/**")
			}
		}
		if prev, ok := firstExact[exact.String()]; ok {
			r.add(SeverityWarning, VShadowedRoute, k, "route %q is shadowed by %q: both match the same URLs", k, prev)
			continue
		}
		firstExact[exact.String()] = k
		if prev, ok := firstLoose[loose.String()]; ok {
			r.add(SeverityWarning, VConflictingRoute, k, "route %q conflicts with %q: same shape, other parameter names; %q wins", k, prev, prev)
			continue
		}
		firstLoose[loose.String()] = k
	}
	return r.done()
}
