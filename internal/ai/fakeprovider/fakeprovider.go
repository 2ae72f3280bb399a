// Package fakeprovider runs fake AI providers on loopback. Each speaks its provider's real
// wire format (paths, headers, bodies, error shapes), records what it received and answers
// from a script of responders; Stream answers a streamed request in the provider's own event
// format. The built-in mock server (`app mock serve`) answers its AI routes through them, and
// tests start them with package aitest, which ties a fake to the test's lifetime.
package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Call is one request a fake received.
type Call struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	Raw          []byte
	Body         map[string]any // nil when the body is not a JSON object
}

// Responder answers one request.
type Responder func(w http.ResponseWriter, r *http.Request, call Call)

// Server is a fake provider listening on loopback.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	provider string
	srv      *http.Server
	ln       net.Listener

	mu       sync.Mutex
	calls    []Call
	script   []Responder
	closed   bool
	handlers sync.WaitGroup // requests being answered
}

// Start starts a fake of provider ("openai", "anthropic" or "gemini") on a free loopback port.
// It answers its requests with script in turn, repeating the last responder; with no script
// it answers as Answer does. The caller closes it.
func Start(provider string, script ...Responder) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake %s provider: %w", provider, err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), provider: provider, script: script, ln: ln}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // a client that leaves mid-answer is no news
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server: its connections are closed, and Close returns once the requests
// being answered have ended (a responder that waits for its request to be canceled ends now).
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.srv.Close() // the listener and every connection
	_ = s.ln.Close()  // also when Serve has not started yet
	s.handlers.Wait()
}

// BaseURL is the value for ai.<provider>.base_url.
func (s *Server) BaseURL() string {
	if s.provider == "gemini" {
		return s.URL + "/v1beta"
	}
	return s.URL + "/v1"
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Last returns the last request received; ok is false when there was none.
func (s *Server) Last() (c Call, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return Call{}, false
	}
	return s.calls[len(s.calls)-1], true
}

// Provider is the name of the provider the server fakes.
func (s *Server) Provider() string { return s.provider }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	raw, _ := io.ReadAll(r.Body)
	c := Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &c.Body)
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, c)
	var resp Responder
	if len(s.script) > 0 {
		resp = s.script[min(n, len(s.script)-1)]
	}
	s.mu.Unlock()
	if !s.pathOK(r) {
		http.Error(w, `{"error":{"message":"fakeprovider: unexpected path `+r.URL.Path+`"}}`, http.StatusNotFound)
		return
	}
	if resp == nil {
		resp = Answer()
	}
	resp(w, r, c)
}

func (s *Server) pathOK(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	switch s.provider {
	case "openai":
		return r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/embeddings"
	case "anthropic":
		return r.URL.Path == "/v1/messages" || r.URL.Path == "/v1/messages/count_tokens"
	case "gemini":
		return strings.HasPrefix(r.URL.Path, "/v1beta/models/") &&
			(strings.HasSuffix(r.URL.Path, ":generateContent") || strings.HasSuffix(r.URL.Path, ":streamGenerateContent") ||
				strings.HasSuffix(r.URL.Path, ":batchEmbedContents") || strings.HasSuffix(r.URL.Path, ":countTokens"))
	}
	return false
}

// Model returns the model a call named (Gemini: from the path).
func (c Call) Model() string {
	if strings.HasPrefix(c.Path, "/v1beta/models/") {
		m := strings.TrimPrefix(c.Path, "/v1beta/models/")
		m = strings.TrimSuffix(strings.TrimSuffix(m, ":batchEmbedContents"), ":countTokens")
		return strings.TrimSuffix(strings.TrimSuffix(m, ":generateContent"), ":streamGenerateContent")
	}
	m, _ := c.Body["model"].(string)
	return m
}

