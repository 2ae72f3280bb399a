package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/dbcheck"
	"github.com/acme/app/internal/keys"
	"github.com/acme/app/internal/store"
)

// dbcheckOptions builds the dbcheck service's options from the configuration. unrestricted is
// for the operator's CLI: no reach control and no refused connection-string options.
func dbcheckOptions(cfg *config.Config, log *slog.Logger, unrestricted bool) dbcheck.Options {
	return dbcheck.Options{
		Timeout:      cfg.DBCheck.Timeout,
		MaxTime:      cfg.DBCheck.MaxTime,
		MaxLimit:     cfg.DBCheck.MaxLimit,
		MaxBytes:     cfg.DBCheck.MaxBytes,
		AllowedHosts: cfg.DBCheck.AllowedHosts,
		Unrestricted: unrestricted,
		Secret:       secretFields(cfg, unrestricted),
		Logger:       log,
	}
}

// secretFields are the app's own secrets, which the API never answers even when an operator
// lets it reach the app's store (dbcheck.allowed_hosts listing loopback): users' password
// hashes and API key digests. The operator's CLI (unrestricted) reads them.
func secretFields(cfg *config.Config, unrestricted bool) []dbcheck.SecretField {
	if unrestricted {
		return nil
	}
	return []dbcheck.SecretField{
		{Database: cfg.MongoDB.Database, Collection: auth.UsersCollection, Field: auth.PasswordField},
		{Database: cfg.MongoDB.Database, Collection: keys.Collection, Field: keys.DigestField},
	}
}

func newMongoCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mongo",
		Short: "Test a MongoDB connection or query its documents (the app's own database by default)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newMongoTestCmd(f, nil), newMongoQueryCmd(f, nil))
	return cmd
}

// mongoTarget is the server and database a mongo command works on.
type mongoTarget struct {
	URI      string
	Database string
}

type mongoTestOptions struct {
	mongoTarget
	JSON bool
}

func newMongoTestCmd(f *factory, runF func(context.Context, *mongoTestOptions) error) *cobra.Command {
	opts := &mongoTestOptions{}
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Test a MongoDB connection: version, cluster, ping latency, databases",
		Long: "Test a MongoDB connection: version, cluster, ping latency, databases.\n\n" +
			"Without --uri it tests the app's own database (mongodb.uri, else the embedded store of a running\n" +
			"`app serve` on the same --data-dir, which the command never starts itself). Exit 1 when the test\n" +
			"fails or there is nothing to test.",
		Args: cobra.MatchAll(cobra.NoArgs, nonBlankFlags("uri", "database")),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMongoTest(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.URI, "uri", "", "MongoDB connection string (default: the app's own database)")
	cmd.Flags().StringVar(&opts.Database, "database", "", "database to ping (default: mongodb.database)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON (the HTTP answer's shape)")
	return cmd
}

func runMongoTest(ctx context.Context, f *factory, opts *mongoTestOptions) error {
	return withMongoTarget(ctx, f, opts.mongoTarget, func(svc *dbcheck.Service, t mongoTarget) error {
		res, err := svc.Test(ctx, dbcheck.TestInput{ConnectionString: t.URI, Database: t.Database})
		if err != nil {
			return cliError(err)
		}
		p := f.printer()
		if opts.JSON {
			if err := p.json(res); err != nil {
				return err
			}
		} else if res.Success {
			p.card("MongoDB connection OK", [][2]string{
				{"Cluster", res.ClusterName},
				{"Version", res.Version},
				{"Latency", strconv.FormatFloat(res.Latency, 'f', 2, 64) + " ms"},
				{"Databases", strings.Join(res.Databases, ", ")},
			})
		}
		if !res.Success {
			return fmt.Errorf("mongo test failed: %s", res.Error)
		}
		return nil
	})
}

type mongoQueryOptions struct {
	mongoTarget
	Collection string
	Filter     string
	Limit      *int
	JSON       bool
}

