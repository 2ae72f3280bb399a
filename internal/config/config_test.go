package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse flags: %v", err)
	}
	return fs
}

// Ensure the defaults are the documented ones (docs/configuration.md).
func TestLoad_Defaults(t *testing.T) {
	t.Parallel()
	c, err := Load(flags(t), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"addr", c.Addr, ":3000"},
		{"data_dir", c.DataDir, "./data"},
		{"mongodb.uri", c.MongoDB.URI, ""},
		{"mongodb.database", c.MongoDB.Database, "backend"},
		{"core.database", c.Core.Database, "core"},
		{"jwt.ttl", c.JWT.TTL, 168 * time.Hour},
		{"ratelimit.limit", c.RateLimit.Limit, 100},
		{"ratelimit.window", c.RateLimit.Window, 60 * time.Second},
		{"ratelimit.auth_limit", c.RateLimit.AuthLimit, 10},
		{"auth.bcrypt_cost", c.Auth.BcryptCost, 10},
		{"ai.openai.base_url", c.AI.Providers["openai"].BaseURL, "https://api.openai.com/v1"},
		{"ai.anthropic.base_url", c.AI.Providers["anthropic"].BaseURL, "https://api.anthropic.com/v1"},
		{"ai.gemini.base_url", c.AI.Providers["gemini"].BaseURL, "https://generativelanguage.googleapis.com/v1beta"},
		{"ai.timeout", c.AI.Timeout, 60 * time.Second},
		{"log.level", c.Log.Level, "info"},
		{"log.format", c.Log.Format, ""},
		{"dbcheck.max_concurrent", c.DBCheck.MaxConcurrent, 16},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

// Ensure precedence is flag > APP_* env > conventional env > config file > default.
func TestLoad_Precedence(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, []byte("addr: \":4000\"\nmongodb:\n  database: fromfile\n  uri: mongodb://file:27017\nratelimit:\n  limit: 7\njwt:\n  secret: file-secret-file-secret-file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(*Config) string
		wantVal string
	}{
		{"file beats default", []string{"--config", file}, nil, func(c *Config) string { return c.MongoDB.Database }, "fromfile"},
		{"env beats file", []string{"--config", file}, map[string]string{"APP_MONGODB_DATABASE": "fromenv"}, func(c *Config) string { return c.MongoDB.Database }, "fromenv"},
		{"flag beats env", []string{"--config", file, "--addr", ":5000"}, map[string]string{"APP_ADDR": ":6000"}, func(c *Config) string { return c.Addr }, ":5000"},
		{"APP env beats conventional", nil, map[string]string{"APP_MONGODB_URI": "mongodb://a", "MONGODB_URI": "mongodb://b"}, func(c *Config) string { return c.MongoDB.URI }, "mongodb://a"},
		{"conventional env beats file", []string{"--config", file}, map[string]string{"MONGODB_URI": "mongodb://b"}, func(c *Config) string { return c.MongoDB.URI }, "mongodb://b"},
		{"JWT_SECRET read", nil, map[string]string{"JWT_SECRET": strings.Repeat("s", 32)}, func(c *Config) string { return c.JWT.Secret }, strings.Repeat("s", 32)},
		{"OPENAI_API_KEY read", nil, map[string]string{"OPENAI_API_KEY": "k"}, func(c *Config) string { return c.AI.Providers["openai"].APIKey }, "k"},
		{"PORT gives :PORT", nil, map[string]string{"PORT": "8080"}, func(c *Config) string { return c.Addr }, ":8080"},
		{"APP_ADDR beats PORT", nil, map[string]string{"PORT": "8080", "APP_ADDR": ":9"}, func(c *Config) string { return c.Addr }, ":9"},
		{"file addr beats PORT", []string{"--config", file}, map[string]string{"PORT": "8080"}, func(c *Config) string { return c.Addr }, ":4000"},
		{"core.uri defaults to mongodb.uri", nil, map[string]string{"MONGODB_URI": "mongodb://x"}, func(c *Config) string { return c.Core.URI }, "mongodb://x"},
		{"int from file", []string{"--config", file}, nil, func(c *Config) string { return strconv.Itoa(c.RateLimit.Limit) }, "7"},
		{"list from env", nil, map[string]string{"APP_DBCHECK_ALLOWED_HOSTS": "a.example.com, 10.0.0.0/8 b"}, func(c *Config) string { return strings.Join(c.DBCheck.AllowedHosts, "|") }, "a.example.com|10.0.0.0/8|b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(flags(t, tt.args...), env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.check(c); got != tt.wantVal {
				t.Fatalf("got %q, want %q", got, tt.wantVal)
			}
		})
	}
}

