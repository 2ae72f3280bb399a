// Package templates owns property templates: the shared `core_property_templates` collection of
// the core database (CRUD), the `property_templates` collections of the space databases (read
// when core is unavailable, scanned by Migrate, pruned by Cleanup), and the application
// database's `spaces` collection that names those databases.
package templates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/x/mongo/driver/topology"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
)

// Collection names.
const (
	SpacesCollection = "spaces"                  // in the application database
	SpaceCollection  = "property_templates"      // in each space's database
	CoreCollection   = "core_property_templates" // in the core database
)

// Options configures a Service.
type Options struct {
	// Spaces is the client of the cluster holding the application database and the space
	// databases.
	Spaces *mongo.Client
	// AppDatabase is the application database (mongodb.database), which holds `spaces`.
	AppDatabase string
	// Core is the client of the cluster holding the core database; it may be Spaces.
	Core *mongo.Client
	// CoreDatabase is core.database.
	CoreDatabase string
	// CoreTimeout bounds one CRUD call on core before a read falls back to the space (or a
	// write answers 503). Default 3s.
	CoreTimeout time.Duration
	// Concurrency is how many space databases Migrate scans at once. Default 4.
	Concurrency int
	// BatchSize is the number of documents per insertMany (Migrate) and per $in (Cleanup).
	// Default 1000.
	BatchSize int
	// ListCacheTTL lets List answer core's lists from memory for this long; 0 (the default)
	// reads core every time. Every write through this Service drops the cached lists at once,
	// so set it only when this Service is core's one writer: writes from elsewhere (another
	// replica, an operator command on the same store) show in lists up to ListCacheTTL late.
	ListCacheTTL time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// Service is the property-template service.
type Service struct {
	opts   Options
	app    *mongo.Database
	core   *mongo.Collection // every write to it must drop s.lists
	log    *slog.Logger
	now    func() time.Time
	byName func(db string) *mongo.Collection
	lists  *listCache // nil: no caching
}

// New returns a Service on the given clients.
func New(opts Options) *Service {
	if opts.CoreTimeout <= 0 {
		opts.CoreTimeout = 3 * time.Second
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Core == nil {
		opts.Core = opts.Spaces
	}
	s := &Service{
		opts:  opts,
		app:   opts.Spaces.Database(opts.AppDatabase),
		core:  opts.Core.Database(opts.CoreDatabase).Collection(CoreCollection),
		log:   opts.Logger,
		now:   opts.Now,
		lists: newListCache(opts.ListCacheTTL, opts.Now),
	}
	s.byName = func(db string) *mongo.Collection { return opts.Spaces.Database(db).Collection(SpaceCollection) }
	return s
}

// EnsureIndexes creates the index a real MongoDB needs for widget-type reads on core.
func (s *Service) EnsureIndexes(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CoreTimeout)
	defer cancel()
	return store.EnsureIndexes(ctx, s.core, mongo.IndexModel{Keys: bson.D{{Key: "widgetType", Value: 1}}})
}

// ---- reads (core, falling back to the space) --------------------------------------------

// List returns the templates of core, filtered by widgetType when it is not empty, sorted by id.
// When core cannot be read it answers from the space's own templates, with SourceSpace.
// Returns NotFound if core is unavailable and the space does not exist; Unavailable if neither
// can be read (or spaceID is empty and core is unavailable).
func (s *Service) List(ctx context.Context, spaceID, widgetType string) ([]Template, Source, error) {
	filter := bson.D{}
	if widgetType != "" {
		filter = bson.D{{Key: "widgetType", Value: widgetType}}
	}
	ts, err := s.listCoreCached(ctx, widgetType, filter)
	if err == nil {
		return ts, SourceCore, nil
	}
	if !s.fallBack(ctx, err, "list") || spaceID == "" {
		return nil, "", coreError(err)
	}
	ts, err = s.readSpace(ctx, spaceID, filter, func(Template) bool { return true })
	if err != nil {
		return nil, "", err
	}
	return ts, SourceSpace, nil
}

// Get returns the template with id. Returns NotFound if it does not exist; when core is
// unavailable, it is read from the space as List does.
func (s *Service) Get(ctx context.Context, spaceID, id string) (Template, Source, error) {
	t, err := s.findOneCore(ctx, bson.D{{Key: "_id", Value: id}})
	if err == nil || apperr.KindOf(err) == apperr.NotFound {
		return t, SourceCore, err
	}
	if !s.fallBack(ctx, err, "get") || spaceID == "" {
		return Template{}, "", coreError(err)
	}
	filter := bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "id", Value: id}}, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "_id", Value: objectID(id)}},
	}}}
	ts, err := s.readSpace(ctx, spaceID, filter, func(t Template) bool { return t.ID == id })
	if err != nil {
		return Template{}, "", err
	}
	if len(ts) == 0 {
		return Template{}, "", notFound(id)
	}
	return ts[0], SourceSpace, nil
}

