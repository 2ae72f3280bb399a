// Package cmd is the composition root: the Cobra command tree, configuration loading, and the
// one place where the store and the services are opened and wired together.
package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/suggest"
	"github.com/acme/app/internal/version"
)

// Exit codes of every command.
const (
	exitOK      = 0
	exitFailure = 1 // the operation failed
	exitUsage   = 2 // bad flags, arguments or configuration
)

// usageError marks an error as the caller's (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// exitCode is the one place where an error becomes an exit code, from its kind: the caller's
// mistakes (a bad flag, argument, subcommand or configuration value, a request the service
// refuses as invalid) exit 2; a command SIGINT or SIGTERM stopped while it waited for the data
// directory exits 128 + the signal's number (130, 143), as a shell reports a process the
// signal killed; everything else is a failure of the operation, exit 1. An error's text never
// decides.
func exitCode(err error) int {
	var ue usageError
	var ce *config.Error
	if i, ok := asInterrupted(err); ok {
		return i.exitCode()
	}
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.As(err, &ce), apperr.KindOf(err) == apperr.Invalid:
		return exitUsage
	default:
		return exitFailure
	}
}

// factory carries what every command needs: streams, environment and the loaded configuration.
type factory struct {
	in          io.Reader
	out, errOut io.Writer
	getenv      func(string) string

	cfg *config.Config
	log *slog.Logger

	// environ lists the process's environment, for the check of APP_* names (nil: skipped).
	environ func() []string
	// stderr is errOut for logs and progress bars: it ends a progress bar's line before
	// anything else is written.
	stderr *lineGuard
	// verbose: operator commands log at log.level (otherwise only errors).
	verbose bool
	// prices is the price table (ai.pricing_file over the built-in one), loaded with the
	// configuration.
	prices *ai.Prices

	// onListen, when set, is told the address `serve` listens on (tests).
	onListen func(addr string)
	// onBuild, when set, is told each service a command builds, as it is built (tests).
	onBuild func(service string)
	// listen, when set, opens serve's listeners in place of net.Listen (tests); name is
	// listenerAPI or listenerMetrics.
	listen func(name, addr string) (net.Listener, error)
	// signals, when set, relays SIGINT and SIGTERM in place of the process's (tests).
	signals func() (<-chan os.Signal, func())
}

// Execute runs the program with the process's arguments and streams; it returns the exit code.
func Execute() int {
	f := &factory{in: os.Stdin, out: os.Stdout, errOut: os.Stderr, getenv: os.Getenv, environ: os.Environ}
	return run(context.Background(), f, os.Args[1:])
}

// Run runs the program with the given arguments, environment and streams, as tests do.
func Run(ctx context.Context, args []string, getenv func(string) string, in io.Reader, out, errOut io.Writer) int {
	return run(ctx, &factory{in: in, out: out, errOut: errOut, getenv: getenv}, args)
}

func run(ctx context.Context, f *factory, args []string) int {
	out := &checkedWriter{w: f.out}
	f.out = out
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.in)
	root.SetOut(f.out)
	root.SetErr(f.errOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		err = writeError(out) // results that never reached stdout are a failure
	}
	code := exitCode(err)
	switch {
	case code == exitOK:
	case code == exitUsage:
		fmt.Fprintln(f.stderr, "error:", err.Error())
	case isInterrupted(err):
		fmt.Fprintln(f.stderr, terminalSafe(oneLine(err.Error()))) // the operator's stop, not an error
	default:
		fmt.Fprintln(f.stderr, "error:", terminalSafe(oneLine(err.Error())))
	}
	return code
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// serverAnnotation marks a command that runs a server: it logs at log.level without --verbose.
const serverAnnotation = "server"

func newRootCmd(f *factory) *cobra.Command {
	if f.stderr == nil {
		f.stderr = &lineGuard{w: f.errOut}
	}
	root := &cobra.Command{
		Use:           "app",
		Short:         "The product team's backend: HTTP API, operator commands and a mock server",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateFlags(cmd); err != nil {
				return err
			}
			if cmd.HasSubCommands() || helpOnly(cmd) {
				return nil // help and completion scripts need no configuration
			}
			return f.load(cmd)
		},
	}
	root.SetVersionTemplate("app {{.Version}}\n")
	config.BindFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVarP(&f.verbose, "verbose", "v", false, "operator commands: also log progress on stderr (at log.level)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServeCmd(f), newUsersCmd(f), newUsageCmd(f), newVersionCmd(f))
	root.AddCommand(newKeysCmd(f))
	root.AddCommand(newTemplatesCmd(f))
	root.AddCommand(newMongoCmd(f))
	root.AddCommand(newMockCmd(f))
	root.AddCommand(newDevCmd(f))
	root.AddCommand(newStoreCmd(f))
	// cobra adds `help` and `completion` as it executes; added now, they follow the
	// conventions too (an unknown topic or shell is a usage error, not help and exit 0).
	root.SetOut(f.out) // the completion command takes its writer when it is made
	root.SetErr(f.errOut)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	strictHelp(root)
	conventions(root)
	return root
}

// helpOnly reports whether cmd is `app help` or writes a completion script: commands that read
// no configuration, so that a bad value does not keep an operator from the help to fix it.
func helpOnly(cmd *cobra.Command) bool {
	for c := cmd; c != nil && c.Parent() != nil; c = c.Parent() {
		if c.Parent() == cmd.Root() && (c.Name() == "help" || c.Name() == "completion") {
			return true
		}
	}
	return false
}

