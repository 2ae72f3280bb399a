// Package config defines the program's configuration: its keys, their defaults, where each is
// read from (flag > environment > config file > default) and the validation of every value.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/acme/app/internal/ai/providers"
	"github.com/acme/app/internal/budget"
	"github.com/acme/app/internal/redact"
	"github.com/acme/app/internal/suggest"
	"github.com/acme/app/internal/validate"
)

// Config is the typed configuration shared by every command.
type Config struct {
	Addr    string
	DataDir string

	MongoDB Mongo // the application database
	Core    Mongo // the core database holding shared property templates

	JWT       JWT
	RateLimit RateLimit
	Auth      Auth
	AI        AI
	DBCheck   DBCheck
	Log       Log
	Server    Server
	Metrics   Metrics
	CORS      CORS
}

// Metrics configures the Prometheus listener.
type Metrics struct {
	Addr string // empty: no metrics listener
}

// CORS configures the answers to browsers' cross-origin requests.
type CORS struct {
	AllowedOrigins   []string // empty: no CORS headers at all; "*": any origin (without credentials)
	AllowCredentials bool
}

// Mongo names a MongoDB deployment and a database in it. An empty URI means the embedded store.
type Mongo struct {
	URI      string
	Database string
}

// JWT configures access tokens.
type JWT struct {
	Secret string // empty: generated once and kept in DataDir
	TTL    time.Duration
}

// RateLimit configures the per-client request limits.
type RateLimit struct {
	Limit          int
	Window         time.Duration
	AuthLimit      int // stricter limit on register and login
	AuthWindow     time.Duration
	TrustedProxies []*net.IPNet // X-Forwarded-For is honoured only from these
}

// Auth configures password hashing and the roles an operator may grant.
type Auth struct {
	BcryptCost int
	Roles      []string // roles grantable besides user and admin
}

// AI configures the providers and the calls to them.
type AI struct {
	// Providers are the providers' settings by name (every name of providers.List).
	Providers   map[string]Provider
	Timeout     time.Duration
	PricingFile string
	// StreamIdleTimeout bounds the gap between two events of a streamed answer.
	StreamIdleTimeout time.Duration
	// StreamMaxDuration bounds a whole streamed answer.
	StreamMaxDuration time.Duration
	// MaxIdleConnsPerHost is the keep-alive pool kept per provider host.
	MaxIdleConnsPerHost int
	// MaxImageBytes is the largest inline image of a request, decoded.
	MaxImageBytes int64
	// MaxBodyBytes is the request body limit of the routes that take images
	// (/v1/chat/completions, /v1/messages); the other routes keep server.max_body_bytes.
	MaxBodyBytes int64
	// DefaultMonthlyBudget is every user's AI budget in USD per UTC month, unless they have
	// their own; nil: none.
	DefaultMonthlyBudget *float64
}

// Provider configures one AI provider.
type Provider struct {
	APIKey       string
	BaseURL      string
	DefaultModel string
}

// DBCheck configures the MongoDB utility endpoints.
type DBCheck struct {
	Timeout      time.Duration
	MaxLimit     int
	MaxTime      time.Duration
	MaxBytes     int
	AllowedHosts []string
	// MaxConcurrent bounds the API's tests and queries running at once (0: no bound).
	MaxConcurrent int
}

// Log configures the logger.
type Log struct {
	Level  string // debug, info, warn, error
	Format string // text, json; empty: text on a terminal, else json
}

// Server configures the HTTP server.
type Server struct {
	ShutdownGrace     time.Duration
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxBodyBytes      int64
	// MaxBufferedBytes bounds the request bodies and provider answers held in memory at
	// once, all requests together (0: no bound).
	MaxBufferedBytes int64
	MaxHeaderBytes   int
}

// kind says how a key's text is parsed and checked.
type kind int

const (
	kString kind = iota
	kDuration
	kInt
	kURL
	kList
	kCIDRs
	kLevel
	kFormat
	kBool
	kOrigins
	kRoles
)

// key describes one configuration key.
type key struct {
	name  string   // viper key, e.g. "ratelimit.limit"
	def   string   // default, as text
	kind  kind     //
	env   []string // conventional names read after APP_*
	flag  string   // persistent flag name, if any
	usage string   // flag help / docs
	min   int      // for kInt and kDuration (seconds granularity not needed): values below are refused
	max   int      // for kInt: values above are refused (0: no maximum)
	// number: a config file may give a kString key's value as a number (an amount); other
	// kString and kURL keys must be strings there.
	number bool
}

