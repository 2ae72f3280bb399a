package templates_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/bson"

	"github.com/acme/app/internal/templates"
)

// clock is a settable time for the list cache's expiry.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (e *env) listNames(t *testing.T, widgetType string) []string {
	t.Helper()
	ts, src, err := e.svc.List(context.Background(), "", widgetType)
	if err != nil || src != templates.SourceCore {
		t.Fatalf("List(%q): source %q, err %v", widgetType, src, err)
	}
	names := []string{}
	for _, tpl := range ts {
		names = append(names, tpl.ID+"="+tpl.Name)
	}
	return names
}

// insertBehind writes a template into core without the service, as another process would.
func (e *env) insertBehind(t *testing.T, id, name, widgetType string) {
	t.Helper()
	doc := bson.D{{Key: "_id", Value: id}, {Key: "name", Value: name}, {Key: "widgetType", Value: widgetType}, {Key: "properties", Value: bson.A{}}}
	if _, err := e.client.Database(e.core).Collection(templates.CoreCollection).InsertOne(context.Background(), doc); err != nil {
		t.Fatal(err)
	}
}

// Ensure lists are answered from memory until they expire, and that every write through the
// service (create, update, delete, migrate) shows in the very next list.
func TestList_Cache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name  string
		write func(t *testing.T, e *env)
		want  []string
	}{
		{"Create", func(t *testing.T, e *env) {
			if _, err := e.svc.Create(ctx, input(t, `{"id":"c","name":"C","widgetType":"text","properties":[]}`)); err != nil {
				t.Fatal(err)
			}
		}, []string{"a=A", "b=B", "c=C"}},
		{"Update", func(t *testing.T, e *env) {
			if _, err := e.svc.Update(ctx, "a", input(t, `{"name":"A2","widgetType":"text","properties":[]}`)); err != nil {
				t.Fatal(err)
			}
		}, []string{"a=A2", "b=B"}},
		{"Delete", func(t *testing.T, e *env) {
			if _, err := e.svc.Delete(ctx, "a"); err != nil {
				t.Fatal(err)
			}
		}, []string{"b=B"}},
		{"Migrate", func(t *testing.T, e *env) {
			e.seedSpace(t, "", tdoc("m", "M", time.Now()))
			if _, err := e.svc.Migrate(ctx, templates.MigrateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, []string{"a=A", "b=B", "m=M"}},
		{"FailedCreate", func(t *testing.T, e *env) { // a conflict writes nothing, and drops nothing it must keep
			if _, err := e.svc.Create(ctx, input(t, `{"id":"a","name":"again","widgetType":"text","properties":[]}`)); err == nil {
				t.Fatal("a second create of id a succeeded")
			}
		}, []string{"a=A", "b=B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			e := newEnv(t, func(o *templates.Options) { o.ListCacheTTL = time.Second; o.Now = clk.now })
			if _, err := e.svc.Create(ctx, input(t, `{"id":"a","name":"A","widgetType":"text","properties":[]}`)); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"a=A"}, e.listNames(t, "")); d != "" {
				t.Fatalf("first list (-want +got):\n%s", d)
			}
			e.insertBehind(t, "b", "B", "text")
			if d := cmp.Diff([]string{"a=A"}, e.listNames(t, "")); d != "" {
				t.Fatalf("a write behind the service showed before the list expired (-want +got):\n%s", d)
			}
			clk.add(time.Second)
			if d := cmp.Diff([]string{"a=A", "b=B"}, e.listNames(t, "")); d != "" {
				t.Fatalf("after expiry (-want +got):\n%s", d)
			}
			tt.write(t, e)
			if d := cmp.Diff(tt.want, e.listNames(t, "")); d != "" {
				t.Fatalf("after the write (-want +got):\n%s", d)
			}
		})
	}
}

// Ensure each widget-type filter is its own list, and a write drops them all.
func TestList_CacheByWidgetType(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *templates.Options) { o.ListCacheTTL = time.Hour })
	e.insertBehind(t, "t1", "T1", "text")
	e.insertBehind(t, "c1", "C1", "color")
	if got := e.listNames(t, "text"); !cmp.Equal(got, []string{"t1=T1"}) {
		t.Fatalf("text list %v", got)
	}
	if got := e.listNames(t, "color"); !cmp.Equal(got, []string{"c1=C1"}) {
		t.Fatalf("color list %v", got)
	}
	e.insertBehind(t, "t2", "T2", "text")
	if got := e.listNames(t, "text"); !cmp.Equal(got, []string{"t1=T1"}) {
		t.Fatalf("text list not cached: %v", got)
	}
	if _, err := e.svc.Create(context.Background(), input(t, `{"id":"c2","name":"C2","widgetType":"color","properties":[]}`)); err != nil {
		t.Fatal(err)
	}
	if got := e.listNames(t, "text"); !cmp.Equal(got, []string{"t1=T1", "t2=T2"}) {
		t.Fatalf("text list after a write: %v", got)
	}
	if got := e.listNames(t, "color"); !cmp.Equal(got, []string{"c1=C1", "c2=C2"}) {
		t.Fatalf("color list after a write: %v", got)
	}
}

// Ensure that without ListCacheTTL every list reads core.
func TestList_NoCacheByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.insertBehind(t, "a", "A", "text")
	_ = e.listNames(t, "")
	e.insertBehind(t, "b", "B", "text")
	if got := e.listNames(t, ""); !cmp.Equal(got, []string{"a=A", "b=B"}) {
		t.Fatalf("list %v, want both", got)
	}
}
