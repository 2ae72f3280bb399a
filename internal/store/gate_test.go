package store_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/writeconcern"

	"github.com/acme/app/internal/store"
	"github.com/acme/app/internal/store/storetest"
)

// concurrently runs fn(worker, i) for each of `each` rounds on `workers` goroutines at once
// and fails the test on the first error.
func concurrently(t *testing.T, workers, each int, fn func(w, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := fn(w, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// ownAndOutsideClients starts a store and returns two clients of it: the store's own and one
// connected from outside on its URI (as an operator command, mongosh or a second tool would).
func ownAndOutsideClients(t *testing.T) map[string]*mongo.Client {
	t.Helper()
	st := storetest.Store(t)
	outside, err := store.Connect(ctxT(t), st.URI())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outside.Disconnect(context.Background()) })
	return map[string]*mongo.Client{"OwnClient": st.Client(), "OutsideClient": outside}
}

// Ensure every single-document write is atomic on the store, for this process's client and
// for an outside client on its URI alike (as an operator command, mongosh or a second tool
// would connect): without the gate, the embedded store loses most of these.
func TestStore_SingleDocumentWritesAreAtomic(t *testing.T) {
	t.Parallel()
	clients := ownAndOutsideClients(t)

	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	type counter struct {
		N     int64   `bson:"n"`
		Items []int64 `bson:"items"`
	}
	tests := []struct {
		name     string
		workers  int
		each     int
		seed     bool // insert {_id: "c", n: 0} first
		op       func(ctx context.Context, coll *mongo.Collection, w, i int) (int64, error)
		check    func(t *testing.T, got counter, docs int64, changes []int64)
		distinct bool // the values op returns are all different
	}{
		{
			name: "Inc", workers: 8, each: 100, seed: true,
			op: func(ctx context.Context, coll *mongo.Collection, _, _ int) (int64, error) {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}}, inc)
				if err != nil {
					return 0, err
				}
				return res.ModifiedCount, nil
			},
			check: func(t *testing.T, got counter, _ int64, changes []int64) {
				if got.N != 800 || sum(changes) != 800 {
					t.Errorf("n = %d after %d changes, want 800 after 800", got.N, sum(changes))
				}
			},
		},
		{
			name: "GuardedInc", workers: 8, each: 40, seed: true,
			op: func(ctx context.Context, coll *mongo.Collection, _, _ int) (int64, error) {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: bson.D{{Key: "$lt", Value: 100}}}}, inc)
				if err != nil {
					return 0, err
				}
				return res.ModifiedCount, nil
			},
			check: func(t *testing.T, got counter, _ int64, changes []int64) {
				if got.N != 100 || sum(changes) != 100 {
					t.Errorf("n = %d after %d changes, want exactly 100 after 100", got.N, sum(changes))
				}
			},
		},
		{
			name: "FindAndModifyNew", workers: 8, each: 50, seed: true, distinct: true,
			op: func(ctx context.Context, coll *mongo.Collection, _, _ int) (int64, error) {
				var got counter
				err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: "c"}}, inc,
					options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
				return got.N, err
			},
			check: func(t *testing.T, got counter, _ int64, changes []int64) {
				if got.N != 400 {
					t.Errorf("n = %d, want 400", got.N)
				}
			},
		},
		{
			name: "Upsert", workers: 16, each: 1,
			op: func(ctx context.Context, coll *mongo.Collection, _, _ int) (int64, error) {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}}, inc, options.Update().SetUpsert(true))
				if err != nil {
					return 0, err
				}
				return res.ModifiedCount + res.UpsertedCount, nil
			},
			check: func(t *testing.T, got counter, docs int64, changes []int64) {
				if docs != 1 || got.N != 16 || sum(changes) != 16 {
					t.Errorf("%d documents, n = %d after %d changes; want 1 document, n = 16", docs, got.N, sum(changes))
				}
			},
		},
		{
			name: "Push", workers: 8, each: 50, seed: true,
			op: func(ctx context.Context, coll *mongo.Collection, w, i int) (int64, error) {
				_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}},
					bson.D{{Key: "$push", Value: bson.D{{Key: "items", Value: int64(w*1000 + i)}}}})
				return 0, err
			},
			check: func(t *testing.T, got counter, _ int64, _ []int64) {
				if len(got.Items) != 400 {
					t.Errorf("%d elements pushed, want 400", len(got.Items))
				}
			},
		},
		{
			name: "AddToSetAndDelete", workers: 8, each: 25, seed: true,
			op: func(ctx context.Context, coll *mongo.Collection, w, i int) (int64, error) {
				if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}},
					bson.D{{Key: "$addToSet", Value: bson.D{{Key: "items", Value: int64(i)}}}}); err != nil {
					return 0, err
				}
				// A delete of a document that another worker creates and deletes too.
				id := bson.D{{Key: "_id", Value: "tmp"}}
				if _, err := coll.UpdateOne(ctx, id, inc, options.Update().SetUpsert(true)); err != nil {
					return 0, err
				}
				res, err := coll.DeleteOne(ctx, id)
				if err != nil {
					return 0, err
				}
				return res.DeletedCount, nil
			},
			check: func(t *testing.T, got counter, docs int64, changes []int64) {
				if len(got.Items) != 25 || docs != 1 || sum(changes) > 200 || sum(changes) < 1 {
					t.Errorf("%d distinct elements and %d documents after %d deletes; want 25, 1, 1..200",
						len(got.Items), docs, sum(changes))
				}
			},
		},
	}
	for clientName, client := range clients {
		for _, tt := range tests {
			t.Run(clientName+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := ctxT(t)
				coll := client.Database(storetest.DBName(t)).Collection("counters")
				if tt.seed {
					if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: int64(0)}}); err != nil {
						t.Fatal(err)
					}
				}
				var mu sync.Mutex
				var results []int64
				concurrently(t, tt.workers, tt.each, func(w, i int) error {
					v, err := tt.op(ctx, coll, w, i)
					mu.Lock()
					results = append(results, v)
					mu.Unlock()
					return err
				})
				var got counter
				if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&got); err != nil {
					t.Fatal(err)
				}
				docs, err := coll.CountDocuments(ctx, bson.D{})
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, got, docs, results)
				if tt.distinct {
					seen := map[int64]bool{}
					for _, v := range results {
						seen[v] = true
					}
					if len(seen) != len(results) {
						t.Errorf("%d distinct values among %d answers, want all distinct", len(seen), len(results))
					}
				}
			})
		}
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// Ensure a write hook runs for writes on its collection from any client, before the writer
// gets its answer, and not for reads or other collections.
func TestStore_OnWrite(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	st, err := store.Open(ctx, store.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	var calls atomic.Int64
	if !st.OnWrite("d", "watched", func() { calls.Add(1) }) {
		t.Fatal("OnWrite refused on the embedded store this process owns")
	}
	outside, err := store.Connect(ctx, st.URI())
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Disconnect(context.Background())
	watched, other := outside.Database("d").Collection("watched"), outside.Database("d").Collection("other")
	steps := []struct {
		name string
		do   func() error
		want int64
	}{
		{"Insert", func() error { _, err := watched.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); return err }, 1},
		{"Update", func() error {
			_, err := watched.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}})
			return err
		}, 2},
		{"Find", func() error { return watched.FindOne(ctx, bson.D{}).Err() }, 2},
		{"OtherCollection", func() error { _, err := other.InsertOne(ctx, bson.D{}); return err }, 2},
		{"OtherDatabase", func() error {
			_, err := outside.Database("e").Collection("watched").InsertOne(ctx, bson.D{})
			return err
		}, 2},
		{"Delete", func() error { _, err := watched.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); return err }, 3},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := calls.Load(); got != s.want { // counted before the answer came back
			t.Fatalf("after %s: %d hook calls, want %d", s.name, got, s.want)
		}
	}
}

