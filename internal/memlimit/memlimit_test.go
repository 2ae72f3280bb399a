package memlimit_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/acme/app/internal/memlimit"
)

func TestLimit_TakeGive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		max     int64
		takes   []int64
		want    []bool
		used    int64
		refused int64
	}{
		{"fits", 10, []int64{4, 6}, []bool{true, true}, 10, 0},
		{"one too many", 10, []int64{4, 7, 6}, []bool{true, false, true}, 10, 1},
		{"larger than the bound", 10, []int64{11}, []bool{false}, 0, 1},
		{"nothing is always taken", 10, []int64{10, 0, -3}, []bool{true, true, true}, 10, 0},
		{"no bound", 0, []int64{1 << 40, 1 << 40}, []bool{true, true}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := memlimit.New(tt.max)
			for i, n := range tt.takes {
				if got := l.Take(n); got != tt.want[i] {
					t.Errorf("Take(%d) #%d = %v, want %v", n, i, got, tt.want[i])
				}
			}
			if l.Used() != tt.used || l.Refused() != tt.refused {
				t.Errorf("used %d refused %d, want %d and %d", l.Used(), l.Refused(), tt.used, tt.refused)
			}
			l.Give(l.Used())
			if l.Used() != 0 {
				t.Errorf("used %d after giving everything back", l.Used())
			}
		})
	}
}

// Ensure takers racing for the last bytes never hold more than the bound together.
func TestLimit_ConcurrentTakesStayWithinBound(t *testing.T) {
	t.Parallel()
	const bound, takers, size = 1000, 16, 7
	l := memlimit.New(bound)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for range takers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				if l.Take(size) {
					u := l.Used()
					mu.Lock()
					peak = max(peak, u)
					mu.Unlock()
					l.Give(size)
				}
			}
		}()
	}
	wg.Wait()
	if peak > bound || l.Used() != 0 {
		t.Errorf("peak %d (bound %d), %d left in use", peak, bound, l.Used())
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		max      int64
		other    int64 // taken by someone else before reading
		body     string
		wantErr  error
		wantHeld int64
	}{
		{"fits", 100, 0, strings.Repeat("x", 100), nil, 100},
		{"others hold the room", 100, 60, strings.Repeat("x", 50), memlimit.ErrFull, 0},
		{"past the bound", 100, 0, strings.Repeat("x", 101), memlimit.ErrFull, 0},
		{"no bound", 0, 0, strings.Repeat("x", 5000), nil, 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := memlimit.New(tt.max)
			l.Take(tt.other)
			r := memlimit.NewReader(l, io.LimitReader(strings.NewReader(tt.body), 1<<20))
			got, err := io.ReadAll(r)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err == nil && !bytes.Equal(got, []byte(tt.body)) {
				t.Errorf("read %d bytes, want %d", len(got), len(tt.body))
			}
			if tt.max > 0 && r.Held() != tt.wantHeld {
				t.Errorf("held %d, want %d", r.Held(), tt.wantHeld)
			}
			if _, err := r.Read(make([]byte, 1)); tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("read after failing: %v, want %v", err, tt.wantErr)
			}
			_ = r.Close()
			if l.Used() != max(tt.other, 0) && tt.max > 0 {
				t.Errorf("used %d after Close, want %d (the other's)", l.Used(), tt.other)
			}
		})
	}
}