// Ensure every bad value stops loading with an error naming the key and the value.
func TestLoad_BadValues(t *testing.T) {
	t.Parallel()
	tests := []struct{ env, val string }{
		{"APP_JWT_TTL", "forever"},
		{"APP_JWT_TTL", "-1h"},
		{"APP_RATELIMIT_LIMIT", "many"},
		{"APP_RATELIMIT_LIMIT", "-5"},
		{"APP_RATELIMIT_WINDOW", "0s"},
		{"APP_AI_TIMEOUT", "10"},
		{"APP_AI_OPENAI_BASE_URL", "not a url"},
		{"APP_AI_GEMINI_BASE_URL", "ftp://example.com"},
		{"APP_MONGODB_URI", "postgres://x"},
		{"APP_CORE_URI", "http://x"},
		{"APP_AUTH_BCRYPT_COST", "2"},
		{"APP_LOG_LEVEL", "loud"},
		{"APP_LOG_FORMAT", "xml"},
		{"APP_RATELIMIT_TRUSTED_PROXIES", "10.0.0.0/33"},
		{"APP_DBCHECK_MAX_LIMIT", "0"},
		{"APP_DBCHECK_MAX_CONCURRENT", "-1"},
		{"APP_DBCHECK_MAX_CONCURRENT", "some"},
		{"APP_AUTH_BCRYPT_COST", "32"},
		{"APP_JWT_SECRET", "short-secret"},
		{"APP_SERVER_MAX_HEADER_BYTES", "10"},
		{"APP_CORS_ALLOWED_ORIGINS", "http://localhost:5173/path"},
		{"APP_CORS_ALLOWED_ORIGINS", "localhost:5173"},
		{"APP_CORS_ALLOW_CREDENTIALS", "maybe"},
		{"APP_AUTH_ROLES", "Admin!"},
		{"APP_METRICS_ADDR", "9464"},
		{"APP_METRICS_ADDR", "127.0.0.1:99999"},
		{"APP_ADDR", "nonsense"},
		{"APP_ADDR", ":99999"},
		{"APP_ADDR", ":abc"},
		{"APP_AI_DEFAULT_MONTHLY_BUDGET", "-1"},
		{"APP_AI_DEFAULT_MONTHLY_BUDGET", "lots"},
		{"APP_AI_DEFAULT_MONTHLY_BUDGET", "950000000"}, // past what the ledger holds
		{"APP_AI_DEFAULT_MONTHLY_BUDGET", "$"},
		{"APP_AI_DEFAULT_MONTHLY_BUDGET", "1_0"},
		{"APP_AI_DEFAULT_MONTHLY_BUDGET", "0x10"},
		{"APP_AI_DEFAULT_MONTHLY_BUDGET", "1e-12"},
		// Names MongoDB refuses: found here, not by the first query (exit 1, no key named).
		{"APP_MONGODB_DATABASE", "a/b"},
		{"APP_MONGODB_DATABASE", "app.prod"},
		{"APP_MONGODB_DATABASE", strings.Repeat("a", 64)},
		{"APP_CORE_DATABASE", "core db"},
		{"APP_CORE_DATABASE", "core$"},
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.val, func(t *testing.T) {
			t.Parallel()
			_, err := Load(flags(t), env(map[string]string{tt.env: tt.val}))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *config.Error", err)
			}
			key := strings.ToLower(strings.TrimPrefix(tt.env, "APP_"))
			if strings.ReplaceAll(ce.Key, ".", "_") != key || ce.Value != tt.val {
				t.Fatalf("error names %s=%q, want %s=%q", ce.Key, ce.Value, key, tt.val)
			}
			if !strings.Contains(err.Error(), ce.Key) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q must be one line naming the key", err)
			}
		})
	}
}

// Ensure a missing config file is an error, not silently ignored.
func TestLoad_MissingConfigFile(t *testing.T) {
	t.Parallel()
	if _, err := Load(flags(t, "--config", filepath.Join(t.TempDir(), "nope.yaml")), env(nil)); err == nil {
		t.Fatal("want an error for a missing --config file")
	}
}

