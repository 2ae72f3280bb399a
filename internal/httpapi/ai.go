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
		in.RequestID = ai.RequestIDFor(RequestID(r.Context()))
		if in.RequestID != RequestID(r.Context()) { // the client's id is not a UUID: the answer's is
			w.Header().Set("X-Request-Id", in.RequestID)
		}
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

// sseWriter writes server-sent events, each flushed at once; safe for concurrent use (the
// pings come from their own goroutine).
type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	last    time.Time // when something was last written
}

// start writes the header of the event stream.
func (s *sseWriter) start() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	// A stream lasts as long as the provider writes: server.write_timeout does not cut it
	// (ai.stream_idle_timeout bounds its gaps).
	_ = s.rc.SetWriteDeadline(time.Time{})
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// event writes one event with v as its JSON data.
func (s *sseWriter) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.start()
	}
	return s.write("event: " + name + "\ndata: " + string(data) + "\n\n")
}

// ping writes a comment line when nothing was written for pingInterval.
func (s *sseWriter) ping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started && time.Since(s.last) >= pingInterval {
		_ = s.write(": ping\n\n")
	}
}

func (s *sseWriter) write(text string) error {
	s.last = time.Now()
	if _, err := s.w.Write([]byte(text)); err != nil {
		return err
	}
	return s.rc.Flush()
}

// streamAnswer answers a streamed call: `event: delta` {"text"} per piece as it arrives,
// then `event: done` with the normalized answer, or `event: error` with the error envelope
// when the provider fails after the first piece was sent. A failure before it is an ordinary
// JSON error answer.
func streamAnswer(w http.ResponseWriter, r *http.Request, svc *ai.Service, userID, provider string, in ai.ChatInput) {
	sw := &sseWriter{w: w, rc: http.NewResponseController(w)}
	stop := make(chan struct{})
	var pings sync.WaitGroup
	pings.Go(func() {
		t := time.NewTicker(pingInterval / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			case <-t.C:
				sw.ping()
			}
		}
	})
	c, err := svc.Stream(r.Context(), userID, provider, in, func(text string) error {
		return sw.event("delta", struct {
			Text string `json:"text"`
		}{text})
	})
	close(stop)
	pings.Wait()
	switch {
	case err == nil:
		_ = sw.event("done", c)
	case !sw.started:
		writeError(w, r, err)
	default:
		env, _ := envelopeOf(r, err)
		_ = sw.event("error", env)
	}
}
