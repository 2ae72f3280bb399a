package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
)

// Window limits for the `days` parameter.
const (
	DefaultDays = 30
	MaxDays     = 366
)

// Summary is the body of GET /api/ai/usage.
type Summary struct {
	TotalRequests int64   `json:"totalRequests"`
	TotalTokens   int64   `json:"totalTokens"`
	TotalCost     float64 `json:"totalCost"`
}

// ProviderUsage is one element of GET /api/ai/usage/providers.
type ProviderUsage struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	RequestCount int64   `json:"requestCount"`
	TotalTokens  int64   `json:"totalTokens"`
	Cost         float64 `json:"cost"`
}

// Report is the result of `app usage report`: per provider/model rows and their totals.
type Report struct {
	Days   int             `json:"days"`
	From   string          `json:"from"` // first UTC day included (YYYY-MM-DD)
	To     string          `json:"to"`   // last UTC day included (today)
	User   string          `json:"user,omitempty"`
	Rows   []ProviderUsage `json:"rows"`
	Totals Summary         `json:"totals"`
}

// ReportOptions select what a report covers.
type ReportOptions struct {
	Days   int    // 1..366
	UserID string // empty: every user
	User   string // shown in the report (the e-mail the operator asked for)
}

// Options configure the service.
type Options struct {
	Recorder RecorderOptions
	Logger   *slog.Logger
	Now      func() time.Time // the clock of the usage windows (tests inject one)
}

// Service reads usage from the daily rollup and, when built by New, records AI requests in
// the background.
type Service struct {
	requests, daily, monthly, rejected, prices, models *mongo.Collection
	rec                                                *recorder                        // nil: a reader (NewReader)
	names                                              sync.Map                         // cell key -> modelName, read from ai_models
	settled                                            *expirable.LRU[string, DayUsage] // Daily's settled days, by rollup _id
	since                                              atomic.Pointer[string]           // the monthly documents' sinceID day, once read
	now                                                func() time.Time
	log                                                *slog.Logger
}

// ErrReadOnly is returned by Record and Admit of a service built by NewReader.
var ErrReadOnly = errors.New("usage: this service only reads (no recorder)")

// New returns the service on db and starts its background recorder. Close it to write what is
// queued. It creates no index: the process that serves calls EnsureIndexes.
func New(db *mongo.Database, opts Options) *Service {
	s := newService(db, opts)
	s.rec = newRecorder(s.sink(), opts.Recorder, s.log)
	return s
}

// NewReader returns the service on db without a recorder, for a process that only reads usage
// or reconciles the rollup (an operator command): it starts no goroutine and talks to the
// store only when a method is called. opts.Recorder is ignored.
func NewReader(db *mongo.Database, opts Options) *Service {
	return newService(db, opts)
}

// sink returns the sink that writes to the service's collections.
func (s *Service) sink() mongoSink {
	return mongoSink{requests: s.requests, daily: s.daily, monthly: s.monthly, rejected: s.rejected, prices: s.prices,
		models: s.models, known: &sync.Map{}, sinceMarked: &atomic.Bool{}, now: s.now,
		changed: func(id string) { s.settled.Remove(id) }}
}

func newService(db *mongo.Database, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{
		requests: db.Collection(RequestsCollection),
		daily:    db.Collection(DailyCollection),
		monthly:  db.Collection(MonthlyCollection),
		rejected: db.Collection(RejectedCollection),
		prices:   db.Collection(PricesCollection),
		models:   db.Collection(ModelsCollection),
		now:      opts.Now,
		log:      opts.Logger,
		settled:  expirable.NewLRU[string, DayUsage](maxSettledDays, nil, settledTTL),
	}
}

// EnsureIndexes creates the indexes the recorder's writes and the reports need on a real
// MongoDB; creating an existing index is a no-op.
func (s *Service) EnsureIndexes(ctx context.Context) error {
	if err := store.EnsureIndexes(ctx, s.requests,
		mongo.IndexModel{Keys: bson.D{{Key: "userId", Value: 1}, {Key: "createdAt", Value: -1}}},
	); err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if err := store.EnsureIndexes(ctx, s.daily,
		mongo.IndexModel{Keys: bson.D{{Key: "userId", Value: 1}, {Key: "day", Value: 1}}},
		mongo.IndexModel{Keys: bson.D{{Key: "day", Value: 1}}},
	); err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if err := store.EnsureIndexes(ctx, s.monthly, mongo.IndexModel{Keys: bson.D{{Key: "month", Value: 1}}}); err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	return nil
}

