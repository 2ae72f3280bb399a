package mock

import (
	"log/slog"
	"maps"
	"regexp"
	"strings"
	"time"
)

// Config configures an [Interceptor]. Start from [DefaultConfig]: the zero value of a
// bool field is false, while several boolean defaults are true (Enabled,
// FallbackToNetwork, …). Zero-valued non-boolean fields (ParameterPrefix, TTL,
// MaxCacheSize, Storage, Level) take their defaults in [New].
type Config struct {
	// Enabled turns interception on. A disabled interceptor passes every
	// request to the network (RoundTripper) or the proxy target (Handler).
	// Default true.
	Enabled bool
	// BaseURL, when set, limits interception to URLs under it and is
	// removed from the path before matching. It is an absolute URL
	// ("https://api.example.com/v1") or a path prefix ("/api"). Default "".
	BaseURL string
	// Delay is applied to every mocked response. Default 0.
	Delay Delay
	// FallbackToNetwork sends unmatched requests to the wrapped transport
	// (RoundTripper) or to the proxy target (Handler). When false, an
	// unmatched request fails with [CodeRouteMatchFailed]. Default true.
	FallbackToNetwork bool
	// Logging selects what is logged.
	Logging LoggingConfig
	// Persistence configures the response cache.
	Persistence PersistenceConfig
	// Cache says which answers the response cache keeps (when Persistence is enabled).
	// Default: GET and HEAD answered 2xx.
	Cache CacheConfig
	// Middleware runs around every mocked request, higher Priority first.
	// Default empty.
	Middleware []Middleware
	// DefaultHeaders are set on every mocked response unless the handler
	// sets them. Default Content-Type: application/json.
	DefaultHeaders map[string]string
	// PreserveOriginalHeaders keeps the client's Host header when a request
	// is proxied to the target; when false the target's host is sent.
	// Default true.
	PreserveOriginalHeaders bool
	// IgnorePatterns lists URLs that are never intercepted: they go to the
	// network (or the proxy target). Default empty.
	IgnorePatterns []Pattern
	// IncludePatterns, when not empty, is a whitelist: only matching URLs
	// are intercepted. Default empty.
	IncludePatterns []Pattern
	// RouteMatching configures the route matcher.
	RouteMatching RouteMatchingConfig
}

// LoggingConfig selects what the interceptor logs through log/slog.
type LoggingConfig struct {
	// Enabled turns logging on. Default false.
	Enabled bool
	// Level is the lowest level logged: slog.LevelDebug, LevelInfo,
	// LevelWarn or LevelError. Default slog.LevelInfo (the zero value).
	Level slog.Level
	// LogRequests logs each incoming request (at info). Default false.
	LogRequests bool
	// LogResponses logs each mocked response (at info). Default false.
	LogResponses bool
	// LogRouteMatching logs each route lookup (at debug; misses at warn).
	// Default false.
	LogRouteMatching bool
	// LogCacheOperations logs cache hits, stores and evictions (at debug).
	// Default false.
	LogCacheOperations bool
}

// Storage names where the response cache keeps its entries.
type Storage string

// The four storages of the response cache.
const (
	// StorageMemory keeps entries in process memory only.
	StorageMemory Storage = "memory"
	// StorageIndexedDB keeps entries in a bbolt file, DBName under Dir,
	// in the bucket StoreName.
	StorageIndexedDB Storage = "indexeddb"
	// StorageLocalStorage keeps entries in one JSON file per Namespace
	// under Dir.
	StorageLocalStorage Storage = "localstorage"
	// StorageIntelligent keeps a memory tier in front of the bbolt tier.
	StorageIntelligent Storage = "intelligent"
)

// PersistenceConfig configures the response cache.
type PersistenceConfig struct {
	// Enabled turns the cache on. Default false.
	Enabled bool
	// TTL is how long an entry is served. Default 5 minutes (300000 ms).
	TTL time.Duration
	// Storage selects the storage. Default StorageMemory.
	Storage Storage
	// Dir is the directory of the bbolt and JSON files. Default
	// os.UserCacheDir()/acme-mock (a Go addition: browsers have no
	// directories).
	Dir string
	// DBName is the bbolt file name under Dir, without extension. Default
	// "mock-cache".
	DBName string
	// DBVersion is the schema version of the bbolt file: opening a file
	// with another version empties the store. Default 0.
	DBVersion int
	// StoreName is the bbolt bucket. Default "responses".
	StoreName string
	// MaxCacheSize is the maximum number of entries; the least recently
	// used entry is evicted beyond it. Default 100.
	MaxCacheSize int
	// AutoCleanup removes expired entries as the cache is used (expired
	// entries are never served either way). Default true.
	AutoCleanup bool
	// Namespace names the JSON file of StorageLocalStorage (and prefixes
	// nothing else). Default "default".
	Namespace string
}

