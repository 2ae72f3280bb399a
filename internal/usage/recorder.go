package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store"
)

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("usage: recorder closed")

// RecorderOptions tune the background recorder. Zero values take the defaults.
type RecorderOptions struct {
	QueueSize     int           // records waiting to be written (default 10,000)
	BatchSize     int           // records per write (default 1,000)
	FlushInterval time.Duration // a partial batch is written after this (default 100ms)
	RetryMin      time.Duration // first wait after a failed write (default 50ms)
	RetryMax      time.Duration // longest wait between retries (default 5s)
	// HandoffTimeout is how long Record waits for room in a full queue before it puts the
	// record in the overflow (default 100ms).
	HandoffTimeout time.Duration
	// OverflowSize bounds the overflow, written first when the store recovers (default
	// 10,000). While it is full, Admit refuses new AI calls and Record refuses records.
	OverflowSize int
	Observer     Observer // nil: nothing is observed
}

// Observer is told what the recorder does, for metrics. *metrics.Metrics implements it.
type Observer interface {
	UsageBatchWritten()
	UsageWriteFailed()
	UsageRecordsRejected(n int)
}

type nopObserver struct{}

func (nopObserver) UsageBatchWritten()       {}
func (nopObserver) UsageWriteFailed()        {}
func (nopObserver) UsageRecordsRejected(int) {}

func (o *RecorderOptions) defaults() {
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 10_000
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1_000
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 50 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 5 * time.Second
	}
	if o.HandoffTimeout <= 0 {
		o.HandoffTimeout = 100 * time.Millisecond
	}
	if o.OverflowSize <= 0 {
		o.OverflowSize = 10_000
	}
}

// ErrFull is returned by Record when the queue stayed full past the hand-off deadline and the
// overflow is full too: the record is not kept (the caller logs it).
var ErrFull = errors.New("usage: the recorder's queue and overflow are full; record not kept")

// errHardStop marks a write abandoned at Close's deadline.
var errHardStop = errors.New("usage: shutdown deadline passed")

// sink is where batches go: the collections, or a test double around them.
type sink interface {
	// insertLog stores records in ai_requests; records already stored are not an error.
	insertLog(ctx context.Context, recs []Record) error
	// addDaily adds delta to its rollup document (creating it).
	addDaily(ctx context.Context, d *dailyDelta) error
	// reject stores a record set aside in usage_rejected.
	reject(ctx context.Context, r rejection) error
}

// dailyDelta is what one batch adds to one rollup document. writer and seq name the batch:
// the recorder that wrote it and the batch's number in that recorder's sequence.
type dailyDelta struct {
	id, userID, day string
	models          map[string]*modelTotals // by cellKey
	unanswered      int64                   // fieldUnanswered: the cost of calls without an answer
	writer          string
	seq             int64
	resent          bool // an earlier attempt failed, and may have been applied
}

// rejection is a document of usage_rejected: a record the recorder set aside, as a sanitized
// copy, with the reason.
type rejection struct {
	RequestID string    `bson:"requestId"`
	Reason    string    `bson:"reason"`
	Record    Record    `bson:"record"`
	At        time.Time `bson:"at"`
}

// RecorderState is the recorder's health, reported by /api/health.
type RecorderState struct {
	// Status is "ok"; "degraded" while the queue is full, records wait in the overflow or
	// writes fail; "refusing" while the overflow is full (new AI calls get 503).
	Status        string `json:"status"`
	Queued        int    `json:"queued"`
	QueueSize     int    `json:"queueSize"`
	Overflow      int    `json:"overflow"`
	WritesFailing bool   `json:"writesFailing"`
	Rejected      int64  `json:"rejected"` // records set aside since the start
}

// Recorder states.
const (
	StateOK       = "ok"
	StateDegraded = "degraded"
	StateRefusing = "refusing"
)

// recorder writes records in the background, in batches: one unordered insertMany for the log
// and one upsert per user-day for the rollup. A write that fails for a transient reason is
// retried until it succeeds or Close's deadline passes; a batch refused for any other reason
// is split until the refused records are found and set aside. Record never waits longer than
// the hand-off deadline: past it the record goes to a bounded overflow.
type recorder struct {
	sink sink
	opts RecorderOptions
	log  *slog.Logger

	queue  chan Record
	writer string // this recorder's id in the rollup's `w`
	seq    int64  // batches flushed (owned by loop)

	ovMu     sync.Mutex
	overflow []Record

	failing  atomic.Bool  // the last write failed with a transient error
	rejected atomic.Int64 // records set aside

	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup // Record calls past the closed check
	stop     chan struct{}  // closed by Close: drain and exit
	hardStop chan struct{}  // closed when Close's context ends: stop retrying
	hardOnce sync.Once
	done     chan struct{} // closed when the loop has exited
	lost     int           // records given up at the hard stop (read after done)
}

