package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/budget"
)

func newUsersCmd(f *factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "users",
		Short: "List users, grant or revoke roles, and set monthly AI budgets",
	}
	c.AddCommand(newUsersListCmd(f, nil), newUsersRoleCmd(f, "grant", nil), newUsersRoleCmd(f, "revoke", nil))
	c.AddCommand(newUsersBudgetCmd(f, nil))
	return c
}

type usersListOptions struct {
	json bool
}

func newUsersListCmd(f *factory, runF func(context.Context, *usersListOptions) error) *cobra.Command {
	opts := &usersListOptions{}
	c := &cobra.Command{
		Use:   "list",
		Short: "List every user with their roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withServices(cmd.Context(), f, func(s *services) error { return runUsersList(cmd.Context(), f, s, opts) })
		},
	}
	c.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return c
}

func runUsersList(ctx context.Context, f *factory, s *services, opts *usersListOptions) error {
	svc, err := s.Auth(ctx)
	if err != nil {
		return err
	}
	users, err := svc.List(ctx)
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.json {
		return p.json(users)
	}
	rows := make([][]string, len(users))
	for i, u := range users {
		rows[i] = []string{u.Email, u.Name, strings.Join(u.Roles, ", "), u.CreatedAt, u.ID}
	}
	p.table([]string{"EMAIL", "NAME", "ROLES", "CREATED", "ID"}, rows)
	return nil
}

type usersRoleOptions struct {
	email, role string
	json        bool
}

func newUsersRoleCmd(f *factory, verb string, runF func(context.Context, *usersRoleOptions) error) *cobra.Command {
	opts := &usersRoleOptions{}
	short := "Give a user a role"
	if verb == "revoke" {
		short = "Take a role from a user"
	}
	c := &cobra.Command{
		Use:   verb + " EMAIL ROLE",
		Short: short,
		Args:  cobra.MatchAll(cobra.ExactArgs(2), nonBlankEmail),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.email, opts.role = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withServices(cmd.Context(), f, func(s *services) error {
				return runUsersRole(cmd.Context(), f, s, verb, opts)
			})
		},
	}
	c.Flags().BoolVar(&opts.json, "json", false, "print the updated user as JSON")
	return c
}

func runUsersRole(ctx context.Context, f *factory, s *services, verb string, opts *usersRoleOptions) error {
	svc, err := s.Auth(ctx)
	if err != nil {
		return err
	}
	change := svc.Grant
	if verb == "revoke" {
		change = svc.Revoke
	}
	u, err := change(ctx, opts.email, opts.role)
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.json {
		return p.json(u)
	}
	p.card("", [][2]string{{"user", u.Email}, {"roles", strings.Join(u.Roles, ", ")}})
	return nil
}

type usersBudgetOptions struct {
	email string
	limit *float64 // nil: --clear
	json  bool
}

func newUsersBudgetCmd(f *factory, runF func(context.Context, *usersBudgetOptions) error) *cobra.Command {
	opts := &usersBudgetOptions{}
	var clearIt bool
	c := &cobra.Command{
		Use:     "budget EMAIL (USD | --clear)",
		Short:   "Set a user's monthly AI budget in US dollars, or clear it (the default then applies)",
		Example: "  app users budget ada@example.com 25\n  app users budget ada@example.com --clear",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case clearIt && len(args) != 1:
				return usageError{fmt.Errorf("with --clear, give only the e-mail")}
			case !clearIt && len(args) != 2:
				return usageError{fmt.Errorf("give the e-mail and the budget in US dollars (or --clear)")}
			}
			return nonBlankEmail(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.email = args[0]
			if !clearIt {
				v, err := budget.ParseDollars(args[1])
				if err != nil {
					return usageError{fmt.Errorf("budget %w", err)}
				}
				opts.limit = &v
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withServices(cmd.Context(), f, func(s *services) error { return runUsersBudget(cmd.Context(), f, s, opts) })
		},
	}
	c.Flags().BoolVar(&clearIt, "clear", false, "remove the user's own budget")
	c.Flags().BoolVar(&opts.json, "json", false, "print the budget as JSON")
	return c
}

func runUsersBudget(ctx context.Context, f *factory, s *services, opts *usersBudgetOptions) error {
	u, err := s.UserByEmail(ctx, opts.email)
	if err != nil {
		return err
	}
	budgets, err := s.Budget(ctx)
	if err != nil {
		return err
	}
	st, err := budgets.SetLimit(ctx, u.ID, opts.limit)
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.json {
		return p.json(st)
	}
	money := func(v *float64) string {
		if v == nil {
			return "none"
		}
		return budget.Dollars(*v)
	}
	p.card("", [][2]string{
		{"user", u.Email}, {"monthly budget", money(st.Limit)}, {"spent this month", money(&st.Spent)},
		{"remaining", money(st.Remaining)}, {"resets", st.ResetsAt.Format("2006-01-02")},
	})
	return nil
}

// nonBlankFirst refuses an empty or blank first argument, called name, as a usage error: a
// variable that expanded to nothing, not a value to look for.
func nonBlankFirst(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 && strings.TrimSpace(args[0]) == "" {
			return usageError{errors.New(name + " must not be empty")}
		}
		return nil
	}
}

// nonBlankEmail refuses an empty or blank EMAIL argument.
var nonBlankEmail = nonBlankFirst("EMAIL")

// nonBlankFlags refuses any of the flags names given empty or blank, as a usage error, as
// nonBlankEmail does the argument: a flag given a variable that expanded to nothing names
// nothing, and must not quietly mean its default: `--user "$EMAIL"` every user of a listing,
// `--uri "$URI"` the app's own database, `--filter "$F"` every document.
func nonBlankFlags(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, _ []string) error {
		for _, name := range names {
			if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && strings.TrimSpace(fl.Value.String()) == "" {
				return usageError{errors.New("--" + name + " must not be empty")}
			}
		}
		return nil
	}
}

// nonBlankUserFlag refuses a --user flag given empty or blank.
var nonBlankUserFlag = nonBlankFlags("user")