// Record queues rec for writing and returns at once, unless the queue is full: then it waits
// for room up to the hand-off deadline (or until ctx ends) and puts rec in the bounded
// overflow, written first when the store recovers. It never waits longer. Returns ErrFull when
// the overflow is full too, ErrClosed after Close, and ErrReadOnly on a reader. A record that
// breaks the limits of validate is not refused here: the recorder sets it aside
// (usage_rejected) when it writes.
func (s *Service) Record(ctx context.Context, rec Record) error {
	if s.rec == nil {
		return ErrReadOnly
	}
	return s.rec.record(ctx, rec)
}

// Admit returns an Unavailable error while a new AI call could not be recorded (the queue and
// the overflow are full, or the service is a reader), nil otherwise. The AI service asks it
// before calling a provider.
func (s *Service) Admit() error {
	if s.rec == nil {
		return apperr.Wrap(apperr.Unavailable, ErrReadOnly, "AI calls are not recorded by this process")
	}
	return s.rec.admit()
}

// RecorderState reports the recorder's health for /api/health; a reader reports the zero
// state.
func (s *Service) RecorderState() RecorderState {
	if s.rec == nil {
		return RecorderState{}
	}
	return s.rec.state()
}

// Close stops accepting records and writes every queued one, retrying failed writes until
// ctx ends. It must run before the store closes. It is a no-op on a reader.
func (s *Service) Close(ctx context.Context) error {
	if s.rec == nil {
		return nil
	}
	return s.rec.close(ctx)
}

// ParseDays validates the `days` query value: a whole number from 1 to 366; empty means 30.
// Returns Invalid (as a validation array) otherwise.
func ParseDays(raw string) (int, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return DefaultDays, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		if f, ferr := strconv.ParseFloat(raw, 64); ferr == nil && f == float64(int64(f)) && f >= 1 && f <= MaxDays {
			return int(f), nil // "7.0"
		}
		return 0, apperr.Validation("days must be an integer number")
	}
	return CheckDays(n)
}

// CheckDays returns n when it is a whole number of days usage can be read over (1 to MaxDays).
func CheckDays(n int) (int, error) {
	switch {
	case n < 1:
		return 0, apperr.Validation("days must not be less than 1")
	case n > MaxDays:
		return 0, apperr.Validation(fmt.Sprintf("days must not be greater than %d", MaxDays))
	}
	return n, nil
}

// window returns the first and last UTC day of the last `days` calendar days, today included.
func (s *Service) window(days int) (from, to string) {
	today := s.now().UTC()
	return Day(today.AddDate(0, 0, -(days - 1))), Day(today)
}

// Summary returns the caller's totals over the last `days` UTC days (today included).
// Returns Invalid for days outside 1..366.
func (s *Service) Summary(ctx context.Context, userID string, days int) (Summary, error) {
	rows, err := s.ByProvider(ctx, userID, days)
	if err != nil {
		return Summary{}, err
	}
	return totals(rows), nil
}

// ByProvider returns the caller's usage per provider and model over the last `days` UTC days,
// the largest cost first. Returns Invalid for days outside 1..366.
func (s *Service) ByProvider(ctx context.Context, userID string, days int) ([]ProviderUsage, error) {
	if _, err := CheckDays(days); err != nil {
		return nil, err
	}
	from, to := s.window(days)
	return s.readDays(ctx, userID, from, to)
}

