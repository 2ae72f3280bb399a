package templates

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"github.com/acme/app/internal/apperr"
)

// MigrateOptions configures Migrate.
type MigrateOptions struct {
	// DryRun reports what a real run would do and writes nothing.
	DryRun bool
	// Progress, when set, is told after each space database is scanned (never concurrently);
	// total is the number of databases, each scanned once however many spaces name it.
	Progress func(done, total int)
}

// MigrationReport is the answer of Migrate (the HTTP body and the CLI's --json).
type MigrationReport struct {
	DryRun          bool         `json:"dryRun"`
	SpacesScanned   int          `json:"spacesScanned"`   // spaces whose database was read
	TemplatesFound  int          `json:"templatesFound"`  // documents read in space databases
	UniqueTemplates int          `json:"uniqueTemplates"` // distinct identifiers among them
	Migrated        int          `json:"migrated"`        // copied into core (dry run: would be)
	AlreadyInCore   int          `json:"alreadyInCore"`   // identifiers core already held
	Conflicts       []Conflict   `json:"conflicts"`       // identifiers whose versions differ
	Errors          []SpaceError `json:"errors"`          // spaces that could not be read, templates refused
	// SharedDatabases are the databases several spaces name, each read once for all of them.
	SharedDatabases []SharedDatabase `json:"sharedDatabases"`
	DurationMs      int64            `json:"durationMs"`
}

// SharedDatabase is a database that several spaces name. It is scanned once: its templates
// count once in TemplatesFound, and one it refuses is listed once, under the first of them.
type SharedDatabase struct {
	Database string   `json:"database"`
	Spaces   []string `json:"spaces"` // in `spaces` order
}

// Conflict is an identifier held in different versions by several spaces.
type Conflict struct {
	ID         string   `json:"id"`
	Spaces     []string `json:"spaces"`     // every space holding the identifier, in scan order
	ChosenFrom string   `json:"chosenFrom"` // the space whose version is (or would be) in core
}

// SpaceError is a space that could not be scanned or, with TemplateID, one of its templates
// that was not (or in a dry run would not be) migrated, and why.
type SpaceError struct {
	SpaceID    string `json:"spaceId"`
	TemplateID string `json:"templateId,omitempty"` // the template's identifier; "" for the space as a whole
	Message    string `json:"message"`
}

// candidate is the version of one identifier chosen so far, and what is known of the others.
type candidate struct {
	doc        []byte // the core document: _id = identifier, the space document's other fields
	hasUpdated bool
	updated    int64 // ms since epoch
	order      [2]int
	chosenFrom string
	spaces     []int  // indexes of the databases (scans) holding the identifier
	hash       digest // content of the first version seen
	conflict   bool
}

// better reports whether c (new) wins over cur: the newest updatedAt, else the first seen.
func (c *candidate) better(cur *candidate) bool {
	if c.hasUpdated != cur.hasUpdated {
		return c.hasUpdated
	}
	if c.hasUpdated && c.updated != cur.updated {
		return c.updated > cur.updated
	}
	return c.order[0] < cur.order[0] || c.order[0] == cur.order[0] && c.order[1] < cur.order[1]
}

