package budget

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acme/app/internal/ai"
	"github.com/acme/app/internal/ai/aitest"
	"github.com/acme/app/internal/apperr"
	"github.com/acme/app/internal/store/storetest"
)

// hook is the service as the AI service's budget hook.
type hook struct{ s *Service }

func (h hook) Reserve(ctx context.Context, userID string, usd float64) (ai.Reservation, error) {
	r, err := h.s.Reserve(ctx, userID, usd)
	if err != nil || r == nil {
		return nil, err
	}
	return r, nil
}

// Ensure a stream keeps its reservation for as long as it runs: one that would run past
// ai.stream_max_duration is ended there, with an error, and settled while its hold still
// stands, so a call made meanwhile on a budget the stream holds is refused and the month never
// goes over its limit. The hold outlasts the longest stream, as `serve` configures it.
func TestLongStreamNeverTakesTheBudgetOver(t *testing.T) {
	t.Parallel()
	const maxDur = 300 * time.Millisecond
	eachMode(t, func(t *testing.T, inMemory bool) {
		ctx := context.Background()
		s := newService(t, storetest.DB(t), Options{InMemory: inMemory, HoldFor: maxDur + 200*time.Millisecond})
		fake := aitest.New(t, "openai", aitest.Stream(aitest.StreamOptions{
			Pieces: strings.Split(strings.Repeat("x ", 3000), " "), Gap: 10 * time.Millisecond,
		}))
		svc := ai.New(ai.Options{
			Providers:         map[string]ai.ProviderConfig{"openai": {APIKey: "k", BaseURL: fake.BaseURL(), DefaultModel: "gpt-4o-mini"}},
			Timeout:           5 * time.Second,
			StreamMaxDuration: maxDur,
			Budget:            hook{s},
		})
		var in ai.ChatInput
		if err := json.Unmarshal([]byte(`{"messages":[{"role":"user","content":"x"}],"maxTokens":1000}`), &in); err != nil {
			t.Fatal(err)
		}
		// A budget that holds one call's worst case (about $0.0006) and not two.
		if _, err := s.SetLimit(ctx, "u", ptr(0.001)); err != nil {
			t.Fatal(err)
		}

		first := make(chan struct{})
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			var once bool
			_, err := svc.Stream(ctx, "u", "openai", in, func(ai.Delta) error {
				if !once {
					once = true
					close(first)
				}
				return nil
			})
			done <- err
		}()
		<-first
		// In memory, a call waits for the stream to settle (it would fit then); it gives up
		// when its caller does, long before the stream ends.
		short, cancel := context.WithTimeout(ctx, maxDur/3)
		defer cancel()
		if _, err := svc.Complete(short, "u", "openai", in); apperr.KindOf(err) != apperr.PaymentRequired {
			t.Fatalf("a call beside the stream holding the budget: %v, want PaymentRequired", err)
		}
		err := <-done
		took := time.Since(start)
		if apperr.KindOf(err) != apperr.UpstreamTimeout || !strings.Contains(err.Error(), "ai.stream_max_duration") {
			t.Fatalf("the long stream ended with %v, want the ai.stream_max_duration timeout", err)
		}
		if took < maxDur || took > 20*time.Second { // a whole answer takes 30 s
			t.Fatalf("the stream ended after %s, want it cut at %s", took, maxDur)
		}
		st, err := s.Status(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		if st.Reserved != 0 || st.Spent > *st.Limit {
			t.Fatalf("after the stream: %+v; want nothing reserved and spent within the limit", st)
		}
	})
}
