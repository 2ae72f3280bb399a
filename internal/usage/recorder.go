package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/acme/app/internal/store"
)

// ErrClosed is returned by Record after Close.
var ErrClosed = errors.New("usage: recorder closed")

// RecorderOptions tune the background recorder. Zero values take the defaults.
type RecorderOptions struct {
	QueueSize     int           // records waiting to be written (default 10,000); a full queue blocks Record
	BatchSize     int           // records per write (default 1,000)
	FlushInterval time.Duration // a partial batch is written after this (default 100ms)
	RetryMin      time.Duration // first wait after a failed write (default 50ms)
	RetryMax      time.Duration // longest wait between retries (default 5s)
}

func (o *RecorderOptions) defaults() {
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
}

// sink is where batches go: the two collections, or a test double around them.
type sink interface {
	// insertLog stores records in ai_requests; records already stored are not an error.
	insertLog(ctx context.Context, recs []Record) error
	// addDaily adds delta to the rollup document id (creating it).
	addDaily(ctx context.Context, d *dailyDelta) error
}

// dailyDelta is what one batch adds to one rollup document. writer and seq name the batch:
// the recorder that wrote it and the batch's number in that recorder's sequence.
type dailyDelta struct {
	id, userID, day string
	models          map[string]*modelTotals
	writer          string
	seq             int64
	resent          bool // an earlier attempt failed, and may have been applied
}

// recorder writes records in the background, in batches: one unordered insertMany for the log
// and one $inc upsert per user-day for the rollup. It never drops a record: a failed write is
// retried until it succeeds or Close's deadline passes, and a full queue makes Record wait.
type recorder struct {
	sink sink
	opts RecorderOptions
	log  *slog.Logger

	queue  chan Record
	writer string // this recorder's id in the rollup's `w`
	seq    int64  // batches flushed (owned by loop)

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

// record queues rec. It waits while the queue is full (back-pressure) unless ctx ends first.
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
	select {
	case r.queue <- rec:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("usage: queue full: %w", ctx.Err())
	}
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
			// No Record call is in flight any more: write what is queued, then leave.
			for {
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

// flush writes one batch, retrying each part that fails until it succeeds or the hard stop.
// Both parts are idempotent: the log's _id is the request id, and each rollup document
// records the last batch of this recorder it took.
func (r *recorder) flush(batch []Record) {
	r.seq++
	deltas := rollup(batch)
	for _, d := range deltas {
		d.writer, d.seq = r.writer, r.seq
	}
	logDone := false
	wait := r.opts.RetryMin
	ctx := context.Background()
	for attempt := 1; ; attempt++ {
		var err error
		if !logDone {
			if err = r.sink.insertLog(ctx, batch); err == nil {
				logDone = true
			}
		}
		if logDone {
			for len(deltas) > 0 {
				if err = r.sink.addDaily(ctx, deltas[0]); err != nil {
					deltas[0].resent = true
					break
				}
				deltas = deltas[1:]
			}
		}
		if logDone && len(deltas) == 0 {
			if attempt > 1 {
				r.log.Info("usage: write succeeded after retries", "records", len(batch), "attempts", attempt)
			}
			return
		}
		r.log.Warn("usage: write failed, will retry", "records", len(batch), "attempt", attempt, "err", err)
		// Jitter so replicas hitting the same outage do not retry in step.
		d := wait/2 + rand.N(wait/2+1)
		select {
		case <-time.After(d):
		case <-r.hardStop:
			lost := 0
			if !logDone {
				lost = len(batch)
			}
			r.lost += lost
			r.log.Error("usage: giving up at the shutdown deadline", "records_lost", lost,
				"rollups_lost", len(deltas), "err", err)
			return
		}
		wait = min(wait*2, r.opts.RetryMax)
	}
}

// rollup sums a batch's successful records by user-day and provider/model.
func rollup(batch []Record) []*dailyDelta {
	byID := map[string]*dailyDelta{}
	for i := range batch {
		rec := &batch[i]
		if rec.Status != StatusSuccess {
			continue
		}
		day := Day(rec.CreatedAt)
		id := dailyID(rec.UserID, day)
		d := byID[id]
		if d == nil {
			d = &dailyDelta{id: id, userID: rec.UserID, day: day, models: map[string]*modelTotals{}}
			byID[id] = d
		}
		key := modelKey(rec.Provider, rec.Model)
		m := d.models[key]
		if m == nil {
			m = &modelTotals{}
			d.models[key] = m
		}
		m.Requests++
		m.TotalTokens += rec.TotalTokens
		m.Cost += rec.Cost
	}
	out := make([]*dailyDelta, 0, len(byID))
	for _, d := range byID {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// mongoSink writes to the two collections.
type mongoSink struct {
	requests, daily *mongo.Collection
}

func (s mongoSink) insertLog(ctx context.Context, recs []Record) error {
	docs := make([]any, len(recs))
	for i := range recs {
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

// addDaily adds d to its rollup document and marks the document with d's batch. A re-sent d
// (an earlier attempt failed, maybe after the database applied it) is added only to a
// document without that mark: the filter leaves such a document out, the upsert then
// collides with it on _id, and a look at the mark tells a batch already taken from a
// document another recorder created first (taken again at once). A first attempt needs no
// such filter, which the embedded store makes costly.
func (s mongoSink) addDaily(ctx context.Context, d *dailyDelta) error {
	mark := "w." + d.writer
	inc := bson.D{}
	set := bson.D{{Key: "userId", Value: d.userID}, {Key: "day", Value: d.day}, {Key: mark, Value: d.seq}}
	for _, k := range slices.Sorted(maps.Keys(d.models)) {
		m := d.models[k]
		p := "m." + k + "|"
		inc = append(inc,
			bson.E{Key: p + fieldRequests, Value: m.Requests},
			bson.E{Key: p + fieldTokens, Value: m.TotalTokens},
			bson.E{Key: p + fieldCost, Value: m.Cost},
		)
	}
	filter := bson.D{{Key: "_id", Value: d.id}}
	if d.resent {
		filter = append(filter, bson.E{Key: mark, Value: bson.D{{Key: "$ne", Value: d.seq}}})
	}
	update := bson.D{{Key: "$set", Value: set}, {Key: "$inc", Value: inc}}
	for attempt := 0; ; attempt++ {
		_, err := s.daily.UpdateOne(ctx, filter, update, options.Update().SetUpsert(true))
		if err == nil {
			return nil
		}
		if !mongo.IsDuplicateKeyError(err) || attempt > 0 {
			return fmt.Errorf("update rollup %s: %w", d.id, err)
		}
		n, cerr := s.daily.CountDocuments(ctx, bson.D{{Key: "_id", Value: d.id}, {Key: mark, Value: d.seq}})
		if cerr != nil {
			return fmt.Errorf("check rollup %s: %w", d.id, cerr)
		}
		if n > 0 {
			return nil // taken by an earlier attempt whose answer was lost
		}
	}
}
