package httpapi

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/gateway"
)

// handleV1Chat answers POST /v1/chat/completions: OpenAI's request in, OpenAI's
// chat.completion (or its chunk stream ending with [DONE]) out; its failures are answered in
// the error format of its group (OpenAI's, see openAIFormat).
func handleV1Chat(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := CallerFrom(r.Context())
		body, err := readJSONBody(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		req, err := gw.Parse(body)
		if err != nil {
			writeError(w, r, err)
			return
		}
		req.Input.RequestID = ai.RequestIDFor(RequestID(r.Context()))
		if req.Input.RequestID != RequestID(r.Context()) { // the client's id is not a UUID: the answer's is
			w.Header().Set("X-Request-Id", req.Input.RequestID)
		}
		if req.Stream {
			streamV1(w, r, gw, caller.ID, req)
			return
		}
		c, err := gw.Complete(r.Context(), caller.ID, req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, c)
	})
}

// streamV1 answers a streamed call as OpenAI does: `data: <chunk>` events, then `data: [DONE]`.
// A failure before the first chunk is an ordinary error answer; after it, an event carrying
// OpenAI's error object ends the stream (the SDKs raise it). The writer and its flushing
// goroutine are those of the /api/ai/* streams.
func streamV1(w http.ResponseWriter, r *http.Request, gw *gateway.Service, userID string, req *gateway.Request) {
	sw := newSSEWriter(w)
	stop := make(chan struct{})
	var flusher sync.WaitGroup
	flusher.Go(func() { sw.run(stop, r.Context().Done()) })
	err := gw.Stream(r.Context(), userID, req, func(c *gateway.Chunk) error { return sw.data(c) })
	close(stop)
	flusher.Wait()
	switch {
	case err == nil:
		_ = sw.raw("[DONE]")
	case !sw.started:
		writeError(w, r, err)
		return
	default:
		_ = sw.data(failureBody(r, err))
	}
	sw.flushNow()
}

// data writes one unnamed event (OpenAI's streams name none) with v as its JSON data.
func (s *sseWriter) data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(string(b))
}

// raw writes one unnamed event with text as its data and asks for a flush.
func (s *sseWriter) raw(text string) error {
	s.mu.Lock()
	if !s.started {
		s.start()
	}
	s.write("data: " + text + "\n\n")
	err := s.err
	s.mu.Unlock()
	select {
	case s.flush <- struct{}{}:
	default: // a flush is asked for already
	}
	return err
}

// handleV1Models answers GET /v1/models: the configured providers' models in OpenAI's list.
func handleV1Models(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		encode(w, http.StatusOK, gw.Models())
	})
}

// handleV1Model answers GET /v1/models/{provider}/{model...}.
func handleV1Model(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("model") // one segment: the SDKs escape the slashes of "openai/gpt-4o-mini"
		if p := r.PathValue("provider"); p != "" {
			id = p + "/" + id
		}
		m, err := gw.Model(id)
		if err != nil {
			writeError(w, r, err)
			return
		}
		encode(w, http.StatusOK, m)
	})
}
