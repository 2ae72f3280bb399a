package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acme/app/internal/config"
	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/templates"
)

// embeddedListCacheTTL is how long template lists are kept in memory when this process runs
// the embedded store (see newTemplatesService).
const embeddedListCacheTTL = time.Second

// newTemplatesService builds the template service. The core database is on the application
// store's client unless core.uri names another deployment, in which case it gets its own client
// (lazy: a core that is down does not stop the program; reads fall back to the spaces).
func newTemplatesService(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (*templates.Service, func(context.Context) error, error) {
	core := st.Client()
	closeCore := func(context.Context) error { return nil }
	if cfg.Core.URI != "" && cfg.Core.URI != st.URI() && cfg.Core.URI != cfg.MongoDB.URI {
		c, err := store.Connect(ctx, cfg.Core.URI)
		if err != nil {
			return nil, nil, fmt.Errorf("core.uri: %w", err)
		}
		core, closeCore = c, c.Disconnect
	}
	opts := templates.Options{
		Spaces: st.Client(), AppDatabase: cfg.MongoDB.Database,
		Core: core, CoreDatabase: cfg.Core.Database,
		Logger: log,
	}
	if st.Embedded() && core == st.Client() {
		// This process runs the store, so its writes are core's writes: lists can be kept in
		// memory. An operator command sharing the store writes behind it; its changes show
		// within the TTL.
		opts.ListCacheTTL = embeddedListCacheTTL
	}
	svc := templates.New(opts)
	return svc, closeCore, nil
}

func newTemplatesCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "templates",
		Short: "Property templates: migrate space templates to core, clean up spaces, list",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTemplatesMigrateCmd(f, nil), newTemplatesCleanupCmd(f, nil), newTemplatesListCmd(f, nil))
	return cmd
}

// templatesRunE is a templates command's RunE: check (when set) refuses bad usage, then runF
// (tests) or run with the templates service receives the parsed options.
func templatesRunE[O any](f *factory, opts *O, check func() error, runF func(context.Context, *O) error,
	run func(context.Context, *factory, *templates.Service, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		if runF != nil {
			return runF(cmd.Context(), opts)
		}
		return withServices(cmd.Context(), f, func(s *services) error {
			svc, err := s.Templates(cmd.Context())
			if err != nil {
				return err
			}
			return run(cmd.Context(), f, svc, opts)
		})
	}
}

// ---- migrate ------------------------------------------------------------------------------

type templatesMigrateOptions struct {
	DryRun bool
	JSON   bool
}