// Migrate copies the templates of every space database into core, deduplicated by identifier.
// A template core already holds is never overwritten; when spaces hold different versions of
// one identifier the newest by updatedAt is kept (else the first seen in `spaces` order) and
// the conflict is listed. Space databases are only read. A space whose database is missing,
// unreadable or invalidly named, or whose _id cannot name a space, or whose database is the
// core or the application database (as Cleanup refuses it; its database is then not read), is
// listed in Errors and the rest goes on; so is, with its identifier, a template
// that cannot be migrated (see migratable: not copied, nor counted in UniqueTemplates) or that
// core refuses to store. Returns Unavailable if the application database (spaces) or core
// cannot be read, or core cannot be written at all.
func (s *Service) Migrate(ctx context.Context, opts MigrateOptions) (*MigrationReport, error) {
	start := time.Now()
	rep := &MigrationReport{DryRun: opts.DryRun, Conflicts: []Conflict{}, Errors: []SpaceError{}, SharedDatabases: []SharedDatabase{}}
	if err := s.pingCore(ctx, "nothing was migrated"); err != nil {
		return nil, err
	}

	// Core's identifiers: one projection scan, alongside the space scans.
	type coreIDs struct {
		ids map[string]struct{}
		err error
	}
	coreCh := make(chan coreIDs, 1)
	go func() {
		ids, err := s.coreIDs(ctx)
		coreCh <- coreIDs{ids, err}
	}()

	spaces, err := s.listSpaces(ctx, rep)
	if err != nil {
		<-coreCh
		return nil, err
	}
	dbs := byDatabase(spaces, rep)
	var (
		mu       sync.Mutex
		found    = map[string]*candidate{}
		done     int
		scanErrs = make([]error, len(dbs))
		refused  = make([][]SpaceError, len(dbs))
	)
	merge := func(c *candidate, id string) { // c nil: a document found but not migrated
		mu.Lock()
		defer mu.Unlock()
		rep.TemplatesFound++
		if c == nil {
			return
		}
		cur, ok := found[id]
		if !ok {
			c.spaces = []int{c.order[0]}
			found[id] = c
			return
		}
		if c.hash != cur.hash {
			cur.conflict = true
		}
		if !slices.Contains(cur.spaces, c.order[0]) {
			cur.spaces = append(cur.spaces, c.order[0])
		}
		if c.better(cur) {
			cur.doc, cur.hasUpdated, cur.updated, cur.order, cur.chosenFrom = c.doc, c.hasUpdated, c.updated, c.order, c.chosenFrom
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(s.opts.Concurrency, max(len(dbs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				refused[i], scanErrs[i] = s.scanSpace(ctx, i, spaces[dbs[i][0]], merge)
				mu.Lock()
				done++
				if opts.Progress != nil {
					opts.Progress(done, len(dbs))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range dbs {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	core := <-coreCh
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if core.err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, core.err, "the core template database is unavailable; nothing was migrated")
	}
	for i, err := range scanErrs {
		if err != nil {
			for _, sp := range dbs[i] { // each space naming the database could not be read
				rep.Errors = append(rep.Errors, SpaceError{SpaceID: spaces[sp].ID, Message: err.Error()})
			}
		} else {
			rep.SpacesScanned += len(dbs[i])
		}
		rep.Errors = append(rep.Errors, refused[i]...)
	}

	rep.UniqueTemplates = len(found)
	ids := make([]string, 0, len(found))
	var missing []string
	for id, c := range found {
		ids = append(ids, id)
		if _, ok := core.ids[id]; ok {
			rep.AlreadyInCore++
		} else {
			missing = append(missing, id)
		}
		if c.conflict {
			var holders []int // every space naming a database that holds the identifier
			for _, db := range c.spaces {
				holders = append(holders, dbs[db]...)
			}
			slices.Sort(holders)
			names := make([]string, len(holders))
			for i, idx := range holders {
				names[i] = spaces[idx].ID
			}
			rep.Conflicts = append(rep.Conflicts, Conflict{ID: id, Spaces: names, ChosenFrom: c.chosenFrom})
		}
	}
	sort.Strings(missing)
	sort.Slice(rep.Conflicts, func(i, j int) bool { return rep.Conflicts[i].ID < rep.Conflicts[j].ID })

	if opts.DryRun {
		rep.Migrated = len(missing)
	} else {
		inserted, already, refused, err := s.insertMissing(ctx, missing, found)
		if err != nil {
			return nil, err
		}
		rep.Migrated = inserted
		rep.AlreadyInCore += already // inserted meanwhile by a concurrent run
		rep.Errors = append(rep.Errors, refused...)
	}
	rep.DurationMs = time.Since(start).Milliseconds()
	s.log.Info("templates migrated", "dry_run", rep.DryRun, "spaces", rep.SpacesScanned, "found", rep.TemplatesFound,
		"unique", rep.UniqueTemplates, "migrated", rep.Migrated, "already_in_core", rep.AlreadyInCore,
		"conflicts", len(rep.Conflicts), "errors", len(rep.Errors), "duration_ms", rep.DurationMs)
	return rep, nil
}

// listSpaces reads `spaces`; a space with an invalid database name, an _id that cannot name a
// space, or the core or application database for its database (ownDatabase), is reported in
// rep and left out.
func (s *Service) listSpaces(ctx context.Context, rep *MigrationReport) ([]space, error) {
	cur, err := s.app.Collection(SpacesCollection).Find(ctx, bson.D{},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "database", Value: 1}}))
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "the application database is unavailable")
	}
	defer cur.Close(ctx)
	var spaces []space
	for cur.Next(ctx) {
		sp, err := spaceFromRaw(cur.Current)
		if err != nil {
			rep.Errors = append(rep.Errors, SpaceError{SpaceID: sp.ID, Message: err.Error()})
			continue
		}
		if reason := s.ownDatabase(sp); reason != "" { // as Cleanup refuses it
			rep.Errors = append(rep.Errors, SpaceError{SpaceID: sp.ID, Message: "refusing to scan: " + reason})
			continue
		}
		spaces = append(spaces, sp)
	}
	if err := cur.Err(); err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "the application database is unavailable")
	}
	return spaces, nil
}

