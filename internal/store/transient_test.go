package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/mongo"

	"github.com/acme/app/internal/store"
)

// Ensure only failures a retry can fix count as transient.
func TestTransient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"network label", mongo.CommandError{Message: "reset", Labels: []string{"NetworkError"}}, true},
		{"retryable write label", mongo.CommandError{Message: "x", Labels: []string{"RetryableWriteError"}}, true},
		{"not primary", mongo.CommandError{Code: 10107, Message: "not primary"}, true},
		{"shutting down", mongo.CommandError{Code: 91, Message: "shutdown in progress"}, true},
		{"deadline, wrapped", fmt.Errorf("insert: %w", context.DeadlineExceeded), true},
		{"client disconnected", mongo.ErrClientDisconnected, true},
		{"write concern only", mongo.BulkWriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64}}, true},
		{"duplicate key", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000}}}, false},
		{"document refused", mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Code: 2}}}}, false},
		{"bad update", mongo.CommandError{Code: 9, Message: "FailedToParse"}, false},
		{"plain error", errors.New("cannot marshal"), false},
		{"canceled", context.Canceled, false},
	}
	for _, tt := range tests {
		if got := store.Transient(tt.err); got != tt.want {
			t.Errorf("%s: Transient = %v, want %v", tt.name, got, tt.want)
		}
	}
}
