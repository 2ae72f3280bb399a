package store_test

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/store"
)

// Ensure DuplicateKeys counts the write errors of a bulk write exception without a
// write-concern error, unwrapping it, and refuses every other error.
func TestDuplicateKeys(t *testing.T) {
	t.Parallel()
	we := func(codes ...int) []mongo.BulkWriteError {
		out := make([]mongo.BulkWriteError, len(codes))
		for i, c := range codes {
			out[i] = mongo.BulkWriteError{WriteError: mongo.WriteError{Index: i, Code: c}}
		}
		return out
	}
	cases := []struct {
		name         string
		err          error
		dups, others int
		ok           bool
	}{
		{"Nil", nil, 0, 0, false},
		{"Plain", errors.New("boom"), 0, 0, false},
		{"CommandError", mongo.CommandError{Code: 11000}, 0, 0, false},
		{"WriteException", mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 11000}}}, 0, 0, false},
		{"WriteConcern", mongo.BulkWriteException{WriteErrors: we(11000), WriteConcernError: &mongo.WriteConcernError{Code: 64}}, 0, 0, false},
		{"NoWriteErrors", mongo.BulkWriteException{}, 0, 0, true},
		{"OnlyDuplicates", mongo.BulkWriteException{WriteErrors: we(11000, 11000)}, 2, 0, true},
		{"Mixed", mongo.BulkWriteException{WriteErrors: we(11000, 121, 11000)}, 2, 1, true},
		{"OtherOnly", mongo.BulkWriteException{WriteErrors: we(11001)}, 0, 1, true},
		{"Wrapped", fmt.Errorf("insert: %w", mongo.BulkWriteException{WriteErrors: we(11000)}), 1, 0, true},
	}
	for _, tc := range cases {
		dups, others, ok := store.DuplicateKeys(tc.err)
		if dups != tc.dups || others != tc.others || ok != tc.ok {
			t.Errorf("%s: DuplicateKeys = %d, %d, %v; want %d, %d, %v", tc.name, dups, others, ok, tc.dups, tc.others, tc.ok)
		}
	}
}