// Keys lists every configuration key with its default; docs/configuration.md mirrors it.
var keys = slices.Concat([]key{
	{name: "addr", def: ":3000", flag: "addr", usage: "address to listen on"},
	{name: "data_dir", def: "./data", flag: "data-dir", usage: "directory for the embedded store, lock and generated secrets"},
	{name: "mongodb.uri", env: []string{"MONGODB_URI"}, flag: "mongodb-uri", usage: "MongoDB URI (empty: embedded store)"},
	{name: "mongodb.database", def: "backend"},
	{name: "core.uri", usage: "MongoDB URI of the core database (empty: same as mongodb.uri)"},
	{name: "core.database", def: "core"},
	{name: "jwt.secret", env: []string{"JWT_SECRET"}},
	{name: "jwt.ttl", def: "168h", kind: kDuration, min: 1},
	{name: "ratelimit.limit", def: "100", kind: kInt, min: 1},
	{name: "ratelimit.window", def: "60s", kind: kDuration, min: 1},
	{name: "ratelimit.auth_limit", def: "10", kind: kInt, min: 1},
	{name: "ratelimit.auth_window", def: "60s", kind: kDuration, min: 1},
	{name: "ratelimit.trusted_proxies", kind: kCIDRs},
	{name: "auth.bcrypt_cost", def: "10", kind: kInt, min: 4, max: 31},
	{name: "auth.roles", kind: kRoles, usage: "roles an operator may grant besides user and admin"},
}, providerKeys(), []key{
	{name: "ai.timeout", def: "60s", kind: kDuration, min: 1},
	{name: "ai.pricing_file"},
	{name: "ai.stream_idle_timeout", def: "60s", kind: kDuration, min: 1},
	{name: "ai.stream_max_duration", def: "10m", kind: kDuration, min: 1},
	{name: "ai.max_idle_conns_per_host", def: "256", kind: kInt, min: 1},
	{name: "ai.max_image_bytes", def: "20971520", kind: kInt, min: 1, usage: "largest inline image of a /v1 request, decoded"},
	{name: "ai.max_body_bytes", def: "33554432", kind: kInt, min: 1, usage: "request body limit of /v1/chat/completions and /v1/messages"},
	{name: "ai.default_monthly_budget", number: true, usage: "USD per user per UTC month (empty: no budget)"},
	{name: "dbcheck.timeout", def: "5s", kind: kDuration, min: 1},
	{name: "dbcheck.max_limit", def: "1000", kind: kInt, min: 1},
	{name: "dbcheck.max_time", def: "10s", kind: kDuration, min: 1},
	{name: "dbcheck.max_bytes", def: "16777216", kind: kInt, min: 1},
	{name: "dbcheck.allowed_hosts", kind: kList},
	{name: "dbcheck.max_concurrent", def: "16", kind: kInt, min: 0,
		usage: "MongoDB tests and queries of the API running at once, all callers together (503 past it; 0: no bound)"},
	{name: "log.level", def: "info", kind: kLevel, flag: "log-level", usage: "debug, info, warn or error"},
	{name: "log.format", kind: kFormat, usage: "text or json (default: text on a terminal, else json)"},
	{name: "server.shutdown_grace", def: "30s", kind: kDuration, min: 0},
	{name: "server.read_header_timeout", def: "10s", kind: kDuration, min: 1},
	{name: "server.read_timeout", def: "30s", kind: kDuration, min: 1},
	{name: "server.write_timeout", def: "90s", kind: kDuration, min: 1},
	{name: "server.idle_timeout", def: "120s", kind: kDuration, min: 1},
	{name: "server.max_body_bytes", def: "1048576", kind: kInt, min: 1},
	{name: "server.max_buffered_bytes", def: "268435456", kind: kInt, min: 0,
		usage: "request bodies and provider answers held in memory at once, all requests together (503 past it; 0: no bound)"},
	{name: "server.max_header_bytes", def: "65536", kind: kInt, min: 1024, max: 1 << 20},
	{name: "metrics.addr", usage: "address of the Prometheus /metrics listener (empty: off)"},
	{name: "cors.allowed_origins", kind: kOrigins, usage: "origins allowed to call the API from a browser"},
	{name: "cors.allow_credentials", def: "false", kind: kBool},
})

