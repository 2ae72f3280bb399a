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
		u.message = s.redact(u.message)
		s.boundNames(u)
		switch {
		case u.errType != "" && !sent:
			// The provider refused the call in its stream before any piece, as an error answer
			// would have: classified as that answer (a 400 stays a 400).
			u.status = statusOfEvent(u.errType)
		default:
			u.midStream = true
		}
		if u.status == 0 {
			u.status = resp.StatusCode
		}
		r := dec.result()
		if sent || u.canceled || u.timeout { // the provider was answering, its caller left, or we stopped waiting
			estimateUnreported(r, c)
		}
		return r, attempts, u
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

// The rule of estimateUnreported: about four bytes of text a token (English reaches it; code
// and most other scripts take more tokens, so the estimate stays at or under what the provider
// bills), and an image the least any provider bills for one (OpenAI's low detail).
const (
	bytesPerToken = 4
	imageEstimate = 85
)

// estimateUnreported sets r's prompt count, when the provider reported none, and raises its
// completion count, when the provider reported less (a count so far), to an estimate from the
// text: for a stream that ended before the provider's final usage (its client left, it broke
// off or failed; OpenAI reports usage only in its last chunk, and Anthropic the completion
// only in its last delta), and for an answer that came without any usage. Such a call would
// otherwise cost nothing while the provider bills it. The prompt's estimate counts its text,
// tool definitions and images; the completion's the text and tool calls relayed, at most the
// call's output cap (no provider bills past it, and a budget reserved for it). A count set or
// raised marks r estimated.
func estimateUnreported(r *result, c *call) {
	bytes, images := c.promptSize()
	prompt := tokensOf(bytes) + int64(images)*imageEstimate
	out := len(r.text) + len(r.refusal)
	for _, tc := range r.toolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	if r.promptTokens == 0 { // a prompt count the provider reported is exact: kept
		r.promptTokens, r.estimated = prompt, true
	}
	completion := tokensOf(out)
	if c.maxTokens > 0 {
		completion = min(completion, int64(c.maxTokens))
	}
	if completion > r.completionTokens {
		r.completionTokens, r.estimated = completion, true
	}
}
