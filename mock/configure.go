package mock

import (
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// build compiles a new state. prev (may be nil) lends its cache when the
// persistence configuration is unchanged.
func (ic *Interceptor) build(prev *state, cfg Config, defs Definitions) (*state, error) {
	st := &state{cfg: cfg}
	st.m = NewMatcher(cfg.RouteMatching)
	routes := compileRoutes(st.m, defs)
	if res := validateRoutes(st.m, routes); !res.Valid {
		return nil, &Error{Code: CodeInvalidMockDefinition, Message: res.Error(), Validation: &res}
	}
	st.t = newTable(routes)
	st.chain = sortMiddleware(cfg.Middleware)
	st.defHeader = make(http.Header, len(cfg.DefaultHeaders))
	for k, v := range cfg.DefaultHeaders {
		st.defHeader.Set(k, v)
	}
	if cfg.BaseURL != "" {
		if u, err := url.Parse(cfg.BaseURL); err == nil && u.Host != "" {
			st.baseHost = strings.ToLower(u.Host)
			st.basePath = strings.TrimSuffix(u.EscapedPath(), "/")
		} else {
			st.basePath = "/" + strings.Trim(cfg.BaseURL, "/")
		}
	}
	switch {
	case prev != nil && prev.cache != nil && prev.cfg.Persistence == cfg.Persistence:
		st.cache = prev.cache
	case cfg.Persistence.Enabled:
		if prev != nil && prev.cache != nil {
			ic.closeCache(prev)
		}
		c, err := openCache(cfg.Persistence, ic.cacheEvent)
		if err != nil {
			ic.log(st, slog.LevelError, "cache storage unavailable, using memory", "err", err)
		}
		st.cache = c
	default:
		if prev != nil && prev.cache != nil {
			ic.closeCache(prev)
		}
	}
	if st.cache != nil {
		// Entries of routes that changed (or are gone, or may not be cached now) are
		// dropped, from the persistent tier too: the cache never answers for an old
		// definition.
		st.cache.retain(keepCurrent(st.t, cfg.Cache))
	}
	return st, nil
}

// cacheEvent logs a cache operation when LogCacheOperations is on.
func (ic *Interceptor) cacheEvent(op, key string, err error) {
	st := ic.state.Load()
	if st == nil || !st.cfg.Logging.Enabled {
		return
	}
	if err != nil {
		ic.log(st, slog.LevelError, "cache "+op+" failed", "key", key,
			"err", &Error{Code: CodePersistence, Message: "cache " + op, Err: err})
		return
	}
	if st.cfg.Logging.LogCacheOperations {
		ic.log(st, slog.LevelDebug, "cache "+op, "key", key)
	}
}

func (ic *Interceptor) closeCache(prev *state) {
	if err := prev.cache.close(); err != nil {
		ic.log(prev, slog.LevelError, "closing cache", "err", &Error{Code: CodePersistence, Message: "close cache", Err: err})
	}
}

// update applies f to a copy of the configuration and definitions and
// installs the result atomically.
func (ic *Interceptor) update(f func(cfg *Config, defs Definitions) error) error {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	prev := ic.state.Load()
	cfg := prev.cfg.clone()
	defs := prev.t.definitions()
	if err := f(&cfg, defs); err != nil {
		return err
	}
	st, err := ic.build(prev, cfg.withDefaults(), defs)
	if err != nil {
		return err
	}
	ic.state.Store(st)
	return nil
}

// Configure replaces the configuration and the definitions at once. On error
// nothing changes.
func (ic *Interceptor) Configure(cfg Config, defs Definitions) error {
	return ic.update(func(c *Config, d Definitions) error {
		*c = cfg.clone()
		clear(d)
		maps.Copy(d, defs)
		return nil
	})
}

// SetMocks replaces every definition with defs, atomically. It returns an [*Error] with
// [CodeInvalidMockDefinition] and changes nothing if defs is invalid.
func (ic *Interceptor) SetMocks(defs Definitions) error {
	return ic.update(func(_ *Config, d Definitions) error {
		clear(d)
		maps.Copy(d, defs)
		return nil
	})
}

// AddMocks adds defs, replacing definitions with the same route key. On error
// nothing changes.
func (ic *Interceptor) AddMocks(defs Definitions) error {
	return ic.update(func(_ *Config, d Definitions) error {
		maps.Copy(d, defs)
		return nil
	})
}

// AddMock adds or replaces one definition.
func (ic *Interceptor) AddMock(route string, h Handler) error {
	return ic.AddMocks(Definitions{route: h})
}

// RemoveMocks removes the definitions with the given route keys; unknown keys
// are ignored.
func (ic *Interceptor) RemoveMocks(routes ...string) {
	_ = ic.update(func(_ *Config, d Definitions) error {
		for _, r := range routes {
			delete(d, r)
		}
		return nil
	})
}

// ClearMocks removes every definition.
func (ic *Interceptor) ClearMocks() {
	_ = ic.update(func(_ *Config, d Definitions) error { clear(d); return nil })
}

// Mocks returns the registered route keys, sorted.
func (ic *Interceptor) Mocks() []string {
	return append([]string(nil), ic.state.Load().t.keys...)
}

// Definitions returns a copy of the registered definitions.
func (ic *Interceptor) Definitions() Definitions { return ic.state.Load().t.definitions() }

// SetEnabled turns interception on or off.
func (ic *Interceptor) SetEnabled(enabled bool) {
	_ = ic.update(func(c *Config, _ Definitions) error { c.Enabled = enabled; return nil })
}

// Enabled reports whether interception is on.
func (ic *Interceptor) Enabled() bool { return ic.state.Load().cfg.Enabled }

// SetDelay sets the delay of every mocked response.
func (ic *Interceptor) SetDelay(d Delay) {
	_ = ic.update(func(c *Config, _ Definitions) error { c.Delay = d; return nil })
}

// Delay returns the configured delay.
func (ic *Interceptor) Delay() Delay { return ic.state.Load().cfg.Delay }

// SetFallbackToNetwork turns network fallback on or off.
func (ic *Interceptor) SetFallbackToNetwork(on bool) {
	_ = ic.update(func(c *Config, _ Definitions) error { c.FallbackToNetwork = on; return nil })
}

// FallbackToNetwork reports whether network fallback is on.
func (ic *Interceptor) FallbackToNetwork() bool { return ic.state.Load().cfg.FallbackToNetwork }

// Config returns a copy of the configuration.
func (ic *Interceptor) Config() Config { return ic.state.Load().cfg.clone() }

// UpdateConfig changes part of the configuration: f receives a copy to modify. The
// result is applied atomically; if the definitions become invalid under a new matching
// configuration, it returns the error and nothing changes.
func (ic *Interceptor) UpdateConfig(f func(*Config)) error {
	return ic.update(func(c *Config, _ Definitions) error { f(c); return nil })
}

// Use appends middleware to the configuration.
func (ic *Interceptor) Use(mw ...Middleware) {
	_ = ic.update(func(c *Config, _ Definitions) error {
		c.Middleware = append(c.Middleware, mw...)
		return nil
	})
}