// RouteMatchingConfig configures a [Matcher].
type RouteMatchingConfig struct {
	// CaseSensitive makes static segments case-sensitive. Default false.
	CaseSensitive bool
	// ExactMatch makes a trailing slash significant: "/users/" no longer
	// matches "/users". Default false.
	ExactMatch bool
	// StripPrefix is removed from the start of the path before matching.
	// Default "".
	StripPrefix string
	// NormalizeURLs collapses duplicate slashes, resolves "." and ".."
	// segments and decodes percent-escapes before matching. Default true.
	NormalizeURLs bool
	// ParameterPrefix starts a parameter segment: ":" gives "/users/:id";
	// "{" gives "/users/{id}". Default ":".
	ParameterPrefix string
	// SupportWildcards makes a "*" segment a wildcard: one segment in the
	// middle of a pattern, the rest of the path (zero or more segments) at
	// its end. When false "*" is a literal segment. Default true.
	SupportWildcards bool
}

// DefaultConfig returns the defaults: interception on, network fallback on, JSON default
// headers, original headers kept when proxying, the default matcher and a disabled cache.
func DefaultConfig() Config {
	return Config{
		Enabled:                 true,
		FallbackToNetwork:       true,
		Logging:                 LoggingConfig{Level: slog.LevelInfo},
		Persistence:             DefaultPersistenceConfig(),
		DefaultHeaders:          map[string]string{"Content-Type": "application/json"},
		PreserveOriginalHeaders: true,
		RouteMatching:           DefaultRouteMatchingConfig(),
		Cache:                   DefaultCacheConfig(),
	}
}

// DefaultPersistenceConfig returns the cache defaults: disabled; when enabled, in
// memory, at most 100 entries kept 5 minutes, expired ones swept.
func DefaultPersistenceConfig() PersistenceConfig {
	return PersistenceConfig{
		TTL:          5 * time.Minute,
		Storage:      StorageMemory,
		MaxCacheSize: 100,
		AutoCleanup:  true,
	}
}

// DefaultRouteMatchingConfig returns the matcher defaults: URLs normalized, ":" before a
// parameter, "*" a wildcard.
func DefaultRouteMatchingConfig() RouteMatchingConfig {
	return RouteMatchingConfig{NormalizeURLs: true, ParameterPrefix: ":", SupportWildcards: true}
}

// withDefaults fills zero-valued non-boolean fields.
func (c Config) withDefaults() Config {
	if c.DefaultHeaders == nil {
		c.DefaultHeaders = map[string]string{"Content-Type": "application/json"}
	}
	c.RouteMatching = c.RouteMatching.withDefaults()
	c.Cache = c.Cache.withDefaults()
	p := &c.Persistence
	if p.TTL <= 0 {
		p.TTL = 5 * time.Minute
	}
	if p.Storage == "" {
		p.Storage = StorageMemory
	}
	if p.MaxCacheSize <= 0 {
		p.MaxCacheSize = 100
	}
	if p.DBName == "" {
		p.DBName = "mock-cache"
	}
	if p.StoreName == "" {
		p.StoreName = "responses"
	}
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	return c
}

func (c RouteMatchingConfig) withDefaults() RouteMatchingConfig {
	if c.ParameterPrefix == "" {
		c.ParameterPrefix = ":"
	}
	return c
}

// clone returns a copy that shares no slices or maps with c.
func (c Config) clone() Config {
	c.Middleware = append([]Middleware(nil), c.Middleware...)
	c.IgnorePatterns = append([]Pattern(nil), c.IgnorePatterns...)
	c.IncludePatterns = append([]Pattern(nil), c.IncludePatterns...)
	c.DefaultHeaders = maps.Clone(c.DefaultHeaders) // nil stays nil
	c.Cache = c.Cache.clone()
	return c
}

// Pattern selects URLs for Config.IgnorePatterns and IncludePatterns. A
// *regexp.Regexp is a Pattern; [Glob] turns a string into one.
type Pattern interface {
	MatchString(s string) bool
}

// Glob returns a Pattern for a glob: "*" matches any run of characters
// (slashes included) and "?" one character; everything else is literal.
// A glob matches when it matches the whole URL or the whole path.
func Glob(glob string) Pattern {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return globPattern{src: glob, re: regexp.MustCompile(b.String())}
}

type globPattern struct {
	src string
	re  *regexp.Regexp
}

func (g globPattern) MatchString(s string) bool { return g.re.MatchString(s) }
func (g globPattern) String() string            { return g.src }