// Ensure trusted proxies accept bare addresses and CIDRs.
func TestLoad_TrustedProxies(t *testing.T) {
	t.Parallel()
	c, err := Load(flags(t), env(map[string]string{"APP_RATELIMIT_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16 ::1"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.RateLimit.TrustedProxies) != 3 || c.RateLimit.TrustedProxies[0].String() != "10.0.0.1/32" {
		t.Fatalf("trusted proxies = %v", c.RateLimit.TrustedProxies)
	}
}

// Ensure a secret never appears in a configuration error.
func TestLoad_SecretNotInError(t *testing.T) {
	t.Parallel()
	_, err := Load(flags(t), env(map[string]string{"APP_JWT_SECRET": "hunter2-short"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v: want an error that does not show the secret", err)
	}
	// A refused URL is quoted without its password, even one url.Parse cannot read, whichever
	// key holds it and also where the reason repeats it.
	for _, tc := range []struct{ env, value string }{
		{"APP_MONGODB_URI", "postgres://u:hunter2@h/db"},
		{"APP_MONGODB_URI", "mysql://u:hunter2@h/?x=%zz"},
		{"APP_MONGODB_URI", "mongo://u:hun/ter2@h"},
		{"APP_AI_OPENAI_BASE_URL", "ftp://u:hunter2@h/v1"},
		{"APP_AI_ANTHROPIC_BASE_URL", "https://u:hunter2@h:99999/v1"}, // the port is out of range
		{"APP_CORS_ALLOWED_ORIGINS", "https://u:hunter2@h"},
		// A space or quotes, not valid in a URL yet typed.
		{"APP_CORS_ALLOWED_ORIGINS", "https://u:hunter2 x@h"},
		{"APP_AI_GEMINI_BASE_URL", `ftp://u:hunter2 'q"@h/v1`},
		// An unescaped "@" and "/", which a parser would split at, taking "ter2" for a host:
		// refused before anything parses it.
		{"APP_MONGODB_URI", "mongodb://u:hun@ter2/x@h/db"},
		{"APP_AI_OPENAI_BASE_URL", "https://u:hun@ter2/x@h/v1"},
	} {
		_, err = Load(flags(t), env(map[string]string{tc.env: tc.value}))
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ter2") || !strings.Contains(err.Error(), "u:****@h") {
			t.Errorf("%s=%s: err = %v, want the value refused without its password", tc.env, tc.value, err)
		}
	}
}

// Ensure the CORS keys: origins normalized, "*" refused with credentials.
func TestLoad_CORS(t *testing.T) {
	t.Parallel()
	c, err := Load(flags(t), env(map[string]string{"APP_CORS_ALLOWED_ORIGINS": "http://localhost:5173/, https://app.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.CORS.AllowedOrigins, "|") != "http://localhost:5173|https://app.example.com" || c.CORS.AllowCredentials {
		t.Fatalf("cors = %+v", c.CORS)
	}
	_, err = Load(flags(t), env(map[string]string{"APP_CORS_ALLOWED_ORIGINS": "*", "APP_CORS_ALLOW_CREDENTIALS": "true"}))
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "cors.allowed_origins" {
		t.Fatalf("* with credentials: err = %v, want a cors.allowed_origins error", err)
	}
}

// Ensure an unknown key in a config file, or an APP_* variable naming no key, is an error
// naming the closest key.
func TestUnknownKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		file, want string
	}{
		{"adr: x\n", "addr"},
		{"ratelimit:\n  limt: 5\n", "ratelimit.limit"},
		{"cors:\n  allowed_origin: x\n", "cors.allowed_origins"},
		{"completely_unrelated_thing: 1\n", ""},
	}
	for i, tt := range tests {
		file := filepath.Join(dir, strconv.Itoa(i)+".yaml")
		if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(flags(t, "--config", file), env(nil))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%q: err = %v, want *config.Error", tt.file, err)
		}
		if tt.want != "" && !strings.Contains(err.Error(), "did you mean "+tt.want+"?") {
			t.Errorf("%q: %v does not suggest %s", tt.file, err, tt.want)
		}
	}
	envTests := []struct {
		environ []string
		want    string // "" no error
	}{
		{[]string{"PATH=/bin", "APP_ADDR=:1", "APP_RATELIMIT_LIMIT=5"}, ""},
		{[]string{"APP_ADR=:1"}, "APP_ADDR"},
		{[]string{"APP_JWT_SECERT=x"}, "APP_JWT_SECRET"},
		{[]string{"APP_CORS_ALLOWED_ORIGIN=x"}, "APP_CORS_ALLOWED_ORIGINS"},
		{[]string{"APP_MOCK_ADMIN_TOKEN=x"}, ""}, // read by mock serve itself
	}
	for _, tt := range envTests {
		err := CheckEnvironment(tt.environ)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: unexpected %v", tt.environ, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: err = %v, want one naming %s", tt.environ, err, tt.want)
		}
	}
}