// Report returns usage per provider and model with totals, for one user or all of them.
// Returns Invalid for days outside 1..366.
func (s *Service) Report(ctx context.Context, opts ReportOptions) (*Report, error) {
	if _, err := CheckDays(opts.Days); err != nil {
		return nil, err
	}
	from, to := s.window(opts.Days)
	var rows []ProviderUsage
	var err error
	if opts.UserID != "" {
		rows, err = s.readDays(ctx, opts.UserID, from, to)
	} else {
		rows, err = s.read(ctx, bson.D{{Key: "day", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lte", Value: to}}}})
	}
	if err != nil {
		return nil, err
	}
	return &Report{Days: opts.Days, From: from, To: to, User: opts.User, Rows: rows, Totals: totals(rows)}, nil
}

// CostByUser returns the billed cost of users (nil: every user) from the UTC day from to the
// day to (YYYY-MM-DD, both included), by user id: answered calls and the cost the provider
// reported for failed and canceled ones, as budgets count it. It is the month's spend a
// process keeping budgets in memory starts from, a budget's spend before its month document
// existed, and the spend of a page of the administrators' user list.
func (s *Service) CostByUser(ctx context.Context, users []string, from, to string) (map[string]float64, error) {
	filter := bson.D{{Key: "day", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lte", Value: to}}}}
	if users != nil {
		filter = append(filter, bson.E{Key: "userId", Value: bson.D{{Key: "$in", Value: users}}})
	}
	cur, err := s.daily.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "userId", Value: 1}, {Key: "m", Value: 1},
		{Key: fieldUnanswered, Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}
	defer cur.Close(ctx)
	byUser := map[string]accumulator{}
	unanswered := map[string]int64{}
	for cur.Next(ctx) {
		user, ok := cur.Current.Lookup("userId").StringValueOK()
		if !ok {
			continue
		}
		acc := byUser[user]
		if acc == nil {
			acc = accumulator{}
			byUser[user] = acc
		}
		if err := acc.add(cur.Current); err != nil {
			return nil, err
		}
		unanswered[user] += unansweredUnits(cur.Current)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}
	out := make(map[string]float64, len(byUser))
	for user, acc := range byUser {
		out[user] = RoundCost(totals(acc.rows()).TotalCost + unitsCost(unanswered[user]))
	}
	return out, nil
}

// BilledCost returns userID's billed cost (see CostByUser) over the last `days` UTC days,
// today included. Returns Invalid for days outside 1..366.
func (s *Service) BilledCost(ctx context.Context, userID string, days int) (float64, error) {
	if _, err := CheckDays(days); err != nil {
		return 0, err
	}
	from, to := s.window(days)
	costs, err := s.CostByUser(ctx, []string{userID}, from, to)
	return costs[userID], err
}

// read sums the rollup documents matching filter per provider and model. It is a plain find
// summed in Go: FerretDB's $group computes only its first accumulator.
func (s *Service) read(ctx context.Context, filter bson.D) ([]ProviderUsage, error) {
	cur, err := s.daily.Find(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}
	defer cur.Close(ctx)
	acc := accumulator{}
	for cur.Next(ctx) {
		if err := acc.add(cur.Current); err != nil {
			return nil, err
		}
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}
	return s.named(ctx, acc)
}

// readDays sums one user's rollup documents from..to per provider and model.
func (s *Service) readDays(ctx context.Context, userID, from, to string) ([]ProviderUsage, error) {
	docs, err := s.lookup(ctx, s.daily, dayIDs(userID, from, to))
	if err != nil {
		return nil, err
	}
	all := accumulator{}
	for _, doc := range docs {
		if doc == nil {
			continue
		}
		if err := all.add(doc); err != nil {
			return nil, err
		}
	}
	return s.named(ctx, all)
}

// dayIDs returns the _id of userID's rollup document of each day from..to, in order.
func dayIDs(userID, from, to string) []string {
	var ids []string
	first, _ := time.Parse(time.DateOnly, from)
	for d := first; Day(d) <= to; d = d.AddDate(0, 0, 1) {
		ids = append(ids, dailyID(userID, Day(d)))
	}
	return ids
}

// DayUsage is one element of GET /api/ai/usage/daily: a user's totals of one UTC day.
type DayUsage struct {
	Date     string  `json:"date"` // YYYY-MM-DD
	Requests int64   `json:"requests"`
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost"`
}

// Settled days: the totals of a day before yesterday no longer move (the recorder writes
// within seconds), so Daily keeps those it reads from the rollup in memory for settledTTL, up
// to maxSettledDays user-days. This process's recorder forgets a day it adds a late record to,
// and Reconcile forgets them all; a change made by another process (`app usage reconcile`,
// another replica's late record) shows here within settledTTL.
const (
	settledTTL     = time.Hour
	maxSettledDays = 100_000
)

// Daily returns the caller's totals per UTC day over the last `days` days, oldest first,
// one element per day (days without calls at zero); they sum to Summary's. Days after the
// monthly documents' first day are read from those (one lookup per month); earlier days from
// the rollup, one lookup per day, those before yesterday answered from memory when read
// within settledTTL. Returns Invalid for days outside 1..366.
func (s *Service) Daily(ctx context.Context, userID string, days int) ([]DayUsage, error) {
	if _, err := CheckDays(days); err != nil {
		return nil, err
	}
	from, to := s.window(days)
	ids := dayIDs(userID, from, to)
	since, err := s.monthlySince(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DayUsage, len(ids))
	var byMonth, byDay []int // indexes into ids
	for i, id := range ids {
		out[i].Date = id[len(id)-len(time.DateOnly):]
		if since != "" && out[i].Date > since {
			byMonth = append(byMonth, i)
		} else {
			byDay = append(byDay, i)
		}
	}
	if err := s.daysFromMonths(ctx, userID, out, byMonth); err != nil {
		return nil, err
	}
	if err := s.daysFromRollup(ctx, ids, out, byDay); err != nil {
		return nil, err
	}
	return out, nil
}

// daysFromMonths fills out[i] for each i of idx from userID's monthly documents.
func (s *Service) daysFromMonths(ctx context.Context, userID string, out []DayUsage, idx []int) error {
	var months []string
	for _, i := range idx {
		if id := monthlyID(userID, out[i].Date); !slices.Contains(months, id) {
			months = append(months, id)
		}
	}
	docs, err := s.lookup(ctx, s.monthly, months)
	if err != nil {
		return err
	}
	byMonth := map[string]map[string]int64{} // monthly _id -> its counters
	for j, doc := range docs {
		if doc == nil {
			continue
		}
		if byMonth[months[j]], err = monthlyCells(doc); err != nil {
			return err
		}
	}
	for _, i := range idx {
		cells := byMonth[monthlyID(userID, out[i].Date)]
		day := out[i].Date
		out[i].Requests, out[i].Tokens = cells[dayCell(day, fieldRequests)], cells[dayCell(day, fieldTokens)]
		out[i].Cost = unitsCost(cells[dayCell(day, fieldCost)])
	}
	return nil
}

// monthlyCells returns the counters of a monthly document ("DD|n" -> value); a counter that
// is not a number counts 0.
func monthlyCells(doc bson.Raw) (map[string]int64, error) {
	cells := map[string]int64{}
	d, ok := doc.Lookup("d").DocumentOK()
	if !ok {
		return cells, nil
	}
	elems, err := d.Elements()
	if err != nil {
		return nil, fmt.Errorf("usage: decode monthly %v: %w", doc.Lookup("_id"), err)
	}
	for _, e := range elems {
		cells[e.Key()], _ = e.Value().AsInt64OK()
	}
	return cells, nil
}

// daysFromRollup fills out[i] for each i of idx from the rollup document ids[i], or from
// memory for a settled day read within settledTTL.
func (s *Service) daysFromRollup(ctx context.Context, ids []string, out []DayUsage, idx []int) error {
	settledUntil := Day(s.now().UTC().AddDate(0, 0, -2))
	var missing []int
	for _, i := range idx {
		if out[i].Date <= settledUntil {
			if d, ok := s.settled.Get(ids[i]); ok {
				out[i] = d
				continue
			}
		}
		missing = append(missing, i)
	}
	want := make([]string, len(missing))
	for j, i := range missing {
		want[j] = ids[i]
	}
	docs, err := s.lookup(ctx, s.daily, want)
	if err != nil {
		return err
	}
	for j, i := range missing {
		if doc := docs[j]; doc != nil {
			acc := accumulator{}
			if err := acc.add(doc); err != nil {
				return err
			}
			t := totals(acc.rows())
			out[i].Requests, out[i].Tokens, out[i].Cost = t.TotalRequests, t.TotalTokens, t.TotalCost
		}
		if out[i].Date <= settledUntil {
			s.settled.Add(ids[i], out[i])
		}
	}
	return nil
}

// monthlySince returns the monthly documents' sinceID day, "" while none is recorded. Once
// read it is kept: it only ever moves earlier (Reconcile), which makes a kept value too
// late, never wrong: the days between are read from the rollup.
func (s *Service) monthlySince(ctx context.Context) (string, error) {
	if p := s.since.Load(); p != nil {
		return *p, nil
	}
	var doc struct {
		Day string `bson:"day"`
	}
	err := s.monthly.FindOne(ctx, bson.D{{Key: "_id", Value: sinceID}}).Decode(&doc)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("usage: read the monthly documents' first day: %w", err)
	}
	if _, perr := time.Parse(time.DateOnly, doc.Day); perr != nil {
		return "", nil // not ours: read every day from the rollup
	}
	s.since.Store(&doc.Day)
	return doc.Day, nil
}

// lookupWorkers is how many point lookups of lookup run at once.
const lookupWorkers = 4

// lookup returns the documents of coll with the given ids, in order (nil for one that does
// not exist), one point lookup each, a few at a time. The embedded store answers an _id
// equality without decoding the other documents of the collection (any other filter decodes
// them all), so this read costs the same however many users the rollup holds; on MongoDB each
// lookup is an _id index hit.
func (s *Service) lookup(ctx context.Context, coll *mongo.Collection, ids []string) ([]bson.Raw, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	docs := make([]bson.Raw, len(ids))
	errs := make([]error, lookupWorkers)
	var wg sync.WaitGroup
	for w := range lookupWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				raw, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: ids[i]}}).Raw()
				if errors.Is(err, mongo.ErrNoDocuments) {
					continue
				}
				if err != nil {
					errs[w] = fmt.Errorf("usage: read %s %s: %w", coll.Name(), ids[i], err)
					cancel()
					for range next { // let the feeder finish
					}
					return
				}
				docs[i] = raw
			}
		}()
	}
	for i := range ids {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return docs, nil
}

