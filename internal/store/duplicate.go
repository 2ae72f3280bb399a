package store

import (
	"errors"

	"go.mongodb.org/mongo-driver/mongo"
)

// duplicateKeyCode is the server's code for a write refused on a duplicate key.
const duplicateKeyCode = 11000

// DuplicateKeys sorts the write errors of err, the error of an unordered insertMany. ok
// reports whether err is (or wraps) a mongo.BulkWriteException without a write-concern
// error; dups and others then count its write errors with the duplicate-key code 11000 and
// with any other code. For any other err, ok is false and both counts are 0.
//
// Writes refused on a duplicate key usually mean the documents were stored by an earlier
// attempt or a concurrent writer: ok && others == 0 says that is the only failure.
func DuplicateKeys(err error) (dups, others int, ok bool) {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return 0, 0, false
	}
	for _, we := range bwe.WriteErrors {
		if we.Code == duplicateKeyCode {
			dups++
		} else {
			others++
		}
	}
	return dups, others, true
}
