// Package ratelimit counts requests per client in fixed windows. The Limiter interface lets a
// shared store back it when several replicas run behind a load balancer; Memory, the default,
// keeps the counters in this process.
package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Decision is the outcome of one request against a limit.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is the time left until the window ends and the count starts again.
	Reset time.Duration
}

// Limiter counts one request for key against limit per window.
type Limiter interface {
	Take(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
}

const shards = 64

// DefaultMaxKeys bounds the number of clients a Memory limiter tracks at once.
const DefaultMaxKeys = 1 << 20

// Memory is an in-process Limiter. Expired windows are swept as traffic arrives, and the number
// of tracked keys is capped, so memory stays bounded however many distinct clients appear.
type Memory struct {
	seed    maphash.Seed
	now     func() time.Time
	maxPer  int
	buckets [shards]bucket
}

type bucket struct {
	mu        sync.Mutex
	entries   map[string]*entry
	lastSweep time.Time
}

type entry struct {
	count int
	reset time.Time // end of the current window
}

// NewMemory returns a Memory limiter that tracks at most maxKeys clients (DefaultMaxKeys if 0).
func NewMemory(maxKeys int) *Memory {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	m := &Memory{seed: maphash.MakeSeed(), now: time.Now, maxPer: max(1, maxKeys/shards)}
	for i := range m.buckets {
		m.buckets[i].entries = make(map[string]*entry)
	}
	return m
}

// SetClock replaces the clock (tests).
func (m *Memory) SetClock(now func() time.Time) { m.now = now }

// Len returns the number of tracked keys.
func (m *Memory) Len() int {
	n := 0
	for i := range m.buckets {
		b := &m.buckets[i]
		b.mu.Lock()
		n += len(b.entries)
		b.mu.Unlock()
	}
	return n
}

// Take implements Limiter.
func (m *Memory) Take(_ context.Context, key string, limit int, window time.Duration) (Decision, error) {
	now := m.now()
	b := &m.buckets[maphash.String(m.seed, key)%shards]
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.lastSweep) >= window {
		b.sweep(now)
	}
	e, ok := b.entries[key]
	if !ok || !now.Before(e.reset) {
		if !ok && len(b.entries) >= m.maxPer {
			b.sweep(now)
			if len(b.entries) >= m.maxPer {
				for k := range b.entries { // full of live clients: drop an arbitrary one
					delete(b.entries, k)
					break
				}
			}
		}
		if e == nil {
			e = &entry{}
			b.entries[key] = e
		}
		e.count, e.reset = 0, now.Add(window)
	}
	d := Decision{Limit: limit, Reset: e.reset.Sub(now)}
	if e.count >= limit {
		return d, nil
	}
	e.count++
	d.Allowed, d.Remaining = true, limit-e.count
	return d, nil
}

func (b *bucket) sweep(now time.Time) {
	for k, e := range b.entries {
		if !now.Before(e.reset) {
			delete(b.entries, k)
		}
	}
	b.lastSweep = now
}
