// Package cmd is the composition root: the Cobra command tree, configuration loading, and the
// one place where the store and the services are opened and wired together.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/config"
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

// factory carries what every command needs: streams, environment and the loaded configuration.
type factory struct {
	in          io.Reader
	out, errOut io.Writer
	getenv      func(string) string

	cfg *config.Config
	log *slog.Logger

	// onListen, when set, is told the address `serve` listens on (tests).
	onListen func(addr string)
}

// Execute runs the program with the process's arguments and streams; it returns the exit code.
func Execute() int {
	return Run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
}

// Run runs the program with the given arguments, environment and streams, as tests do.
func Run(ctx context.Context, args []string, getenv func(string) string, in io.Reader, out, errOut io.Writer) int {
	return run(ctx, &factory{in: in, out: out, errOut: errOut, getenv: getenv}, args)
}

func run(ctx context.Context, f *factory, args []string) int {
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.in)
	root.SetOut(f.out)
	root.SetErr(f.errOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ce *config.Error
	switch {
	case errors.As(err, &ce):
		fmt.Fprintln(f.errOut, "error:", ce.Error())
		return exitUsage
	case errors.As(err, &ue) || isFlagError(err):
		fmt.Fprintln(f.errOut, "error:", err.Error())
		return exitUsage
	default:
		fmt.Fprintln(f.errOut, "error:", oneLine(err.Error()))
		return exitFailure
	}
}

func isFlagError(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func newRootCmd(f *factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "app",
		Short:         "The product team's backend: HTTP API, operator commands and a mock server",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return f.load(cmd)
		},
	}
	root.SetVersionTemplate("app {{.Version}}\n")
	config.BindFlags(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServeCmd(f), newUsersCmd(f), newUsageCmd(f), newVersionCmd(f))
	root.AddCommand(newKeysCmd(f))
	root.AddCommand(newTemplatesCmd(f))
	root.AddCommand(newMongoCmd(f))
	root.AddCommand(newMockCmd(f))
	return root
}

// load reads the configuration and sets up the logger; commands that need neither skip it.
func (f *factory) load(cmd *cobra.Command) error {
	if f.cfg != nil {
		return nil
	}
	cfg, err := config.Load(cmd.Root().PersistentFlags(), f.getenv)
	if err != nil {
		return err
	}
	f.cfg = cfg
	f.log = newLogger(f.errOut, cfg.Log)
	return nil
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
