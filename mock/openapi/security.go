package openapi

import (
	"net/http"
	"net/url"
	"strings"
)

// scheme is one security scheme: what a request must carry to satisfy it.
type scheme struct {
	kind   string // apiKey, http, oauth2, openIdConnect, mutualTLS
	in     string // apiKey: header, query, cookie
	name   string // apiKey: the header, query parameter or cookie
	http   string // http: bearer, basic, …
	header string // the WWW-Authenticate challenge of a request without it ("" when none)
}

func newScheme(o *obj) *scheme {
	sc := &scheme{kind: o.str("type"), in: o.str("in"), name: o.str("name"), http: strings.ToLower(o.str("scheme"))}
	switch sc.kind {
	case "http":
		switch sc.http {
		case "basic":
			sc.header = `Basic realm="*"`
		case "bearer":
			sc.header = "Bearer"
		default:
			sc.header = strings.ToUpper(sc.http[:min(1, len(sc.http))]) + sc.http[min(1, len(sc.http)):]
		}
	case "oauth2", "openIdConnect":
		sc.header = "Bearer"
	}
	return sc
}

// satisfied reports whether the request carries the credentials the scheme asks for. Their
// values are not checked: any token will do, as with Prism.
func (sc *scheme) satisfied(h http.Header, q url.Values) bool {
	switch sc.kind {
	case "apiKey":
		switch sc.in {
		case "header":
			return h.Get(sc.name) != ""
		case "query":
			return q.Has(sc.name)
		case "cookie":
			r := http.Request{Header: h}
			_, err := r.Cookie(sc.name)
			return err == nil
		}
		return true
	case "http":
		auth := h.Get("Authorization")
		prefix, _, ok := strings.Cut(auth, " ")
		return ok && strings.EqualFold(prefix, sc.http)
	case "oauth2", "openIdConnect":
		prefix, _, ok := strings.Cut(h.Get("Authorization"), " ")
		return ok && strings.EqualFold(prefix, "bearer")
	}
	return true // mutualTLS and unknown kinds are not checked
}

// authorized reports whether the request satisfies one of the alternatives; when it does
// not, it returns the challenges of the schemes it lacks.
func (op *operation) authorized(h http.Header, q url.Values) (bool, []string) {
	if len(op.security) == 0 {
		return true, nil
	}
	var challenges []string
	for _, alt := range op.security {
		ok := true
		for _, name := range alt {
			sc := op.s.schemes[name]
			if sc == nil || sc.satisfied(h, q) {
				continue
			}
			ok = false
			if sc.header != "" {
				challenges = append(challenges, sc.header)
			}
		}
		if ok {
			return true, nil
		}
	}
	return false, challenges
}
