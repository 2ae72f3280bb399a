package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/acme/app/internal/ai"
)

// handleAIComplete proxies a chat to provider for the caller and answers the normalized
// completion, or, for "stream": true, the server-sent events of streamAnswer. The answer's
// requestId is also the X-Request-Id header.
func handleAIComplete(svc *ai.Service, provider string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		var in ai.ChatInput
		if err := decodeInto(w, r, &in); err != nil {
			writeError(w, r, err)
			return
		}
		in.RequestID = RequestID(r.Context())
		if in.Stream {
			streamAnswer(w, r, svc, caller.ID, provider, in)
			return
		}
		c, err := svc.Complete(r.Context(), caller.ID, provider, in)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, c)
	})
}

// pingInterval is how often a stream that has sent nothing else sends a comment, so that
// proxies keep the connection.
var pingInterval = 15 * time.Second

// streamWriteTimeout bounds each write of a stream to its client: a client that stops
// reading ends its stream there instead of holding it, its provider call and its budget hold
// for as long as it likes.
var streamWriteTimeout = 30 * time.Second

// sseWriter writes server-sent events. Each event is written to the answer's buffer and
// flushed by the stream's own goroutine (run) as soon as it is told: events written while a
// flush is under way leave with the next one, so a stream that is behind catches up in fewer
// writes to the socket. Safe for concurrent use.
type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	err     error     // the first failed write or flush
	last    time.Time // when something was last written
	flush   chan struct{}
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), flush: make(chan struct{}, 1)}
}

// start writes the header of the event stream.
func (s *sseWriter) start() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	// A stream lasts as long as the provider writes: server.write_timeout does not cut it
	// (ai.stream_idle_timeout bounds its gaps); each write has streamWriteTimeout instead.
	_ = s.rc.SetWriteDeadline(time.Time{})
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// event writes one event with v as its JSON data and asks for a flush.
func (s *sseWriter) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if !s.started {
		s.start()
	}
	s.write("event: " + name + "\ndata: " + string(data) + "\n\n")
	err = s.err
	s.mu.Unlock()
	select {
	case s.flush <- struct{}{}:
	default: // a flush is asked for already
	}
	return err
}

func (s *sseWriter) write(text string) {
	s.last = time.Now()
	if s.err == nil {
		// The flush that follows (or a full buffer) writes to the socket under this deadline.
		_ = s.rc.SetWriteDeadline(s.last.Add(streamWriteTimeout))
		_, s.err = s.w.Write([]byte(text))
	}
}

// flushNow sends what was written.
func (s *sseWriter) flushNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = s.rc.Flush()
	}
}

// run flushes what event writes and, once the stream started, writes a comment line when
// nothing was written for pingInterval; it returns when stop is closed or the client leaves.
func (s *sseWriter) run(stop, gone <-chan struct{}) {
	t := time.NewTicker(pingInterval / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-gone:
			return
		case <-s.flush:
			s.flushNow()
		case <-t.C:
			s.mu.Lock()
			if s.started && time.Since(s.last) >= pingInterval {
				s.write(": ping\n\n")
				if s.err == nil {
					s.err = s.rc.Flush()
				}
			}
			s.mu.Unlock()
		}
	}
}

// streamAnswer answers a streamed call: `event: delta` {"text"} per piece as it arrives,
// then `event: done` with the normalized answer, or `event: error` with the error envelope
// when the provider fails after the first piece was sent. A failure before it is an ordinary
// JSON error answer.
func streamAnswer(w http.ResponseWriter, r *http.Request, svc *ai.Service, userID, provider string, in ai.ChatInput) {
	var c *ai.Completion
	serveStream(w, r, func(sw *sseWriter) (err error) {
		c, err = svc.Stream(r.Context(), userID, provider, in, func(d ai.Delta) error {
			if d.Text == "" {
				return nil // the endpoints offer no tools: an answer is text
			}
			return sw.event("delta", struct {
				Text string `json:"text"`
			}{d.Text})
		})
		return err
	}, func(sw *sseWriter) { _ = sw.event("done", c) }, func(sw *sseWriter, body any) { _ = sw.event("error", body) })
}

// serveStream answers r with the events produce writes, each flushed as it comes by the
// writer's own goroutine; then done writes the closing event. When produce fails before
// anything was written, the failure is an ordinary error answer; after, fail writes its body
// (in the route's error format) as the stream's last event.
func serveStream(w http.ResponseWriter, r *http.Request, produce func(*sseWriter) error, done func(*sseWriter), fail func(sw *sseWriter, body any)) {
	sw := newSSEWriter(w)
	stop := make(chan struct{})
	var flusher sync.WaitGroup
	flusher.Go(func() { sw.run(stop, r.Context().Done()) })
	err := produce(sw)
	close(stop)
	flusher.Wait()
	switch {
	case err == nil:
		if done != nil {
			done(sw)
		}
	case !sw.started:
		writeError(w, r, err)
		return
	default:
		fail(sw, failureBody(r, err))
	}
	sw.flushNow()
}
