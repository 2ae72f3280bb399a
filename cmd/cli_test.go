package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/config"
)

// Ensure the exit code follows the error's kind, never its text.
func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitOK},
		{"usage", usageError{errors.New("bad flag")}, exitUsage},
		{"wrapped usage", fmt.Errorf("ctx: %w", usageError{errors.New("x")}), exitUsage},
		{"config", &config.Error{Key: "addr", Reason: "bad"}, exitUsage},
		{"invalid input", apperr.E(apperr.Invalid, "role should not be empty"), exitUsage},
		{"runtime error mentioning invalid argument", errors.New("write /x: invalid argument"), exitFailure},
		{"runtime error mentioning unknown flag", errors.New("server said: unknown flag"), exitFailure},
		{"not found", apperr.E(apperr.NotFound, "no user"), exitFailure},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("%s: exit %d, want %d", tt.name, got, tt.want)
		}
	}
}

// Ensure the command tree's conventions: unknown subcommands are usage errors with a
// suggestion, bare groups show their help, configuration mistakes exit 2 naming the key.
func TestCLIConventions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unknownKey := filepath.Join(dir, "unknown.yaml")
	broken := filepath.Join(dir, "broken.yaml")
	for file, body := range map[string]string{unknownKey: "adr: x\n", broken: "addr: [unclosed\n"} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		env      func(string) string
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{"unknown subcommand", testEnv(), []string{"users", "frobnicate"}, exitUsage, "", `unknown command "frobnicate" for "app users"`},
		{"did you mean", testEnv(), []string{"users", "lst"}, exitUsage, "", `did you mean "list"?`},
		{"unknown top-level command", testEnv(), []string{"serv"}, exitUsage, "", `did you mean "serve"?`},
		{"bare group shows help", testEnv(), []string{"users"}, exitOK, "Available Commands", ""},
		{"bare root shows help", testEnv(), nil, exitOK, "Available Commands", ""},
		{"missing config file", testEnv(), []string{"users", "list", "--config", filepath.Join(dir, "nope.yaml")}, exitUsage, "", "config"},
		{"broken config file", testEnv(), []string{"users", "list", "--config", broken}, exitUsage, "", "broken.yaml"},
		{"unknown config key", testEnv(), []string{"serve", "--config", unknownKey, "--data-dir", dir}, exitUsage, "", "did you mean addr?"},
		{"bcrypt cost too high", testEnv("APP_AUTH_BCRYPT_COST", "32"), []string{"users", "list", "--data-dir", dir}, exitUsage, "", "auth.bcrypt_cost"},
		{"bcrypt cost too low", testEnv("APP_AUTH_BCRYPT_COST", "3"), []string{"users", "list", "--data-dir", dir}, exitUsage, "", "auth.bcrypt_cost"},
		{"short jwt secret", testEnv("APP_JWT_SECRET", "too-short"), []string{"users", "list", "--data-dir", dir}, exitUsage, "", "jwt.secret"},
		{"bad allowed host", testEnv("APP_DBCHECK_ALLOWED_HOSTS", "10.0.0.0/99"), []string{"users", "list", "--data-dir", dir}, exitUsage, "", `config: dbcheck.allowed_hosts: "10.0.0.0/99" is not a valid CIDR`},
		{"missing argument", testEnv(), []string{"users", "grant", "a@example.com"}, exitUsage, "", "accepts 2 arg"},
		{"unknown help topic", testEnv(), []string{"help", "serv"}, exitUsage, "", `unknown command "serv" for "app" (did you mean "serve"?)`},
		{"unknown help subtopic", testEnv(), []string{"help", "users", "frob"}, exitUsage, "", `unknown command "frob" for "app users"`},
		{"help topic", testEnv(), []string{"help", "users"}, exitOK, "budget", ""},
		{"usage group names reconcile", testEnv(), []string{"--help"}, exitOK, "usage       Report AI usage per provider and model, and reconcile its daily rollup", ""},
		{"help needs no configuration", testEnv("APP_JWT_TTL", "forever"), []string{"help", "users"}, exitOK, "budget", ""},
		{"completion needs no configuration", testEnv("APP_JWT_TTL", "forever"), []string{"completion", "bash"}, exitOK, "bash completion V2 for app", ""},
		{"unknown completion shell", testEnv(), []string{"completion", "frob"}, exitUsage, "", `unknown command "frob" for "app completion"`},
		{"completion extra argument", testEnv(), []string{"completion", "bash", "extra"}, exitUsage, "", `"app completion bash" takes no arguments; got "extra"`},
		{"version extra argument", testEnv(), []string{"version", "extra"}, exitUsage, "", `"app version" takes no arguments; got "extra"`},
		{"mock serve file as argument", testEnv(), []string{"mock", "serve", "mocks.yaml"}, exitUsage, "", `"app mock serve" takes no arguments; got "mocks.yaml"`},
		{"users list extra argument", testEnv(), []string{"users", "list", "a", "b", "--data-dir", dir}, exitUsage, "", `"app users list" takes no arguments; got "a"`},
		{"too many arguments", testEnv(), []string{"keys", "revoke", "a", "b", "--data-dir", dir}, exitUsage, "", "accepts 1 arg(s), received 2"},
		{"optional argument and one more", testEnv(), []string{"mock", "validate", "a.yaml", "b.yaml"}, exitUsage, "", "accepts at most 1 arg(s), received 2"},
		{"empty e-mail", testEnv(), []string{"users", "grant", "", "admin", "--data-dir", dir}, exitUsage, "", "EMAIL must not be empty"},
		{"blank e-mail", testEnv(), []string{"users", "budget", " ", "5", "--data-dir", dir}, exitUsage, "", "EMAIL must not be empty"},
		{"empty --user of keys create", testEnv(), []string{"keys", "create", "--user", "", "--name", "x", "--data-dir", dir}, exitUsage, "", "--user must not be empty"},
		{"blank --user of keys list", testEnv(), []string{"keys", "list", "--user", " ", "--data-dir", dir}, exitUsage, "", "--user must not be empty"},
		{"empty --user of keys list", testEnv(), []string{"keys", "list", "--user=", "--data-dir", dir}, exitUsage, "", "--user must not be empty"},
		{"blank --user of usage report", testEnv(), []string{"usage", "report", "--user", "\t", "--data-dir", dir}, exitUsage, "", "--user must not be empty"},
		{"empty key id", testEnv(), []string{"keys", "revoke", "", "--data-dir", dir}, exitUsage, "", "ID must not be empty"},
		// A flag given empty names nothing: `--uri "$URI"` with the variable unset must not read the
		// app's own database instead, nor `--filter "$F"` every document.
		{"empty --uri of mongo test", testEnv(), []string{"mongo", "test", "--uri", "", "--data-dir", dir}, exitUsage, "", "--uri must not be empty"},
		{"blank --database of mongo test", testEnv(), []string{"mongo", "test", "--database", " ", "--data-dir", dir}, exitUsage, "", "--database must not be empty"},
		{"empty --uri of mongo query", testEnv(), []string{"mongo", "query", "--collection", "users", "--uri=", "--data-dir", dir}, exitUsage, "", "--uri must not be empty"},
		{"empty --database of mongo query", testEnv(), []string{"mongo", "query", "--collection", "users", "--database", "", "--data-dir", dir}, exitUsage, "", "--database must not be empty"},
		{"empty --filter of mongo query", testEnv(), []string{"mongo", "query", "--collection", "users", "--filter", "", "--data-dir", dir}, exitUsage, "", "--filter must not be empty"},
		{"empty --space of templates list", testEnv(), []string{"templates", "list", "--space", "", "--data-dir", dir}, exitUsage, "", "--space must not be empty"},
		{"empty --widget-type of templates list", testEnv(), []string{"templates", "list", "--widget-type", "", "--data-dir", dir}, exitUsage, "", "--widget-type must not be empty"},
		{"empty --config", testEnv(), []string{"users", "list", "--config", "", "--data-dir", dir}, exitUsage, "", "config: --config: is empty"},
		{"blank key id", testEnv(), []string{"keys", "revoke", "  ", "--data-dir", dir}, exitUsage, "", "ID must not be empty"},
		{"negative key expiry", testEnv(), []string{"keys", "create", "--user", "a@example.com", "--name", "x", "--expires-days", "-1", "--data-dir", dir}, exitUsage, "", "--expires-days must be 0 (never) or from 1 to 3650"},
		{"one day", testEnv(), []string{"usage", "report", "--days", "1", "--data-dir", dir}, exitOK, "(UTC, 1 day)", ""},
		{"missing price file", testEnv("APP_AI_PRICING_FILE", "/nonexistent/prices.json"), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, exitUsage, "", "config: ai.pricing_file=\"/nonexistent/prices.json\": open /nonexistent/prices.json: no such file or directory"},
		{"empty data dir", testEnv(), []string{"users", "list", "--data-dir", ""}, exitUsage, "", "config: data_dir: is empty; give a directory"},
		{"empty listen address", testEnv(), []string{"serve", "--addr", "", "--data-dir", dir}, exitUsage, "", "config: addr: is empty; give host:port"},
		{"port out of range", testEnv(), []string{"serve", "--addr", ":99999", "--data-dir", dir}, exitUsage, "", "config: addr"},
		{"ai.timeout the write deadline would cut", testEnv("APP_AI_TIMEOUT", "120s"), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, exitUsage, "",
			`config: server.write_timeout="90s": must exceed ai.timeout (2m0s)`},
		{"PORT not a number", testEnv("PORT", "abc"), []string{"serve", "--data-dir", dir}, exitUsage, "", `config: PORT="abc": must be a port number`},
		{"store listen address", testEnv(), []string{"store", "serve", "--listen", "nonsense", "--data-dir", dir}, exitUsage, "", `error: config: --listen="nonsense": must be host:port`},
		{"empty store listen address", testEnv(), []string{"store", "serve", "--listen", "", "--data-dir", dir}, exitUsage, "", "error: config: --listen: is empty; give host:port"},
		{"store listen port out of range", testEnv(), []string{"store", "serve", "--listen", "127.0.0.1:65536", "--data-dir", dir}, exitUsage, "", `error: config: --listen="127.0.0.1:65536": must be host:port with a port from 0 to 65535`},
		// A MongoDB URI the driver cannot parse is a bad configuration value too (and its
		// password is not shown).
		{"unparsable mongodb uri", testEnv(), []string{"users", "list", "--data-dir", dir, "--mongodb-uri", "mongodb://ada:s3cret-pw@db.invalid:notaport/"},
			exitUsage, "", `config: mongodb.uri="mongodb://ada:****@db.invalid:notaport/": not a valid MongoDB connection string`},
		{"unparsable mongodb uri escape", testEnv("APP_MONGODB_URI", "mongodb://%zz"), []string{"templates", "list", "--data-dir", dir},
			exitUsage, "", `config: mongodb.uri="mongodb://%zz": not a valid MongoDB connection string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runApp(t, tt.env, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.out, tt.wantOut) || !strings.Contains(r.errOut, tt.wantErr) {
				t.Fatalf("exit %d (want %d)\nstdout: %q (want %q)\nstderr: %q (want %q)", r.code, tt.wantCode, r.out, tt.wantOut, r.errOut, tt.wantErr)
			}
			if tt.wantCode == exitUsage && strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
				t.Fatalf("stderr %q: want one line", r.errOut)
			}
		})
	}
}

// Ensure every command that reads the configuration checks all of it before it runs, whether
// it uses the value or not: a core.uri the driver cannot parse, or an ai.pricing_file that
// cannot be read or parsed, is the same configuration error (exit 2, "config:", no password)
// for each.
func TestEveryCommandChecksTheWholeConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(notJSON, []byte("gpt-4o: {input_cost_per_token: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  func(string) string
		want string // stderr's start
	}{
		{"core.uri", testEnv("APP_CORE_URI", "mongodb://u:s3cret-pw@h:notaport/"),
			`error: config: core.uri="mongodb://u:****@h:notaport/": not a valid MongoDB connection string`},
		{"missing ai.pricing_file", testEnv("APP_AI_PRICING_FILE", filepath.Join(dir, "nope.json")),
			`error: config: ai.pricing_file="` + filepath.Join(dir, "nope.json") + `": open ` + filepath.Join(dir, "nope.json") + ": no such file or directory"},
		{"unparsable ai.pricing_file", testEnv("APP_AI_PRICING_FILE", notJSON),
			`error: config: ai.pricing_file="` + notJSON + `": not a JSON object of model entries`},
	}
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0"}, // should the check break, no fixed port is taken
		{"users", "list"},
		{"users", "grant", "a@example.com", "admin"},
		{"users", "budget", "a@example.com", "5"},
		{"keys", "list"},
		{"keys", "create", "--user", "a@example.com", "--name", "x"},
		{"usage", "report"},
		{"usage", "reconcile"},
		{"templates", "list"},
		{"templates", "migrate"},
		{"templates", "cleanup", "--space", "s"},
		{"mongo", "test"},
		{"mongo", "query", "--collection", "users"},
		{"dev", "seed"},
		{"store", "serve", "--listen", "127.0.0.1:0"},
	} {
		for _, c := range cases {
			t.Run(strings.Join(args, " ")+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				r := runApp(t, c.env, append(args, "--data-dir", dir)...)
				if r.code != exitUsage || !strings.HasPrefix(r.errOut, c.want) || strings.Contains(r.errOut, "s3cret") {
					t.Fatalf("exit %d, stderr %q: want 2 and %q", r.code, r.errOut, c.want)
				}
			})
		}
	}
}

// Ensure an APP_* variable that names no key stops the program naming the closest key.
func TestUnknownEnvironmentVariable(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	f := &factory{in: strings.NewReader(""), out: &out, errOut: &errOut, getenv: testEnv(),
		environ: func() []string { return []string{"HOME=/root", "APP_RATELIMIT_LIMT=5"} }}
	code := run(t.Context(), f, []string{"users", "list", "--data-dir", t.TempDir()})
	if code != exitUsage || !strings.Contains(errOut.String(), "APP_RATELIMIT_LIMIT") {
		t.Fatalf("exit %d %q, want 2 naming APP_RATELIMIT_LIMIT", code, errOut.String())
	}
	// The variable mock serve reads stops no other command.
	out.Reset()
	errOut.Reset()
	f.environ = func() []string { return []string{"HOME=/root", "APP_MOCK_ADMIN_TOKEN=secret"} }
	if code := run(t.Context(), f, []string{"users", "list", "--data-dir", t.TempDir()}); code != 0 {
		t.Fatalf("with APP_MOCK_ADMIN_TOKEN: exit %d %q, want 0", code, errOut.String())
	}
}

// Ensure operator commands print their results on stdout and nothing on stderr, unless
// --verbose or the store is new; `users grant` accepts only known roles.
func TestOperatorOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testEnv("APP_AUTH_ROLES", "auditor")
	// No jwt.secret: the generated one is used, which serve warns about and operators do not.
	noSecret := func(k string) string {
		if k == "APP_JWT_SECRET" {
			return ""
		}
		return env(k)
	}
	// The first command on a directory without a store says it made one (a mistyped
	// --data-dir would otherwise only show as empty results); later ones say nothing.
	r := runApp(t, noSecret, "users", "list", "--data-dir", dir)
	if r.code != 0 || r.errOut != "note: "+dir+" held no store: a new, empty one was created there\n" {
		t.Fatalf("users list on a new directory = %d, stderr %q: want exit 0 and the note", r.code, r.errOut)
	}
	r = runApp(t, noSecret, "users", "list", "--data-dir", dir)
	if r.code != 0 || r.errOut != "" {
		t.Fatalf("users list = %d, stderr %q: want exit 0 and an empty stderr", r.code, r.errOut)
	}
	r = runApp(t, noSecret, "users", "list", "--data-dir", dir, "--verbose", "--log-level", "debug")
	if r.code != 0 || r.errOut == "" {
		t.Fatalf("users list --verbose = %d, stderr %q: want logs on stderr", r.code, r.errOut)
	}
	r = runApp(t, env, "users", "grant", "nobody@example.com", "superuser", "--data-dir", dir)
	if r.code != exitUsage || !strings.Contains(r.errOut, "unknown role") || !strings.Contains(r.errOut, "auditor") {
		t.Fatalf("grant unknown role = %d %q, want exit 2 listing the known roles", r.code, r.errOut)
	}
	r = runApp(t, env, "users", "grant", "nobody@example.com", "auditor", "--data-dir", dir)
	if r.code != exitFailure || !strings.Contains(r.errOut, "nobody@example.com") {
		t.Fatalf("grant configured role to unknown user = %d %q, want exit 1 naming the user", r.code, r.errOut)
	}
}

// Ensure a progress line is ended before anything else is written.
func TestLineGuard(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	g := &lineGuard{w: &b}
	g.progress("[##..] 1/2 spaces")
	fmt.Fprintln(g, `{"level":"WARN","msg":"space skipped"}`)
	g.progress("[####] 2/2 spaces")
	g.endLine()
	g.endLine()
	want := "\r[##..] 1/2 spaces\n" + `{"level":"WARN","msg":"space skipped"}` + "\n\r[####] 2/2 spaces\n"
	if b.String() != want {
		t.Fatalf("output %q, want %q", b.String(), want)
	}
}

// Ensure serve answers /metrics on the metrics listener only, with the requests counted, and
// the health answer there without the rate limit that stops probes on the API's port.
func TestServe_MetricsListener(t *testing.T) {
	t.Parallel()
	s := startServe(t, t.TempDir(), testEnv("APP_METRICS_ADDR", "127.0.0.1:0", "APP_RATELIMIT_LIMIT", "3"))
	var addr string
	for _, line := range strings.Split(s.logs.String(), "\n") {
		var l struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving metrics" {
			addr = l.Addr
		}
	}
	if addr == "" {
		t.Fatalf("no \"serving metrics\" log line: %s", s.logs.String())
	}
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("http://" + s.addr + "/metrics"); code != 404 {
		t.Fatalf("/metrics on the API port = %d, want 404", code)
	}
	// The API's limit of 3 is spent (startServe's health request, /metrics, this one).
	if code, _ := get("http://" + s.addr + "/api/health"); code != 200 {
		t.Fatalf("the third request on the API port = %d, want 200", code)
	}
	if code, _ := get("http://" + s.addr + "/api/health"); code != 429 {
		t.Fatalf("health on the API port past the limit = %d, want 429", code)
	}
	for range 5 {
		code, body := get("http://" + addr + "/api/health")
		var h struct{ Status, Service string }
		if code != 200 || json.Unmarshal([]byte(body), &h) != nil || h.Status != "ok" || h.Service != "backend-api" {
			t.Fatalf("health on the metrics listener = %d %s, want 200 ok", code, body)
		}
	}
	code, body := get("http://" + addr + "/metrics")
	// startServe made one health request.
	if code != 200 || !strings.Contains(body, `app_http_requests_total{method="GET",route="GET /api/health",status="200"} 2`) ||
		!strings.Contains(body, `app_http_requests_total{method="GET",route="unmatched",status="404"} 1`) ||
		!strings.Contains(body, "app_store_up 1") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("scrape = %d:\n%s", code, body)
	}
}

// Ensure a service error shown by the CLI prints the messages meant for its caller, not the
// cause, and keeps its chain: errors.Is and errors.As still reach the service's error and its
// cause, and the exit code still follows the kind.
func TestCLIErrorKeepsTheChain(t *testing.T) {
	t.Parallel()
	cause := errors.New("server selection timeout: 127.0.0.1:1")
	for _, tt := range []struct {
		name     string
		err      error
		text     string
		kind     apperr.Kind
		exit     int
		hasCause bool
	}{
		{"invalid", apperr.Validation("limit must not be less than 1", "collection should not be empty"),
			"limit must not be less than 1; collection should not be empty", apperr.Invalid, exitUsage, false},
		{"unavailable with a cause", fmt.Errorf("query: %w", apperr.Wrap(apperr.Unavailable, cause, "the server could not be reached")),
			"the server could not be reached", apperr.Unavailable, exitFailure, true},
		{"no messages", apperr.Wrap(apperr.Upstream, cause), "server selection timeout: 127.0.0.1:1", apperr.Upstream, exitFailure, true},
		{"not a service error", cause, "server selection timeout: 127.0.0.1:1", apperr.Internal, exitFailure, true},
	} {
		got := cliError(tt.err)
		if got.Error() != tt.text {
			t.Errorf("%s: text %q, want %q", tt.name, got.Error(), tt.text)
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("%s: errors.Is does not find the service's error in %v", tt.name, got)
		}
		if errors.Is(got, cause) != tt.hasCause {
			t.Errorf("%s: errors.Is(cause) = %t", tt.name, !tt.hasCause)
		}
		if e := apperr.As(got); apperr.KindOf(got) != tt.kind || (tt.kind != apperr.Internal && e == nil) {
			t.Errorf("%s: kind %v, want %v", tt.name, apperr.KindOf(got), tt.kind)
		}
		if code := exitCode(got); code != tt.exit {
			t.Errorf("%s: exit %d, want %d", tt.name, code, tt.exit)
		}
	}
}

// Ensure operator commands run at the same moment on one data directory with no server (cron
// jobs, say) take turns on its store: each succeeds, none loses the store to another's exit.
func TestOperatorCommandsTakeTurns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testEnv()
	codes := make(chan result, 6)
	for range cap(codes) {
		go func() { codes <- runApp(t, env, "users", "list", "--data-dir", dir) }()
	}
	for range cap(codes) {
		if r := <-codes; r.code != 0 {
			t.Errorf("users list = %d, stderr %q; want 0", r.code, r.errOut)
		}
	}
}

// failingWriter refuses every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Ensure a command whose results cannot be written exits 1 saying so, table or JSON, and that
// `keys create` names the key it made but could not show, so that it can be revoked.
func TestOutputWriteFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := testEnv()
	if r := runApp(t, env, "dev", "seed", "--data-dir", dir); r.code != 0 {
		t.Fatalf("dev seed = %d %q", r.code, r.errOut)
	}
	for _, args := range [][]string{
		{"version"},
		{"users", "list"},
		{"users", "list", "--json"},
		{"usage", "report"},
		{"templates", "list"},
		{"dev", "seed"},
		{"keys", "create", "--user", "user@example.com", "--name", "lost"},
		{"keys", "list"},
		{"users", "grant", "user@example.com", "admin"},
		{"users", "budget", "user@example.com", "5"},
		{"usage", "reconcile"},
		{"templates", "migrate"},
		{"help", "users"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var errOut bytes.Buffer
			code := Run(t.Context(), append(args, "--data-dir", dir), env, strings.NewReader(""), failingWriter{}, &errOut)
			if code != exitFailure || !strings.Contains(errOut.String(), "no space left on device") {
				t.Fatalf("exit %d %q, want 1 saying the output could not be written", code, errOut.String())
			}
			if args[0] == "keys" && args[1] == "create" &&
				!regexp.MustCompile(`key [0-9a-f-]{36} was created but could not be shown .*app keys revoke [0-9a-f-]{36}`).MatchString(errOut.String()) {
				t.Fatalf("keys create: %q does not name the key it made and how to revoke it", errOut.String())
			}
		})
	}
}

// Ensure counts in text output agree with their number: "1 template", "2 templates".
func TestCountWording(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "template", "0 templates"},
		{1, "template", "1 template"},
		{2, "template", "2 templates"},
		{1, "day", "1 day"},
		{366, "day", "366 days"},
		{1, "document", "1 document"},
		{1, "WireMock mapping", "1 WireMock mapping"},
	} {
		if got := count(tt.n, tt.noun); got != tt.want {
			t.Errorf("count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}

	dir := t.TempDir()
	env := testEnv()
	if r := runApp(t, env, "dev", "seed", "--data-dir", dir); r.code != 0 {
		t.Fatalf("dev seed = %d %q", r.code, r.errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"templates", "list", "--widget-type", "text"}, "1 template (from core)"},
		{[]string{"templates", "list"}, "2 templates (from core)"},
		{[]string{"usage", "reconcile", "--days", "1"}, "(UTC, 1 day): 0 documents checked, 0 rewritten"},
	} {
		r := runApp(t, env, append(tt.args, "--data-dir", dir)...)
		r.expect(t, exitOK, []string{tt.want}, nil)
	}
}
