package ai_test

import (
	"context"
	"testing"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/memlimit"
	"github.com/acme/app/internal/usage"
)

// Ensure providers' answers are read within the process's bound on buffered bytes: an answer
// that does not fit fails its call at once (503, code overloaded, Retry-After, no retry),
// charged its prompt's estimate since the provider answered it, and every byte taken is given
// back whether the call succeeds or not.
func TestAnswersWithinTheBufferedBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		bound  int64
		others int64 // bytes held elsewhere
		embed  bool
		fits   bool
	}{
		{"chat fits", 1 << 20, 0, false, true},
		{"chat does not fit", 1 << 20, 1<<20 - 100, false, false},
		{"embeddings fit", 1 << 20, 0, true, true},
		{"embeddings do not fit", 1 << 20, 1<<20 - 100, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := memlimit.New(tc.bound)
			mem.Take(tc.others)
			fake := aitest.New(t, "openai")
			svc, rec := newService(t, fake, "openai", func(o *ai.Options) { o.Memory = mem })
			var err error
			if tc.embed {
				_, err = svc.Embed(context.Background(), "u", "openai", ai.EmbedInput{Model: "text-embedding-3-small", Texts: []string{"four words in here"}})
			} else {
				_, err = svc.Complete(context.Background(), "u", "openai",
					input(t, `{"messages":[{"role":"user","content":"What is the capital of France?"}],"model":"gpt-4o-mini"}`))
			}
			if mem.Used() != tc.others {
				t.Errorf("%d bytes held after the call, want the others' %d", mem.Used(), tc.others)
			}
			recs := rec.all()
			if tc.fits {
				if err != nil || len(recs) != 1 || recs[0].Status != usage.StatusSuccess {
					t.Fatalf("err %v, records %+v: want one success", err, recs)
				}
				return
			}
			e := apperr.As(err)
			if e == nil || e.Kind != apperr.Unavailable || e.Code != memlimit.Overloaded || e.RetryAfter != 1 {
				t.Fatalf("err %#v, want Unavailable, code overloaded, Retry-After 1", err)
			}
			if n := len(fake.Calls()); n != 1 {
				t.Errorf("the provider was called %d times, want once (no retry)", n)
			}
			if len(recs) != 1 || recs[0].Status != usage.StatusError || recs[0].PromptTokens <= 0 || !recs[0].Estimated || recs[0].Cost <= 0 {
				t.Fatalf("records %+v: want one failed call charged its prompt's estimate", recs)
			}
		})
	}
}
