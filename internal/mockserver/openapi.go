package mockserver

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
	"github.com/acme/app/mock/openapi"
)

// specRoutes are the routes the OpenAPI descriptions serve now.
type specRoutes struct {
	specs  []*openapi.Spec
	routes []openapi.Route
}

// loadSpecs reads every description of --openapi and makes its routes, logging what each
// serves otherwise than written (its warnings). A description that cannot be served is an
// *openapi.LoadError; the first one found is returned.
func loadSpecs(paths []string, opts openapi.Options, log *slog.Logger) (*specRoutes, error) {
	sr := &specRoutes{}
	seen := map[string]bool{}
	for _, p := range paths {
		spec, err := openapi.Load(p)
		if err != nil {
			return nil, err
		}
		for _, w := range spec.Warnings() {
			if w.File == "" {
				w.File = p
			}
			log.Warn("openapi description", "warning", w.String())
		}
		sr.specs = append(sr.specs, spec)
		for _, r := range spec.Routes(opts) {
			if seen[r.Key] { // an earlier description has it: the first one listed wins
				continue
			}
			seen[r.Key] = true
			sr.routes = append(sr.routes, r)
		}
	}
	return sr, nil
}

// routeShape is a route key with its parameter names blanked ("GET /pets/:"): two keys of
// one shape answer the same requests.
func routeShape(key string) (method, shape string) {
	method, path, _ := strings.Cut(strings.TrimSpace(key), " ")
	segs := strings.Split(strings.TrimSpace(path), "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "{") {
			segs[i] = ":"
		} else {
			segs[i] = strings.ToLower(s)
		}
	}
	return strings.ToUpper(method), strings.Join(segs, "/")
}

// visible returns the description's routes that no mock of the file shadows: a file route
// of the same method and shape (whatever its parameter names) wins, and a file route for
// any method (*) wins over every method of its path.
func (sr *specRoutes) visible(file mock.Definitions) []openapi.Route {
	if sr == nil {
		return nil
	}
	taken := map[string]bool{}
	for k := range file {
		m, shape := routeShape(k)
		taken[m+" "+shape] = true
	}
	out := make([]openapi.Route, 0, len(sr.routes))
	for _, r := range sr.routes {
		m, shape := routeShape(r.Key)
		if taken[m+" "+shape] || taken["* "+shape] {
			continue
		}
		out = append(out, r)
	}
	return out
}

// specProblems turns a description's load error into the problems of a mock file, for the
// admin API's reload answer.
func specProblems(err error) (*mockfile.LoadError, bool) {
	var le *openapi.LoadError
	if !errors.As(err, &le) {
		return nil, false
	}
	out := &mockfile.LoadError{File: le.File}
	for _, p := range le.Problems {
		route := p.Pointer
		if p.File != "" && p.File != le.File {
			route = p.File + "#" + p.Pointer
		}
		out.Problems = append(out.Problems, mockfile.Problem{Route: route, Line: p.Line, Code: "OPENAPI_INVALID", Message: p.Message, Severity: mock.SeverityError})
	}
	return out, true
}

// specOptions are the descriptions' answering options.
func (s *Server) specOptions() openapi.Options {
	return openapi.Options{Dynamic: s.opts.Dynamic, Seed: s.opts.Seed}
}
