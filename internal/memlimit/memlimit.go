// Package memlimit bounds the bytes that requests and answers read from outside hold in
// memory at once, across a whole process: each body is bounded on its own, but a burst of
// large ones together (many callers uploading images, a provider answering megabytes to
// every call) must not take the process past its memory.
//
// A Limit is taken from as bytes are read and given back when the buffer they went into is
// dropped. Taking never waits: a read that does not fit fails at once, so one caller's
// large upload cannot make the others queue behind it.
package memlimit

import (
	"errors"
	"io"
	"sync/atomic"

	"github.com/acme/app/internal/apperr"
)

// ErrFull is the error of a read that does not fit in the limit.
var ErrFull = errors.New("memlimit: the process holds as many buffered bytes as it may")

// Overloaded is the code of Refusal's error.
const Overloaded = "overloaded"

// Refusal is the answer to a request whose body, or whose provider's answer, does not fit:
// 503 (Unavailable) with code Overloaded, to be retried in a second; cause is kept for logs.
func Refusal(cause error) *apperr.Error {
	e := apperr.Wrap(apperr.Unavailable, cause,
		"the server holds as many request and answer bytes as it may at once (server.max_buffered_bytes): retry in a moment")
	e.RetryAfter, e.Code = 1, Overloaded
	return e
}

// Limit is a process-wide number of bytes. The nil *Limit has no bound.
type Limit struct {
	max     int64
	used    atomic.Int64
	refused atomic.Int64
}

// New returns a Limit of max bytes; max <= 0 is no bound (nil).
func New(max int64) *Limit {
	if max <= 0 {
		return nil
	}
	return &Limit{max: max}
}

// Take takes n bytes from l, reporting whether they fit. Bytes taken are given back with Give.
func (l *Limit) Take(n int64) bool {
	if l == nil || n <= 0 {
		return true
	}
	if l.used.Add(n) > l.max {
		l.used.Add(-n)
		l.refused.Add(1)
		return false
	}
	return true
}

// Give gives back n bytes taken from l.
func (l *Limit) Give(n int64) {
	if l != nil && n > 0 {
		l.used.Add(-n)
	}
}

// Used is the number of bytes taken from l and not given back.
func (l *Limit) Used() int64 {
	if l == nil {
		return 0
	}
	return l.used.Load()
}

// Refused is the number of takes that did not fit since l was made.
func (l *Limit) Refused() int64 {
	if l == nil {
		return 0
	}
	return l.refused.Load()
}

// Reader reads from another reader, taking every byte it reads from a Limit; a read that
// does not fit fails with ErrFull. Close gives back what it took.
type Reader struct {
	l    *Limit
	r    io.Reader
	held int64
	err  error
}

// NewReader returns a Reader of r taking from l.
func NewReader(l *Limit, r io.Reader) *Reader { return &Reader{l: l, r: r} }

// Read reads into p and takes what it read from the limit.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.r.Read(p)
	if n > 0 {
		if !r.l.Take(int64(n)) {
			r.err = ErrFull
			return 0, ErrFull
		}
		r.held += int64(n)
	}
	return n, err
}

// Held is the number of bytes r took and has not given back.
func (r *Reader) Held() int64 { return r.held }

// Close gives back what r took. It does not close the reader it reads.
func (r *Reader) Close() error {
	r.l.Give(r.held)
	r.held = 0
	return nil
}