// Ensure unacknowledged writes (w: 0, sent with moreToCome) leave the connection in step: the
// store answers them anyway, and the gate drops those answers, so the next command on the same
// connection reads its own answer.
func TestStore_UnacknowledgedWrites(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	st := storetest.Store(t)
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(st.URI()).SetMaxPoolSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	name := storetest.DBName(t)
	unacked := client.Database(name).Collection("c", options.Collection().SetWriteConcern(writeconcern.Unacknowledged()))
	for i := range 50 {
		if _, err := unacked.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil && !errors.Is(err, mongo.ErrUnacknowledgedWrite) {
			t.Fatal(err)
		}
	}
	n, err := client.Database(name).Collection("c").CountDocuments(ctx, bson.D{})
	if err != nil || n != 50 {
		t.Fatalf("count after 50 unacknowledged inserts on one connection = %d, %v; want 50", n, err)
	}
}

// Ensure a command holding a NaN, which the embedded store can neither store nor match (it
// closed the connection on one: "socket was unexpectedly closed"), is answered with BadValue
// for this process's client and an outside one alike, writes nothing, and leaves the
// connection serving the next command.
func TestStore_NaNIsRefusedWithAnError(t *testing.T) {
	t.Parallel()
	for name, client := range ownAndOutsideClients(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			coll := client.Database(storetest.DBName(t)).Collection("nan")
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1.5}}); err != nil {
				t.Fatal(err)
			}
			nan := math.NaN()
			commands := map[string]func() error{
				"Count": func() error { _, err := coll.CountDocuments(ctx, bson.D{{Key: "v", Value: nan}}); return err },
				"FindNested": func() error {
					return coll.FindOne(ctx, bson.D{{Key: "v", Value: bson.D{{Key: "$in", Value: bson.A{1, nan}}}}}).Err()
				},
				"InsertMany": func() error {
					_, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.A{bson.D{{Key: "x", Value: nan}}}}}})
					return err
				},
				"Update": func() error {
					_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: nan}}}})
					return err
				},
			}
			for cmd, run := range commands {
				err := run()
				var ce mongo.ServerError
				if !errors.As(err, &ce) || !ce.HasErrorCode(2) || !strings.Contains(err.Error(), "NaN") {
					t.Errorf("%s: err = %v, want BadValue naming NaN", cmd, err)
				}
			}
			var doc struct {
				V float64 `bson:"v"`
			}
			n, err := coll.CountDocuments(ctx, bson.D{})
			if err == nil {
				err = coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc)
			}
			if err != nil || n != 1 || doc.V != 1.5 {
				t.Fatalf("after the refusals: %d documents, v %v, err %v; want the one document unchanged", n, doc.V, err)
			}
		})
	}
}