// JSON answers status with body (any JSON value or a raw string) and header pairs.
func JSON(status int, body any, headerPairs ...string) Responder {
	return func(w http.ResponseWriter, _ *http.Request, _ Call) {
		for i := 0; i+1 < len(headerPairs); i += 2 {
			w.Header().Set(headerPairs[i], headerPairs[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		switch b := body.(type) {
		case string:
			_, _ = io.WriteString(w, b)
		default:
			_ = json.NewEncoder(w).Encode(b)
		}
	}
}

// Events answers a server-sent event stream of events, each "name|data" (an event named
// name) or "data" alone (an unnamed one, as OpenAI and Gemini send them), flushed one by one.
func Events(events ...string) Responder {
	return func(w http.ResponseWriter, _ *http.Request, _ Call) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		for _, e := range events {
			if name, data, ok := strings.Cut(e, "|"); ok {
				_, _ = io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n")
			} else {
				_, _ = io.WriteString(w, "data: "+e+"\n\n")
			}
			if fl != nil {
				fl.Flush()
			}
		}
	}
}

// Hang waits until the request is canceled (or d passes), then answers nothing useful.
func Hang(d time.Duration) Responder {
	return func(w http.ResponseWriter, r *http.Request, _ Call) {
		select {
		case <-r.Context().Done():
		case <-time.After(d):
		}
	}
}

// Reset closes the connection without an answer (a connection reset).
func Reset() Responder {
	return func(w http.ResponseWriter, _ *http.Request, _ Call) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("fakeprovider: cannot hijack")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// CountedTokens is the count CountTokens answers, the prompt tokens of OK's answers.
const CountedTokens = 11

// isCount reports whether path is a token count: Anthropic's count_tokens, Gemini's
// countTokens.
func isCount(path string) bool {
	return path == "/v1/messages/count_tokens" || strings.HasSuffix(path, ":countTokens")
}

// CountTokens answers a token count in the server's own format: Anthropic's
// {"input_tokens": n}, Gemini's {"totalTokens": n, "promptTokensDetails": [...]}.
func CountTokens(n int) Responder {
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		body := map[string]any{"input_tokens": n}
		if strings.HasSuffix(r.URL.Path, ":countTokens") {
			body = map[string]any{"totalTokens": n, "promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": n}}}
		}
		JSON(http.StatusOK, body)(w, r, c)
	}
}

// OK answers a success in the server's own format: text (default "Hello from the fake") with
// 11 prompt and 7 completion tokens, the model echoed (OpenAI as a dated snapshot); an
// embeddings request as Embeddings does, a token count as CountTokens(CountedTokens).
func OK(text string) Responder {
	if text == "" {
		text = "Hello from the fake"
	}
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		var body any
		switch {
		case isEmbeddings(r.URL.Path):
			Embeddings()(w, r, c)
			return
		case isCount(r.URL.Path):
			CountTokens(CountedTokens)(w, r, c)
			return
		case r.URL.Path == "/v1/chat/completions":
			body = OpenAIAnswer(c.Model()+"-2024-07-18", text, 11, 7, 0)
		case r.URL.Path == "/v1/messages":
			body = AnthropicAnswer(c.Model(), text, 11, 7, 0, 0)
		default:
			body = GeminiAnswer(c.Model(), text, 11, 7, 0, 0)
		}
		JSON(http.StatusOK, body, "x-request-id", "req_fake")(w, r, c)
	}
}

// Answer answers as the provider does when all goes well: a stream (Stream with its default
// pieces) when the request asks for one — "stream": true for OpenAI and Anthropic, the
// streamGenerateContent method for Gemini — else OK's single answer with the same text and
// usage.
func Answer() Responder {
	ok, stream := OK(""), Stream(StreamOptions{})
	return func(w http.ResponseWriter, r *http.Request, c Call) {
		if c.Body["stream"] == true || strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			stream(w, r, c)
			return
		}
		ok(w, r, c)
	}
}

// OpenAIAnswer is a chat.completion with usage (cached = prompt_tokens_details.cached_tokens).
func OpenAIAnswer(model, text string, prompt, completion, cached int) map[string]any {
	return map[string]any{
		"id": "chatcmpl-fake123", "object": "chat.completion", "created": 1763800000, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text, "refusal": nil},
			"logprobs": nil, "finish_reason": "stop"}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": cached, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0}},
		"service_tier": "default",
	}
}

// AnthropicAnswer is a message with one text block and usage.
func AnthropicAnswer(model, text string, input, output, cacheRead, cacheWrite int) map[string]any {
	return map[string]any{
		"id": "msg_fake123", "type": "message", "role": "assistant", "model": model,
		"content":     []any{map[string]any{"type": "text", "text": text}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": input, "output_tokens": output,
			"cache_read_input_tokens": cacheRead, "cache_creation_input_tokens": cacheWrite},
	}
}

// GeminiAnswer is a GenerateContentResponse with one candidate and usageMetadata.
func GeminiAnswer(model, text string, prompt, candidates, thoughts, cached int) map[string]any {
	return map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": candidates,
			"thoughtsTokenCount": thoughts, "cachedContentTokenCount": cached,
			"totalTokenCount": prompt + candidates + thoughts},
		"modelVersion": model, "responseId": "resp-fake123",
	}
}

// Error answers status with provider's error body for message (code: OpenAI code / Anthropic
// type / Gemini status).
func Error(provider string, status int, code, message string, headerPairs ...string) Responder {
	var body any
	switch provider {
	case "anthropic":
		body = map[string]any{"type": "error", "error": map[string]any{"type": code, "message": message}, "request_id": "req_x"}
	case "gemini":
		body = map[string]any{"error": map[string]any{"code": status, "message": message, "status": code}}
	default:
		body = map[string]any{"error": map[string]any{"message": message, "type": code, "param": nil, "code": code}}
	}
	return JSON(status, body, headerPairs...)
}

// String renders a call for failure messages.
func (c Call) String() string { return fmt.Sprintf("%s %s %s", c.Method, c.Path, c.Raw) }
