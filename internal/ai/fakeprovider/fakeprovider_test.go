package fakeprovider_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/ai/fakeprovider"
)

// Ensure each fake listens on loopback, answers its provider's path in its provider's format,
// records what it received, and refuses another path.
func TestStartAnswersAndRecords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ provider, path, answerField string }{
		{"openai", "/chat/completions", "choices"},
		{"anthropic", "/messages", "content"},
		{"gemini", "/models/gemini-2.5-flash:generateContent", "candidates"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			s, err := fakeprovider.Start(tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
				t.Fatalf("URL %s, want loopback", s.URL)
			}
			if _, ok := s.Last(); ok {
				t.Fatal("Last before any request")
			}
			resp, err := http.Post(s.BaseURL()+tc.path, "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || body[tc.answerField] == nil {
				t.Fatalf("%d %v %v", resp.StatusCode, body, err)
			}
			c, ok := s.Last()
			if !ok || c.Method != "POST" || c.Body == nil || len(s.Calls()) != 1 {
				t.Fatalf("recorded %+v (%d calls)", c, len(s.Calls()))
			}
			resp, err = http.Post(s.URL+"/elsewhere", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Fatalf("another path: %d", resp.StatusCode)
			}
		})
	}
}

// Ensure Close ends a request still being answered (a responder waiting for its request to
// be canceled) and returns once it has ended; the port is then closed.
func TestCloseEndsRequestsUnderWay(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	hang := fakeprovider.Hang(time.Minute)
	s, err := fakeprovider.Start("openai", func(w http.ResponseWriter, r *http.Request, c fakeprovider.Call) {
		close(arrived)
		hang(w, r, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{}`))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		failed <- err
	}()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not arrive")
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the hanging responder")
	}
	if err := <-failed; err == nil {
		t.Error("the request under way got a whole answer")
	}
	s.Close() // again: nothing happens
	if _, err := http.Post(s.URL, "application/json", strings.NewReader(`{}`)); err == nil {
		t.Error("the closed server still answers")
	}
}