// accumulator sums rollup cells by cell key (cellKey of provider and model). Provider and
// model are filled in from earlier versions' cells, or later by Service.named.
type accumulator map[string]*ProviderUsage

// cell returns the sums of one cell, created empty on first use.
func (acc accumulator) cell(key string) *ProviderUsage {
	r := acc[key]
	if r == nil {
		r = &ProviderUsage{}
		acc[key] = r
	}
	return r
}

// add sums the counters of one rollup document: "<cellKey>|n" (requests), "|t" (tokens) and
// "|c" (cost in 10^-10 USD), and the "<provider>|<model>|n" cells of earlier versions.
func (acc accumulator) add(doc bson.Raw) error {
	m, err := doc.LookupErr("m")
	if err != nil {
		return nil // a day with no successful request yet
	}
	cells, ok := m.DocumentOK()
	if !ok {
		return fmt.Errorf("usage: rollup %v: m is not a document", doc.Lookup("_id"))
	}
	elems, err := cells.Elements()
	if err != nil {
		return fmt.Errorf("usage: decode rollup: %w", err)
	}
	for _, e := range elems {
		key, field, legacy := splitCounter(e.Key())
		if key == "" {
			continue
		}
		row := acc.cell(key)
		if legacy != nil {
			row.Provider, row.Model = legacy[0], legacy[1]
		}
		v := e.Value()
		switch field {
		case fieldRequests:
			n, _ := v.AsInt64OK() // a counter that is not a number counts 0
			row.RequestCount += n
		case fieldTokens:
			n, _ := v.AsInt64OK()
			row.TotalTokens += n
		case fieldCost:
			if legacy != nil {
				row.Cost = RoundCost(row.Cost + asFloat(v))
			} else {
				n, _ := v.AsInt64OK()
				row.Cost = RoundCost(row.Cost + unitsCost(n))
			}
		}
	}
	return nil
}