// providerKeys are the keys of every AI provider: ai.<name>.api_key (also read from the
// provider's own variable), base_url and default_model.
func providerKeys() []key {
	var out []key
	for _, p := range providers.List {
		prefix := "ai." + p.Name + "."
		out = append(out,
			key{name: prefix + "api_key", env: []string{p.KeyEnv}},
			key{name: prefix + "base_url", def: p.BaseURL, kind: kURL},
			key{name: prefix + "default_model", def: p.DefaultModel})
	}
	return out
}

// MinSecretBytes is the shortest jwt.secret accepted (HS256 wants a key as long as its hash).
const MinSecretBytes = 32

// EnvName is the APP_* environment variable for a key ("ratelimit.limit" → "APP_RATELIMIT_LIMIT").
func EnvName(name string) string {
	return "APP_" + strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
}

// BindFlags adds the persistent flags (--addr, --data-dir, --mongodb-uri, --log-level, --config) to fs.
func BindFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "config file (YAML, JSON or TOML)")
	for _, k := range keys {
		if k.flag != "" {
			fs.String(k.flag, k.def, k.usage)
		}
	}
}

// Error is a configuration value that cannot be used; it names the key and the value.
type Error struct {
	Key, Value, Reason string
}

// Error never shows a secret: a key holding one is named without its value, and the password
// of any URL in the value (a database URI, a provider's base URL, an origin) is masked, in the
// value and wherever the reason quotes it.
func (e *Error) Error() string {
	reason := redact.Text(e.Reason, e.Value)
	if e.Value == "" || strings.HasSuffix(e.Key, "secret") || strings.HasSuffix(e.Key, "api_key") {
		return fmt.Sprintf("config: %s: %s", e.Key, reason)
	}
	return fmt.Sprintf("config: %s=%s: %s", e.Key, shown(redact.URI(e.Value)), reason)
}

// maxShown bounds the bytes of a value an error quotes: past it the value is cut, and its
// length named, so that the error stays one readable line.
const maxShown = 120