// Ensure a config file that is missing or broken is a configuration error (exit 2).
func TestLoad_BrokenConfigFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(file, []byte("addr: [unclosed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{file, filepath.Join(t.TempDir(), "missing.yaml")} {
		_, err := Load(flags(t, "--config", f), env(nil))
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != "--config" {
			t.Errorf("%s: err = %v, want a config.Error on key config", f, err)
		}
	}
}

// Ensure ai.default_monthly_budget is optional dollars.
func TestLoad_DefaultMonthlyBudget(t *testing.T) {
	t.Parallel()
	c, err := Load(flags(t), env(nil))
	if err != nil || c.AI.DefaultMonthlyBudget != nil {
		t.Fatalf("unset: %v, %v", c.AI.DefaultMonthlyBudget, err)
	}
	c, err = Load(flags(t), env(map[string]string{"APP_AI_DEFAULT_MONTHLY_BUDGET": "$12.5"}))
	if err != nil || c.AI.DefaultMonthlyBudget == nil || *c.AI.DefaultMonthlyBudget != 12.5 {
		t.Fatalf("set: %v, %v", c.AI.DefaultMonthlyBudget, err)
	}
}

// Ensure an empty --addr and a PORT that is no port number are refused with the key named,
// not served on a random port or failed at bind time.
func TestLoad_BadListenAddress(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args      []string
		env       map[string]string
		key, want string
	}{
		"EmptyFlag":    {[]string{"--addr", ""}, nil, "addr", "config: addr: is empty; give host:port"},
		"BlankFlag":    {[]string{"--addr", " "}, nil, "addr", "is empty; give host:port"},
		"SignedPort":   {[]string{"--addr", ":+80"}, nil, "addr", "with a port from 0 to 65535"},
		"SignedPORT":   {nil, map[string]string{"PORT": "-0"}, "PORT", "must be a port number"},
		"BadPORT":      {nil, map[string]string{"PORT": "abc"}, "PORT", `config: PORT="abc": must be a port number from 0 to 65535`},
		"PORTTooLarge": {nil, map[string]string{"PORT": "70000"}, "PORT", `config: PORT="70000": must be a port number`},
		"PORTWithHost": {nil, map[string]string{"PORT": "127.0.0.1:80"}, "PORT", "must be a port number"},
		"BadMetrics":   {nil, map[string]string{"APP_METRICS_ADDR": "bogus"}, "metrics.addr", `config: metrics.addr="bogus": must be host:port`},
		// The metrics listener on the API's own port: refused here, not as "address already in use"
		// at bind time, which reads as another process holding it.
		"MetricsOnAddr":     {[]string{"--addr", "127.0.0.1:3000"}, map[string]string{"APP_METRICS_ADDR": "127.0.0.1:3000"}, "metrics.addr", "must not be addr's port"},
		"MetricsOnAnyHost":  {nil, map[string]string{"APP_METRICS_ADDR": "127.0.0.1:3000"}, "metrics.addr", `config: metrics.addr="127.0.0.1:3000": must not be addr's port (:3000)`},
		"MetricsOnWildcard": {[]string{"--addr", "127.0.0.1:9464"}, map[string]string{"APP_METRICS_ADDR": "0.0.0.0:9464"}, "metrics.addr", "must not be addr's port"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(flags(t, tc.args...), env(tc.env))
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a config.Error on %s saying %q", err, tc.key, tc.want)
			}
		})
	}
	// Two hosts may share a port, and port 0 is a new free port for each listener.
	for _, pair := range [][2]string{{"127.0.0.1:3000", "10.0.0.1:3000"}, {":0", ":0"}, {"127.0.0.1:3000", "127.0.0.1:9464"}} {
		if _, err := Load(flags(t, "--addr", pair[0]), env(map[string]string{"APP_METRICS_ADDR": pair[1]})); err != nil {
			t.Errorf("addr %s, metrics.addr %s: %v", pair[0], pair[1], err)
		}
	}
	// A PORT that is a port number is used; one is not read when addr is set otherwise.
	if c, err := Load(flags(t), env(map[string]string{"PORT": "0"})); err != nil || c.Addr != ":0" {
		t.Fatalf("PORT=0: %v, %v", c, err)
	}
	if c, err := Load(flags(t, "--addr", ":1"), env(map[string]string{"PORT": "abc"})); err != nil || c.Addr != ":1" {
		t.Fatalf("--addr with PORT=abc: %v, %v", c, err)
	}
}

