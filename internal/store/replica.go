package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ErrEmbeddedReplica is returned by Open when an exclusive opener (`app serve`) is pointed with
// a URI at the embedded store of another process: its updates could not be serialized with
// that process's, so counters would lose increments.
var ErrEmbeddedReplica = errors.New("replicas need MongoDB: this URI is the embedded store of another app process, which cannot serve a second `app serve`; set mongodb.uri to a MongoDB deployment for every replica")

// The owner marker: the process that starts an embedded store writes this document into it, so
// that a process reaching it through a URI can tell it from a MongoDB or a standalone FerretDB.
const (
	markerDB   = "app_store"
	markerColl = "embedded_owner"
	markerID   = "owner"
)

// markOwner records in the embedded store that this process owns it, and notes whether the
// previous owner stopped without saying so (markStopped): killed, or its machine lost power.
// An unclean stop stays recorded (unrepaired) until an owner says it repaired what it may have
// left (RepairedUncleanStop): an operator command that opens the store after the crash and
// closes it in order repairs nothing, and must not hide the crash from the next server.
func (s *Store) markOwner(ctx context.Context, dataDir string) error {
	coll := s.client.Database(markerDB).Collection(markerColl)
	unclean, err := lastOwnerUnclean(ctx, coll)
	if err != nil {
		return err
	}
	s.unclean = unclean
	host, _ := os.Hostname()
	_, err = coll.ReplaceOne(ctx,
		bson.D{{Key: "_id", Value: markerID}},
		bson.D{{Key: "pid", Value: os.Getpid()}, {Key: "host", Value: host}, {Key: "dataDir", Value: dataDir},
			{Key: "startedAt", Value: time.Now().UTC()}, {Key: "unrepaired", Value: s.unclean}},
		options.Replace().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("store: mark the embedded store's owner: %w", err)
	}
	return nil
}

// clearOwner removes the owner from the marker a process that owned this store left in it:
// the store is now served for others (`app store serve`), and replicas reaching it through its
// URI must not take it for another process's. An unclean stop the marker records stays
// recorded, in a marker that names no owner, until a `serve` repairs it (RepairedUncleanStop):
// serving the store on its own repairs nothing.
func (s *Store) clearOwner(ctx context.Context) error {
	coll := s.client.Database(markerDB).Collection(markerColl)
	unclean, err := lastOwnerUnclean(ctx, coll)
	if err != nil {
		return err
	}
	if unclean {
		_, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: markerID}},
			bson.D{{Key: "unrepaired", Value: true}}, options.Replace().SetUpsert(true))
	} else {
		_, err = coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: markerID}})
	}
	if err != nil {
		return fmt.Errorf("store: clear the embedded store's owner: %w", err)
	}
	return nil
}

// lastOwnerUnclean reports whether the marker in coll records an unclean stop not yet
// repaired: an owner that never said it stopped (markStopped), or one marked unrepaired. No
// marker: none.
func lastOwnerUnclean(ctx context.Context, coll *mongo.Collection) (bool, error) {
	var prev struct {
		StoppedAt  *time.Time `bson:"stoppedAt"`
		Unrepaired bool       `bson:"unrepaired"`
	}
	switch err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: markerID}}).Decode(&prev); {
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("store: read the embedded store's last owner: %w", err)
	}
	return prev.StoppedAt == nil || prev.Unrepaired, nil
}

// markStopped records that the owner stopped in order, having written what it held.
func (s *Store) markStopped(ctx context.Context) error {
	_, err := s.client.Database(markerDB).Collection(markerColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: markerID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "stoppedAt", Value: time.Now().UTC()}}}})
	return err
}

// RepairedUncleanStop records that this owner repaired what an unclean stop may have left
// (serve rebuilt the usage rollup from the log), so that the owners after it are told of no
// unclean stop until another one.
func (s *Store) RepairedUncleanStop(ctx context.Context) error {
	if s.embedded == nil || s.standalone {
		return nil
	}
	_, err := s.client.Database(markerDB).Collection(markerColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: markerID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "unrepaired", Value: false}}}})
	if err != nil {
		return fmt.Errorf("store: record the repair of an unclean stop: %w", err)
	}
	s.unclean = false
	return nil
}

// UncleanStop reports whether the embedded store this process owns was last owned by a
// process that did not stop in order (killed, or its machine lost power): what it held in
// memory, such as usage records not yet written, may be missing.
func (s *Store) UncleanStop() bool { return s.unclean }

// checkNotEmbedded returns ErrEmbeddedReplica when the server behind s.client is an embedded
// store owned by another process. The embedded server lives inside its owner, so a server
// that answers and holds a marker naming an owner has a live owner; a marker that names none
// only keeps an unclean stop recorded (clearOwner).
func (s *Store) checkNotEmbedded(ctx context.Context) error {
	var info bson.M
	if err := s.client.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return fmt.Errorf("store: buildInfo: %w", err)
	}
	if _, ferret := info["ferretdbVersion"]; !ferret {
		return nil
	}
	var owner struct {
		PID     int    `bson:"pid"`
		DataDir string `bson:"dataDir"`
	}
	err := s.client.Database(markerDB).Collection(markerColl).FindOne(ctx, bson.D{{Key: "_id", Value: markerID}}).Decode(&owner)
	if errors.Is(err, mongo.ErrNoDocuments) || (err == nil && owner.PID == 0) {
		return nil // no marker, or one that names no owner (a store served on its own)
	}
	if err != nil {
		return fmt.Errorf("store: read the embedded store's owner: %w", err)
	}
	return fmt.Errorf("%w (owner: pid %d, data dir %s)", ErrEmbeddedReplica, owner.PID, owner.DataDir)
}
