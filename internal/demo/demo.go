// Package demo is the documented demo data set: two accounts, core templates and a few spaces
// whose own templates overlap (identical copies) and conflict (different versions of one id),
// so that the template migration has something to show. `app dev seed` loads it into the
// embedded store of a data directory; the built-in mock of `app mock serve` starts with it.
//
// Accounts and core templates go through the services (auth.Service.Register and Grant,
// templates.Service.Create), so they are stored exactly as the API stores them. Spaces and
// their templates are the legacy data the migration reads; no service writes them, so they
// are written to the databases directly. Loading is idempotent: what exists is left alone.
package demo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/templates"
)

//go:embed demo.json
var dataJSON []byte

// User is a demo account.
type User struct {
	Email    string   `json:"email"`
	Password string   `json:"password"`
	Name     string   `json:"name"`
	Roles    []string `json:"roles,omitempty"` // beyond "user"
}

// Space is a demo space and the templates stored in its own database.
type Space struct {
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Templates []json.RawMessage `json:"templates"`
}

// Set is the whole demo data set.
type Set struct {
	Users         []User            `json:"users"`
	CoreTemplates []json.RawMessage `json:"coreTemplates"`
	Spaces        []Space           `json:"spaces"`
}

// Data returns the demo data set (a fresh copy).
func Data() Set {
	var s Set
	if err := json.Unmarshal(dataJSON, &s); err != nil {
		panic("demo: demo.json: " + err.Error()) // embedded at build time; a test reads it
	}
	return s
}

// Deps are what Load writes through.
type Deps struct {
	Auth      *auth.Service
	Templates *templates.Service
	// App is the application database (mongodb.database), which holds `spaces`.
	App *mongo.Database
	// Spaces is the client of the cluster holding the space databases.
	Spaces *mongo.Client
	// DatabasePrefix names each space's database: prefix + "space_" + id when set (tests keep
	// their spaces apart with it); empty leaves the `database` field unset (space_<id>).
	DatabasePrefix string
}

// Report says what Load wrote and what it found in place.
type Report struct {
	UsersCreated     int               `json:"usersCreated"`
	UsersExisting    int               `json:"usersExisting"`
	CoreCreated      int               `json:"coreTemplatesCreated"`
	CoreExisting     int               `json:"coreTemplatesExisting"`
	Spaces           int               `json:"spaces"`
	SpaceTemplates   int               `json:"spaceTemplates"`
	SpacesDatabaseOf map[string]string `json:"spaceDatabases"` // space id → database name
}

// Load writes the demo data set. It is idempotent: existing accounts and core templates are
// kept as they are; spaces and space templates are upserted by id.
func Load(ctx context.Context, d Deps) (*Report, error) {
	set := Data()
	rep := &Report{SpacesDatabaseOf: map[string]string{}}
	for _, u := range set.Users {
		_, err := d.Auth.Register(ctx, auth.RegisterInput{Email: u.Email, Password: u.Password, Name: u.Name})
		switch {
		case err == nil:
			rep.UsersCreated++
		case apperr.KindOf(err) == apperr.Conflict:
			rep.UsersExisting++
		default:
			return rep, fmt.Errorf("demo: register %s: %w", u.Email, err)
		}
		for _, role := range u.Roles {
			if _, err := d.Auth.Grant(ctx, u.Email, role); err != nil {
				return rep, fmt.Errorf("demo: grant %s to %s: %w", role, u.Email, err)
			}
		}
	}
	for _, raw := range set.CoreTemplates {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return rep, fmt.Errorf("demo: core template: %w", err)
		}
		in, err := templates.DecodeInput(fields)
		if err != nil {
			return rep, fmt.Errorf("demo: core template: %w", err)
		}
		_, err = d.Templates.Create(ctx, in)
		switch {
		case err == nil:
			rep.CoreCreated++
		case apperr.KindOf(err) == apperr.Conflict:
			rep.CoreExisting++
		default:
			return rep, fmt.Errorf("demo: core template %s: %w", in.ID, err)
		}
	}
	for _, sp := range set.Spaces {
		if err := loadSpace(ctx, d, sp, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// loadSpace upserts the space document and its templates.
func loadSpace(ctx context.Context, d Deps, sp Space, rep *Report) error {
	oid, err := primitive.ObjectIDFromHex(sp.ID)
	if err != nil {
		return fmt.Errorf("demo: space id %q: %w", sp.ID, err)
	}
	doc := bson.D{{Key: "_id", Value: oid}, {Key: "name", Value: sp.Name}}
	dbName := "space_" + sp.ID
	if d.DatabasePrefix != "" {
		dbName = d.DatabasePrefix + dbName
		doc = append(doc, bson.E{Key: "database", Value: dbName})
	}
	up := options.Replace().SetUpsert(true)
	if _, err := d.App.Collection(templates.SpacesCollection).ReplaceOne(ctx, bson.D{{Key: "_id", Value: oid}}, doc, up); err != nil {
		return fmt.Errorf("demo: space %s: %w", sp.ID, err)
	}
	rep.Spaces++
	rep.SpacesDatabaseOf[sp.ID] = dbName
	coll := d.Spaces.Database(dbName).Collection(templates.SpaceCollection)
	for _, raw := range sp.Templates {
		tdoc, id, err := spaceTemplate(raw)
		if err != nil {
			return fmt.Errorf("demo: space %s: %w", sp.ID, err)
		}
		if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, tdoc, up); err != nil {
			return fmt.Errorf("demo: space %s template %s: %w", sp.ID, id, err)
		}
		rep.SpaceTemplates++
	}
	return nil
}

// spaceTemplate turns a template of demo.json into the legacy space document: `_id` and `id`
// the identifier, the fields in file order, `updatedAt` (and `createdAt`, the same) as dates.
func spaceTemplate(raw json.RawMessage) (bson.D, string, error) {
	var doc bson.D
	if err := bson.UnmarshalExtJSON(bytes.TrimSpace(raw), false, &doc); err != nil {
		return nil, "", fmt.Errorf("template: %w", err)
	}
	var id string
	out := bson.D{{Key: "_id"}}
	for _, e := range doc {
		switch e.Key {
		case "id":
			id, _ = e.Value.(string)
			out = append(out, e)
		case "updatedAt":
			s, _ := e.Value.(string)
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return nil, "", fmt.Errorf("template %s: updatedAt: %w", id, err)
			}
			out = append(out, bson.E{Key: "createdAt", Value: t}, bson.E{Key: "updatedAt", Value: t})
		default:
			out = append(out, e)
		}
	}
	if id == "" {
		return nil, "", fmt.Errorf("a template has no id")
	}
	out[0].Value = id
	return out, id, nil
}
