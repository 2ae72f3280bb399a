package mockfile

import (
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock"
)

// file reads the top level: config and mocks.
func (p *parser) file(doc *yaml.Node) {
	f := p.fields(doc, "", "the file", "config", "mocks", "wiremock")
	if f == nil {
		return
	}
	if n, ok := f["wiremock"]; ok {
		p.set.WireMock, _ = p.str(n, "", "wiremock (a directory of WireMock mappings)")
	}
	if n, ok := f["config"]; ok {
		p.config(n)
	}
	if n, ok := f["mocks"]; ok {
		p.mocks(n)
	}
}

func (p *parser) config(n *yaml.Node) {
	f := p.fields(n, "", "config", "enabled", "delay", "fallbackToNetwork", "baseURL", "defaultHeaders",
		"ignorePatterns", "includePatterns", "routeMatching", "persistence", "logging", "preserveOriginalHeaders", "cors", "cache", "middleware")
	cfg := &p.set.Config
	for k, v := range f {
		switch k {
		case "enabled":
			cfg.Enabled, _ = p.boolean(v, "", "config.enabled")
		case "fallbackToNetwork":
			cfg.FallbackToNetwork, _ = p.boolean(v, "", "config.fallbackToNetwork")
			p.set.FallbackSet = true
		case "preserveOriginalHeaders":
			cfg.PreserveOriginalHeaders, _ = p.boolean(v, "", "config.preserveOriginalHeaders")
		case "delay":
			cfg.Delay, _ = p.delay(v, "")
		case "baseURL":
			cfg.BaseURL, _ = p.str(v, "", "config.baseURL")
		case "defaultHeaders":
			m, _ := p.headerMap(v, "", "config.defaultHeaders", "config.defaultHeaders header")
			if m != nil {
				// Merged over the default Content-Type: application/json.
				for hk, hv := range m {
					cfg.DefaultHeaders[hk] = hv.Value
				}
			}
		case "ignorePatterns":
			cfg.IgnorePatterns = p.patterns(v, "config.ignorePatterns")
		case "includePatterns":
			cfg.IncludePatterns = p.patterns(v, "config.includePatterns")
		case "routeMatching":
			p.routeMatching(v)
		case "persistence":
			p.persistence(v)
		case "logging":
			p.logging(v)
		case "cors":
			p.cors(v)
		case "cache":
			p.cacheRules(v)
		case "middleware":
			p.middleware(v)
		}
	}
}

// cacheRules reads config.cache: {methods: [GET, HEAD], statuses: ["2xx"]}, which answers the
// response cache keeps ("*" for any method or status).
func (p *parser) cacheRules(n *yaml.Node) {
	cc := &p.set.Config.Cache
	for k, v := range p.fields(n, "", "config.cache", "methods", "statuses") {
		v = resolve(v)
		what := "config.cache." + k
		if v.Kind != yaml.SequenceNode {
			p.fail(v, "", CodeType, "%s must be a list", what)
			continue
		}
		var out []string
		for _, c := range v.Content {
			s, ok := p.str(c, "", what+" entry")
			if !ok {
				continue
			}
			if k == "statuses" && !mock.ValidCacheStatus(s) {
				p.fail(c, "", CodeConfig, "%s: %q is not a status (200), a class (2xx) or *", what, s)
				continue
			}
			if k == "methods" {
				s = strings.ToUpper(s)
			}
			out = append(out, s)
		}
		if k == "methods" {
			cc.Methods = out
		} else {
			cc.Statuses = out
		}
	}
}

// cors reads config.cors: {origins: [...]}, the origins the CORS answers echo with
// credentials allowed (any other origin gets "*" without credentials).
func (p *parser) cors(n *yaml.Node) {
	for k, v := range p.fields(n, "", "config.cors", "origins") {
		if k != "origins" {
			continue
		}
		v = resolve(v)
		if v.Kind != yaml.SequenceNode {
			p.fail(v, "", CodeType, "config.cors.origins must be a list of origins (https://app.example.com)")
			continue
		}
		for _, c := range v.Content {
			if o, ok := p.str(c, "", "config.cors.origins entry"); ok {
				p.set.CORSOrigins = append(p.set.CORSOrigins, strings.TrimRight(o, "/"))
			}
		}
	}
}

// patterns reads a list of globs ("/api/health*") or regular expressions written "/…/".
func (p *parser) patterns(n *yaml.Node, what string) []mock.Pattern {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "", CodeType, "%s must be a list of globs or /regexps/", what)
		return nil
	}
	var out []mock.Pattern
	for _, c := range n.Content {
		s, ok := p.str(c, "", what+" entry")
		if !ok {
			continue
		}
		if len(s) > 2 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/") {
			re, err := regexp.Compile(s[1 : len(s)-1])
			if err != nil {
				p.fail(c, "", CodeConfig, "%s: %v", what, err)
				continue
			}
			out = append(out, re)
			continue
		}
		out = append(out, mock.Glob(s))
	}
	return out
}