// byDatabase groups spaces by the database they name, in the order each database is first
// named: the indexes (into spaces, in order) of the spaces naming each one. A database that
// several spaces name is listed in rep.SharedDatabases.
func byDatabase(spaces []space, rep *MigrationReport) [][]int {
	var dbs [][]int
	index := map[string]int{}
	for i, sp := range spaces {
		if j, ok := index[sp.Database]; ok {
			dbs[j] = append(dbs[j], i)
			continue
		}
		index[sp.Database] = len(dbs)
		dbs = append(dbs, []int{i})
	}
	for _, db := range dbs {
		if len(db) < 2 {
			continue
		}
		names := make([]string, len(db))
		for i, idx := range db {
			names[i] = spaces[idx].ID
		}
		rep.SharedDatabases = append(rep.SharedDatabases, SharedDatabase{Database: spaces[db[0]].Database, Spaces: names})
	}
	return dbs
}

// coreIDs returns the identifiers core holds, from one projection of _id.
func (s *Service) coreIDs(ctx context.Context) (map[string]struct{}, error) {
	cur, err := s.core.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	ids := map[string]struct{}{}
	for cur.Next(ctx) {
		ids[identifier(cur.Current, false)] = struct{}{}
	}
	return ids, cur.Err()
}

// scanSpace streams the templates of the database of sp (the first space naming it, the
// idx-th database scanned) into merge, but those that cannot be migrated, which it returns.
func (s *Service) scanSpace(ctx context.Context, idx int, sp space, merge func(*candidate, string)) ([]SpaceError, error) {
	cur, err := s.byName(sp.Database).Find(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("read %s.%s: %w", sp.Database, SpaceCollection, err)
	}
	defer cur.Close(ctx)
	var refused []SpaceError
	n := 0
	for ; cur.Next(ctx); n++ {
		id := identifier(cur.Current, true)
		if id == "" {
			continue
		}
		if msgs := migratable(cur.Current, id); len(msgs) > 0 {
			merge(nil, id) // counted as found
			refused = append(refused, SpaceError{SpaceID: sp.ID, TemplateID: id, Message: strings.Join(msgs, "; ")})
			continue
		}
		c := &candidate{order: [2]int{idx, n}, chosenFrom: sp.ID}
		c.doc, c.hash = coreDoc(cur.Current, id)
		if len(c.doc) > maxDocumentBytes { // its _id (the identifier) made it larger than the space's copy
			merge(nil, id)
			refused = append(refused, SpaceError{SpaceID: sp.ID, TemplateID: id, Message: fmt.Sprintf(
				"the template would take %d bytes in core, more than the %d bytes a document may take", len(c.doc), maxDocumentBytes)})
			continue
		}
		if t := timeOf(cur.Current.Lookup("updatedAt")); t != nil {
			c.hasUpdated, c.updated = true, t.UnixMilli()
		}
		merge(c, id)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("read %s.%s: %w", sp.Database, SpaceCollection, err)
	}
	if n == 0 { // an empty result: tell a missing database (or collection) apart, cheaply
		names, err := s.opts.Spaces.Database(sp.Database).ListCollectionNames(ctx, bson.D{{Key: "name", Value: SpaceCollection}})
		if err != nil {
			return nil, fmt.Errorf("list collections of %s: %w", sp.Database, err)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("database %q does not exist or has no %s collection", sp.Database, SpaceCollection)
		}
	}
	return refused, nil
}

