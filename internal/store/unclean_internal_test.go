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
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st = open()
	defer st.Close(ctx)
	if st.UncleanStop() {
		t.Fatal("a Close was taken for an unclean stop")
	}
}
