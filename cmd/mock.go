package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/mockserver"
	"github.com/acme/app/internal/version"
	"github.com/acme/app/mock"
	"github.com/acme/app/mock/mockfile"
	"github.com/acme/app/mock/openapi"
	"github.com/acme/app/mock/wiremock"
)

// newMockCmd is the mock group. It never opens the database and needs no configuration, so
// it replaces the root's PersistentPreRunE with its own.
func newMockCmd(f *factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "mock",
		Short: "A standalone mock server for front-end development, and its file checker",
		Args:  cobra.NoArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if f.log == nil {
				f.log = newLogger(f.errOut, config.Log{Level: "info"})
			}
			return nil
		},
	}
	c.AddCommand(newMockServeCmd(f, nil), newMockValidateCmd(f, nil))
	return c
}

type mockServeOptions struct {
	File          string
	Host          string
	Port          int
	Target        string
	Delay         string
	Watch         bool
	Record        string
	RecordSecrets bool
	NoCORS        bool
	LogRequests   bool
	AdminToken    string
	CORSOrigins   []string
	WireMock      string
	OpenAPI       []string
	Dynamic       bool
	Seed          uint64
}

func newMockServeCmd(f *factory, runF func(context.Context, *mockServeOptions) error) *cobra.Command {
	opts := &mockServeOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve mocks from a file, or a built-in mock of this API with no --file",
		Long: `Serve mocks from a YAML or JSON file (see docs/mock-file.md), WireMock stub mappings
(--wiremock DIR) and/or the operations of OpenAPI 3.0/3.1 descriptions (--openapi FILE: answers
and request validation as Prism's, see docs/mock-openapi.md). With none of --file, --wiremock,
--openapi and --target, serve the real /api of this
project over a throwaway store with demo data (admin@example.com / admin123, user@example.com /
user123). Unmatched requests go to --target when given, else get a 404 naming
ROUTE_MATCH_FAILED (with --openapi, a 404 problem+json NO_PATH_MATCHED_ERROR). The admin API is under /__mock/ (same-origin JSON only; --admin-token).
CORS is on unless --no-cors. --addr, --data-dir, --config and --mongodb-uri do not apply.`,
		Example: `  app mock serve
  app mock serve --file mocks.yaml --watch --cors-origin http://localhost:5173
  app mock serve --wiremock ./wiremock
  app mock serve --openapi partner.yaml --dynamic --seed 7
  app mock serve --file mocks.yaml --target http://localhost:3000 --delay 100-400
  app mock serve --target https://api.example.com --record recorded.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rejectGlobalFlags(cmd); err != nil {
				return err
			}
			if opts.AdminToken == "" && f.getenv != nil {
				opts.AdminToken = f.getenv("APP_MOCK_ADMIN_TOKEN")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMockServe(cmd.Context(), f, opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.File, "file", "f", "", "mock file (YAML or JSON); empty serves the built-in /api mock")
	fl.StringVar(&opts.Host, "host", "127.0.0.1", "address to listen on")
	fl.IntVarP(&opts.Port, "port", "p", 3001, "port to listen on (0 picks a free one)")
	fl.StringVar(&opts.Target, "target", "", "proxy unmatched requests to this URL")
	fl.StringVar(&opts.Delay, "delay", "", "delay every mocked response (file, OpenAPI and WireMock answers): milliseconds (200) or a range (100-400); overrides the file; a route's or mapping's own delay wins")
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "reload the file, the OpenAPI descriptions and the WireMock mappings (mappings/*.json, __files/) when they change")
	fl.StringVar(&opts.Record, "record", "", "write every proxied exchange into this file as a mock (needs --target)")
	fl.BoolVar(&opts.RecordSecrets, "record-secrets", false, "keep tokens, passwords and keys in recorded answers (redacted by default)")
	fl.BoolVar(&opts.NoCORS, "no-cors", false, "do not answer CORS (on by default)")
	fl.BoolVar(&opts.LogRequests, "log-requests", false, "log every mocked request and response")
	fl.StringArrayVar(&opts.OpenAPI, "openapi", nil, "serve the operations of this OpenAPI 3.0/3.1 description (YAML or JSON) and validate requests against it, as Prism does (repeatable; reloaded when it changes)")
	fl.BoolVar(&opts.Dynamic, "dynamic", false, "answer --openapi operations with data generated from their schemas (Prefer: dynamic=false still gets the examples)")
	fl.Uint64Var(&opts.Seed, "seed", 0, "seed of the generated data, so runs answer alike (0: from the clock)")
	fl.StringVar(&opts.WireMock, "wiremock", "", "serve the WireMock stub mappings of this directory (mappings/*.json, __files/) before the mocks")
	fl.StringVar(&opts.AdminToken, "admin-token", "", "bearer token the admin API (/__mock/) requires; required when --host is not loopback (or APP_MOCK_ADMIN_TOKEN)")
	fl.StringArrayVar(&opts.CORSOrigins, "cors-origin", nil, "origin whose requests get their origin echoed with credentials (repeatable); others get *")
	return c
}

// ignoredGlobalFlags are the root's flags that mean nothing to the mock server, which has its
// own --host and --port, keeps no data and reads no configuration file.
var ignoredGlobalFlags = []string{"addr", "data-dir", "config", "mongodb-uri"}

// rejectGlobalFlags refuses a global flag the mock server would otherwise ignore silently.
func rejectGlobalFlags(cmd *cobra.Command) error {
	for _, name := range ignoredGlobalFlags {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return usageError{fmt.Errorf("--%s does not apply to `app mock serve` (use --host and --port; the mock keeps no data and reads no configuration file)", name)}
		}
	}
	return nil
}

// serverOptions checks the flags and turns them into the server's options.
func (o *mockServeOptions) serverOptions() (mockserver.Options, error) {
	so := mockserver.Options{File: o.File, Record: o.Record, RecordSecrets: o.RecordSecrets, NoCORS: o.NoCORS, LogRequests: o.LogRequests,
		AdminToken: o.AdminToken, WireMock: o.WireMock, OpenAPI: o.OpenAPI, Dynamic: o.Dynamic, Seed: o.Seed}
	if o.AdminToken == "" && !mockserver.IsLoopback(o.Host) {
		return so, usageError{fmt.Errorf("--host %s accepts connections from other machines: set --admin-token (or APP_MOCK_ADMIN_TOKEN) to protect the admin API", o.Host)}
	}
	for _, origin := range o.CORSOrigins {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return so, usageError{fmt.Errorf("--cors-origin %q: want an origin such as http://localhost:5173", origin)}
		}
		so.CORSOrigins = append(so.CORSOrigins, strings.TrimSuffix(origin, "/"))
	}
	if o.Port < 0 || o.Port > 65535 {
		return so, usageError{fmt.Errorf("--port %d: want 0-65535", o.Port)}
	}
	if o.Target != "" {
		u, err := url.Parse(o.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return so, usageError{fmt.Errorf("--target %q: want an absolute http(s) URL", o.Target)}
		}
		so.Target = u
	}
	if o.Delay != "" {
		d, err := mockfile.ParseDelay(o.Delay)
		if err != nil {
			return so, usageError{fmt.Errorf("--delay: %w", err)}
		}
		so.Delay = &d
	}
	if o.Record != "" && o.Target == "" {
		return so, usageError{errors.New("--record needs --target: only proxied exchanges are recorded")}
	}
	if o.Watch && o.File == "" && len(o.OpenAPI) == 0 && o.WireMock == "" {
		return so, usageError{errors.New("--watch needs --file, --openapi or --wiremock")}
	}
	if (o.Dynamic || o.Seed != 0) && len(o.OpenAPI) == 0 {
		return so, usageError{errors.New("--dynamic and --seed steer --openapi answers: name a description with --openapi")}
	}
	return so, nil
}

// mockGCPercent is the garbage collector's target for `mock serve` when GOGC is not set. The
// mock's live heap is a few MB, so at the runtime's default (100, a 4 MB minimum goal) the
// collector ran about 60 times a second under load, for about 5 % of the CPU; at 400 the goal is
// 16 MB, still far under the process's RSS.
const mockGCPercent = 400

// runMockServe serves until SIGINT/SIGTERM (or ctx ends), then lets requests in flight finish.
func runMockServe(ctx context.Context, f *factory, o *mockServeOptions) error {
	so, err := o.serverOptions()
	if err != nil {
		return err
	}
	defer gcPercentUnlessSet(mockGCPercent)()
	so.Logger = f.log
	started := time.Now()
	if o.File == "" && o.Target == "" && o.WireMock == "" && len(o.OpenAPI) == 0 {
		api, err := openBuiltinAPI(ctx, f, o.LogRequests)
		if err != nil {
			return err
		}
		defer api.close()
		so.API = api.handler
	}
	srv, err := mockserver.New(so)
	if err != nil {
		var le *mockfile.LoadError
		if errors.As(err, &le) {
			printProblems(f, le)
			return usageError{fmt.Errorf("%s is invalid: %d problem(s)", o.File, len(le.Problems))}
		}
		var oe *openapi.LoadError
		if errors.As(err, &oe) {
			printSpecProblems(f, oe)
			return usageError{fmt.Errorf("%s cannot be served: %d problem(s)", oe.File, len(oe.Problems))}
		}
		return err
	}
	defer srv.Close()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if o.Watch || len(o.OpenAPI) > 0 {
		if err := srv.Watch(ctx); err != nil {
			return err
		}
	}
	addr := net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
	printBanner(f, ln.Addr().String(), srv, so)
	f.log.Info("mock serving", "addr", ln.Addr().String(), "startup", time.Since(started).Round(time.Millisecond).String())
	for _, w := range srv.Warnings() {
		f.log.Warn("mock file", "warning", w.String())
	}
	return serveUntilDone(ctx, f, hs, ln, stop, 10*time.Second, func(error) error { return nil })
}

// printBanner writes the short start banner: URL, routes, fallback, admin URL.
func printBanner(f *factory, addr string, srv *mockserver.Server, so mockserver.Options) {
	base := "http://" + addr
	source := "no file"
	if so.File != "" {
		source = so.File
	}
	if n := len(srv.Warnings()); n > 0 {
		source += fmt.Sprintf(" (%d warning(s), see the log)", n)
	}
	mocks := count(len(srv.RouteKeys()), "route") + " from " + source
	if n := srv.WireMockMappings(); n > 0 || len(srv.WireMockProblems()) > 0 {
		mocks += "; " + count(n, "WireMock mapping")
		if p := len(srv.WireMockProblems()); p > 0 {
			mocks += fmt.Sprintf(" (%d problem(s) not served, see the log)", p)
		}
	}
	if n := len(so.OpenAPI); n > 0 {
		spec := fmt.Sprintf("%s from OpenAPI (%s)", count(len(srv.SpecRoutes()), "route"), strings.Join(so.OpenAPI, ", "))
		if so.Dynamic {
			spec += ", generated answers"
		}
		if so.File == "" {
			mocks = spec
		} else {
			mocks = fmt.Sprintf("%s from %s; %s", count(len(srv.RouteKeys())-len(srv.SpecRoutes()), "route"), source, spec)
		}
	}
	if so.API != nil {
		mocks = "the real /api handlers over a throwaway store, demo data loaded (admin@example.com / admin123, user@example.com / user123)"
	}
	fallback := "none: unmatched requests get 404 ROUTE_MATCH_FAILED"
	if so.API != nil {
		fallback = "none needed: the API answers every request no mock added through the admin API matches"
	}
	if so.File == "" && so.API == nil && so.Target == nil {
		fallback = "none: unmatched requests get WireMock's 404 \"Request was not matched\""
	}
	if len(so.OpenAPI) > 0 && so.Target == nil {
		fallback = "none: unmatched requests get 404 problem+json (NO_PATH_MATCHED_ERROR)"
	}
	if so.Target != nil {
		fallback = so.Target.String()
		if so.Record != "" {
			fallback += " (recording to " + so.Record + ")"
		}
	}
	pairs := [][2]string{
		{"URL", base},
		{"Mocks", mocks},
		{"Fallback", fallback},
		{"Admin", base + mockserver.AdminPrefix + "mocks"},
	}
	if so.Delay != nil {
		pairs = append(pairs, [2]string{"Delay", delayString(*so.Delay)})
	}
	cors := "on"
	if so.NoCORS {
		cors = "off"
	}
	pairs = append(pairs, [2]string{"CORS", cors})
	f.printer().card("app mock serve "+version.Version, pairs)
}

func delayString(d mock.Delay) string {
	if d.IsRange() {
		return fmt.Sprintf("%d-%d ms", d.Min.Milliseconds(), d.Max.Milliseconds())
	}
	return fmt.Sprintf("%d ms", d.Min.Milliseconds())
}

// printProblems writes each problem of a mock file on its own line to stderr.
func printProblems(f *factory, le *mockfile.LoadError) {
	for _, p := range le.Problems {
		loc := le.File
		if p.Line > 0 {
			loc += ":" + strconv.Itoa(p.Line)
		}
		fmt.Fprintf(f.errOut, "%s: %s\n", loc, strings.TrimPrefix(p.String(), fmt.Sprintf("line %d: ", p.Line)))
	}
}

type mockValidateOptions struct {
	File     string
	WireMock string
	OpenAPI  []string
	JSON     bool
}

// validateReport is the --json form of `mock validate`.
type validateReport struct {
	File     string             `json:"file,omitempty"`
	Valid    bool               `json:"isValid"`
	Routes   int                `json:"routes"`
	Errors   []mockfile.Problem `json:"errors"`
	Warnings []mockfile.Problem `json:"warnings"`
	// WireMock: the mapping directory checked, its mappings served and what is not.
	WireMock         string             `json:"wiremock,omitempty"`
	WireMockMappings int                `json:"wiremockMappings,omitempty"`
	WireMockProblems []wiremock.Problem `json:"wiremockProblems,omitempty"`
	// OpenAPI: each description checked, its operations and problems.
	OpenAPI []specReport `json:"openapi,omitempty"`
}

// specReport is one description's part of the --json report.
type specReport struct {
	File       string            `json:"file"`
	Valid      bool              `json:"isValid"`
	Version    string            `json:"version,omitempty"`
	Operations int               `json:"operations"`
	Problems   []openapi.Problem `json:"problems"`
	// Warnings are what the description asks for and is served otherwise (an answer too
	// large to send); they do not make it invalid.
	Warnings []openapi.Problem `json:"warnings"`
}

func newMockValidateCmd(f *factory, runF func(*mockValidateOptions) error) *cobra.Command {
	opts := &mockValidateOptions{}
	c := &cobra.Command{
		Use:   "validate [FILE] [--wiremock DIR] [--openapi FILE]",
		Short: "Check a mock file, WireMock mappings and/or OpenAPI descriptions without serving them",
		Long: `Check a mock file (every problem with its line; exit 2 when invalid), and WireMock stub
mappings: each mapping or field app does not serve is listed (file, mapping, field) and makes the
check fail (exit 2). --openapi checks an OpenAPI description: each problem with its file, line
and JSON pointer; exit 1 when it cannot be served.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.File = args[0]
			}
			if opts.File == "" && opts.WireMock == "" && len(opts.OpenAPI) == 0 {
				return usageError{errors.New("name a mock file, --wiremock DIR, --openapi FILE, or several")}
			}
			if runF != nil {
				return runF(opts)
			}
			return runMockValidate(f, opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	c.Flags().StringVar(&opts.WireMock, "wiremock", "", "a directory of WireMock stub mappings (mappings/*.json, __files/)")
	c.Flags().StringArrayVar(&opts.OpenAPI, "openapi", nil, "an OpenAPI 3.0/3.1 description (YAML or JSON) to check: each problem with its line; exit 1 when one cannot be served (repeatable)")
	return c
}