// migratable returns why the space document doc, of identifier id, cannot be migrated into
// core, or nothing: what the API would refuse in a request creating it (DecodeInput's rules,
// with id the identifier; fields the API does not read are not checked), and a timestamp
// outside the years 0 to 9999.
func migratable(doc bson.Raw, id string) []string {
	_, msgs := storedFields(doc, id).validate()
	for _, f := range [...]string{"createdAt", "updatedAt"} {
		if _, ok, inRange := storedTime(doc.Lookup(f)); ok && !inRange {
			msgs = append(msgs, f+" must be a date between the years 0 and 9999")
		}
	}
	return msgs
}

// coreDoc builds the core document for a space document (its _id replaced by the identifier,
// its `id` dropped, every other field kept as stored) and the digest of the space document's
// content (every field but _id), so that identical copies in several spaces are not a
// conflict. The digest is of the content, not of the stored bytes: fields are taken in key
// order at every level, so two copies whose fields were stored in another order are alike
// (arrays keep their order, and values their BSON types: 1 as int32 and 1.0 as a double differ).
func coreDoc(doc bson.Raw, id string) ([]byte, digest) {
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+len(id)+16))
	out = bsoncore.AppendStringElement(out, "_id", id)
	elems, _ := doc.Elements()
	for _, e := range elems {
		switch e.Key() {
		case "_id", "id":
			continue
		}
		out = append(out, e...)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out, documentDigest(doc)
}

// maxDocumentBytes is the size a document may take in MongoDB (and the embedded store).
const maxDocumentBytes = 16 << 20

// insertMissing copies the chosen versions of ids into core with unordered insertMany batches.
// It returns how many documents it inserted, how many core held already (a concurrent run got
// there first: a duplicate _id), and the documents core refused, one error each with the space
// and identifier; the others are inserted all the same. It fails only when core cannot be
// written at all.
func (s *Service) insertMissing(ctx context.Context, ids []string, found map[string]*candidate) (inserted, already int, refused []SpaceError, err error) {
	defer s.lists.drop()
	opts := options.InsertMany().SetOrdered(false)
	for batch := range slices.Chunk(ids, s.opts.BatchSize) {
		docs := make([]any, len(batch))
		for i, id := range batch {
			docs[i] = bson.Raw(found[id].doc)
		}
		_, err := s.core.InsertMany(ctx, docs, opts)
		failed := map[int]string{} // index in batch → why core refused it
		var bwe mongo.BulkWriteException
		switch {
		case err == nil:
		case errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0:
			for _, we := range bwe.WriteErrors {
				failed[we.Index] = writeErrorText(we.WriteError)
			}
		default:
			// The batch as a whole failed (the driver refused it, the connection dropped):
			// insert its documents one by one, so that one document's failure is its own.
			if err := s.pingCore(ctx, "the migration stopped"); err != nil {
				return inserted, already, refused, err
			}
			for i, doc := range docs {
				if _, err := s.core.InsertOne(ctx, doc); err != nil {
					if unavailable(err) && s.pingCore(ctx, "the migration stopped") != nil {
						return inserted, already, refused, coreError(err)
					}
					failed[i] = err.Error()
				}
			}
		}
		// A duplicate key is a concurrent run's insert only when core now holds the _id (a
		// unique index of core's own may refuse a document too).
		held, err := s.heldByCore(ctx, batch, failed)
		if err != nil {
			return inserted, already, refused, err
		}
		for i, id := range batch {
			why, ok := failed[i]
			switch {
			case !ok:
				inserted++
			case held[id]:
				already++
			default:
				refused = append(refused, SpaceError{SpaceID: found[id].chosenFrom, TemplateID: id, Message: "core refused the template: " + why})
			}
		}
	}
	return inserted, already, refused, nil
}

// heldByCore reports which of the documents of batch that failed core holds (by _id).
func (s *Service) heldByCore(ctx context.Context, batch []string, failed map[int]string) (map[string]bool, error) {
	if len(failed) == 0 {
		return nil, nil
	}
	in := bson.A{}
	for i := range failed {
		in = append(in, batch[i])
	}
	cur, err := s.core.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, coreError(err)
	}
	defer cur.Close(ctx)
	held := map[string]bool{}
	for cur.Next(ctx) {
		held[identifier(cur.Current, false)] = true
	}
	if err := cur.Err(); err != nil {
		return nil, coreError(err)
	}
	return held, nil
}

// writeErrorText is what the report says of a document core refused.
func writeErrorText(we mongo.WriteError) string {
	if we.Code != 0 {
		return fmt.Sprintf("%s (code %d)", we.Message, we.Code)
	}
	return we.Message
}
