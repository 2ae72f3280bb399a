// Package aitest starts the fake AI providers of package fakeprovider for a test: each is
// closed when the test ends, and Last fails the test when the fake received nothing. The
// responders and answers are fakeprovider's, under the same names.
package aitest

import (
	"sync"
	"testing"
	"time"

	"github.com/acme/app/internal/ai/fakeprovider"
)

// Call is one request a fake received.
type Call = fakeprovider.Call

// Responder answers one request.
type Responder = fakeprovider.Responder

// StreamOptions shape a streamed answer (see Stream).
type StreamOptions = fakeprovider.StreamOptions

// Server is a fake provider started for a test.
type Server struct {
	*fakeprovider.Server
	tb testing.TB
}

// New starts a fake of provider ("openai", "anthropic" or "gemini") that answers its requests
// with script in turn, repeating the last responder; with no script it answers as Answer does.
// It is closed when the test ends.
func New(tb testing.TB, provider string, script ...Responder) *Server {
	tb.Helper()
	s, err := fakeprovider.Start(provider, script...)
	if err != nil {
		tb.Fatalf("aitest: %v", err)
	}
	tb.Cleanup(s.Close)
	return &Server{Server: s, tb: tb}
}

// Last returns the last request received, failing the test if none.
func (s *Server) Last() Call {
	s.tb.Helper()
	c, ok := s.Server.Last()
	if !ok {
		s.tb.Fatalf("aitest: the fake %s received no request", s.Provider())
	}
	return c
}

// OK answers a success in the server's own format (fakeprovider.OK).
func OK(text string) Responder { return fakeprovider.OK(text) }

// CountTokens answers a token count in the server's own format (fakeprovider.CountTokens).
func CountTokens(n int) Responder { return fakeprovider.CountTokens(n) }

// Answer answers as the provider does when all goes well (fakeprovider.Answer).
func Answer() Responder { return fakeprovider.Answer() }

// Stream answers a streamed request in the server's own format (fakeprovider.Stream).
func Stream(o StreamOptions) Responder { return fakeprovider.Stream(o) }

// JSON answers status with body and header pairs (fakeprovider.JSON).
func JSON(status int, body any, headerPairs ...string) Responder {
	return fakeprovider.JSON(status, body, headerPairs...)
}

// Error answers status with provider's error body for message (fakeprovider.Error).
func Error(provider string, status int, code, message string, headerPairs ...string) Responder {
	return fakeprovider.Error(provider, status, code, message, headerPairs...)
}

// Events answers a server-sent event stream (fakeprovider.Events).
func Events(events ...string) Responder { return fakeprovider.Events(events...) }

// Hang waits until the request is canceled or d passes (fakeprovider.Hang).
func Hang(d time.Duration) Responder { return fakeprovider.Hang(d) }

// Reset closes the connection without an answer (fakeprovider.Reset).
func Reset() Responder { return fakeprovider.Reset() }

// OpenAIAnswer is a chat.completion with usage (fakeprovider.OpenAIAnswer).
func OpenAIAnswer(model, text string, prompt, completion, cached int) map[string]any {
	return fakeprovider.OpenAIAnswer(model, text, prompt, completion, cached)
}

// AnthropicAnswer is a message with one text block and usage (fakeprovider.AnthropicAnswer).
func AnthropicAnswer(model, text string, input, output, cacheRead, cacheWrite int) map[string]any {
	return fakeprovider.AnthropicAnswer(model, text, input, output, cacheRead, cacheWrite)
}

// GeminiAnswer is a GenerateContentResponse with usage (fakeprovider.GeminiAnswer).
func GeminiAnswer(model, text string, prompt, candidates, thoughts, cached int) map[string]any {
	return fakeprovider.GeminiAnswer(model, text, prompt, candidates, thoughts, cached)
}

// HoldAfterFirst returns a Sent hook that holds a stream after its first piece until release
// is called (any number of times, from any goroutine) or wait has passed. The channel it
// returns gets one value when the hold ends: true when the wait ran out, which is what a proxy
// that buffers pieces causes (its client sees nothing until the provider sends more).
func HoldAfterFirst(wait time.Duration) (sent func(int, time.Time), release func(), timedOut <-chan bool) {
	released := make(chan struct{})
	var once sync.Once
	out := make(chan bool, 1)
	sent = func(i int, _ time.Time) {
		if i != 0 {
			return
		}
		select {
		case <-released:
			out <- false
		case <-time.After(wait):
			out <- true
		}
	}
	release = func() { once.Do(func() { close(released) }) }
	return sent, release, out
}