func newRecorder(s sink, opts RecorderOptions, log *slog.Logger) *recorder {
	opts.defaults()
	r := &recorder{
		sink: s, opts: opts, log: log,
		queue:    make(chan Record, opts.QueueSize),
		writer:   newWriterID(),
		stop:     make(chan struct{}),
		hardStop: make(chan struct{}),
		done:     make(chan struct{}),
	}
	go r.loop()
	return r
}

// record queues rec. When the queue stays full past the hand-off deadline (or ctx ends
// first), rec goes to the overflow; when that is full too, record returns ErrFull.
func (r *recorder) record(ctx context.Context, rec Record) error {
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return ErrClosed
	}
	r.inflight.Add(1)
	r.mu.RUnlock()
	defer r.inflight.Done()
	select {
	case r.queue <- rec:
		return nil
	default:
	}
	t := time.NewTimer(r.opts.HandoffTimeout)
	defer t.Stop()
	select {
	case r.queue <- rec:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	r.ovMu.Lock()
	defer r.ovMu.Unlock()
	if len(r.overflow) >= r.opts.OverflowSize {
		r.opts.Observer.UsageRecordsRejected(1)
		return ErrFull
	}
	r.overflow = append(r.overflow, rec)
	return nil
}

// admit returns Unavailable while the overflow is full: a new call could not be recorded.
func (r *recorder) admit() error {
	r.ovMu.Lock()
	full := len(r.overflow) >= r.opts.OverflowSize
	r.ovMu.Unlock()
	if full {
		return apperr.E(apperr.Unavailable, "usage recording is behind, so new AI calls are refused for now; retry in a moment")
	}
	return nil
}

// state returns the recorder's health.
func (r *recorder) state() RecorderState {
	r.ovMu.Lock()
	ov := len(r.overflow)
	r.ovMu.Unlock()
	st := RecorderState{
		Status: StateOK, Queued: len(r.queue), QueueSize: cap(r.queue), Overflow: ov,
		WritesFailing: r.failing.Load(), Rejected: r.rejected.Load(),
	}
	switch {
	case ov >= r.opts.OverflowSize:
		st.Status = StateRefusing
	case ov > 0 || st.Queued >= st.QueueSize || st.WritesFailing:
		st.Status = StateDegraded
	}
	return st
}

// takeOverflow moves records from the overflow to batch, up to a full batch, and returns how
// many it moved.
func (r *recorder) takeOverflow(batch *[]Record) int {
	r.ovMu.Lock()
	defer r.ovMu.Unlock()
	k := min(r.opts.BatchSize-len(*batch), len(r.overflow))
	if k <= 0 {
		return 0
	}
	*batch = append(*batch, r.overflow[:k]...)
	r.overflow = r.overflow[k:]
	if len(r.overflow) == 0 {
		r.overflow = nil
	}
	return k
}

// close stops accepting records, writes everything queued and returns when done, or when ctx
// ends (then the records not yet written are counted in the error).
func (r *recorder) close(ctx context.Context) error {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	r.mu.Unlock()
	if !already {
		go func() {
			r.inflight.Wait()
			close(r.stop)
		}()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		r.hardOnce.Do(func() { close(r.hardStop) })
		<-r.done
	}
	if r.lost > 0 {
		return fmt.Errorf("usage: %d records could not be written before the shutdown deadline", r.lost)
	}
	return nil
}