// Ensure an empty data_dir is refused: with no mongodb.uri the embedded store has nowhere to
// live, and with one the generated JWT secret would be written to the working directory.
func TestLoad_EmptyDataDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, []byte("data_dir: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--data-dir", ""}, {"--data-dir", " "}, {"--config", file}} {
		_, err := Load(flags(t, args...), env(map[string]string{"MONGODB_URI": "mongodb://db.internal"}))
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != "data_dir" || !strings.Contains(err.Error(), "is empty; give a directory") {
			t.Errorf("%q: err = %v, want config: data_dir: is empty", args, err)
		}
	}
}

// Ensure an ai.timeout the server's write deadline would cut is refused, naming both keys.
func TestLoad_WriteTimeoutExceedsAITimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want bool // refused
	}{
		{map[string]string{"APP_AI_TIMEOUT": "120s"}, true},
		{map[string]string{"APP_AI_TIMEOUT": "90s"}, true},
		{map[string]string{"APP_AI_TIMEOUT": "120s", "APP_SERVER_WRITE_TIMEOUT": "150s"}, false},
		{map[string]string{"APP_SERVER_WRITE_TIMEOUT": "30s"}, true},
		{nil, false},
	} {
		_, err := Load(flags(t), env(tc.env))
		var ce *Error
		refused := errors.As(err, &ce) && ce.Key == "server.write_timeout" && strings.Contains(err.Error(), "ai.timeout")
		if refused != tc.want || (err != nil && !refused) {
			t.Errorf("%v: err = %v, want refused %v", tc.env, err, tc.want)
		}
	}
}

// Ensure a bound on buffered bytes below the largest body a route takes is refused (such a
// request could never be read), and that 0 (no bound) and the default are taken.
func TestLoad_MaxBufferedBytesHoldsTheLargestBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want int64 // -1: refused
	}{
		{nil, 256 << 20},
		{map[string]string{"APP_SERVER_MAX_BUFFERED_BYTES": "0"}, 0},
		{map[string]string{"APP_SERVER_MAX_BUFFERED_BYTES": "33554432"}, 32 << 20},
		{map[string]string{"APP_SERVER_MAX_BUFFERED_BYTES": "33554431"}, -1},
		{map[string]string{"APP_SERVER_MAX_BUFFERED_BYTES": "1048576", "APP_AI_MAX_BODY_BYTES": "1048576"}, 1 << 20},
		{map[string]string{"APP_SERVER_MAX_BUFFERED_BYTES": "40000000", "APP_SERVER_MAX_BODY_BYTES": "50000000"}, -1},
		{map[string]string{"APP_SERVER_MAX_BUFFERED_BYTES": "-1"}, -1},
	} {
		cfg, err := Load(flags(t), env(tc.env))
		var ce *Error
		switch {
		case tc.want < 0 && !(errors.As(err, &ce) && ce.Key == "server.max_buffered_bytes"):
			t.Errorf("%v: err = %v, want server.max_buffered_bytes refused", tc.env, err)
		case tc.want >= 0 && (err != nil || cfg.Server.MaxBufferedBytes != tc.want):
			t.Errorf("%v: err = %v, want %d", tc.env, err, tc.want)
		}
	}
}