// shown quotes val, cut to maxShown bytes (at a rune boundary) when longer.
func shown(val string) string {
	if len(val) <= maxShown {
		return strconv.Quote(val)
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(val[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(val[:cut]), len(val))
}

// Load resolves every key with precedence flag > environment (APP_*, then the conventional
// name) > config file > default, and parses it. fs may be nil; getenv is os.Getenv outside tests.
func Load(fs *pflag.FlagSet, getenv func(string) string) (*Config, error) {
	v := viper.NewWithOptions(viper.WithDecoderRegistry(fileDecoders{viper.NewCodecRegistry()}))
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && (f.Changed || f.Value.String() != "") {
			if err := checkConfigFile(f.Value.String()); err != nil {
				return nil, err
			}
			v.SetConfigFile(f.Value.String())
			if err := v.ReadInConfig(); err != nil {
				var clash *caseClash
				if errors.As(err, &clash) {
					return nil, &Error{Key: clash.key, Reason: fmt.Sprintf("given twice in %s, as %q and %q: keys are not case-sensitive, so one would be ignored; keep one",
						f.Value.String(), clash.names[0], clash.names[1])}
				}
				return nil, &Error{Key: "--config", Reason: f.Value.String() + ": " + oneLine(err.Error())}
			}
			if err := checkFileKeys(v.AllKeys(), f.Value.String()); err != nil {
				return nil, err
			}
			for _, k := range keys {
				if v.IsSet(k.name) {
					if err := checkFileType(k, v.Get(k.name)); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	raw := make(map[string]string, len(keys))
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		raw[k.name], set[k.name] = resolve(k, fs, getenv, v)
	}
	// PORT is the platform convention: used for addr only when nothing more specific set it.
	// It is named when it is no port number, since addr was not set.
	if !set["addr"] {
		if p := getenv("PORT"); p != "" {
			if err := checkPort(p); err != nil {
				return nil, &Error{Key: "PORT", Value: p, Reason: "must be a port number from 0 to 65535 (addr is then :$PORT)"}
			}
			raw["addr"] = ":" + p
		}
	}
	if raw["core.uri"] == "" {
		raw["core.uri"] = raw["mongodb.uri"]
	}
	return parse(raw)
}

// fileDecoders decodes config files with viper's decoders, after dropping a UTF-8 byte-order
// mark (which some Windows editors write, and which JSON and TOML decoders take for a
// character), and refuses a mapping that gives one key in spellings that differ only in case
// (viper folds keys to lower case, so one of them would be ignored silently).
type fileDecoders struct{ viper.DecoderRegistry }

// Decoder returns viper's decoder for format, wrapped as fileDecoders says.
func (r fileDecoders) Decoder(format string) (viper.Decoder, error) {
	d, err := r.DecoderRegistry.Decoder(format)
	if err != nil {
		return nil, err
	}
	return fileDecoder{d}, nil
}

type fileDecoder struct{ viper.Decoder }

func (d fileDecoder) Decode(b []byte, v map[string]any) error {
	if err := d.Decoder.Decode(bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF")), v); err != nil {
		return err
	}
	return checkCase(v, "")
}

// caseClash is a config file mapping that names key twice, in spellings that differ only in
// case.
type caseClash struct {
	key   string // the key's full name, lower-case (ratelimit.limit)
	names [2]string
}

func (c *caseClash) Error() string {
	return fmt.Sprintf("%s given twice, as %q and %q", c.key, c.names[0], c.names[1])
}

// checkCase returns a caseClash for the first key of m, or of a mapping below it, that m names
// in two spellings differing only in case; prefix is m's own name followed by a dot ("" at the
// top).
func checkCase(m map[string]any, prefix string) error {
	names := slices.Sorted(maps.Keys(m))
	seen := make(map[string]string, len(names))
	for _, name := range names {
		lower := strings.ToLower(name)
		if first, ok := seen[lower]; ok {
			return &caseClash{key: prefix + lower, names: [2]string{first, name}}
		}
		seen[lower] = name
	}
	for _, name := range names {
		if sub, ok := m[name].(map[string]any); ok {
			if err := checkCase(sub, prefix+strings.ToLower(name)+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkConfigFile refuses a --config that names no file viper could read, with a reason that
// says why: an empty one (`--config "$CONFIG"` with the variable unset, which would otherwise
// run on the defaults), a directory, or a name whose extension is no format viper reads
// (viper says `Unsupported Config Type ""` for the first two).
func checkConfigFile(file string) error {
	if strings.TrimSpace(file) == "" {
		return &Error{Key: "--config", Reason: "is empty; give a YAML, JSON or TOML file, or leave --config out"}
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return &Error{Key: "--config", Reason: file + ": is a directory, not a file"}
	}
	if ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(file), ".")); !slices.Contains(viper.SupportedExts, ext) {
		return &Error{Key: "--config", Reason: file + ": the name must end in the extension of its format: YAML (.yaml, .yml), JSON (.json) or TOML (.toml)"}
	}
	return nil
}

// checkFileType refuses a config file value of a type k's kind does not take, before it is
// turned into text: a list would be joined with commas, a 35-digit number rounded to 21
// characters, a mapping printed as Go. The check is the same for every key, from its kind
// (wants, accepts); what a value of the right type says is checked by parse, as for the
// environment's.
func checkFileType(k key, val any) error {
	if !k.accepts(val) {
		reason := "must be " + k.wants() + ", not " + describe(val)
		if k.text() && scalar(val) {
			reason += ": quote it"
		}
		return &Error{Key: k.name, Reason: reason}
	}
	if items, ok := val.([]any); ok {
		for i, item := range items {
			if _, ok := item.(string); !ok {
				reason := fmt.Sprintf("must be %s; item %d is %s", k.wants(), i+1, describe(item))
				if scalar(item) {
					reason += ": quote it"
				}
				return &Error{Key: k.name, Reason: reason}
			}
		}
	}
	return nil
}

// wants words the type a config file must give for k.
func (k key) wants() string {
	switch k.kind {
	case kString, kURL, kLevel, kFormat:
		if k.number {
			return "a number or a string"
		}
		return "a string"
	case kDuration:
		return `a duration such as "60s"`
	case kInt:
		return "a whole number"
	case kBool:
		return "true or false"
	case kList, kCIDRs, kOrigins, kRoles:
		return "a list of strings (or one comma-separated string)"
	}
	return ""
}

// accepts reports whether a config file value (as the YAML, JSON and TOML decoders give it) is
// of a type k takes; a list's items are checked apart. Every kind takes a string, as the
// environment gives nothing else, and no value (the key is then not set).
func (k key) accepts(val any) bool {
	switch val.(type) {
	case nil, string:
		return true
	case []any:
		return k.list()
	case bool:
		return k.kind == kBool
	}
	if number(val) {
		return k.kind == kInt || k.kind == kDuration || k.number
	}
	return false // a mapping, a date
}

// text reports whether k's value is free text, which quoting a number makes right.
func (k key) text() bool { return (k.kind == kString || k.kind == kURL) && !k.number }

// list reports whether k holds a list.
func (k key) list() bool {
	switch k.kind {
	case kList, kCIDRs, kOrigins, kRoles:
		return true
	}
	return false
}

// describe words the type of a config file value.
func describe(val any) string {
	switch val.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	}
	if number(val) {
		return "a number"
	}
	if reflect.ValueOf(val).Kind() == reflect.Struct {
		return "a date or time" // time.Time, TOML's local dates and times
	}
	return fmt.Sprintf("a %T", val)
}

// scalar reports whether val is a single value that quoting would make a string.
func scalar(val any) bool {
	switch val.(type) {
	case []any, map[string]any, nil:
		return false
	}
	return true
}

// number reports whether val is a number, of whichever type a decoder gave it.
func number(val any) bool {
	switch reflect.ValueOf(val).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// checkFileKeys refuses a config file key that names no key, naming the closest one. A key
// below a key (addr.host: the file gave addr a mapping) is that key's value of the wrong type.
func checkFileKeys(fileKeys []string, file string) error {
	for _, name := range fileKeys {
		if section(name) {
			return &Error{Key: name, Reason: "must be a mapping of its keys (" + name + ".…), not a single value"}
		}
		if _, ok := lookup(name); ok {
			continue
		}
		for i := strings.LastIndex(name, "."); i > 0; i = strings.LastIndex(name[:i], ".") {
			if k, ok := lookup(name[:i]); ok {
				return checkFileType(k, map[string]any{})
			}
		}
		return &Error{Key: name, Reason: "unknown key in " + file + didYouMean(name)}
	}
	return nil
}

// commandVariables are APP_* variables a command reads itself, which name no configuration
// key: every command accepts them.
var commandVariables = []string{
	"APP_MOCK_ADMIN_TOKEN", // mock serve's --admin-token
}

// CheckEnvironment refuses an APP_* variable (NAME=value, as os.Environ lists them) that names
// no key, naming the closest one: a misspelt variable would otherwise be ignored silently.
func CheckEnvironment(environ []string) error {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "APP_") || slices.Contains(commandVariables, name) {
			continue
		}
		known := false
		for _, k := range keys {
			if EnvName(k.name) == name {
				known = true
				break
			}
		}
		if !known {
			guess := strings.ToLower(strings.TrimPrefix(name, "APP_"))
			hint := ""
			if c := closest(guess); c != "" {
				hint = fmt.Sprintf(" (did you mean %s, the key %s?)", EnvName(c), c)
			}
			return &Error{Key: name, Value: "", Reason: "environment variable names no configuration key" + hint}
		}
	}
	return nil
}

// section reports whether name is a group of keys (ratelimit, ai.openai) rather than a key.
func section(name string) bool {
	for _, k := range keys {
		if strings.HasPrefix(k.name, name+".") {
			return true
		}
	}
	return false
}

// lookup returns the key called name.
func lookup(name string) (key, bool) {
	for _, k := range keys {
		if k.name == name {
			return k, true
		}
	}
	return key{}, false
}

// didYouMean words the closest key to name as " (did you mean K?)", or "" when none is close.
func didYouMean(name string) string {
	if c := closest(name); c != "" {
		return fmt.Sprintf(" (did you mean %s?)", c)
	}
	return ""
}

// closest returns the key nearest to name by edit distance, comparing "_" and "." alike
// (environment names cannot tell them apart); "" when none is within a third of its length.
func closest(name string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), ".", "_") }
	best, bestD := "", -1
	for _, k := range keys {
		d := suggest.Distance(norm(name), norm(k.name))
		if bestD < 0 || d < bestD {
			best, bestD = k.name, d
		}
	}
	if bestD > max(2, len(best)/3) {
		return ""
	}
	return best
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// resolve returns k's text, from the first source that sets it: its flag, its environment
// names, the config file; else its default, with set false.
func resolve(k key, fs *pflag.FlagSet, getenv func(string) string, v *viper.Viper) (val string, set bool) {
	if fs != nil && k.flag != "" {
		if f := fs.Lookup(k.flag); f != nil && f.Changed {
			return f.Value.String(), true
		}
	}
	for _, name := range append([]string{EnvName(k.name)}, k.env...) {
		if val := getenv(name); val != "" {
			return val, true
		}
	}
	if v.IsSet(k.name) {
		val := v.Get(k.name)
		switch t := val.(type) {
		case []any:
			parts := make([]string, len(t))
			for i, p := range t {
				parts[i] = fileText(p)
			}
			return strings.Join(parts, ","), true
		default:
			return fileText(t), true
		}
	}
	return k.def, false
}

// fileText is a config file value (of a type checkFileType let through) as the environment
// would give it. A number is written out in plain decimals: JSON decodes every number as a
// float, which Go prints in its shortest form (2097152 as 2.097152e+06), and that is neither
// a whole number nor an amount of dollars.
func fileText(val any) string {
	switch f := val.(type) {
	case float64:
		return strconv.FormatFloat(f, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(f), 'f', -1, 32)
	}
	return fmt.Sprint(val)
}

func parse(raw map[string]string) (*Config, error) {
	p := parser{raw: raw}
	c := &Config{
		Addr:    p.str("addr"),
		DataDir: p.str("data_dir"),
		MongoDB: Mongo{URI: p.str("mongodb.uri"), Database: p.database("mongodb.database")},
		Core:    Mongo{URI: p.str("core.uri"), Database: p.database("core.database")},
		JWT:     JWT{Secret: p.secret("jwt.secret"), TTL: p.dur("jwt.ttl")},
		RateLimit: RateLimit{
			Limit: p.int("ratelimit.limit"), Window: p.dur("ratelimit.window"),
			AuthLimit: p.int("ratelimit.auth_limit"), AuthWindow: p.dur("ratelimit.auth_window"),
			TrustedProxies: p.cidrs("ratelimit.trusted_proxies"),
		},
		Auth: Auth{BcryptCost: p.int("auth.bcrypt_cost"), Roles: p.roles("auth.roles")},
		AI: AI{
			Providers:   p.providers(),
			Timeout:     p.dur("ai.timeout"),
			PricingFile: p.str("ai.pricing_file"),

			StreamIdleTimeout:   p.dur("ai.stream_idle_timeout"),
			StreamMaxDuration:   p.dur("ai.stream_max_duration"),
			MaxIdleConnsPerHost: p.int("ai.max_idle_conns_per_host"),
			MaxImageBytes:       int64(p.int("ai.max_image_bytes")),
			MaxBodyBytes:        int64(p.int("ai.max_body_bytes")),

			DefaultMonthlyBudget: p.dollars("ai.default_monthly_budget"),
		},
		DBCheck: DBCheck{
			Timeout: p.dur("dbcheck.timeout"), MaxLimit: p.int("dbcheck.max_limit"),
			MaxTime: p.dur("dbcheck.max_time"), MaxBytes: p.int("dbcheck.max_bytes"),
			AllowedHosts: p.list("dbcheck.allowed_hosts"), MaxConcurrent: p.int("dbcheck.max_concurrent"),
		},
		Log: Log{Level: p.str("log.level"), Format: p.str("log.format")},
		Server: Server{
			ShutdownGrace:     p.dur("server.shutdown_grace"),
			ReadHeaderTimeout: p.dur("server.read_header_timeout"),
			ReadTimeout:       p.dur("server.read_timeout"),
			WriteTimeout:      p.dur("server.write_timeout"),
			IdleTimeout:       p.dur("server.idle_timeout"),
			MaxBodyBytes:      int64(p.int("server.max_body_bytes")),
			MaxBufferedBytes:  int64(p.int("server.max_buffered_bytes")),
			MaxHeaderBytes:    p.int("server.max_header_bytes"),
		},
		Metrics: Metrics{Addr: p.str("metrics.addr")},
		CORS:    CORS{AllowedOrigins: p.origins("cors.allowed_origins"), AllowCredentials: p.bool("cors.allow_credentials")},
	}
	if c.CORS.AllowCredentials && slices.Contains(c.CORS.AllowedOrigins, "*") {
		p.fail("cors.allowed_origins", `"*" (any origin) cannot be combined with cors.allow_credentials; list the origins`)
	}
	if p.err == nil && c.Server.WriteTimeout <= c.AI.Timeout {
		// The server's write deadline runs from the request: an AI call allowed longer would be
		// cut before its answer is written.
		p.fail("server.write_timeout", fmt.Sprintf("must exceed ai.timeout (%s) so that AI answers are not cut; raise it or lower ai.timeout", c.AI.Timeout))
	}
	if b := c.Server.MaxBufferedBytes; b > 0 && (b < c.Server.MaxBodyBytes || b < c.AI.MaxBodyBytes) {
		// A request of the largest size allowed could never be read.
		p.fail("server.max_buffered_bytes", fmt.Sprintf("must be 0 (no bound) or at least server.max_body_bytes (%d) and ai.max_body_bytes (%d)",
			c.Server.MaxBodyBytes, c.AI.MaxBodyBytes))
	}
	if err := CheckAddr(c.Addr); err != nil {
		p.fail("addr", err.Error()+", e.g. :3000 or 127.0.0.1:3000")
	}
	if c.DataDir == "" {
		// Like an empty address, a mistake more likely than a wish: with no mongodb.uri the
		// embedded store has nowhere to live, and with one the generated JWT secret and the
		// lock would land in whatever directory the program was started from.
		p.fail("data_dir", "is empty; give a directory, e.g. ./data (the default)")
	}
	if c.Metrics.Addr != "" {
		if err := CheckAddr(c.Metrics.Addr); err != nil {
			p.fail("metrics.addr", err.Error()+", e.g. 127.0.0.1:9464")
		} else if samePort(c.Addr, c.Metrics.Addr) {
			// Found at bind time it would read "address already in use", as if another
			// process held the port.
			_, port, _ := net.SplitHostPort(c.Addr)
			p.fail("metrics.addr", fmt.Sprintf("must not be addr's port (:%s): the two listeners cannot share it; give it a port of its own, e.g. 127.0.0.1:9464", port))
		}
	}
	for _, uriKey := range []string{"mongodb.uri", "core.uri"} {
		switch u := raw[uriKey]; {
		case u == "":
		case !strings.HasPrefix(u, "mongodb://") && !strings.HasPrefix(u, "mongodb+srv://"):
			p.fail(uriKey, "must start with mongodb:// or mongodb+srv://")
		case redact.CheckAt(u) != nil:
			p.fail(uriKey, redact.ErrUnescapedAt.Error())
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return c, nil
}

// CheckAddr refuses a listen address that is not [host]:port with a port number from 0 (any
// free port) to 65535, so that a bad value stops a command before it starts anything. An
// empty one is refused too (it would listen on every interface on a random port): it is a
// mistake, a variable that expanded to nothing say, more likely than a wish.
func CheckAddr(addr string) error {
	if addr == "" {
		return errors.New("is empty; give host:port")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("must be host:port")
	}
	if checkPort(port) != nil {
		return errors.New("must be host:port with a port from 0 to 65535")
	}
	return nil
}

// samePort reports whether listeners on a and b (valid [host]:port addresses) would take the
// same port: the same port number, not 0 (a free port for each), on the same host or where
// either listens on every address.
func samePort(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return false
	}
	na, _ := strconv.Atoi(pa)
	nb, _ := strconv.Atoi(pb)
	if na == 0 || na != nb {
		return false
	}
	wildcard := func(h string) bool {
		ip := net.ParseIP(h)
		return h == "" || (ip != nil && ip.IsUnspecified())
	}
	return strings.EqualFold(ha, hb) || wildcard(ha) || wildcard(hb)
}

// checkPort refuses a port that is not a decimal number from 0 to 65535.
func checkPort(port string) error {
	if n, err := strconv.Atoi(port); err != nil || n > 65535 || strings.Trim(port, "0123456789") != "" {
		return errors.New("not a port number")
	}
	return nil
}

// parser converts raw values, remembering the first error.
type parser struct {
	raw map[string]string
	err error
}

func (p *parser) spec(name string) key {
	if k, ok := lookup(name); ok {
		return k
	}
	panic("config: unknown key " + name)
}

func (p *parser) fail(name, reason string) {
	if p.err == nil {
		p.err = &Error{Key: name, Value: p.raw[name], Reason: reason}
	}
}

func (p *parser) str(name string) string {
	val := strings.TrimSpace(p.raw[name])
	switch p.spec(name).kind {
	case kURL:
		u, err := url.Parse(val)
		if atErr := redact.CheckAt(val); atErr != nil {
			p.fail(name, atErr.Error())
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			p.fail(name, "must be an absolute http(s) URL")
		} else if port := u.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				p.fail(name, "the port must be between 1 and 65535")
			}
		}
		return strings.TrimRight(val, "/")
	case kLevel:
		switch strings.ToLower(val) {
		case "debug", "info", "warn", "error":
			return strings.ToLower(val)
		}
		p.fail(name, "must be one of debug, info, warn, error")
	case kFormat:
		switch strings.ToLower(val) {
		case "", "text", "json":
			return strings.ToLower(val)
		}
		p.fail(name, "must be text or json")
	}
	return val
}

// database is a MongoDB database name, checked as MongoDB checks it: a name it refuses would
// otherwise fail the first query, without the key named.
func (p *parser) database(name string) string {
	val := strings.TrimSpace(p.raw[name])
	if reason := validate.DatabaseName(val); reason != "" {
		p.fail(name, reason)
	}
	return val
}

func (p *parser) dur(name string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(p.raw[name]))
	if err != nil {
		p.fail(name, "not a duration (examples: 500ms, 60s, 168h)")
		return 0
	}
	if d < 0 || (p.spec(name).min > 0 && d == 0) {
		p.fail(name, "must be positive")
	}
	return d
}