// unansweredUnits is a rollup document's fieldUnanswered (0 when missing or not a number).
func unansweredUnits(doc bson.Raw) int64 {
	n, _ := doc.Lookup(fieldUnanswered).AsInt64OK()
	return n
}

// named fills in the provider and model of acc's cells from ai_models (cached in memory:
// names never change for a key) and returns the rows, the largest cost first.
func (s *Service) named(ctx context.Context, acc accumulator) ([]ProviderUsage, error) {
	var missing []string
	for k, r := range acc {
		if r.Provider != "" || r.Model != "" {
			continue
		}
		if n, ok := s.names.Load(k); ok {
			nm := n.(modelName)
			r.Provider, r.Model = nm.Provider, nm.Model
			continue
		}
		missing = append(missing, k)
	}
	if len(missing) > 0 {
		cur, err := s.models.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: missing}}}})
		if err != nil {
			return nil, fmt.Errorf("usage: read model names: %w", err)
		}
		var found []modelName
		if err := cur.All(ctx, &found); err != nil {
			return nil, fmt.Errorf("usage: read model names: %w", err)
		}
		for _, nm := range found {
			s.names.Store(nm.Key, nm)
			if r := acc[nm.Key]; r != nil {
				r.Provider, r.Model = nm.Provider, nm.Model
			}
		}
	}
	return acc.rows(), nil
}

// rows returns the sums, the largest cost first.
func (acc accumulator) rows() []ProviderUsage {
	rows := make([]ProviderUsage, 0, len(acc))
	for _, r := range acc {
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Cost != b.Cost {
			return a.Cost > b.Cost
		}
		if a.RequestCount != b.RequestCount {
			return a.RequestCount > b.RequestCount
		}
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		return a.Model < b.Model
	})
	return rows
}

func totals(rows []ProviderUsage) Summary {
	var t Summary
	for _, r := range rows {
		t.TotalRequests += r.RequestCount
		t.TotalTokens += r.TotalTokens
		t.TotalCost = RoundCost(t.TotalCost + r.Cost)
	}
	return t
}

func asFloat(v bson.RawValue) float64 {
	switch v.Type {
	case bson.TypeDouble:
		return v.Double()
	case bson.TypeInt64:
		return float64(v.Int64())
	case bson.TypeInt32:
		return float64(v.Int32())
	}
	return 0
}
