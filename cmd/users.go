package cmd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/auth"
)

func newUsersCmd(f *factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "users",
		Short: "List users and grant or revoke roles",
	}
	c.AddCommand(newUsersListCmd(f, nil), newUsersRoleCmd(f, "grant", nil), newUsersRoleCmd(f, "revoke", nil))
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
			return withServices(cmd.Context(), f, func(s *services) error { return runUsersList(cmd.Context(), f, s.auth, opts) })
		},
	}
	c.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return c
}

func runUsersList(ctx context.Context, f *factory, svc *auth.Service, opts *usersListOptions) error {
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
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.email, opts.role = args[0], args[1]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withServices(cmd.Context(), f, func(s *services) error {
				return runUsersRole(cmd.Context(), f, s.auth, verb, opts)
			})
		},
	}
	c.Flags().BoolVar(&opts.json, "json", false, "print the updated user as JSON")
	return c
}

func runUsersRole(ctx context.Context, f *factory, svc *auth.Service, verb string, opts *usersRoleOptions) error {
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