func (p *parser) int(name string) int {
	n, err := strconv.Atoi(strings.TrimSpace(p.raw[name]))
	if err != nil {
		p.fail(name, "not a whole number")
		return 0
	}
	if k := p.spec(name); n < k.min || (k.max > 0 && n > k.max) {
		if k.max > 0 {
			p.fail(name, fmt.Sprintf("must be between %d and %d", k.min, k.max))
		} else {
			p.fail(name, fmt.Sprintf("must be at least %d", k.min))
		}
	}
	return n
}

// secret is a string that, when set, must hold at least MinSecretBytes bytes.
func (p *parser) secret(name string) string {
	val := p.raw[name]
	if val != "" && len(val) < MinSecretBytes {
		p.fail(name, fmt.Sprintf("must be at least %d bytes (it is %d); leave it empty to use the secret generated in data_dir", MinSecretBytes, len(val)))
	}
	return val
}

func (p *parser) bool(name string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(p.raw[name]))
	if err != nil {
		p.fail(name, "must be true or false")
	}
	return b
}

// origins is a list of browser origins (scheme://host[:port], no path) or "*".
func (p *parser) origins(name string) []string {
	if strings.Contains(p.raw[name], "@") {
		// Checked on the whole value: a password with a space would split into two entries,
		// and the first, quoted, would show part of it.
		p.fail(name, `an origin holds no user name or password ("@")`)
		return nil
	}
	list := p.list(name)
	for i, o := range list {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			p.fail(name, fmt.Sprintf("%q is not an origin (scheme://host[:port], e.g. http://localhost:5173) or *", o))
			return nil
		}
		list[i] = u.Scheme + "://" + u.Host
	}
	return list
}

