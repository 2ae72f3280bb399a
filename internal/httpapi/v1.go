package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/acme/app/internal/auth"
	"github.com/acme/app/internal/gateway"
)

// handleV1Chat answers POST /v1/chat/completions: OpenAI's request in, OpenAI's
// chat.completion (or its chunk stream ending with [DONE]) out; its failures are answered in
// the error format of its group (OpenAI's, see openAIFormat).
func handleV1Chat(gw *gateway.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, req, ok := v1Request(w, r, gw.Parse)
		if !ok {
			return
		}
		if req.Stream {
			// OpenAI's stream: `data: <chunk>` events, then `data: [DONE]`; a failure after the
			// first chunk is an event carrying OpenAI's error object (the SDKs raise it).
			serveStream(w, r, func(sw *sseWriter) error {
				return gw.Stream(r.Context(), caller.ID, req, func(c *gateway.Chunk) error { return sw.data(c) })
			}, func(sw *sseWriter) { _ = sw.raw("[DONE]") }, func(sw *sseWriter, body any) { _ = sw.data(body) })
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

// v1Request reads a /v1 body with parse and gives it the request's id (the answer's, also
// its X-Request-Id header when the client's was not a UUID). A failure is answered: ok false.
func v1Request(w http.ResponseWriter, r *http.Request, parse func([]byte) (*gateway.Request, error)) (auth.Caller, *gateway.Request, bool) {
	caller, _ := CallerFrom(r.Context())
	body, err := readJSONBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return caller, nil, false
	}
	req, err := parse(body)
	if err != nil {
		writeError(w, r, err)
		return caller, nil, false
	}
	req.Input.RequestID = RequestID(r.Context())
	return caller, req, true
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