func (r *recorder) loop() {
	defer close(r.done)
	batch := make([]Record, 0, r.opts.BatchSize)
	timer := time.NewTimer(r.opts.FlushInterval)
	defer timer.Stop()
	flush := func() {
		if len(batch) > 0 {
			r.flush(batch)
			batch = batch[:0]
		}
	}
	for {
		// The overflow holds the oldest records waiting: they go first.
		if n := r.takeOverflow(&batch); n > 0 {
			if len(batch) == n {
				timer.Reset(r.opts.FlushInterval)
			}
			if len(batch) >= r.opts.BatchSize {
				flush()
				continue
			}
		}
		select {
		case rec := <-r.queue:
			if len(batch) == 0 {
				timer.Reset(r.opts.FlushInterval)
			}
			batch = append(batch, rec)
			if len(batch) >= r.opts.BatchSize {
				flush()
			}
		case <-timer.C:
			flush()
		case <-r.stop:
			// No Record call is in flight any more: write the overflow and the queue, then leave.
			for {
				for r.takeOverflow(&batch) > 0 {
					if len(batch) >= r.opts.BatchSize {
						flush()
					}
				}
				select {
				case rec := <-r.queue:
					batch = append(batch, rec)
					if len(batch) >= r.opts.BatchSize {
						flush()
					}
				default:
					flush()
					return
				}
			}
		}
	}
}

// newWriterID is a recorder's random id: 64 bits, as hex.
func newWriterID() string {
	return strconv.FormatUint(rand.Uint64(), 16)
}

// flush writes one batch: it sets aside the records that break the limits, stores the others
// in the log (setting aside those the database refuses), then adds the stored ones to the
// rollup. Both writes are idempotent: the log's _id is the request id, and each rollup
// document records the last batch of this recorder it took.
func (r *recorder) flush(batch []Record) {
	valid := make([]Record, 0, len(batch))
	for _, rec := range batch {
		if err := validate(&rec); err != nil {
			r.setAside(rec, err)
			continue
		}
		valid = append(valid, rec)
	}
	// At the shutdown deadline the records stored before it still go to the rollup: one try
	// each, as every write past the deadline.
	stored, ok := r.writeLog(valid)
	for _, d := range rollup(stored) {
		r.seq++
		d.writer, d.seq = r.writer, r.seq
		if !r.writeDaily(d) {
			return
		}
	}
	if ok && len(stored) > 0 {
		r.opts.Observer.UsageBatchWritten()
	}
}

// logChunk is the most records one insert carries. The embedded store spends about 25 µs of
// CPU per record, in one stretch per command, and while it does no other goroutine of the
// process runs when GOMAXPROCS is 1 (a one-CPU container): a batch of 450 records held every
// answer for about 15 ms. Inserts of 64 records bound that stretch near 2 ms, at no cost in
// throughput.
const logChunk = 64

// writeLog stores recs in the log, logChunk records per insert (writeChunk). It returns the
// records stored, and false at the shutdown deadline: the records not stored by then are
// counted as lost, those stored before it are returned.
func (r *recorder) writeLog(recs []Record) ([]Record, bool) {
	stored := make([]Record, 0, len(recs))
	for start := 0; start < len(recs); start += logChunk {
		end := min(start+logChunk, len(recs))
		s, ok := r.writeChunk(recs[start:end])
		stored = append(stored, s...)
		if !ok {
			if rest := len(recs) - end; rest > 0 {
				r.lose(rest)
				r.log.Error("usage: giving up at the shutdown deadline", "records_lost", rest, "part", "inserts not tried")
			}
			return stored, false
		}
	}
	return stored, true
}

// writeChunk stores recs in the log in one insert, retrying transient failures. An insert
// refused for another reason is split in halves until the refused records are alone, and
// those are set aside. It returns the records stored, and false at the shutdown deadline (the
// records not stored are then counted as lost).
func (r *recorder) writeChunk(recs []Record) ([]Record, bool) {
	if len(recs) == 0 {
		return nil, true
	}
	err := r.retry("log", len(recs), func(ctx context.Context) error { return r.sink.insertLog(ctx, recs) })
	switch {
	case err == nil:
		return recs, true
	case errors.Is(err, errHardStop):
		r.lose(len(recs))
		r.log.Error("usage: giving up at the shutdown deadline", "records_lost", len(recs), "err", err)
		return nil, false
	case len(recs) == 1:
		r.setAside(recs[0], err)
		return nil, true
	}
	h := len(recs) / 2
	a, ok := r.writeChunk(recs[:h])
	if !ok {
		r.lose(len(recs) - h)
		return a, false
	}
	b, ok := r.writeChunk(recs[h:])
	return append(a, b...), ok
}

// lose counts n records given up at the shutdown deadline.
func (r *recorder) lose(n int) {
	r.lost += n
	r.opts.Observer.UsageRecordsRejected(n)
}