// roles is a list of role names: lower-case letters, digits, "-" and "_".
func (p *parser) roles(name string) []string {
	list := p.list(name)
	for _, r := range list {
		if !roleName.MatchString(r) {
			p.fail(name, fmt.Sprintf("%q is not a role name (lower-case letters, digits, - and _, at most 64)", r))
			return nil
		}
	}
	return list
}

var roleName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// dollars parses an optional amount of US dollars (empty: nil).
func (p *parser) dollars(name string) *float64 {
	val := strings.TrimSpace(p.raw[name])
	if val == "" {
		return nil
	}
	f, err := budget.ParseDollars(val)
	if err != nil {
		p.fail(name, "must be "+budget.LimitRule)
		return nil
	}
	return &f
}

func (p *parser) list(name string) []string {
	return strings.FieldsFunc(p.raw[name], func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
}

func (p *parser) cidrs(name string) []*net.IPNet {
	var out []*net.IPNet
	for _, s := range p.list(name) {
		if !strings.Contains(s, "/") {
			if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
				s += "/32"
			} else {
				s += "/128"
			}
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			p.fail(name, "not a list of IP addresses or CIDRs")
			return nil
		}
		out = append(out, n)
	}
	return out
}

func (p *parser) providers() map[string]Provider {
	out := make(map[string]Provider, len(providers.List))
	for _, info := range providers.List {
		prefix := "ai." + info.Name + "."
		out[info.Name] = Provider{
			APIKey:       p.str(prefix + "api_key"),
			BaseURL:      p.str(prefix + "base_url"),
			DefaultModel: p.str(prefix + "default_model"),
		}
	}
	return out
}
