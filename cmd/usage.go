package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/usage"
)

func newUsageCmd(f *factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "usage",
		Short: "Report AI usage per provider and model, and reconcile its daily rollup",
	}
	c.AddCommand(newUsageReportCmd(f, nil), newUsageReconcileCmd(f))
	return c
}

type usageReconcileOptions struct {
	days int
	json bool
}

func newUsageReconcileCmd(f *factory) *cobra.Command {
	opts := &usageReconcileOptions{}
	c := &cobra.Command{
		Use:   "reconcile",
		Short: "Rebuild the daily usage rollup of the last N UTC days from the request log",
		Long: "Rebuild the daily usage rollup of the last N UTC calendar days (today included) from the log of\n" +
			"AI requests, and print the rollup documents it rewrote with their totals before and after.\n" +
			"Run it after a crash (kill -9, power loss) or when the log reports a rollup update it could not\n" +
			"make. Days in the past are safe beside a running server; for today, stop it or run twice.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := usage.CheckDays(opts.days); err != nil {
				return usageError{fmt.Errorf("--days: %s", strings.Join(apperr.As(err).Messages, "; "))}
			}
			return withServices(cmd.Context(), f, func(s *services) error {
				us, err := s.Usage(cmd.Context())
				if err != nil {
					return err
				}
				res, err := us.Reconcile(cmd.Context(), opts.days)
				if err != nil {
					return err
				}
				p := f.printer()
				if opts.json {
					return p.json(res)
				}
				p.title(fmt.Sprintf("Usage rollup reconciled, %s to %s (UTC, %s): %s checked, %d rewritten",
					res.From, res.To, count(res.Days, "day"), count(res.Checked, "document"), len(res.Changes)))
				if len(res.Changes) == 0 {
					return nil
				}
				rows := make([][]string, 0, len(res.Changes))
				for _, ch := range res.Changes {
					rows = append(rows, []string{ch.Day, ch.UserID,
						strconv.FormatInt(ch.Before.TotalRequests, 10) + " -> " + strconv.FormatInt(ch.After.TotalRequests, 10),
						strconv.FormatInt(ch.Before.TotalTokens, 10) + " -> " + strconv.FormatInt(ch.After.TotalTokens, 10),
						formatCost(ch.Before.TotalCost) + " -> " + formatCost(ch.After.TotalCost),
						formatCost(ch.UnansweredBefore) + " -> " + formatCost(ch.UnansweredAfter)})
				}
				p.table([]string{"DAY", "USER", "REQUESTS", "TOKENS", "COST (USD)", "UNANSWERED (USD)"}, rows)
				return nil
			})
		},
	}
	c.Flags().IntVar(&opts.days, "days", 7, "last N UTC calendar days, today included (1-366)")
	c.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return c
}

type usageReportOptions struct {
	days int
	user string // e-mail; empty: every user
	json bool
}

func newUsageReportCmd(f *factory, runF func(context.Context, *usageReportOptions) error) *cobra.Command {
	opts := &usageReportOptions{}
	c := &cobra.Command{
		Use:   "report",
		Short: "Usage per provider and model over the last N UTC days, with totals",
		Long: "Usage per provider and model over the last N UTC calendar days (today included), read from the\n" +
			"daily rollup, for every user or one (--user EMAIL). --json prints the report as JSON.",
		Args: cobra.MatchAll(cobra.NoArgs, nonBlankUserFlag),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := usage.CheckDays(opts.days); err != nil {
				return usageError{fmt.Errorf("--days: %s", strings.Join(apperr.As(err).Messages, "; "))}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return withServices(cmd.Context(), f, func(s *services) error {
				return runUsageReport(cmd.Context(), f, s, opts)
			})
		},
	}
	c.Flags().IntVar(&opts.days, "days", usage.DefaultDays, "last N UTC calendar days, today included (1-366)")
	c.Flags().StringVar(&opts.user, "user", "", "only this user (e-mail)")
	c.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return c
}

func runUsageReport(ctx context.Context, f *factory, s *services, opts *usageReportOptions) error {
	ro := usage.ReportOptions{Days: opts.days}
	if opts.user != "" {
		u, err := s.UserByEmail(ctx, opts.user)
		if err != nil {
			return err
		}
		ro.UserID, ro.User = u.ID, opts.user
	}
	svc, err := s.Usage(ctx)
	if err != nil {
		return err
	}
	rep, err := svc.Report(ctx, ro)
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.json {
		return p.json(rep)
	}
	who := "all users"
	if rep.User != "" {
		who = rep.User
	}
	p.title(fmt.Sprintf("AI usage, %s to %s (UTC, %s), %s", rep.From, rep.To, count(rep.Days, "day"), who))
	rows := make([][]string, 0, len(rep.Rows)+1)
	for _, r := range rep.Rows {
		rows = append(rows, []string{r.Provider, r.Model, strconv.FormatInt(r.RequestCount, 10),
			strconv.FormatInt(r.TotalTokens, 10), formatCost(r.Cost)})
	}
	t := rep.Totals
	rows = append(rows, []string{"TOTAL", "", strconv.FormatInt(t.TotalRequests, 10), strconv.FormatInt(t.TotalTokens, 10),
		formatCost(t.TotalCost)})
	p.table([]string{"PROVIDER", "MODEL", "REQUESTS", "TOKENS", "COST (USD)"}, rows)
	return nil
}

func formatCost(c float64) string {
	return "$" + strconv.FormatFloat(c, 'f', 6, 64)
}

// count words a number of things, the noun in the singular for one: "1 day", "7 days".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
