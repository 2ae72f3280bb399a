package demo_test

import (
	"context"
	"testing"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/demo"
	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/templates"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// Ensure the demo set loads through the services, a second load changes nothing, both
// accounts log in (the admin with role admin), and a migration dry run over it shows an
// overlap that is not a conflict, a conflict and a template core already holds.
func TestLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Store(t)
	app := storetest.DB(t)
	core := storetest.DBName(t)
	prefix := app.Name() + "_"
	authSvc, err := auth.New(ctx, app, auth.NewTokens([]byte("test-secret-test-secret-test-secret!"), 0), 4)
	if err != nil {
		t.Fatal(err)
	}
	tpl := templates.New(templates.Options{Spaces: st.Client(), AppDatabase: app.Name(), CoreDatabase: core})
	deps := demo.Deps{Auth: authSvc, Templates: tpl, App: app, Spaces: st.Client(), DatabasePrefix: prefix}
	t.Cleanup(func() {
		for _, sp := range demo.Data().Spaces {
			_ = st.DB(prefix + "space_" + sp.ID).Drop(context.Background())
		}
	})

	first, err := demo.Load(ctx, deps)
	if err != nil {
		t.Fatal(err)
	}
	if first.UsersCreated != 2 || first.CoreCreated != 2 || first.Spaces != 3 || first.SpaceTemplates != 7 {
		t.Fatalf("first load: %+v", first)
	}
	second, err := demo.Load(ctx, deps)
	if err != nil {
		t.Fatal(err)
	}
	if second.UsersCreated != 0 || second.UsersExisting != 2 || second.CoreCreated != 0 || second.CoreExisting != 2 {
		t.Fatalf("second load: %+v", second)
	}
	for _, tc := range []struct {
		email, password string
		admin           bool
	}{{"admin@example.com", "admin123", true}, {"user@example.com", "user123", false}} {
		res, err := authSvc.Login(ctx, auth.LoginInput{Email: tc.email, Password: tc.password})
		if err != nil {
			t.Fatalf("login %s: %v", tc.email, err)
		}
		isAdmin := false
		for _, r := range res.User.Roles {
			isAdmin = isAdmin || r == "admin"
		}
		if isAdmin != tc.admin {
			t.Errorf("%s roles %v, admin want %v", tc.email, res.User.Roles, tc.admin)
		}
	}

	rep, err := tpl.Migrate(ctx, templates.MigrateOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SpacesScanned != 3 || rep.TemplatesFound != 7 || rep.UniqueTemplates != 5 || rep.Migrated != 4 || rep.AlreadyInCore != 1 {
		t.Errorf("report %+v", rep)
	}
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].ID != "colour" || rep.Conflicts[0].ChosenFrom != "65f000000000000000000002" {
		t.Errorf("conflicts %+v, want only colour chosen from the newer space 2", rep.Conflicts)
	}
}
