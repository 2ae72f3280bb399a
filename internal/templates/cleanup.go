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
	// KeptDifferent are identifiers core holds of which the space keeps a document whose
	// content differs from core's (a version that never reached core).
	KeptDifferent []string `json:"keptDifferent"`
}

// ownDatabase says why sp's database is not a space database that Cleanup may delete from or
// Migrate may scan: it is the core database (whose property_templates are no space's) or the
// application database. It returns "" for any other database.
func (s *Service) ownDatabase(sp space) string {
	switch sp.Database {
	case s.opts.CoreDatabase:
		return fmt.Sprintf("the space's database %q is the core database", sp.Database)
	case s.opts.AppDatabase:
		return fmt.Sprintf("the space's database %q is the application database", sp.Database)
	}
	return ""
}

// Cleanup deletes the space's property_templates documents whose content core holds, and only
// those: a document is deleted when core holds its identifier with the same name, widgetType,
// description and properties (compared canonically: fields in any order, values with their
// types; _id, id and timestamps are not compared). The others are kept and listed: in
// KeptNotInCore when core lacks the identifier, in KeptDifferent when core's version differs.
// A second run is a no-op. Returns NotFound if the space does not exist; Conflict if its
// database is the core or the application database; Unavailable if core cannot be read
// (nothing is deleted unverified).
func (s *Service) Cleanup(ctx context.Context, opts CleanupOptions) (*CleanupReport, error) {
	sp, err := s.findSpace(ctx, opts.SpaceID)
	if err != nil {
		return nil, err
	}
	if reason := s.ownDatabase(sp); reason != "" {
		return nil, apperr.E(apperr.Conflict, "refusing to clean up: "+reason)
	}
	if err := s.pingCore(ctx, "nothing was deleted"); err != nil {
		return nil, err
	}
	rep := &CleanupReport{SpaceID: sp.ID, DryRun: opts.DryRun, KeptNotInCore: []string{}, KeptDifferent: []string{}}
	coll := s.byName(sp.Database)

	// The space's documents: their _id (to delete by), identifier and content.
	type entry struct {
		oid     bson.RawValue
		id      string
		content digest
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(contentProjection("_id", "id")).SetBatchSize(listBatch))
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "the space's database cannot be read")
	}
	var docs []entry
	ids := map[string]struct{}{}
	for cur.Next(ctx) {
		v := cur.Current.Lookup("_id")
		d := entry{oid: bson.RawValue{Type: v.Type, Value: append([]byte(nil), v.Value...)},
			id: identifier(cur.Current, true), content: contentDigest(cur.Current)}
		docs = append(docs, d)
		ids[d.id] = struct{}{}
	}
	err = cur.Err()
	_ = cur.Close(ctx)
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "the space's database cannot be read")
	}

	// Core's content of those identifiers, by $in batches on _id.
	all := make([]string, 0, len(ids))
	for id := range ids {
		all = append(all, id)
	}
	sort.Strings(all)
	core := make(map[string]digest, len(all))
	coreProjection := contentProjection("_id")
	for batch := range slices.Chunk(all, s.opts.BatchSize) {
		in := make(bson.A, len(batch))
		for i, id := range batch {
			in[i] = id
		}
		cur, err := s.core.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}},
			options.Find().SetProjection(coreProjection).SetBatchSize(listBatch))
		if err != nil {
			return nil, coreError(err)
		}
		for cur.Next(ctx) {
			core[identifier(cur.Current, false)] = contentDigest(cur.Current)
		}
		err = cur.Err()
		_ = cur.Close(ctx)
		if err != nil {
			return nil, coreError(err)
		}
	}

	var doomed bson.A
	different := map[string]bool{}
	for _, d := range docs {
		c, ok := core[d.id]
		switch {
		case !ok:
		case c == d.content:
			doomed = append(doomed, d.oid)
		default:
			different[d.id] = true
		}
	}
	for _, id := range all {
		if _, ok := core[id]; !ok {
			rep.KeptNotInCore = append(rep.KeptNotInCore, id)
		} else if different[id] {
			rep.KeptDifferent = append(rep.KeptDifferent, id)
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
		"kept_not_in_core", len(rep.KeptNotInCore), "kept_different", len(rep.KeptDifferent))
	return rep, nil
}
