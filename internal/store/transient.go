package store

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/x/mongo/driver/topology"
)

// transientCodes are server error codes a retry can fix: the node is stepping down or shutting
// down, not the primary, unreachable, or timed out.
var transientCodes = map[int32]bool{
	6: true, 7: true, 50: true, 89: true, 91: true, 112: true, 189: true, 262: true, 9001: true,
	10107: true, 11600: true, 11602: true, 13435: true, 13436: true,
}

// Transient reports whether err is a failure a retry of the same write can fix: a network
// error or a timeout (as the driver classifies them), a server selection that found no
// server, an error the server labels retryable, or a server code saying the node is not
// primary, shutting down or unreachable. Anything else (a document refused, a bad update) will
// fail again however often it is sent.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || mongo.IsNetworkError(err) || mongo.IsTimeout(err) ||
		errors.Is(err, mongo.ErrClientDisconnected) {
		return true
	}
	var sse mongo.ServerError
	if errors.As(err, &sse) {
		if sse.HasErrorLabel("RetryableWriteError") || sse.HasErrorLabel("TransientTransactionError") ||
			sse.HasErrorLabel("NetworkError") {
			return true
		}
		for code := range transientCodes {
			if sse.HasErrorCode(int(code)) {
				return true
			}
		}
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError != nil && len(bwe.WriteErrors) == 0 {
		return true
	}
	var sel topology.ServerSelectionError
	return errors.As(err, &sel)
}