// Ensure a config file value of the wrong type is refused naming the key, the type its kind
// takes and the type given, before it is turned into text (a list joined, a long number
// rounded), for every kind, and that the types each kind takes stay accepted.
// Ensure dbcheck.max_concurrent 0 turns the bound off rather than being refused.
func TestLoad_MaxConcurrentZeroIsNoBound(t *testing.T) {
	t.Parallel()
	c, err := Load(flags(t), env(map[string]string{"APP_DBCHECK_MAX_CONCURRENT": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.DBCheck.MaxConcurrent; got != 0 {
		t.Fatalf("dbcheck.max_concurrent = %d, want 0", got)
	}
}

func TestLoad_FileValueTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i, tc := range []struct {
		ext, file, key, want string // want "": accepted
	}{
		// Strings: a list, a mapping, a number, a boolean or a date is refused.
		{"yaml", "mongodb:\n  uri: [\"mongodb://a\", \"mongodb://b\"]\n", "mongodb.uri", "mongodb.uri: must be a string, not a list"},
		{"yaml", "ai:\n  openai:\n    api_key: [a, b]\n", "ai.openai.api_key", "ai.openai.api_key: must be a string, not a list"},
		{"yaml", "jwt:\n  secret: 12345678901234567890123456789012345\n", "jwt.secret", "jwt.secret: must be a string, not a number: quote it"},
		{"yaml", "mongodb:\n  database: true\n", "mongodb.database", "must be a string, not a boolean: quote it"},
		{"yaml", "jwt:\n  secret: 2026-01-01\n", "jwt.secret", "must be a string, not a date or time: quote it"},
		{"yaml", "addr: {}\n", "addr", "addr: must be a string, not a mapping"},
		{"yaml", "addr:\n  host: localhost\n", "addr", "addr: must be a string, not a mapping"},
		{"yaml", "ai:\n  openai:\n    base_url: {x: 1}\n", "ai.openai.base_url", "must be a string, not a mapping"},
		{"yaml", "log:\n  level: 1\n", "log.level", "log.level: must be a string, not a number"},
		{"toml", "addr = 1979-05-27\n", "addr", "must be a string, not a date or time: quote it"},
		{"json", `{"mongodb": {"uri": 5}}`, "mongodb.uri", "must be a string, not a number"},
		// Whole numbers and durations: numbers or strings.
		{"yaml", "ratelimit:\n  limit: [1]\n", "ratelimit.limit", "ratelimit.limit: must be a whole number, not a list"},
		{"yaml", "ratelimit:\n  limit: true\n", "ratelimit.limit", "must be a whole number, not a boolean"},
		{"yaml", "ratelimit:\n  limit: {a: 1}\n", "ratelimit.limit", "must be a whole number, not a mapping"},
		{"yaml", "jwt:\n  ttl: [1h]\n", "jwt.ttl", `jwt.ttl: must be a duration such as "60s", not a list`},
		{"yaml", "jwt:\n  ttl: false\n", "jwt.ttl", "must be a duration"},
		// Booleans: true or false, not a number.
		{"yaml", "cors:\n  allow_credentials: 1\n", "cors.allow_credentials", "cors.allow_credentials: must be true or false, not a number"},
		{"yaml", "cors:\n  allow_credentials: [true]\n", "cors.allow_credentials", "must be true or false, not a list"},
		// Lists: of strings only.
		{"yaml", "dbcheck:\n  allowed_hosts: [[a]]\n", "dbcheck.allowed_hosts", "dbcheck.allowed_hosts: must be a list of strings (or one comma-separated string); item 1 is a list"},
		{"yaml", "auth:\n  roles: [ops, {a: b}]\n", "auth.roles", "item 2 is a mapping"},
		{"yaml", "ratelimit:\n  trusted_proxies: [10.0.0.1, 8]\n", "ratelimit.trusted_proxies", "item 2 is a number: quote it"},
		{"yaml", "cors:\n  allowed_origins: {a: b}\n", "cors.allowed_origins", "must be a list of strings (or one comma-separated string), not a mapping"},
		{"yaml", "cors:\n  allowed_origins: 5\n", "cors.allowed_origins", "not a number"},
		// Sections: a mapping.
		{"yaml", "ratelimit: 5\n", "ratelimit", "must be a mapping of its keys"},
		{"yaml", "ratelimit: [1, 2]\n", "ratelimit", "must be a mapping of its keys"},
		// Accepted.
		{"yaml", "ratelimit:\n  limit: 5\n  window: 30s\n", "", ""},
		{"yaml", "ratelimit:\n  limit: \"5\"\n", "", ""},
		{"yaml", "server:\n  shutdown_grace: 0\n", "", ""},
		{"yaml", "ai:\n  default_monthly_budget: 25\n", "", ""},
		{"yaml", "ai:\n  default_monthly_budget: \"$25\"\n", "", ""},
		{"yaml", "jwt:\n  secret: \"12345678901234567890123456789012345\"\n", "", ""},
		{"yaml", "cors:\n  allowed_origins: [\"http://localhost:5173\", \"http://localhost:3001\"]\n", "", ""},
		{"yaml", "cors:\n  allowed_origins: \"http://localhost:5173, http://localhost:3001\"\n", "", ""},
		{"yaml", "cors:\n  allow_credentials: true\n", "", ""},
		{"yaml", "cors:\n  allow_credentials: \"false\"\n", "", ""},
		{"yaml", "ratelimit:\n  trusted_proxies: [10.0.0.0/8, \"::1\"]\n", "", ""},
		{"yaml", "addr:\njwt:\n  secret:\n", "", ""}, // no value: the default
		{"json", `{"ratelimit": {"limit": 300}, "dbcheck": {"allowed_hosts": ["a.example.com"]}}`, "", ""},
		{"toml", "[ratelimit]\nlimit = 7\nwindow = \"1m\"\n", "", ""},
	} {
		file := filepath.Join(dir, strconv.Itoa(i)+"."+tc.ext)
		if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(flags(t, "--config", file), env(nil))
		var ce *Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", tc.file, err)
		case tc.want != "" && (!errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: err = %v, want %s: %s", tc.file, err, tc.key, tc.want)
		case err != nil && strings.Contains(err.Error(), "1234567890"):
			t.Errorf("%q: the secret reached the message: %v", tc.file, err)
		}
	}
}

// Ensure every key's kind says what a config file must give for it: a new kind cannot be
// added without deciding which file types it takes.
func TestKinds_HaveFileTypes(t *testing.T) {
	t.Parallel()
	for _, k := range keys {
		if k.wants() == "" {
			t.Errorf("%s: kind %d says nothing of the type it takes", k.name, k.kind)
		}
		if !k.accepts("text") {
			t.Errorf("%s: refuses a string (the environment gives nothing else)", k.name)
		}
	}
}

// Ensure a number in a config file is the number it reads as, whatever the format: JSON decodes
// every number as a float, and a float printed in Go's shortest form (1e+06) is neither a
// whole number nor an amount, so a JSON file could not set a limit of a million or more.
func TestLoad_FileNumbers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i, tc := range []struct {
		ext, file string
		get       func(*Config) string
		want      string
	}{
		{"json", `{"server": {"max_body_bytes": 2097152}}`, func(c *Config) string { return strconv.FormatInt(c.Server.MaxBodyBytes, 10) }, "2097152"},
		{"json", `{"dbcheck": {"max_bytes": 16777216}}`, func(c *Config) string { return strconv.Itoa(c.DBCheck.MaxBytes) }, "16777216"},
		{"json", `{"ai": {"max_body_bytes": 1e8}}`, func(c *Config) string { return strconv.FormatInt(c.AI.MaxBodyBytes, 10) }, "100000000"},
		{"json", `{"ai": {"default_monthly_budget": 1000000}}`, func(c *Config) string { return strconv.FormatFloat(*c.AI.DefaultMonthlyBudget, 'f', -1, 64) }, "1000000"},
		{"json", `{"ai": {"default_monthly_budget": 0.0000001}}`, func(c *Config) string { return strconv.FormatFloat(*c.AI.DefaultMonthlyBudget, 'f', -1, 64) }, "0.0000001"},
		{"yaml", "ai:\n  default_monthly_budget: 1e6\n", func(c *Config) string { return strconv.FormatFloat(*c.AI.DefaultMonthlyBudget, 'f', -1, 64) }, "1000000"},
		{"yaml", "server:\n  max_body_bytes: 2097152\n", func(c *Config) string { return strconv.FormatInt(c.Server.MaxBodyBytes, 10) }, "2097152"},
		{"toml", "[server]\nmax_body_bytes = 2097152.0\n", func(c *Config) string { return strconv.FormatInt(c.Server.MaxBodyBytes, 10) }, "2097152"},
	} {
		file := filepath.Join(dir, strconv.Itoa(i)+"."+tc.ext)
		if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(flags(t, "--config", file), env(nil))
		if err != nil {
			t.Errorf("%q: %v", tc.file, err)
			continue
		}
		if got := tc.get(c); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.file, got, tc.want)
		}
	}
	// A fraction stays one, and is refused where a whole number is wanted.
	file := filepath.Join(dir, "frac.json")
	if err := os.WriteFile(file, []byte(`{"ratelimit": {"limit": 5.5}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(flags(t, "--config", file), env(nil)); err == nil || !strings.Contains(err.Error(), `ratelimit.limit="5.5": not a whole number`) {
		t.Errorf("limit 5.5: err = %v, want not a whole number", err)
	}
}

// Ensure a --config that names no file is refused with a reason that says so: given empty
// (`--config "$CONFIG"` with the variable unset would otherwise run on the defaults), a
// directory (viper reports a directory without an extension as an "Unsupported Config Type
// """), or a file whose extension names no format viper reads.
func TestLoad_ConfigNamesNoFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	txt := filepath.Join(dir, "app.txt")
	if err := os.WriteFile(txt, []byte("addr: \":1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ arg, want string }{
		{"", "is empty"},
		{"  ", "is empty"},
		{dir, "is a directory"},
		{txt, "YAML (.yaml, .yml), JSON (.json) or TOML (.toml)"},
	} {
		_, err := Load(flags(t, "--config", tt.arg), env(nil))
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != "--config" || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--config %q: err = %v, want a config.Error on --config saying %q", tt.arg, err, tt.want)
		}
	}
}

// Ensure a database name written empty in a config file is refused, not used as "".
func TestLoad_EmptyDatabaseInFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, []byte("core:\n  database: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(flags(t, "--config", file), env(nil))
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "core.database" {
		t.Fatalf("err = %v, want a config.Error on core.database", err)
	}
}

// Ensure a very long bad value is shown cut, with its length: the error stays one readable
// line instead of echoing 100 kB (a file's contents pasted into a variable, say).
func TestError_LongValueCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("1", 100000) + "s"
	_, err := Load(flags(t), env(map[string]string{"APP_JWT_TTL": long}))
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "jwt.ttl" {
		t.Fatalf("err = %v, want a config.Error on jwt.ttl", err)
	}
	if msg := err.Error(); len(msg) > 300 || !strings.Contains(msg, "100001 bytes") || !strings.Contains(msg, "not a duration") {
		t.Fatalf("error of %d bytes: %.400q; want a short line naming the value's length and the reason", len(msg), msg)
	}
	// Short values are shown whole.
	if _, err := Load(flags(t), env(map[string]string{"APP_JWT_TTL": "forever"})); err == nil || !strings.Contains(err.Error(), `jwt.ttl="forever"`) {
		t.Fatalf("err = %v", err)
	}
}

// Ensure a config file that starts with a UTF-8 byte-order mark (as some Windows editors save
// one) is read as if it had none, in every format.
func TestLoad_ConfigFileWithBOM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"app.json": `{"addr": "127.0.0.1:19601", "ratelimit": {"limit": 7}}`,
		"app.yaml": "addr: 127.0.0.1:19601\nratelimit:\n  limit: 7\n",
		"app.toml": "addr = \"127.0.0.1:19601\"\n[ratelimit]\nlimit = 7\n",
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte("\xEF\xBB\xBF"+body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(flags(t, "--config", file), env(nil))
		if err != nil {
			t.Errorf("%s with a BOM: %v", name, err)
			continue
		}
		if cfg.Addr != "127.0.0.1:19601" || cfg.RateLimit.Limit != 7 {
			t.Errorf("%s with a BOM: addr %q, ratelimit.limit %d; want 127.0.0.1:19601 and 7", name, cfg.Addr, cfg.RateLimit.Limit)
		}
	}
}

// Ensure a config file that gives one key twice in spellings that differ only in case (keys
// are not case-sensitive, so one would win silently) is refused as an unknown key is: a
// config.Error on that key naming both spellings and the file.
func TestLoad_KeysDifferingInCase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		name, body string
		wantKey    string
		wantNames  [2]string
	}{
		{"top.json", `{"Addr": "127.0.0.1:1", "addr": "127.0.0.1:2"}`, "addr", [2]string{`"Addr"`, `"addr"`}},
		{"nested.json", `{"ratelimit": {"limit": 1, "LIMIT": 2}}`, "ratelimit.limit", [2]string{`"limit"`, `"LIMIT"`}},
		{"section.json", `{"RateLimit": {"limit": 1}, "ratelimit": {"burst": 2}}`, "ratelimit", [2]string{`"RateLimit"`, `"ratelimit"`}},
		{"top.yaml", "Addr: 127.0.0.1:1\naddr: 127.0.0.1:2\n", "addr", [2]string{`"Addr"`, `"addr"`}},
		{"top.toml", "Addr = \"127.0.0.1:1\"\naddr = \"127.0.0.1:2\"\n", "addr", [2]string{`"Addr"`, `"addr"`}},
	} {
		file := filepath.Join(dir, tt.name)
		if err := os.WriteFile(file, []byte(tt.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(flags(t, "--config", file), env(nil))
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != tt.wantKey {
			t.Errorf("%s: err = %v, want a config.Error on %s", tt.name, err, tt.wantKey)
			continue
		}
		for _, want := range append(tt.wantNames[:], file) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not name %s", tt.name, err, want)
			}
		}
	}
}