// ForWidget returns the template for a widget type (the one with the smallest id when several
// share it). Returns NotFound if none; falls back to the space as List does.
func (s *Service) ForWidget(ctx context.Context, spaceID, widgetType string) (Template, Source, error) {
	filter := bson.D{{Key: "widgetType", Value: widgetType}}
	t, err := s.findOneCore(ctx, filter)
	if err == nil {
		return t, SourceCore, nil
	}
	if apperr.KindOf(err) == apperr.NotFound {
		return Template{}, "", apperr.E(apperr.NotFound, fmt.Sprintf("no template for widget type %q", widgetType))
	}
	if !s.fallBack(ctx, err, "widget") || spaceID == "" {
		return Template{}, "", coreError(err)
	}
	ts, err := s.readSpace(ctx, spaceID, filter, func(Template) bool { return true })
	if err != nil {
		return Template{}, "", err
	}
	if len(ts) == 0 {
		return Template{}, "", apperr.E(apperr.NotFound, fmt.Sprintf("no template for widget type %q", widgetType))
	}
	return ts[0], SourceSpace, nil
}

// listCoreCached is listCore through the list cache, when there is one. The returned slice is
// shared with other callers: it must not be modified.
func (s *Service) listCoreCached(ctx context.Context, widgetType string, filter bson.D) ([]Template, error) {
	if s.lists == nil {
		return s.listCore(ctx, filter)
	}
	ts, gen, ok := s.lists.get(widgetType)
	if ok {
		return ts, nil
	}
	ts, err := s.listCore(ctx, filter)
	if err == nil {
		s.lists.put(widgetType, gen, ts)
	}
	return slices.Clip(ts), err
}

func (s *Service) listCore(ctx context.Context, filter bson.D) ([]Template, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CoreTimeout)
	defer cancel()
	cur, err := s.core.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(listBatch))
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	ts := []Template{}
	for cur.Next(ctx) {
		ts = append(ts, fromRaw(cur.Current, false))
	}
	return ts, cur.Err()
}

func (s *Service) findOneCore(ctx context.Context, filter bson.D) (Template, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CoreTimeout)
	defer cancel()
	raw, err := s.core.FindOne(ctx, filter, options.FindOne().SetSort(bson.D{{Key: "_id", Value: 1}})).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Template{}, notFound(fmt.Sprint(lookupID(filter)))
	}
	if err != nil {
		return Template{}, err
	}
	return fromRaw(raw, false), nil
}

// readSpace reads the space's own templates matching filter and keep, one per identifier,
// sorted by identifier.
func (s *Service) readSpace(ctx context.Context, spaceID string, filter bson.D, keep func(Template) bool) ([]Template, error) {
	sp, err := s.findSpace(ctx, spaceID)
	if err != nil {
		return nil, err
	}
	cur, err := s.byName(sp.Database).Find(ctx, filter, options.Find().SetBatchSize(listBatch))
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "templates are unavailable: the core database cannot be read and neither can the space's")
	}
	defer cur.Close(ctx)
	seen := map[string]bool{}
	ts := []Template{}
	for cur.Next(ctx) {
		t := fromRaw(cur.Current, true)
		if seen[t.ID] || !keep(t) {
			continue
		}
		seen[t.ID] = true
		ts = append(ts, t)
	}
	if err := cur.Err(); err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "templates are unavailable: the core database cannot be read and neither can the space's")
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
	return ts, nil
}

// fallBack reports whether a failed core read should be answered from the space: yes unless
// the caller has gone away.
func (s *Service) fallBack(ctx context.Context, err error, op string) bool {
	if ctx.Err() != nil {
		return false
	}
	s.log.Warn("core templates unavailable, reading the space's templates", "op", op, "err", err)
	return true
}