func newTemplatesMigrateCmd(f *factory, runF func(context.Context, *templatesMigrateOptions) error) *cobra.Command {
	opts := &templatesMigrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Copy every space's templates into core, deduplicated (a dry run unless --dry-run=false)",
		Args:  cobra.NoArgs,
		RunE:  templatesRunE(f, opts, nil, runF, runTemplatesMigrate),
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", true, "report what would be migrated and write nothing (--dry-run=false copies)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON (the HTTP answer's shape)")
	return cmd
}

func runTemplatesMigrate(ctx context.Context, f *factory, svc *templates.Service, opts *templatesMigrateOptions) error {
	mo := templates.MigrateOptions{DryRun: opts.DryRun}
	var bar *progressBar
	if isTerminal(f.errOut) {
		bar = &progressBar{w: f.stderr, label: "space databases"}
		mo.Progress = bar.set
	}
	rep, err := svc.Migrate(ctx, mo)
	bar.finish()
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.JSON {
		return p.json(rep)
	}
	title, verb := "Template migration", "Migrated"
	if rep.DryRun {
		title, verb = "Template migration (dry run: nothing written)", "Would migrate"
	}
	p.title(title)
	p.table([]string{"", "count"}, [][]string{
		{"Spaces scanned", strconv.Itoa(rep.SpacesScanned)},
		{"Templates found", strconv.Itoa(rep.TemplatesFound)},
		{"Unique templates", strconv.Itoa(rep.UniqueTemplates)},
		{verb, strconv.Itoa(rep.Migrated)},
		{"Already in core", strconv.Itoa(rep.AlreadyInCore)},
		{"Conflicts", strconv.Itoa(len(rep.Conflicts))},
		{"Errors", strconv.Itoa(len(rep.Errors))},
		{"Duration", (time.Duration(rep.DurationMs) * time.Millisecond).String()},
	})
	if len(rep.Conflicts) > 0 {
		p.title("Conflicts (different versions of one id; the newest by updatedAt is kept)")
		rows := make([][]string, len(rep.Conflicts))
		for i, c := range rep.Conflicts {
			rows[i] = []string{c.ID, c.ChosenFrom, strings.Join(c.Spaces, ", ")}
		}
		p.table([]string{"id", "chosen from", "spaces"}, rows)
	}
	if len(rep.SharedDatabases) > 0 {
		p.title("Shared databases (several spaces name one; it is scanned once)")
		rows := make([][]string, len(rep.SharedDatabases))
		for i, d := range rep.SharedDatabases {
			rows[i] = []string{d.Database, strings.Join(d.Spaces, ", ")}
		}
		p.table([]string{"database", "spaces"}, rows)
	}
	if len(rep.Errors) > 0 {
		p.title("Errors (spaces not scanned, templates not migrated)")
		rows := make([][]string, len(rep.Errors))
		for i, e := range rep.Errors {
			tpl := e.TemplateID
			if tpl == "" {
				tpl = "(whole space)"
			}
			rows[i] = []string{e.SpaceID, tpl, e.Message}
		}
		p.table([]string{"space", "template", "error"}, rows)
	}
	if rep.DryRun {
		fmt.Fprintln(f.out, "Run `app templates migrate --dry-run=false` to copy.")
	}
	return nil
}

// progressBar draws "[#####.....] 12/200 spaces" on a terminal. A nil bar draws nothing. Its
// writer ends the bar's line before any other line (a log line) is written.
type progressBar struct {
	w     *lineGuard
	label string
}

func (b *progressBar) set(done, total int) {
	const width = 30
	filled := width
	if total > 0 {
		filled = min(done*width/total, width)
	}
	b.w.progress(fmt.Sprintf("[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, b.label))
}

func (b *progressBar) finish() {
	if b != nil {
		b.w.endLine()
	}
}

// ---- cleanup ------------------------------------------------------------------------------

type templatesCleanupOptions struct {
	SpaceID string
	DryRun  bool
	JSON    bool
}

func newTemplatesCleanupCmd(f *factory, runF func(context.Context, *templatesCleanupOptions) error) *cobra.Command {
	opts := &templatesCleanupOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup --space ID",
		Short: "Delete a space's templates that core holds in the same version (the others are kept and listed)",
		Args:  cobra.NoArgs,
		RunE: templatesRunE(f, opts, func() error {
			if strings.TrimSpace(opts.SpaceID) == "" {
				return usageError{fmt.Errorf("--space is required")}
			}
			return nil
		}, runF, runTemplatesCleanup),
	}
	cmd.Flags().StringVar(&opts.SpaceID, "space", "", "the space's id (required)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "report what would be deleted and delete nothing")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON (the HTTP answer's shape)")
	return cmd
}

func runTemplatesCleanup(ctx context.Context, f *factory, svc *templates.Service, opts *templatesCleanupOptions) error {
	rep, err := svc.Cleanup(ctx, templates.CleanupOptions{SpaceID: opts.SpaceID, DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.JSON {
		return p.json(rep)
	}
	verb := "Deleted"
	if rep.DryRun {
		verb = "Would delete"
	}
	list := func(ids []string) string {
		if len(ids) == 0 {
			return "none"
		}
		return strings.Join(ids, ", ")
	}
	p.card("Space template cleanup", [][2]string{
		{"Space", rep.SpaceID},
		{"Dry run", strconv.FormatBool(rep.DryRun)},
		{verb, strconv.Itoa(rep.Deleted)},
		{"Kept (not in core)", list(rep.KeptNotInCore)},
		{"Kept (differs from core)", list(rep.KeptDifferent)},
	})
	return nil
}

// ---- list ---------------------------------------------------------------------------------

type templatesListOptions struct {
	WidgetType string
	SpaceID    string
	JSON       bool
}

func newTemplatesListCmd(f *factory, runF func(context.Context, *templatesListOptions) error) *cobra.Command {
	opts := &templatesListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the templates in core (or a space's own, with --space, when core is down)",
		Args:  cobra.MatchAll(cobra.NoArgs, nonBlankFlags("space", "widget-type")),
		RunE:  templatesRunE(f, opts, nil, runF, runTemplatesList),
	}
	cmd.Flags().StringVar(&opts.WidgetType, "widget-type", "", "only templates of this widget type")
	cmd.Flags().StringVar(&opts.SpaceID, "space", "", "space to read from when core is unavailable")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the templates as JSON (the HTTP answer's shape)")
	return cmd
}

func runTemplatesList(ctx context.Context, f *factory, svc *templates.Service, opts *templatesListOptions) error {
	ts, src, err := svc.List(ctx, opts.SpaceID, opts.WidgetType)
	if err != nil {
		return err
	}
	p := f.printer()
	if opts.JSON {
		return p.json(ts)
	}
	p.title(fmt.Sprintf("%s (from %s)", count(len(ts), "template"), src))
	rows := make([][]string, len(ts))
	for i, t := range ts {
		updated := ""
		if t.UpdatedAt != nil {
			updated = t.UpdatedAt.Format(time.RFC3339)
		}
		rows[i] = []string{t.ID, t.Name, t.WidgetType, strconv.Itoa(len(t.Properties)), updated}
	}
	p.table([]string{"id", "name", "widget type", "properties", "updated"}, rows)
	return nil
}
