package templates_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/store/storetest"
	"github.com/acme/app/internal/templates"
)

const (
	benchSpaces    = 200
	benchPerSpace  = 50
	benchUnique    = benchSpaces * benchPerSpace / 2 // every id is held by two spaces
	benchBlockSize = benchPerSpace / 2
)

func benchTemplate(id int, now time.Time) bson.D {
	return bson.D{{Key: "id", Value: fmt.Sprintf("tpl-%05d", id)}, {Key: "name", Value: fmt.Sprintf("Template %d", id)},
		{Key: "widgetType", Value: "text"},
		{Key: "properties", Value: bson.A{bson.D{{Key: "key", Value: "label"}, {Key: "type", Value: "string"}}}},
		{Key: "createdAt", Value: now}, {Key: "updatedAt", Value: now}}
}

// BenchmarkMigrate compares a migration of 200 spaces × 50 templates (10,000 documents, every
// id in two spaces, so 5,000 unique) with a plain unordered insertMany of the 5,000 unique
// documents into an empty collection, in the same run. The bar: migrate ≤ 2× insertMany.
// "ratio" runs insert, migrate and a bare read of the 10,000 documents in turn, so that load
// from elsewhere on a shared machine hits all three alike.
func BenchmarkMigrate(b *testing.B) {
	st := storetest.Store(b)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	app, core := storetest.DBName(b), storetest.DBName(b)

	spaces := make([]any, benchSpaces)
	for s := range benchSpaces {
		db := storetest.DBName(b)
		spaces[s] = bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "database", Value: db}}
		docs := make([]any, 0, benchPerSpace)
		for i := range benchPerSpace { // blocks s and s+1 (mod): each block lands in two spaces
			docs = append(docs, benchTemplate((s*benchBlockSize+i)%benchUnique, now))
		}
		if _, err := st.DB(db).Collection(templates.SpaceCollection).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.DB(app).Collection(templates.SpacesCollection).InsertMany(ctx, spaces); err != nil {
		b.Fatal(err)
	}
	unique := make([]any, benchUnique)
	for i := range benchUnique {
		d := benchTemplate(i, now)
		d[0] = bson.E{Key: "_id", Value: d[0].Value}
		unique[i] = d
	}
	drop := func(b *testing.B, c *mongo.Collection) {
		b.StopTimer()
		if err := c.Drop(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}

	b.Run("insertMany-5000-unique", func(b *testing.B) {
		coll := st.DB(storetest.DBName(b)).Collection("plain")
		for range b.N {
			drop(b, coll)
			if _, err := coll.InsertMany(ctx, unique, options.InsertMany().SetOrdered(false)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("migrate-200x50", func(b *testing.B) {
		svc := templates.New(templates.Options{Spaces: st.Client(), AppDatabase: app, CoreDatabase: core})
		coll := st.DB(core).Collection(templates.CoreCollection)
		for range b.N {
			drop(b, coll)
			rep, err := svc.Migrate(ctx, templates.MigrateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if rep.Migrated != benchUnique || rep.TemplatesFound != benchSpaces*benchPerSpace {
				b.Fatalf("report %+v", rep)
			}
		}
	})
	// The floor: only reading the 10,000 space documents, 4 databases at a time as Migrate
	// does, and nothing else. No migration on this store can take less; "floor" reports it
	// over insertMany in the same interleaved run as "ratio" reports migrate over insertMany.
	dbs := make([]string, benchSpaces)
	for i, sp := range spaces {
		dbs[i] = sp.(bson.D)[1].Value.(string)
	}
	readAll := func(b *testing.B) {
		work := make(chan string)
		var wg sync.WaitGroup
		var n atomic.Int64
		for range 4 {
			wg.Go(func() {
				for db := range work {
					cur, err := st.DB(db).Collection(templates.SpaceCollection).Find(ctx, bson.D{})
					if err != nil {
						b.Error(err)
						continue
					}
					for cur.Next(ctx) {
						n.Add(1)
					}
					_ = cur.Close(ctx)
				}
			})
		}
		for _, db := range dbs {
			work <- db
		}
		close(work)
		wg.Wait()
		if n.Load() != benchSpaces*benchPerSpace {
			b.Fatalf("read %d documents", n.Load())
		}
	}
	b.Run("ratio", func(b *testing.B) {
		plain := st.DB(storetest.DBName(b)).Collection("plain")
		svc := templates.New(templates.Options{Spaces: st.Client(), AppDatabase: app, CoreDatabase: core})
		coreColl := st.DB(core).Collection(templates.CoreCollection)
		var insert, migrate, floor time.Duration
		for range b.N {
			drop(b, plain)
			t := time.Now()
			if _, err := plain.InsertMany(ctx, unique, options.InsertMany().SetOrdered(false)); err != nil {
				b.Fatal(err)
			}
			insert += time.Since(t)
			drop(b, coreColl)
			t = time.Now()
			if _, err := svc.Migrate(ctx, templates.MigrateOptions{}); err != nil {
				b.Fatal(err)
			}
			migrate += time.Since(t)
			t = time.Now()
			readAll(b)
			floor += time.Since(t)
		}
		b.ReportMetric(float64(migrate)/float64(insert), "migrate/insert")
		b.ReportMetric(float64(floor)/float64(insert), "read-floor/insert")
	})
	b.Run("migrate-200x50-dry-run", func(b *testing.B) {
		svc := templates.New(templates.Options{Spaces: st.Client(), AppDatabase: app, CoreDatabase: storetest.DBName(b)})
		for range b.N {
			if _, err := svc.Migrate(ctx, templates.MigrateOptions{DryRun: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