// writeDaily adds d to its rollup document, retrying transient failures. An update refused
// for another reason is split by cell; a single refused cell is logged and skipped (its
// records are in the log, and `app usage reconcile` rebuilds the rollup from it). Returns
// false at the shutdown deadline.
func (r *recorder) writeDaily(d *dailyDelta) bool {
	err := r.retry("rollup", len(d.models), func(ctx context.Context) error {
		err := r.sink.addDaily(ctx, d)
		if err != nil {
			d.resent = true
		}
		return err
	})
	switch {
	case err == nil:
		return true
	case errors.Is(err, errHardStop):
		r.log.Error("usage: rollup update lost at the shutdown deadline; run `app usage reconcile`", "rollup", d.id, "err", err)
		return false
	case errors.As(err, new(*monthlyRefused)):
		r.log.Error("usage: monthly update refused; run `app usage reconcile`", "err", err)
		return true
	case len(d.models) == 1:
		for _, m := range d.models {
			r.log.Error("usage: rollup update refused; run `app usage reconcile`", "rollup", d.id,
				"provider", m.Provider, "model", m.Model, "err", err)
		}
		return true
	}
	keys := slices.Sorted(maps.Keys(d.models))
	for _, part := range [][]string{keys[:len(keys)/2], keys[len(keys)/2:]} {
		r.seq++
		sub := &dailyDelta{id: d.id, userID: d.userID, day: d.day, models: map[string]*modelTotals{},
			writer: r.writer, seq: r.seq}
		for _, k := range part {
			sub.models[k] = d.models[k]
		}
		if !r.writeDaily(sub) {
			return false
		}
	}
	return true
}

// retry runs write until it succeeds, fails for a reason a retry cannot fix (returned as is),
// or the shutdown deadline passes (errHardStop). Waits grow from RetryMin to RetryMax.
func (r *recorder) retry(what string, n int, write func(context.Context) error) error {
	wait := r.opts.RetryMin
	ctx := context.Background()
	for attempt := 1; ; attempt++ {
		err := write(ctx)
		if err == nil {
			if r.failing.Swap(false) || attempt > 1 {
				r.log.Info("usage: write succeeded after retries", "part", what, "items", n, "attempts", attempt)
			}
			return nil
		}
		r.opts.Observer.UsageWriteFailed()
		if !store.Transient(err) {
			return err
		}
		r.failing.Store(true)
		r.log.Warn("usage: write failed, will retry", "part", what, "items", n, "attempt", attempt, "err", err)
		// Jitter so replicas hitting the same outage do not retry in step.
		d := wait/2 + rand.N(wait/2+1)
		select {
		case <-time.After(d):
		case <-r.hardStop:
			return fmt.Errorf("%w: %w", errHardStop, err)
		}
		wait = min(wait*2, r.opts.RetryMax)
	}
}

// setAside logs a record that cannot be written, with its request id and the reason, and
// stores a sanitized copy in usage_rejected.
func (r *recorder) setAside(rec Record, reason error) {
	r.rejected.Add(1)
	r.opts.Observer.UsageRecordsRejected(1)
	c := sanitized(rec)
	why := clip(strings.ReplaceAll(reason.Error(), "\x00", ""), maxErrorLen)
	r.log.Error("usage: record set aside", "request_id", c.RequestID, "reason", why)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.sink.reject(ctx, rejection{RequestID: c.RequestID, Reason: why, Record: c, At: time.Now().UTC()}); err != nil {
		r.log.Error("usage: set-aside record not stored", "request_id", c.RequestID, "err", err)
	}
}