func (p *parser) routeMatching(n *yaml.Node) {
	rm := &p.set.Config.RouteMatching
	for k, v := range p.fields(n, "", "config.routeMatching", "caseSensitive", "exactMatch", "stripPrefix",
		"normalizeURLs", "parameterPrefix", "supportWildcards") {
		what := "config.routeMatching." + k
		switch k {
		case "caseSensitive":
			rm.CaseSensitive, _ = p.boolean(v, "", what)
		case "exactMatch":
			rm.ExactMatch, _ = p.boolean(v, "", what)
		case "normalizeURLs":
			rm.NormalizeURLs, _ = p.boolean(v, "", what)
		case "supportWildcards":
			rm.SupportWildcards, _ = p.boolean(v, "", what)
		case "stripPrefix":
			rm.StripPrefix, _ = p.str(v, "", what)
		case "parameterPrefix":
			if s, ok := p.str(v, "", what); ok {
				if s != ":" && s != "{" {
					p.fail(v, "", CodeConfig, "%s must be \":\" or \"{\"", what)
				}
				rm.ParameterPrefix = s
			}
		}
	}
}

func (p *parser) persistence(n *yaml.Node) {
	pc := &p.set.Config.Persistence
	for k, v := range p.fields(n, "", "config.persistence", "enabled", "ttl", "storage", "dir", "dbName",
		"dbVersion", "storeName", "maxCacheSize", "autoCleanup", "namespace") {
		what := "config.persistence." + k
		switch k {
		case "enabled":
			pc.Enabled, _ = p.boolean(v, "", what)
		case "autoCleanup":
			pc.AutoCleanup, _ = p.boolean(v, "", what)
		case "ttl":
			if s, ok := p.str(v, "", what); ok {
				d, err := parseMS(s)
				if err != nil || d == 0 {
					p.fail(v, "", CodeConfig, "%s must be positive milliseconds (300000) or a duration (\"5m\")", what)
				}
				pc.TTL = d
			}
		case "storage":
			if s, ok := p.str(v, "", what); ok {
				switch st := mock.Storage(strings.ToLower(s)); st {
				case mock.StorageMemory, mock.StorageIndexedDB, mock.StorageLocalStorage, mock.StorageIntelligent:
					pc.Storage = st
				default:
					p.fail(v, "", CodeConfig, "%s must be one of memory, indexeddb, localstorage, intelligent", what)
				}
			}
		case "dir":
			// A file from elsewhere (a cloned repository) must not make the server write its
			// cache files into any directory: the cache stays beside the file.
			d, _ := p.str(v, "", what)
			if d == "" {
				break
			}
			dir := filepath.Clean(filepath.FromSlash(d))
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(p.base, dir)
			}
			if rel, err := filepath.Rel(p.base, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				p.fail(v, "", CodeConfig, "%s must be a directory inside the mock file's directory", what)
			}
			pc.Dir = dir
		case "dbName":
			pc.DBName, _ = p.str(v, "", what)
		case "storeName":
			pc.StoreName, _ = p.str(v, "", what)
		case "namespace":
			pc.Namespace, _ = p.str(v, "", what)
		case "dbVersion":
			pc.DBVersion, _ = p.integer(v, "", what)
		case "maxCacheSize":
			if i, ok := p.integer(v, "", what); ok {
				if i <= 0 {
					p.fail(v, "", CodeConfig, "%s must be positive", what)
				}
				pc.MaxCacheSize = i
			}
		}
	}
}

func (p *parser) logging(n *yaml.Node) {
	lc := &p.set.Config.Logging
	for k, v := range p.fields(n, "", "config.logging", "enabled", "level", "logRequests", "logResponses",
		"logRouteMatching", "logCacheOperations") {
		what := "config.logging." + k
		switch k {
		case "enabled":
			lc.Enabled, _ = p.boolean(v, "", what)
		case "logRequests":
			lc.LogRequests, _ = p.boolean(v, "", what)
		case "logResponses":
			lc.LogResponses, _ = p.boolean(v, "", what)
		case "logRouteMatching":
			lc.LogRouteMatching, _ = p.boolean(v, "", what)
		case "logCacheOperations":
			lc.LogCacheOperations, _ = p.boolean(v, "", what)
		case "level":
			if s, ok := p.str(v, "", what); ok {
				var l slog.Level
				if err := l.UnmarshalText([]byte(s)); err != nil {
					p.fail(v, "", CodeConfig, "%s must be debug, info, warn or error", what)
				}
				lc.Level = l
			}
		}
	}
}
