package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/keys"
)

func newKeysCmd(f *factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke personal API keys",
	}
	c.AddCommand(newKeysCreateCmd(f, nil), newKeysListCmd(f, nil), newKeysRevokeCmd(f, nil))
	return c
}

type keysCreateOptions struct {
	user, name  string
	expiresDays int
	json        bool
}

func newKeysCreateCmd(f *factory, runF func(context.Context, *keysCreateOptions) error) *cobra.Command {
	opts := &keysCreateOptions{}
	c := &cobra.Command{
		Use:   "create --user EMAIL --name NAME [--expires-days D]",
		Short: "Create a personal API key for a user and print it (shown this once)",
		Args:  cobra.MatchAll(cobra.NoArgs, nonBlankUserFlag),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.expiresDays < 0 || opts.expiresDays > keys.MaxExpiryDays {
				return usageError{fmt.Errorf("--expires-days must be 0 (never) or from 1 to %d", keys.MaxExpiryDays)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withServices(cmd.Context(), f, func(s *services) error { return runKeysCreate(cmd.Context(), f, s, opts) })
		},
	}
	c.Flags().StringVar(&opts.user, "user", "", "the e-mail of the key's user (required)")
	c.Flags().StringVar(&opts.name, "name", "", "a name to recognise the key by (required)")
	c.Flags().IntVar(&opts.expiresDays, "expires-days", 0, "days until the key expires (0: never)")
	c.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	_ = c.MarkFlagRequired("user")
	_ = c.MarkFlagRequired("name")
	return c
}

func runKeysCreate(ctx context.Context, f *factory, s *services, opts *keysCreateOptions) error {
	u, err := s.UserByEmail(ctx, opts.user)
	if err != nil {
		return err
	}
	svc, err := s.Keys(ctx)
	if err != nil {
		return err
	}
	in := keys.CreateInput{Name: opts.name}
	if opts.expiresDays != 0 {
		in.ExpiresInDays = &opts.expiresDays
	}
	k, err := svc.Create(ctx, u.ID, u.Email, in)
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.json {
		err = p.json(k)
	} else {
		p.card("API key (shown once: store it now)", [][2]string{
			{"key", k.Key}, {"id", k.ID}, {"name", k.Name}, {"user", u.Email}, {"expires", when(k.ExpiresAt)},
		})
		err = p.err()
	}
	if err != nil {
		return fmt.Errorf("key %s was created but could not be shown (%w): revoke it (app keys revoke %s) and create another", k.ID, err, k.ID)
	}
	return nil
}

type keysListOptions struct {
	user string
	json bool
}

func newKeysListCmd(f *factory, runF func(context.Context, *keysListOptions) error) *cobra.Command {
	opts := &keysListOptions{}
	c := &cobra.Command{
		Use:   "list [--user EMAIL]",
		Short: "List the live API keys (of one user with --user), never their secrets",
		Args:  cobra.MatchAll(cobra.NoArgs, nonBlankUserFlag),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withServices(cmd.Context(), f, func(s *services) error { return runKeysList(cmd.Context(), f, s, opts) })
		},
	}
	c.Flags().StringVar(&opts.user, "user", "", "only the keys of the user with this e-mail")
	c.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return c
}

func runKeysList(ctx context.Context, f *factory, s *services, opts *keysListOptions) error {
	var userID string
	if opts.user != "" {
		u, err := s.UserByEmail(ctx, opts.user)
		if err != nil {
			return err
		}
		userID = u.ID
	}
	svc, err := s.Keys(ctx)
	if err != nil {
		return err
	}
	list, err := svc.List(ctx, userID)
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.json {
		return p.json(list)
	}
	rows := make([][]string, len(list))
	for i, k := range list {
		rows[i] = []string{k.ID, k.Name, keys.Prefix + k.Prefix + "…", k.Email, when(&k.CreatedAt), when(k.LastUsedAt), when(k.ExpiresAt)}
	}
	p.table([]string{"ID", "NAME", "KEY", "USER", "CREATED", "LAST USED", "EXPIRES"}, rows)
	return nil
}

func newKeysRevokeCmd(f *factory, runF func(context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key (refused everywhere within " + keys.CacheTTL.String() + ")",
		Args:  cobra.MatchAll(cobra.ExactArgs(1), nonBlankFirst("ID")),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), args[0])
			}
			return withServices(cmd.Context(), f, func(s *services) error {
				svc, err := s.Keys(cmd.Context())
				if err != nil {
					return err
				}
				if err := svc.Revoke(cmd.Context(), "", args[0]); err != nil {
					return err
				}
				f.printer().card("", [][2]string{{"revoked", args[0]}})
				return nil
			})
		},
	}
}

// when shows an optional time as an RFC 3339 UTC minute, "-" when absent.
func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04Z")
}