// ---- writes (core only) -------------------------------------------------------------------

// Create stores a new template in core; an id is generated when in.ID is empty. Returns
// Conflict if the id exists, Unavailable if core cannot be written.
func (s *Service) Create(ctx context.Context, in Input) (Template, error) {
	id := in.ID
	if id == "" {
		id = uuid.NewString()
	}
	defer s.lists.drop()
	now := s.now().UTC().Truncate(time.Millisecond)
	doc := bson.D{{Key: "_id", Value: id}, {Key: "name", Value: in.Name}, {Key: "widgetType", Value: in.WidgetType},
		{Key: "properties", Value: props(in.Properties)}}
	if in.Description != nil {
		doc = append(doc, bson.E{Key: "description", Value: *in.Description})
	}
	doc = append(doc, bson.E{Key: "createdAt", Value: now}, bson.E{Key: "updatedAt", Value: now})
	ctx, cancel := context.WithTimeout(ctx, s.opts.CoreTimeout)
	defer cancel()
	if _, err := s.core.InsertOne(ctx, doc); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return Template{}, apperr.E(apperr.Conflict, fmt.Sprintf("template with id %q already exists", id))
		}
		return Template{}, coreError(err)
	}
	raw, _ := bson.Marshal(doc)
	return fromRaw(raw, false), nil
}

// Update replaces the fields of the template id (createdAt is kept). Returns NotFound if it
// does not exist, Invalid if in.ID names another template, Unavailable if core cannot be written.
func (s *Service) Update(ctx context.Context, id string, in Input) (Template, error) {
	if in.ID != "" && in.ID != id {
		return Template{}, validation("id must match the template id in the path")
	}
	set := bson.D{{Key: "name", Value: in.Name}, {Key: "widgetType", Value: in.WidgetType},
		{Key: "properties", Value: props(in.Properties)}, {Key: "updatedAt", Value: s.now().UTC().Truncate(time.Millisecond)}}
	update := bson.D{}
	if in.Description != nil {
		set = append(set, bson.E{Key: "description", Value: *in.Description})
	} else {
		update = append(update, bson.E{Key: "$unset", Value: bson.D{{Key: "description", Value: ""}}})
	}
	update = append(update, bson.E{Key: "$set", Value: set})
	defer s.lists.drop()
	ctx, cancel := context.WithTimeout(ctx, s.opts.CoreTimeout)
	defer cancel()
	raw, err := s.core.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: id}}, update,
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Template{}, notFound(id)
	}
	if err != nil {
		return Template{}, coreError(err)
	}
	return fromRaw(raw, false), nil
}

// Delete removes the template id from core and returns it. Returns NotFound if it does not
// exist, Unavailable if core cannot be written.
func (s *Service) Delete(ctx context.Context, id string) (Template, error) {
	defer s.lists.drop()
	ctx, cancel := context.WithTimeout(ctx, s.opts.CoreTimeout)
	defer cancel()
	raw, err := s.core.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Template{}, notFound(id)
	}
	if err != nil {
		return Template{}, coreError(err)
	}
	return fromRaw(raw, false), nil
}

// ---- spaces -------------------------------------------------------------------------------

// space is a record of the application database's `spaces`.
type space struct {
	ID       string // _id stringified
	Database string // `database`, else space_<_id>
}

// dbName matches the database names MongoDB accepts (and keeps clear of path tricks).
var dbName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)

// spaceFromRaw reads a record of `spaces`. It fails, with the space as far as it could be read,
// when the record's _id cannot name a space (see unusableID) or its database name is invalid.
func spaceFromRaw(doc bson.Raw) (space, error) {
	idv := doc.Lookup("_id")
	id, ok := stringOf(idv)
	if !ok {
		id = idv.String()
	}
	named, hasDB := doc.Lookup("database").StringValueOK()
	hasDB = hasDB && named != ""
	if why := unusableID(idv, id, ok); why != "" {
		scanned := "no database is scanned for it"
		if hasDB {
			scanned = fmt.Sprintf("its database %q is not scanned", named)
		}
		return space{ID: id}, fmt.Errorf("the space's _id %s; %s", why, scanned)
	}
	sp := space{ID: id, Database: "space_" + id}
	if hasDB {
		sp.Database = named
	}
	if !dbName.MatchString(sp.Database) {
		return sp, fmt.Errorf("invalid database name %q", sp.Database)
	}
	return sp, nil
}

