package templates

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
)

// CleanupOptions configures Cleanup.
type CleanupOptions struct {
	SpaceID string
	// DryRun reports what a real run would delete and deletes nothing.
	DryRun bool
}

// CleanupReport is the answer of Cleanup (the HTTP body and the CLI's --json).
type CleanupReport struct {
	SpaceID       string   `json:"spaceId"`
	DryRun        bool     `json:"dryRun"`
	Deleted       int      `json:"deleted"`       // space documents deleted (dry run: would be)
	KeptNotInCore []string `json:"keptNotInCore"` // identifiers kept because core lacks them
}

// Cleanup deletes the space's property_templates documents whose identifier core holds, and
// only those: the others are kept and listed. A second run is a no-op. Returns NotFound if the
// space does not exist; Conflict if its database is the core or the application database;
// Unavailable if core cannot be read (nothing is deleted unverified).
func (s *Service) Cleanup(ctx context.Context, opts CleanupOptions) (*CleanupReport, error) {
	sp, err := s.findSpace(ctx, opts.SpaceID)
	if err != nil {
		return nil, err
	}
	switch sp.Database {
	case s.opts.CoreDatabase:
		return nil, apperr.E(apperr.Conflict, fmt.Sprintf("refusing to clean up: the space's database %q is the core database", sp.Database))
	case s.opts.AppDatabase:
		return nil, apperr.E(apperr.Conflict, fmt.Sprintf("refusing to clean up: the space's database %q is the application database", sp.Database))
	}
	if err := s.pingCore(ctx, "nothing was deleted"); err != nil {
		return nil, err
	}
	rep := &CleanupReport{SpaceID: sp.ID, DryRun: opts.DryRun, KeptNotInCore: []string{}}
	coll := s.byName(sp.Database)

	// The space's documents: their _id (to delete by) and identifier.
	type entry struct {
		oid bson.RawValue
		id  string
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "id", Value: 1}}))
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "the space's database cannot be read")
	}
	var docs []entry
	ids := map[string]bool{} // identifier → held by core
	for cur.Next(ctx) {
		v := cur.Current.Lookup("_id")
		docs = append(docs, entry{oid: bson.RawValue{Type: v.Type, Value: append([]byte(nil), v.Value...)}, id: identifier(cur.Current, true)})
		ids[docs[len(docs)-1].id] = false
	}
	err = cur.Err()
	_ = cur.Close(ctx)
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "the space's database cannot be read")
	}

	// Which identifiers core holds, by $in batches on _id.
	all := make([]string, 0, len(ids))
	for id := range ids {
		all = append(all, id)
	}
	sort.Strings(all)
	for batch := range slices.Chunk(all, s.opts.BatchSize) {
		in := make(bson.A, len(batch))
		for i, id := range batch {
			in[i] = id
		}
		cur, err := s.core.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}},
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			return nil, coreError(err)
		}
		for cur.Next(ctx) {
			ids[identifier(cur.Current, false)] = true
		}
		err = cur.Err()
		_ = cur.Close(ctx)
		if err != nil {
			return nil, coreError(err)
		}
	}
	for _, id := range all {
		if !ids[id] {
			rep.KeptNotInCore = append(rep.KeptNotInCore, id)
		}
	}

	var doomed bson.A
	for _, d := range docs {
		if ids[d.id] {
			doomed = append(doomed, d.oid)
		}
	}
	if opts.DryRun {
		rep.Deleted = len(doomed)
		return rep, nil
	}
	for batch := range slices.Chunk(doomed, s.opts.BatchSize) {
		res, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: batch}}}})
		if err != nil {
			return rep, fmt.Errorf("templates: cleanup %s: %w", sp.Database, err)
		}
		rep.Deleted += int(res.DeletedCount)
	}
	s.log.Info("space templates cleaned up", "space", sp.ID, "database", sp.Database, "deleted", rep.Deleted,
		"kept_not_in_core", len(rep.KeptNotInCore))
	return rep, nil
}
