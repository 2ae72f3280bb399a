package cmd

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/demo"
)

func newDevCmd(f *factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "dev",
		Short: "Developer tools: load the demo data set into the embedded store",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(newDevSeedCmd(f))
	return c
}

type devSeedOptions struct {
	JSON bool
}

func newDevSeedCmd(f *factory) *cobra.Command {
	opts := &devSeedOptions{}
	c := &cobra.Command{
		Use:   "seed",
		Short: "Load the demo data set (accounts, core templates, spaces with their own templates) into the embedded store",
		Long: `Load the demo data set into the embedded store of --data-dir: the accounts admin@example.com
(password admin123, role admin) and user@example.com (password user123), two core templates,
and three spaces whose own templates overlap (identical copies) and conflict (different
versions of one id), ready for "app templates migrate". Existing accounts and templates are
kept; running it again changes nothing. It refuses an external database (mongodb.uri).`,
		Example: `  app dev seed --data-dir ./data
  app templates migrate --data-dir ./data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDevSeed(cmd.Context(), f, opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print what was loaded as JSON")
	return c
}

func runDevSeed(ctx context.Context, f *factory, o *devSeedOptions) error {
	if f.cfg.MongoDB.URI != "" {
		return usageError{errors.New("dev seed writes demo accounts: it only loads the embedded store, and mongodb.uri is set")}
	}
	return withServices(ctx, f, func(s *services) error {
		deps, err := demoDeps(ctx, s)
		if err != nil {
			return err
		}
		rep, err := demo.Load(ctx, deps)
		if err != nil {
			return err
		}
		if o.JSON {
			return f.printer().json(rep)
		}
		ids := make([]string, 0, len(rep.SpacesDatabaseOf))
		for id := range rep.SpacesDatabaseOf {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		pairs := [][2]string{
			{"Data dir", f.cfg.DataDir},
			{"Accounts", fmt.Sprintf("%d created, %d already there (admin@example.com / admin123, user@example.com / user123)", rep.UsersCreated, rep.UsersExisting)},
			{"Core templates", fmt.Sprintf("%d created, %d already there", rep.CoreCreated, rep.CoreExisting)},
			{"Spaces", fmt.Sprintf("%d (%s): %v", rep.Spaces, count(rep.SpaceTemplates, "space template"), ids)},
			{"Next", "app templates migrate   (a dry run)"},
		}
		f.printer().card("demo data loaded", pairs)
		return nil
	})
}