// rollup sums the records of a batch by user-day: the answered ones by provider/model, the
// cost of the others in fieldUnanswered.
func rollup(batch []Record) []*dailyDelta {
	byID := map[string]*dailyDelta{}
	for i := range batch {
		rec := &batch[i]
		addRecord(byID, rec.Status, rec.UserID, rec.CreatedAt, rec.Provider, rec.Model, rec.TotalTokens, rec.Cost)
	}
	out := make([]*dailyDelta, 0, len(byID))
	for _, d := range byID {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// addRecord adds one call to the rollup documents of byID (by rollup id), creating its
// document and cell as needed: the recorder's batches and reconcile's rebuild add alike. An
// answered call counts in its provider/model cell; a failed or canceled one only adds its cost
// (what the provider reported before it ended) to the day's fieldUnanswered.
func addRecord(byID map[string]*dailyDelta, status, userID string, at time.Time, provider, model string, tokens int64, cost float64) {
	if status != StatusSuccess && costUnits(cost) <= 0 {
		return
	}
	day := Day(at)
	id := dailyID(userID, day)
	d := byID[id]
	if d == nil {
		d = &dailyDelta{id: id, userID: userID, day: day, models: map[string]*modelTotals{}}
		byID[id] = d
	}
	if status != StatusSuccess {
		d.unanswered += costUnits(cost)
		return
	}
	key := cellKey(provider, model)
	m := d.models[key]
	if m == nil {
		m = &modelTotals{Provider: provider, Model: model}
		d.models[key] = m
	}
	m.Requests++
	m.TotalTokens += tokens
	m.Cost = RoundCost(m.Cost + cost)
}

// costUnits is a cost in the rollup's unit, 10^-10 USD: integers add up exactly.
func costUnits(c float64) int64 { return int64(math.Round(c * 1e10)) }

// unitsCost converts rollup units back to USD.
func unitsCost(u int64) float64 { return RoundCost(float64(u) / 1e10) }

// mongoSink writes to the collections.
type mongoSink struct {
	requests, daily, monthly, rejected, prices, models *mongo.Collection
	known                                              *sync.Map // priceRef or cell key -> struct{}: stored
	sinceMarked                                        *atomic.Bool
	now                                                func() time.Time
	// changed is told the id of each rollup document added to (nil: nobody): the service
	// forgets the day's totals it kept in memory (a late record of a settled day).
	changed func(id string)
}

// insertLog stores recs in ai_requests in one insert, after storing in ai_prices the unit prices
// this process has not stored yet: a record refers to its prices by PriceRef rather than
// holding a copy.
func (s mongoSink) insertLog(ctx context.Context, recs []Record) error {
	docs := make([]any, len(recs))
	for i := range recs {
		if p := recs[i].Prices; p != nil {
			recs[i].PriceRef = priceRef(p)
			if err := s.storePrices(ctx, recs[i].PriceRef, p); err != nil {
				return err
			}
		}
		docs[i] = recs[i]
	}
	_, err := s.requests.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return nil
	}
	// Records refused on a duplicate key were stored by an earlier attempt whose answer was lost.
	if dups, others, ok := store.DuplicateKeys(err); ok && others == 0 && dups > 0 {
		return nil
	}
	return fmt.Errorf("insert %d records: %w", len(recs), err)
}

// storePrices stores p in ai_prices under ref, once per process (an upsert that only inserts).
func (s mongoSink) storePrices(ctx context.Context, ref string, p *UnitPrices) error {
	if _, ok := s.known.Load(ref); ok {
		return nil
	}
	_, err := s.prices.UpdateOne(ctx, bson.D{{Key: "_id", Value: ref}},
		bson.D{{Key: "$setOnInsert", Value: p}}, options.Update().SetUpsert(true))
	if err != nil && !mongo.IsDuplicateKeyError(err) { // a duplicate: another writer stored it first
		return fmt.Errorf("store prices %s: %w", ref, err)
	}
	s.known.Store(ref, struct{}{})
	return nil
}

// storeName stores the provider and model of cell key k in ai_models, once per process.
func (s mongoSink) storeName(ctx context.Context, k string, m *modelTotals) error {
	if _, ok := s.known.Load(k); ok {
		return nil
	}
	_, err := s.models.UpdateOne(ctx, bson.D{{Key: "_id", Value: k}},
		bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "p", Value: m.Provider}, {Key: "m", Value: m.Model}}}},
		options.Update().SetUpsert(true))
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("store model name %s: %w", k, err)
	}
	s.known.Store(k, struct{}{})
	return nil
}

func (s mongoSink) reject(ctx context.Context, r rejection) error {
	_, err := s.rejected.InsertOne(ctx, r)
	return err
}

