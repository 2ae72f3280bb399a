package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// Ensure the limit holds per key and the window resets it.
func TestMemory_Window(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	m := NewMemory(0)
	m.SetClock(c.now)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		d, _ := m.Take(ctx, "a", 3, time.Minute)
		if !d.Allowed || d.Remaining != 3-i || d.Limit != 3 {
			t.Fatalf("take %d: %+v, want allowed with %d remaining", i, d, 3-i)
		}
	}
	d, _ := m.Take(ctx, "a", 3, time.Minute)
	if d.Allowed || d.Remaining != 0 || d.Reset != time.Minute {
		t.Fatalf("4th take: %+v, want refused with reset 1m", d)
	}
	if d, _ := m.Take(ctx, "b", 3, time.Minute); !d.Allowed {
		t.Fatalf("other key refused: %+v", d)
	}
	c.advance(59 * time.Second)
	if d, _ := m.Take(ctx, "a", 3, time.Minute); d.Allowed || d.Reset != time.Second {
		t.Fatalf("before reset: %+v, want refused with 1s left", d)
	}
	c.advance(time.Second)
	if d, _ := m.Take(ctx, "a", 3, time.Minute); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("after reset: %+v, want allowed with 2 remaining", d)
	}
}

// Ensure idle clients expire: a flood of distinct clients does not stay in memory once their
// windows have passed.
func TestMemory_IdleExpiry(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	m := NewMemory(0)
	m.SetClock(c.now)
	ctx := context.Background()
	for i := 0; i < 10_000; i++ {
		_, _ = m.Take(ctx, fmt.Sprintf("10.0.%d.%d", i/256, i%256), 5, time.Minute)
	}
	if got := m.Len(); got != 10_000 {
		t.Fatalf("tracked %d keys, want 10000", got)
	}
	c.advance(2 * time.Minute)
	// Later traffic sweeps every shard it reaches; 10,000 keys over 64 shards reach them all.
	for i := 0; i < 10_000; i++ {
		_, _ = m.Take(ctx, fmt.Sprintf("new-%d", i), 5, time.Minute)
	}
	if got := m.Len(); got != 10_000 {
		t.Fatalf("after expiry tracked %d keys, want 10000 (only the new clients)", got)
	}
}

// Ensure the key cap bounds memory even when every client is live.
func TestMemory_Cap(t *testing.T) {
	t.Parallel()
	m := NewMemory(shards * 10)
	ctx := context.Background()
	for i := 0; i < 100_000; i++ {
		_, _ = m.Take(ctx, fmt.Sprint(i), 5, time.Hour)
	}
	if got := m.Len(); got > shards*10 {
		t.Fatalf("tracked %d keys, want at most %d", got, shards*10)
	}
}

// Ensure concurrent takes never let more than the limit through.
func TestMemory_Concurrent(t *testing.T) {
	t.Parallel()
	m := NewMemory(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if d, _ := m.Take(context.Background(), "k", 50, time.Hour); d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if allowed != 50 {
		t.Fatalf("allowed %d, want exactly 50", allowed)
	}
}
