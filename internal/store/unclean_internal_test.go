package store

import (
	"context"
	"testing"
	"time"
)

// Ensure the owner of an embedded store learns whether the last owner stopped in order: a
// process that ends without Close (killed) leaves the mark for the next one.
func TestUncleanStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	open := func() *Store {
		t.Helper()
		st, err := Open(ctx, Options{DataDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	if st.UncleanStop() {
		t.Fatal("a new store reports an unclean stop")
	}
	// As if killed: the server and the lock go, the owner never says it stopped.
	_ = st.client.Disconnect(ctx)
	st.closeEmbedded()
	st = open()
	if !st.UncleanStop() {
		t.Fatal("the stop without Close went unnoticed")
	}
	if err := st.RepairedUncleanStop(ctx); err != nil || st.UncleanStop() {
		t.Fatalf("repaired: err = %v, unclean = %v", err, st.UncleanStop())
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st = open()
	defer st.Close(ctx)
	if st.UncleanStop() {
		t.Fatal("a Close was taken for an unclean stop")
	}
}

// Ensure an unclean stop is reported until an owner says it repaired what it may have left
// (RepairedUncleanStop, as serve does once it rebuilt the usage rollup): an operator command
// that opens the store between the crash and the restart (`app usage report`, to look) and
// closes it in order must not hide it from the server that starts next.
func TestUncleanStop_KeptUntilRepaired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	open := func(shared bool) *Store {
		t.Helper()
		st, err := Open(ctx, Options{DataDir: dir, Shared: shared})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open(false)
	_ = st.client.Disconnect(ctx) // killed
	st.closeEmbedded()
	for i := range 2 { // operator commands, each closing in order
		st = open(true)
		if !st.UncleanStop() {
			t.Fatalf("command %d: the unclean stop went unnoticed", i)
		}
		if err := st.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st = open(false)
	if !st.UncleanStop() {
		t.Fatal("the server after the commands was not told of the unclean stop")
	}
	if err := st.RepairedUncleanStop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = st.client.Disconnect(ctx) // killed again after repairing: a new unclean stop
	st.closeEmbedded()
	st = open(false)
	if !st.UncleanStop() {
		t.Fatal("an unclean stop after a repair went unnoticed")
	}
	if err := st.RepairedUncleanStop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st = open(false)
	defer st.Close(ctx)
	if st.UncleanStop() {
		t.Fatal("a repaired, then closed store reports an unclean stop")
	}
}

// Ensure `app store serve` (a standalone open) between a crash and the next `app serve` keeps
// the unclean stop recorded for that serve, as an operator command does, while replicas still
// reach the standalone store through its URI.
func TestUncleanStop_KeptAcrossStandalone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	st, err := Open(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.client.Disconnect(ctx) // killed
	st.closeEmbedded()

	for i := range 2 { // `app store serve`, twice, each stopped in order
		st, err = Open(ctx, Options{DataDir: dir, Standalone: true})
		if err != nil {
			t.Fatal(err)
		}
		replica, err := Open(ctx, Options{URI: st.URI()})
		if err != nil {
			t.Fatalf("store serve %d: a replica's open of its URI: %v", i, err)
		}
		_ = replica.Close(ctx)
		if err := st.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st, err = Open(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !st.UncleanStop() {
		t.Fatal("the serve after store serve was not told of the unclean stop")
	}
	if err := st.RepairedUncleanStop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = Open(ctx, Options{DataDir: dir, Standalone: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = Open(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if st.UncleanStop() {
		t.Fatal("a repaired, then closed store reports an unclean stop after store serve")
	}
}