// addDaily adds d to its rollup document and the day's totals to its monthly document, each
// marked with d's batch, in one update each, after storing the names of cells this process
// has not named yet. A re-sent d (an earlier attempt failed, maybe after the database applied
// one or both updates) is added only where that mark is missing (see addCounters). A monthly
// update refused for a reason a retry cannot fix comes back as a *monthlyRefused: the rollup
// has the batch, and `app usage reconcile` rebuilds the month's days from the log.
func (s mongoSink) addDaily(ctx context.Context, d *dailyDelta) error {
	mark := "w." + d.writer
	inc := bson.D{}
	var calls, tokens, units int64
	for _, k := range slices.Sorted(maps.Keys(d.models)) {
		m := d.models[k]
		if err := s.storeName(ctx, k, m); err != nil {
			return err
		}
		p := "m." + k + "|"
		inc = append(inc,
			bson.E{Key: p + fieldRequests, Value: m.Requests},
			bson.E{Key: p + fieldTokens, Value: m.TotalTokens},
			bson.E{Key: p + fieldCost, Value: costUnits(m.Cost)},
		)
		calls, tokens, units = calls+m.Requests, tokens+m.TotalTokens, units+costUnits(m.Cost)
	}
	if d.unanswered != 0 {
		inc = append(inc, bson.E{Key: fieldUnanswered, Value: d.unanswered})
	}
	set := bson.D{{Key: "userId", Value: d.userID}, {Key: "day", Value: d.day}, {Key: mark, Value: d.seq}}
	if err := addCounters(ctx, s.daily, d.id, set, inc, mark, d.seq, d.resent); err != nil {
		return fmt.Errorf("update rollup %s: %w", d.id, err)
	}
	if s.changed != nil {
		s.changed(d.id)
	}
	if len(d.models) == 0 {
		return nil // no answered call: nothing for the monthly document
	}

	if err := s.markSince(ctx); err != nil {
		return err
	}
	inc = bson.D{{Key: "d." + dayCell(d.day, fieldRequests), Value: calls}, {Key: "d." + dayCell(d.day, fieldTokens), Value: tokens},
		{Key: "d." + dayCell(d.day, fieldCost), Value: units}}
	set = bson.D{{Key: "userId", Value: d.userID}, {Key: "month", Value: monthOf(d.day)}, {Key: mark, Value: d.seq}}
	id := monthlyID(d.userID, d.day)
	if err := addCounters(ctx, s.monthly, id, set, inc, mark, d.seq, d.resent); err != nil {
		if store.Transient(err) {
			return fmt.Errorf("update monthly %s: %w", id, err)
		}
		return &monthlyRefused{id: id, err: err}
	}
	return nil
}

// monthlyRefused is a monthly update the database refused for a reason a retry cannot fix,
// after the rollup update it goes with was applied.
type monthlyRefused struct {
	id  string
	err error
}

func (e *monthlyRefused) Error() string { return fmt.Sprintf("update monthly %s: %v", e.id, e.err) }
func (e *monthlyRefused) Unwrap() error { return e.err }

// markSince records, once per process, the first UTC day whose calls reached the monthly
// documents (an upsert that only inserts: the earliest writer's day stays).
func (s mongoSink) markSince(ctx context.Context) error {
	if s.sinceMarked.Load() {
		return nil
	}
	_, err := s.monthly.UpdateOne(ctx, bson.D{{Key: "_id", Value: sinceID}},
		bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "day", Value: Day(s.now())}}}}, options.Update().SetUpsert(true))
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("mark the monthly documents' first day: %w", err)
	}
	s.sinceMarked.Store(true)
	return nil
}

// addCounters applies one batch's $inc (and $set, which holds the batch mark) to document id
// of coll, creating it. A re-sent batch (an earlier attempt failed, maybe after the database
// applied it) is added only to a document without that mark: the filter leaves such a
// document out, the upsert then collides with it on _id, and a look at the mark tells a batch
// already taken from a document another recorder created first (taken again at once). A first
// attempt needs no such filter, which the embedded store makes costly.
func addCounters(ctx context.Context, coll *mongo.Collection, id string, set, inc bson.D, mark string, seq int64, resent bool) error {
	filter := bson.D{{Key: "_id", Value: id}}
	if resent {
		filter = append(filter, bson.E{Key: mark, Value: bson.D{{Key: "$ne", Value: seq}}})
	}
	update := bson.D{{Key: "$set", Value: set}, {Key: "$inc", Value: inc}}
	for attempt := 0; ; attempt++ {
		_, err := coll.UpdateOne(ctx, filter, update, options.Update().SetUpsert(true))
		if err == nil {
			return nil
		}
		if !mongo.IsDuplicateKeyError(err) || attempt > 0 {
			return err
		}
		n, cerr := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}, {Key: mark, Value: seq}})
		if cerr != nil {
			return fmt.Errorf("check %s: %w", id, cerr)
		}
		if n > 0 {
			return nil // taken by an earlier attempt whose answer was lost
		}
	}
}
