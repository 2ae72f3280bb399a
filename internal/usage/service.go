package usage

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"

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

// Service records AI requests in the background and reads usage from the daily rollup.
type Service struct {
	requests, daily *mongo.Collection
	rec             *recorder
	now             func() time.Time
	log             *slog.Logger
}

// New returns the service on db, after creating the indexes a real MongoDB needs, and starts
// its background recorder. Close it to write what is queued.
func New(ctx context.Context, db *mongo.Database, opts Options) (*Service, error) {
	s, err := newService(ctx, db, opts)
	if err != nil {
		return nil, err
	}
	s.rec = newRecorder(mongoSink{requests: s.requests, daily: s.daily}, opts.Recorder, s.log)
	return s, nil
}

func newService(ctx context.Context, db *mongo.Database, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{
		requests: db.Collection(RequestsCollection),
		daily:    db.Collection(DailyCollection),
		now:      opts.Now,
		log:      opts.Logger,
	}
	if err := store.EnsureIndexes(ctx, s.requests,
		mongo.IndexModel{Keys: bson.D{{Key: "userId", Value: 1}, {Key: "createdAt", Value: -1}}},
	); err != nil {
		return nil, err
	}
	// One index per call: FerretDB v1 panics when one createIndexes names several existing indexes.
	for _, keys := range []bson.D{
		{{Key: "userId", Value: 1}, {Key: "day", Value: 1}},
		{{Key: "day", Value: 1}},
	} {
		if err := store.EnsureIndexes(ctx, s.daily, mongo.IndexModel{Keys: keys}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Record queues rec for writing and returns at once, unless the queue is full: then it waits
// for room (back-pressure) until ctx ends. Pass a context that outlives the HTTP request
// (context.WithoutCancel) so a departed client still gets its request recorded.
// Returns ErrClosed after Close.
func (s *Service) Record(ctx context.Context, rec Record) error {
	return s.rec.record(ctx, rec)
}

// Close stops accepting records and writes every queued one, retrying failed writes until
// ctx ends. It must run before the store closes.
func (s *Service) Close(ctx context.Context) error {
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
	return checkDays(n)
}

func checkDays(n int) (int, error) {
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
	if _, err := checkDays(days); err != nil {
		return nil, err
	}
	from, to := s.window(days)
	return s.read(ctx, bson.D{
		{Key: "userId", Value: userID},
		{Key: "day", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lte", Value: to}}},
	})
}

// Report returns usage per provider and model with totals, for one user or all of them.
// Returns Invalid for days outside 1..366.
func (s *Service) Report(ctx context.Context, opts ReportOptions) (*Report, error) {
	if _, err := checkDays(opts.Days); err != nil {
		return nil, err
	}
	from, to := s.window(opts.Days)
	filter := bson.D{}
	if opts.UserID != "" {
		filter = append(filter, bson.E{Key: "userId", Value: opts.UserID})
	}
	filter = append(filter, bson.E{Key: "day", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lte", Value: to}}})
	rows, err := s.read(ctx, filter)
	if err != nil {
		return nil, err
	}
	return &Report{Days: opts.Days, From: from, To: to, User: opts.User, Rows: rows, Totals: totals(rows)}, nil
}

// read sums the rollup documents matching filter per provider and model. It is a plain find
// and sums in Go: FerretDB's $group computes only its first accumulator.
func (s *Service) read(ctx context.Context, filter bson.D) ([]ProviderUsage, error) {
	cur, err := s.daily.Find(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}
	defer cur.Close(ctx)
	byKey := map[string]*ProviderUsage{}
	for cur.Next(ctx) {
		var d daily
		if err := cur.Decode(&d); err != nil {
			return nil, fmt.Errorf("usage: decode rollup: %w", err)
		}
		for k, m := range d.Models {
			row := byKey[k]
			if row == nil {
				row = &ProviderUsage{Provider: m.Provider, Model: m.Model}
				byKey[k] = row
			}
			row.RequestCount += m.Requests
			row.TotalTokens += m.TotalTokens
			row.Cost += m.Cost
		}
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("usage: read rollup: %w", err)
	}
	rows := make([]ProviderUsage, 0, len(byKey))
	for _, r := range byKey {
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
	return rows, nil
}

func totals(rows []ProviderUsage) Summary {
	var t Summary
	for _, r := range rows {
		t.TotalRequests += r.RequestCount
		t.TotalTokens += r.TotalTokens
		t.TotalCost += r.Cost
	}
	return t
}