func newMongoQueryCmd(f *factory, runF func(context.Context, *mongoQueryOptions) error) *cobra.Command {
	opts := &mongoQueryOptions{}
	var limit int
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Find documents in a collection (read-only; filter in MongoDB Extended JSON)",
		Long: "Find documents in a collection (read-only; filter in MongoDB Extended JSON).\n\n" +
			"Without --uri it reads the app's own database (mongodb.uri, else the embedded store of a running\n" +
			"`app serve` on the same --data-dir, which the command never starts itself).",
		Example: `  app mongo query --collection users --filter '{"email": "a@example.com"}'
  app mongo query --uri mongodb://db.example.com --database shop --collection orders \
    --filter '{"createdAt": {"$gte": {"$date": "2026-01-01T00:00:00Z"}}}' --limit 10 --json`,
		Args: cobra.MatchAll(cobra.NoArgs, nonBlankFlags("uri", "database", "filter")),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("limit") {
				opts.Limit = &limit
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMongoQuery(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.URI, "uri", "", "MongoDB connection string (default: the app's own database)")
	cmd.Flags().StringVar(&opts.Database, "database", "", "database (default: mongodb.database)")
	cmd.Flags().StringVar(&opts.Collection, "collection", "", "collection to read (required)")
	cmd.Flags().StringVar(&opts.Filter, "filter", "", "filter as MongoDB Extended JSON, e.g. '{\"_id\": {\"$oid\": \"…\"}}'")
	cmd.Flags().IntVar(&limit, "limit", dbcheck.DefaultLimit, "documents at most (1 to dbcheck.max_limit)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON (the HTTP answer's shape)")
	_ = cmd.MarkFlagRequired("collection")
	return cmd
}

func runMongoQuery(ctx context.Context, f *factory, opts *mongoQueryOptions) error {
	return withMongoTarget(ctx, f, opts.mongoTarget, func(svc *dbcheck.Service, t mongoTarget) error {
		res, err := svc.Query(ctx, dbcheck.QueryInput{ConnectionString: t.URI, Database: t.Database,
			Collection: opts.Collection, Filter: []byte(opts.Filter), Limit: opts.Limit})
		if err != nil {
			return cliError(err)
		}
		p := f.printer()
		if opts.JSON {
			return p.json(res)
		}
		if res.Count > 0 {
			if err := p.json(res.Documents); err != nil {
				return err
			}
		}
		summary := fmt.Sprintf("%d document(s) from %s.%s", res.Count, t.Database, opts.Collection)
		if res.Truncated {
			summary += " (truncated at dbcheck.max_bytes)"
		}
		p.title(summary)
		return nil
	})
}

// withMongoTarget resolves the target and runs fn with an unrestricted dbcheck service: the
// CLI is the operator's own tool. Without --uri the target is the app's own database, which
// the command reaches as any client would and never opens itself: mongodb.uri, else the
// embedded store a running `app serve` (or `app store serve`) serves from the data directory.
func withMongoTarget(ctx context.Context, f *factory, t mongoTarget, fn func(*dbcheck.Service, mongoTarget) error) error {
	if t.Database == "" {
		t.Database = f.cfg.MongoDB.Database
	}
	if t.URI == "" {
		t.URI = f.cfg.MongoDB.URI
	}
	if t.URI == "" {
		uri, err := store.RunningURI(f.cfg.DataDir)
		if errors.Is(err, store.ErrNotRunning) {
			return fmt.Errorf("%w: start `app serve` on it, or give --uri or --mongodb-uri", err)
		}
		if err != nil {
			return err
		}
		t.URI = uri
	}
	svc, err := dbcheck.New(dbcheckOptions(f.cfg, nil, true))
	if err != nil {
		return usageError{err}
	}
	defer svc.Close(context.WithoutCancel(ctx))
	return fn(svc, t)
}

// cliError prepares a service error for the CLI: its text is the messages the service meant
// for its caller (the cause is for logs), bad input is a usage error (exit 2), and the chain
// is kept whole, so that errors.Is and errors.As, and exitCode, still see the service's error
// and its cause.
func cliError(err error) error {
	e := apperr.As(err)
	if e == nil {
		return err
	}
	if len(e.Messages) > 0 {
		err = shownError{text: strings.Join(e.Messages, "; "), err: err}
	}
	if e.Kind == apperr.Invalid {
		return usageError{err}
	}
	return err
}

// shownError is err printed as text.
type shownError struct {
	text string
	err  error
}

func (s shownError) Error() string { return s.text }
func (s shownError) Unwrap() error { return s.err }
