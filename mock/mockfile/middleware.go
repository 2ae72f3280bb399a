package mockfile

import (
	"fmt"
	"log/slog"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock"
)

// middlewareKinds are the entries config.middleware knows, each the mock package's own
// middleware.
var middlewareKinds = []string{"auth", "rateLimit", "cors", "delay", "logging"}

// middleware reads config.middleware: a list of one-key mappings, run in list order (the first
// entry first), e.g.
//
//	middleware:
//	  - logging: {level: info}
//	  - auth: {tokens: [dev-token]}   # {} accepts any bearer token
//	  - rateLimit: {limit: 100, window: 60s}
//	  - cors: {origins: ["http://localhost:5173"], credentials: true}
//	  - delay: 100-400
func (p *parser) middleware(n *yaml.Node) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "", CodeType, "config.middleware must be a list such as [{auth: {tokens: [t]}}, {delay: 200}]")
		return
	}
	cfg := &p.set.Config
	for i, item := range n.Content {
		what := fmt.Sprintf("config.middleware[%d]", i)
		f := p.fields(item, "", what, middlewareKinds...)
		if len(f) != 1 {
			if f != nil {
				p.fail(item, "", CodeConfig, "%s must name exactly one of %v", what, middlewareKinds)
			}
			continue
		}
		for kind, v := range f {
			mw, ok := p.oneMiddleware(kind, v, what+"."+kind)
			if !ok {
				continue
			}
			mw.Priority = 1000 - 10*i // list order: the first entry runs first
			cfg.Middleware = append(cfg.Middleware, mw)
			var src any
			_ = item.Decode(&src)
			p.set.MiddlewareSpec = append(p.set.MiddlewareSpec, JSONValue(src))
		}
	}
}

func (p *parser) oneMiddleware(kind string, v *yaml.Node, what string) (mock.Middleware, bool) {
	switch kind {
	case "delay":
		d, ok := p.delay(v, "")
		return mock.DelayMiddleware(d), ok
	case "auth":
		var o mock.AuthOptions
		for k, c := range p.fields(v, "", what, "tokens", "header", "scheme") {
			switch k {
			case "tokens":
				o.Tokens = p.strList(c, what+".tokens")
			case "header":
				o.Header, _ = p.str(c, "", what+".header")
			case "scheme":
				o.Scheme, _ = p.str(c, "", what+".scheme")
			}
		}
		return mock.AuthMiddleware(o), true
	case "rateLimit":
		var o mock.RateLimitOptions
		for k, c := range p.fields(v, "", what, "limit", "window") {
			switch k {
			case "limit":
				// Written in the file, 0 or less would read as "never" or "always" but mean the
				// package's default of 100: refused rather than served differently.
				if n, ok := p.integer(c, "", what+".limit"); ok && n < 1 {
					p.fail(c, "", CodeConfig, "%s.limit must be at least 1 (leave it out for 100; a route with status: 429 answers every request 429)", what)
				} else {
					o.Limit = n
				}
			case "window":
				o.Window, _ = p.duration(c, what+".window")
			}
		}
		return mock.RateLimitMiddleware(o), true
	case "cors":
		var o mock.CORSOptions
		for k, c := range p.fields(v, "", what, "origins", "methods", "headers", "exposeHeaders", "credentials", "maxAge") {
			switch k {
			case "origins":
				o.AllowOrigins = p.strList(c, what+".origins")
			case "methods":
				o.AllowMethods = p.strList(c, what+".methods")
			case "headers":
				o.AllowHeaders = p.strList(c, what+".headers")
			case "exposeHeaders":
				o.ExposeHeaders = p.strList(c, what+".exposeHeaders")
			case "credentials":
				o.AllowCredentials, _ = p.boolean(c, "", what+".credentials")
			case "maxAge":
				o.MaxAge, _ = p.duration(c, what+".maxAge")
			}
		}
		return mock.CORSMiddleware(o), true
	case "logging":
		var o mock.LoggingOptions
		for k, c := range p.fields(v, "", what, "level", "body") {
			switch k {
			case "level":
				if s, ok := p.str(c, "", what+".level"); ok {
					if err := o.Level.UnmarshalText([]byte(s)); err != nil {
						p.fail(c, "", CodeConfig, "%s.level must be debug, info, warn or error", what)
					}
				}
			case "body":
				o.LogBody, _ = p.boolean(c, "", what+".body")
			}
		}
		o.Logger = slog.Default()
		return mock.LoggingMiddleware(o), true
	}
	return mock.Middleware{}, false
}

// strList reads a list of strings.
func (p *parser) strList(n *yaml.Node, what string) []string {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "", CodeType, "%s must be a list of strings", what)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if s, ok := p.str(c, "", what+" entry"); ok {
			out = append(out, s)
		}
	}
	return out
}

// duration reads milliseconds (60000) or a Go duration ("60s").
func (p *parser) duration(n *yaml.Node, what string) (time.Duration, bool) {
	s, ok := p.str(n, "", what)
	if !ok {
		return 0, false
	}
	d, err := parseMS(s)
	if err != nil || d <= 0 {
		p.fail(n, "", CodeConfig, "%s must be milliseconds (60000) or a duration (\"60s\")", what)
		return 0, false
	}
	return d, true
}