// unusableID says why a space's _id v, stringified as id (ok: by stringOf), cannot name the
// space in a request, a command or a report ("is blank, which cannot name a space"), or "" if
// it can. A space that can be named only
// through its _id's type is not migrated under a name its templates cannot be traced back to.
func unusableID(v bson.RawValue, id string, ok bool) string {
	switch {
	case !ok:
		return fmt.Sprintf("is of type %s, which cannot name a space (a string, an ObjectId or a number can)", v.Type)
	case id == "":
		return "is an empty string, which cannot name a space"
	case strings.TrimSpace(id) == "":
		return "is blank, which cannot name a space"
	}
	return ""
}

// findSpace returns the space spaceID: its _id as an ObjectId, a string or a number, whichever
// the migration reports as spaceID (spaceFromRaw). Returns NotFound if there is none,
// Unavailable if the application database cannot be read.
func (s *Service) findSpace(ctx context.Context, spaceID string) (space, error) {
	ids := append(bson.A{spaceID}, numericIDs(spaceID)...)
	if oid, err := primitive.ObjectIDFromHex(spaceID); err == nil {
		ids = append(ids, oid)
	}
	raw, err := s.app.Collection(SpacesCollection).FindOne(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "database", Value: 1}})).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return space{}, apperr.E(apperr.NotFound, fmt.Sprintf("space %q not found", spaceID))
	}
	if err != nil {
		return space{}, apperr.Wrap(apperr.Unavailable, err, "the application database is unavailable")
	}
	sp, err := spaceFromRaw(raw)
	if err != nil {
		return space{}, apperr.E(apperr.Conflict, fmt.Sprintf("space %q: %v", spaceID, err))
	}
	return sp, nil
}

// numericIDs returns the numbers an _id may be stored as to read as id once stringified (see
// stringOf): 7 as an int32, an int64 or a double for "7"; 7.5 as a double for "7.5". None
// when id is not a number written as stringOf writes it ("07", "7.0" and "1e3" are not), nor
// for "NaN": the embedded store refuses a filter holding a NaN (a space whose _id is a NaN,
// which only a direct write to MongoDB can store, cannot be named).
func numericIDs(id string) bson.A {
	if id == "NaN" {
		return nil
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil && strconv.FormatInt(n, 10) == id {
		ids := bson.A{n}
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			ids = append(ids, int32(n))
		}
		if f := float64(n); int64(f) == n && strconv.FormatFloat(f, 'f', -1, 64) == id {
			ids = append(ids, f)
		}
		return ids
	}
	if f, err := strconv.ParseFloat(id, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == id {
		return bson.A{f}
	}
	return nil
}

// pingCore checks within CoreTimeout that core answers, so that Migrate and Cleanup fail fast
// (Unavailable) when it is down.
func (s *Service) pingCore(ctx context.Context, what string) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CoreTimeout)
	defer cancel()
	if err := s.opts.Core.Ping(ctx, nil); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "the core template database is unavailable; "+what)
	}
	return nil
}

// ---- helpers ------------------------------------------------------------------------------

func validation(msgs ...string) error { return apperr.Validation(msgs...) }

func notFound(id string) error {
	return apperr.E(apperr.NotFound, fmt.Sprintf("template %q not found", id))
}

// coreError turns a failed core call into Unavailable (server down, timeout, network) or keeps
// it as an internal error.
func coreError(err error) error {
	if apperr.As(err) != nil {
		return err
	}
	if unavailable(err) {
		return apperr.Wrap(apperr.Unavailable, err, "the core template database is unavailable")
	}
	return fmt.Errorf("templates: core: %w", err)
}

func unavailable(err error) bool {
	var sse topology.ServerSelectionError
	return errors.As(err, &sse) || mongo.IsTimeout(err) || mongo.IsNetworkError(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, topology.ErrTopologyClosed)
}

func props(vs []Value) []Value {
	if vs == nil {
		return []Value{}
	}
	return vs
}

func objectID(s string) any {
	if oid, err := primitive.ObjectIDFromHex(s); err == nil {
		return oid
	}
	return s
}

func lookupID(filter bson.D) any {
	for _, e := range filter {
		return e.Value
	}
	return ""
}
