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

// dailyDelta is what one batch adds to one rollup document.
type dailyDelta struct {
	id, userID, day string
	models          map[string]*modelTotals
}

// recorder writes records in the background, in batches: one unordered insertMany for the log
// and one $inc upsert per user-day for the rollup. It never drops a record: a failed write is
// retried until it succeeds or Close's deadline passes, and a full queue makes Record wait.
type recorder struct {
	sink sink
	opts RecorderOptions
	log  *slog.Logger

	queue chan Record

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

// flush writes one batch, retrying each part that fails until it succeeds or the hard stop.
// The log insert is idempotent (_id = request id); each rollup document is incremented once.
func (r *recorder) flush(batch []Record) {
	deltas := rollup(batch)
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

func (s mongoSink) addDaily(ctx context.Context, d *dailyDelta) error {
	inc := bson.D{}
	set := bson.D{{Key: "userId", Value: d.userID}, {Key: "day", Value: d.day}}
	for _, k := range slices.Sorted(maps.Keys(d.models)) {
		m := d.models[k]
		p := "m." + k + "|"
		inc = append(inc,
			bson.E{Key: p + fieldRequests, Value: m.Requests},
			bson.E{Key: p + fieldTokens, Value: m.TotalTokens},
			bson.E{Key: p + fieldCost, Value: m.Cost},
		)
	}
	_, err := s.daily.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.id}},
		bson.D{{Key: "$set", Value: set}, {Key: "$inc", Value: inc}}, options.Update().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("update rollup %s: %w", d.id, err)
	}
	return nil
}
