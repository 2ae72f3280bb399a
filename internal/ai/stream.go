package ai

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// maxStreamBytes bounds what is read of one streamed answer.
const maxStreamBytes = 64 << 20

// The causes of a streamed call's end that are ours: a timeout before the first piece
// (ai.timeout), between two events after it (ai.stream_idle_timeout), or of the whole stream
// (ai.stream_max_duration).
var (
	errFirstPiece = errors.New("ai.timeout passed before the first piece")
	errIdle       = errors.New("ai.stream_idle_timeout passed between two events")
	errTooLong    = errors.New("ai.stream_max_duration passed")
)

// stream calls the provider for a streamed answer, retrying only until the provider starts
// answering, and hands every piece of text or tool call to onDelta as it arrives. On a failure after the
// answer started, the result so far (its usage) comes with the error.
func (s *Service) stream(parent context.Context, ep *endpoint, cfg ProviderConfig, c *call, onDelta func(Delta) error) (*result, int, *upstreamError) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	// Until the first piece (text or a tool call) the timer is ai.timeout, whatever events
	// come: a provider sending only events without a piece (pings, empty chunks) must not hold
	// a caller who has received nothing yet. After it, the timer is the idle one, reset by
	// every event.
	var started atomic.Bool
	timer := time.AfterFunc(s.timeout, func() {
		if started.Load() {
			cancel(errIdle)
		} else {
			cancel(errFirstPiece)
		}
	})
	defer timer.Stop()
	longest := time.AfterFunc(s.maxDur, func() { cancel(errTooLong) })
	defer longest.Stop()

	var resp *http.Response
	attempts, uerr := s.retry(parent, ctx, s.now().Add(s.timeout), ep, c, func() *upstreamError {
		r, u := s.send(ctx, ep.provider, cfg, c)
		resp = r
		return u
	})
	if uerr != nil {
		return nil, attempts, uerr
	}
	defer resp.Body.Close()

	dec := ep.provider.newStream(c, resp.Header)
	var deltas []Delta
	sent := false // a delta was handed to onDelta
	// A MaxBytesReader, not a LimitReader: at the limit the stream fails, where a LimitReader's
	// EOF would look like the end of a stream that ends at EOF.
	events := newSSEReader(http.MaxBytesReader(nil, resp.Body, maxStreamBytes))
	fail := func(u *upstreamError) (*result, int, *upstreamError) {
		if parent.Err() != nil {
			u = &upstreamError{canceled: true, status: http.StatusOK}
		}
		u.midStream, u.message = true, s.redact(u.message)
		if u.status == 0 {
			u.status = resp.StatusCode
		}
		return dec.result(), attempts, u
	}
	for {
		name, data, err := events.next()
		var end bool
		if err != nil {
			if errors.Is(err, io.EOF) && dec.endsAtEOF() {
				break
			}
			u := transportError(ctx, err)
			if errors.Is(context.Cause(ctx), errTooLong) {
				u = &upstreamError{timeout: true, tooLong: true}
			}
			if !u.timeout && !u.canceled {
				var tooLarge *http.MaxBytesError
				u = &upstreamError{message: "the stream broke off: " + netReason(err), cause: err}
				switch {
				case errors.Is(err, io.EOF):
					u.message = "the stream ended before its last event"
				case errors.As(err, &tooLarge):
					u.message = fmt.Sprintf("the stream passed its limit of %d MiB", maxStreamBytes>>20)
				case errors.Is(err, bufio.ErrTooLong):
					u.message = fmt.Sprintf("an event passed the limit of %d MiB", maxEventBytes>>20)
				}
			}
			return fail(u)
		}
		deltas, end, err = dec.event(name, data, deltas[:0])
		if err != nil {
			return fail(asUpstream(err))
		}
		for _, d := range deltas {
			if !sent {
				r := dec.result()
				d.PromptTokens, d.Model, sent = r.promptTokens, r.model, true
			}
			if d.ToolCall != nil && d.ToolCall.Name != "" && d.ToolCall.ID == "" {
				d.ToolCall.ID = c.idPrefix + strconv.Itoa(d.ToolCall.Index)
			}
			if err := onDelta(d); err != nil {
				cancel(err)
				return fail(&upstreamError{canceled: true})
			}
		}
		if sent {
			started.Store(true)
			timer.Reset(s.idle)
		}
		if end {
			break
		}
	}
	return dec.result(), attempts, nil
}