// strictHelp makes `app help TOPIC` refuse a topic that names no command, as an unknown
// command is refused, instead of printing the program's help with exit 0.
func strictHelp(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		show := c.Run
		c.Run = nil
		c.RunE = func(cmd *cobra.Command, args []string) error {
			found, rest, err := cmd.Root().Find(args)
			switch {
			case err != nil || found == nil:
				return usageError{unknownSubcommand(cmd.Root(), args[0])}
			case len(rest) > 0:
				return usageError{unknownSubcommand(found, rest[0])}
			}
			show(cmd, args)
			return nil
		}
	}
}

// conventions gives every command of the tree the same behaviour: a group (a command with
// subcommands and nothing to run) shows its help when called bare and refuses an unknown
// subcommand with a suggestion; a command's argument errors are usage errors, and one that
// takes no arguments says so.
func conventions(c *cobra.Command) {
	switch {
	case c.HasSubCommands() && c.Run == nil && c.RunE == nil:
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageError{unknownSubcommand(cmd, args[0])}
		}
	case c.Args != nil:
		validate := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := validate(cmd, args)
			switch {
			case err == nil:
				return nil
			case len(args) > 0 && !cmd.HasSubCommands() && validate(cmd, nil) == nil && validate(cmd, args[:1]) != nil:
				// A command that takes no arguments: cobra calls the first an unknown
				// command, though the command has none.
				return usageError{fmt.Errorf("%q takes no arguments; got %q", cmd.CommandPath(), args[0])}
			default:
				return usageError{err}
			}
		}
	}
	for _, sub := range c.Commands() {
		conventions(sub)
	}
}

// unknownSubcommand words the error for `app GROUP NAME` when GROUP has no subcommand NAME.
func unknownSubcommand(group *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, group.CommandPath())
	if group.SuggestionsMinimumDistance <= 0 {
		group.SuggestionsMinimumDistance = 2 // cobra's own default, applied only in its Find
	}
	if s := group.SuggestionsFor(name); len(s) > 0 {
		// cobra lists every name within the distance in its own order: name the nearest.
		best := slices.MinFunc(s, func(a, b string) int {
			return cmp.Compare(suggest.Distance(name, a), suggest.Distance(name, b))
		})
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Errorf("%s; run '%s --help' for the list", msg, group.CommandPath())
}

// validateFlags runs cobra's checks of required and grouped flags, which cobra itself runs
// only after the persistent hooks and returns untyped, as usage errors.
func validateFlags(cmd *cobra.Command) error {
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return usageError{err}
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return usageError{err}
	}
	return nil
}

// load reads the configuration and sets up the logger; commands that need neither skip it.
// Operator commands log errors only, unless --verbose: their stdout holds the results and
// their stderr stays empty unless something fails.
func (f *factory) load(cmd *cobra.Command) error {
	if f.cfg != nil {
		return nil
	}
	if f.environ != nil {
		if err := config.CheckEnvironment(f.environ()); err != nil {
			return err
		}
	}
	cfg, err := config.Load(cmd.Root().PersistentFlags(), f.getenv)
	if err != nil {
		return err
	}
	if err := dbcheck.CheckAllowedHosts(cfg.DBCheck.AllowedHosts); err != nil {
		return &config.Error{Key: "dbcheck.allowed_hosts", Reason: err.Error()}
	}
	// Every command checks both URIs, whether it uses them or not: a bad value is found on
	// the first command run, not on the first that needs it, and reported as the bad
	// configuration value it is (its password masked by config.Error).
	for _, u := range [][2]string{{"mongodb.uri", cfg.MongoDB.URI}, {"core.uri", cfg.Core.URI}} {
		if err := store.CheckURI(u[1]); u[1] != "" && err != nil {
			reason := "not a valid MongoDB connection string"
			if cause := errors.Unwrap(err); cause != nil {
				reason += ": " + cause.Error()
			}
			return &config.Error{Key: u[0], Value: u[1], Reason: reason}
		}
	}
	logCfg := cfg.Log
	if cmd.Annotations[serverAnnotation] == "" && !f.verbose {
		logCfg.Level = "error"
	}
	log := newLogger(f.stderr, logCfg)
	// So is the price table, though only serve prices calls: it is small, a bad file is
	// found on the first command run, and the services use the table loaded here.
	prices, err := loadPrices(cfg.AI.PricingFile, log)
	if err != nil {
		return err
	}
	f.cfg, f.log, f.prices = cfg, log, prices
	return nil
}

// lineGuard writes to w and ends an open progress line before anything else is written.
type lineGuard struct {
	mu   sync.Mutex
	w    io.Writer
	open bool // a progress line was drawn and not ended
}

func (g *lineGuard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.open = false
		if _, err := io.WriteString(g.w, "\n"); err != nil {
			return 0, err
		}
	}
	return g.w.Write(p)
}

// progress redraws the progress line (it starts with a carriage return, no newline).
func (g *lineGuard) progress(line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _ = io.WriteString(g.w, "\r"+line)
	g.open = true
}

// endLine ends an open progress line.
func (g *lineGuard) endLine() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.open = false
		_, _ = io.WriteString(g.w, "\n")
	}
}

func newVersionCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return nil
		},
		Run: func(*cobra.Command, []string) {
			fmt.Fprintf(f.out, "app %s\n", version.Version)
		},
	}
}
