package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"

	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/templates"
)

// Ensure the templates commands parse their flags into options (dry run by default for
// migrate, not for cleanup) and refuse bad usage with a usage error.
func TestNewTemplatesCmds_Flags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		want      any
		wantUsage bool
	}{
		{"MigrateDefaultDryRun", []string{"migrate"}, templatesMigrateOptions{DryRun: true}, false},
		{"MigrateDryRunFlag", []string{"migrate", "--dry-run"}, templatesMigrateOptions{DryRun: true}, false},
		{"MigrateReal", []string{"migrate", "--dry-run=false", "--json"}, templatesMigrateOptions{JSON: true}, false},
		{"ErrMigrateBadBool", []string{"migrate", "--dry-run=maybe"}, nil, true},
		{"ErrMigrateArgs", []string{"migrate", "extra"}, nil, true},
		{"Cleanup", []string{"cleanup", "--space", "s1"}, templatesCleanupOptions{SpaceID: "s1"}, false},
		{"CleanupDry", []string{"cleanup", "--space", "s1", "--dry-run", "--json"}, templatesCleanupOptions{SpaceID: "s1", DryRun: true, JSON: true}, false},
		{"ErrCleanupNoSpace", []string{"cleanup"}, nil, true},
		{"List", []string{"list", "--widget-type", "color"}, templatesListOptions{WidgetType: "color"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got any
			f := &factory{out: &bytes.Buffer{}, errOut: &bytes.Buffer{}}
			cmd := newTemplatesCmd(f)
			cmd.RemoveCommand(cmd.Commands()...)
			cmd.AddCommand(
				newTemplatesMigrateCmd(f, func(_ context.Context, o *templatesMigrateOptions) error { got = *o; return nil }),
				newTemplatesCleanupCmd(f, func(_ context.Context, o *templatesCleanupOptions) error { got = *o; return nil }),
				newTemplatesListCmd(f, func(_ context.Context, o *templatesListOptions) error { got = *o; return nil }),
			)
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
			conventions(cmd)
			cmd.SetArgs(tt.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tt.wantUsage {
				var ue usageError
				if err == nil || !errors.As(err, &ue) {
					t.Fatalf("err=%v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("options (-want +got):\n%s", d)
			}
		})
	}
}

// Ensure `templates migrate --json` prints exactly the service's report, and the table mode
// prints the summary.
// templatesFixture is a store with one space whose database holds the given templates (by
// identifier), an empty core, and the templates service over them.
type templatesFixture struct {
	st          *store.Store
	core, space string
	spaceID     primitive.ObjectID
	svc         *templates.Service
	out         *bytes.Buffer
	f           *factory
}

func newTemplatesFixture(t *testing.T, ids ...string) *templatesFixture {
	t.Helper()
	st := storetest.Store(t)
	app, core, spaceDB := storetest.DBName(t), storetest.DBName(t), storetest.DBName(t)
	ctx := context.Background()
	oid := primitive.NewObjectID()
	if _, err := st.DB(app).Collection("spaces").InsertOne(ctx, bson.D{{Key: "_id", Value: oid}, {Key: "database", Value: spaceDB}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := st.DB(spaceDB).Collection("property_templates").InsertOne(ctx, bson.D{{Key: "id", Value: id}, {Key: "name", Value: "T " + id},
			{Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}}); err != nil {
			t.Fatal(err)
		}
	}
	out := &bytes.Buffer{}
	return &templatesFixture{st: st, core: core, space: spaceDB, spaceID: oid, out: out, f: &factory{out: out, errOut: &bytes.Buffer{}},
		svc: templates.New(templates.Options{Spaces: st.Client(), AppDatabase: app, CoreDatabase: core})}
}

func TestRunTemplatesMigrate(t *testing.T) {
	t.Parallel()
	fx := newTemplatesFixture(t, "t1")
	st, core, svc, f, ctx := fx.st, fx.core, fx.svc, fx.f, context.Background()
	out := fx.out
	if err := runTemplatesMigrate(ctx, f, svc, &templatesMigrateOptions{DryRun: true, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var rep templates.MigrationReport
	dec := json.NewDecoder(out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	rep.DurationMs = 0
	want := templates.MigrationReport{SharedDatabases: []templates.SharedDatabase{}, DryRun: true, SpacesScanned: 1, TemplatesFound: 1, UniqueTemplates: 1, Migrated: 1,
		Conflicts: []templates.Conflict{}, Errors: []templates.SpaceError{}}
	if d := cmp.Diff(want, rep); d != "" {
		t.Fatalf("--json report (-want +got):\n%s", d)
	}
	if n, _ := st.DB(core).Collection("core_property_templates").CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("a dry run wrote %d documents", n)
	}

	out.Reset()
	if err := runTemplatesMigrate(ctx, f, svc, &templatesMigrateOptions{DryRun: false}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Template migration", "Migrated", "Already in core"} {
		if !strings.Contains(out.String(), s) {
			t.Fatalf("summary lacks %q:\n%s", s, out.String())
		}
	}
	if n, _ := st.DB(core).Collection("core_property_templates").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("core holds %d documents after a real run, want 1", n)
	}
}

// Ensure `templates cleanup` reports and deletes only what core holds in the same version: a
// dry run (JSON, the HTTP answer's shape) deletes nothing, a real run (the card) deletes the
// migrated template and keeps the one core lacks and the one core holds in another version.
func TestRunTemplatesCleanup(t *testing.T) {
	t.Parallel()
	fx := newTemplatesFixture(t, "t1", "t2", "t3")
	svc, f, out, oid, ctx := fx.svc, fx.f, fx.out, fx.spaceID, context.Background()
	space := fx.st.DB(fx.space).Collection("property_templates")
	// Core keys a template by its identifier, as the migration writes it.
	if _, err := fx.st.DB(fx.core).Collection("core_property_templates").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "t1"}, {Key: "name", Value: "T t1"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}},
		bson.D{{Key: "_id", Value: "t3"}, {Key: "name", Value: "another t3"}, {Key: "widgetType", Value: "text"}, {Key: "properties", Value: bson.A{}}}}); err != nil {
		t.Fatal(err)
	}
	if err := runTemplatesCleanup(ctx, f, svc, &templatesCleanupOptions{SpaceID: oid.Hex(), DryRun: true, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var rep templates.CleanupReport
	dec := json.NewDecoder(out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	want := templates.CleanupReport{SpaceID: oid.Hex(), DryRun: true, Deleted: 1, KeptNotInCore: []string{"t2"}, KeptDifferent: []string{"t3"}}
	if d := cmp.Diff(want, rep); d != "" {
		t.Fatalf("--json report (-want +got):\n%s", d)
	}
	if n, _ := space.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Fatalf("a dry run left %d of 3 documents", n)
	}

	out.Reset()
	if err := runTemplatesCleanup(ctx, f, svc, &templatesCleanupOptions{SpaceID: oid.Hex()}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Space template cleanup", "Deleted", "Kept (not in core)", "t2", "Kept (differs from core)", "t3"} {
		if !strings.Contains(out.String(), s) {
			t.Fatalf("summary lacks %q:\n%s", s, out.String())
		}
	}
	var left []struct {
		ID string `bson:"id"`
	}
	cur, err := space.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &left); err != nil || len(left) != 2 || left[0].ID != "t2" || left[1].ID != "t3" {
		t.Fatalf("the space holds %+v (%v) after the cleanup, want t2 and t3", left, err)
	}
	// Unknown space: NotFound, nothing printed.
	out.Reset()
	if err := runTemplatesCleanup(ctx, f, svc, &templatesCleanupOptions{SpaceID: primitive.NewObjectID().Hex()}); err == nil || out.Len() != 0 {
		t.Fatalf("an unknown space: err %v, printed %q", err, out.String())
	}
}

// Ensure a template with a timestamp outside the years 0 to 9999 neither breaks `templates list
// --json` (core holds one) nor migrates: `templates migrate` lists it with its space and id.
func TestRunTemplates_OutOfRangeTimestamp(t *testing.T) {
	t.Parallel()
	fx := newTemplatesFixture(t)
	ctx := context.Background()
	far := primitive.NewDateTimeFromTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	doc := func(idKey string) bson.D {
		return bson.D{{Key: idKey, Value: "far"}, {Key: "name", Value: "Far"}, {Key: "widgetType", Value: "w"},
			{Key: "properties", Value: bson.A{}}, {Key: "updatedAt", Value: far}}
	}
	if _, err := fx.st.DB(fx.core).Collection("core_property_templates").InsertOne(ctx, doc("_id")); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.st.DB(fx.space).Collection("property_templates").InsertOne(ctx, doc("id")); err != nil {
		t.Fatal(err)
	}
	if err := runTemplatesList(ctx, fx.f, fx.svc, &templatesListOptions{JSON: true}); err != nil {
		t.Fatalf("list --json: %v", err)
	}
	var got []map[string]any
	if err := json.Unmarshal(fx.out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"id": "far", "name": "Far", "widgetType": "w", "properties": []any{}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("list --json (-want +got):\n%s", d)
	}
	fx.out.Reset()
	if err := runTemplatesMigrate(ctx, fx.f, fx.svc, &templatesMigrateOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fx.spaceID.Hex(), "far", "updatedAt must be a date between the years 0 and 9999"} {
		if !strings.Contains(fx.out.String(), s) {
			t.Fatalf("migrate summary lacks %q:\n%s", s, fx.out.String())
		}
	}
}

// Ensure the tables and cards of the templates commands show a stored text's control and
// bidirectional characters escaped, never raw: a template id is any user's input (through the
// API, or a space's data), and an escape sequence printed as is would act on the operator's
// terminal (set its title, write its clipboard, rewrite the line) or reorder what it shows.
// --json is unchanged: JSON escapes them itself.
func TestRunTemplates_ControlCharactersEscaped(t *testing.T) {
	t.Parallel()
	ids := []string{"evil\x1b]0;pwned\x07", "cr\rOK", "rtl\u202egpj.exe", "c1\u009b31m"}
	fx := newTemplatesFixture(t, ids...)
	ctx := context.Background()
	raw := []string{"\x1b", "\x07", "\r", "\u202e", "\u009b"}
	shown := []string{`evil\x1b]0;pwned\x07`, `cr\rOK`, `rtl\u202egpj.exe`, `c1\u009b31m`}
	runs := []struct {
		name string
		run  func() error
	}{
		{"MigrateDryRun", func() error {
			return runTemplatesMigrate(ctx, fx.f, fx.svc, &templatesMigrateOptions{DryRun: true})
		}},
		{"CleanupBeforeMigration", func() error {
			return runTemplatesCleanup(ctx, fx.f, fx.svc, &templatesCleanupOptions{SpaceID: fx.spaceID.Hex(), DryRun: true})
		}},
		{"ListAfterMigration", func() error {
			if _, err := fx.svc.Migrate(ctx, templates.MigrateOptions{}); err != nil {
				return err
			}
			return runTemplatesList(ctx, fx.f, fx.svc, &templatesListOptions{})
		}},
	}
	for _, r := range runs {
		fx.out.Reset()
		if err := r.run(); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		got := fx.out.String()
		for _, c := range raw {
			if strings.Contains(got, c) {
				t.Fatalf("%s: output holds the raw character %q:\n%q", r.name, c, got)
			}
		}
		if r.name == "MigrateDryRun" { // the summary names no template: nothing conflicts or fails
			continue
		}
		for _, s := range shown {
			if !strings.Contains(got, s) {
				t.Fatalf("%s: output lacks %s:\n%s", r.name, s, got)
			}
		}
	}
	fx.out.Reset()
	if err := runTemplatesList(ctx, fx.f, fx.svc, &templatesListOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	var list []templates.Template
	if err := json.Unmarshal(fx.out.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, tpl := range list {
		gotIDs = append(gotIDs, tpl.ID)
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if d := cmp.Diff(want, gotIDs); d != "" {
		t.Fatalf("list --json ids (-want +got):\n%s", d)
	}
}