func runMockValidate(f *factory, o *mockValidateOptions) error {
	rep := validateReport{File: o.File, Valid: true, Errors: []mockfile.Problem{}, Warnings: []mockfile.Problem{}}
	var le *mockfile.LoadError
	if o.File != "" {
		set, err := mockfile.LoadFile(o.File)
		if err != nil && !errors.As(err, &le) {
			return err
		}
		if set != nil {
			rep.Routes = len(set.Routes)
			rep.Warnings = append(rep.Warnings, set.Warnings...)
			if o.WireMock == "" {
				o.WireMock = set.WireMock
			}
		}
		if le != nil {
			rep.Valid, rep.Errors = false, le.Problems
		}
	}
	if o.WireMock != "" {
		stubs, problems, err := wiremock.Load(o.WireMock)
		if err != nil {
			return err
		}
		rep.WireMock, rep.WireMockMappings, rep.WireMockProblems = o.WireMock, stubs.Len(), problems
		rep.Valid = rep.Valid && len(problems) == 0
	}
	fileValid, specsValid, badSpecs := rep.Valid, true, 0
	for _, path := range o.OpenAPI {
		sr := specReport{File: path, Valid: true, Problems: []openapi.Problem{}, Warnings: []openapi.Problem{}}
		spec, err := openapi.Load(path)
		var oe *openapi.LoadError
		switch {
		case errors.As(err, &oe):
			sr.Valid, sr.Problems, specsValid = false, oe.Problems, false
			badSpecs++
		case err != nil:
			return err
		default:
			sr.Version, sr.Operations = spec.Version, spec.Operations()
			sr.Warnings = append(sr.Warnings, spec.Warnings()...)
		}
		rep.OpenAPI = append(rep.OpenAPI, sr)
	}
	if o.JSON {
		rep.Valid = rep.Valid && specsValid
		if err := f.printer().json(rep); err != nil {
			return err
		}
	} else {
		if o.File != "" && le == nil {
			fmt.Fprintf(f.out, "%s: valid, %d route(s), %d warning(s)\n", o.File, rep.Routes, len(rep.Warnings))
			for _, w := range rep.Warnings {
				fmt.Fprintf(f.out, "  warning: %s\n", w.String())
			}
		}
		if le != nil {
			printProblems(f, le)
		}
		if o.WireMock != "" {
			fmt.Fprintf(f.out, "%s: %d WireMock mapping(s) served, %d problem(s)\n", o.WireMock, rep.WireMockMappings, len(rep.WireMockProblems))
			for _, p := range rep.WireMockProblems {
				fmt.Fprintf(f.errOut, "%s: %s\n", o.WireMock, p.String())
			}
		}
		for _, sr := range rep.OpenAPI {
			if sr.Valid {
				fmt.Fprintf(f.out, "%s: valid OpenAPI %s, %d operation(s)\n", sr.File, sr.Version, sr.Operations)
				for _, w := range sr.Warnings {
					if w.File == "" {
						w.File = sr.File
					}
					fmt.Fprintf(f.out, "  warning: %s\n", w.String())
				}
				continue
			}
			printSpecProblems(f, &openapi.LoadError{File: sr.File, Problems: sr.Problems})
		}
	}
	if !fileValid {
		n := len(rep.Errors) + len(rep.WireMockProblems)
		what := o.File
		if what == "" {
			what = o.WireMock
		}
		return usageError{fmt.Errorf("%s is invalid: %d problem(s)", what, n)}
	}
	if !specsValid {
		// exit 1, not 2: the description is the thing checked, not the command line
		return fmt.Errorf("%d OpenAPI description(s) cannot be served", badSpecs)
	}
	return nil
}

// printSpecProblems writes each problem of an OpenAPI description on its own line to stderr:
// file:line: JSON pointer: message.
func printSpecProblems(f *factory, le *openapi.LoadError) {
	for _, p := range le.Problems {
		if p.File == "" {
			p.File = le.File
		}
		fmt.Fprintln(f.errOut, p.String())
	}
}
