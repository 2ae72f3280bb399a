package ai

import (
	"net/http"
	"slices"
	"testing"
	"time"

	registry "github.com/acme/app/internal/ai/providers"
)

// Ensure every provider of package providers has its file here, in the same order, indexed
// under its spec's name; Providers keeps that order, and a caller changing the list it got
// does not change the next one.
func TestProviders(t *testing.T) {
	want := registry.Names()
	got := Providers()
	if !slices.Equal(got, want) {
		t.Fatalf("Providers() = %v, want %v", got, want)
	}
	if len(providers) != len(want) {
		t.Fatalf("providers holds %d entries, want %d", len(providers), len(want))
	}
	for i, name := range want {
		ep := providers[name]
		if ep == nil || ep.spec.name != name || ep.provider != providerList[i] {
			t.Errorf("providers[%q] = %+v", name, ep)
		}
	}
	got[0] = "changed"
	if Providers()[0] != "openai" {
		t.Error("Providers returned its own list, not a copy")
	}
}

// Ensure embeddings are the capability of the providers whose file implements embedder
// (OpenAI's and Gemini's, Anthropic has none), listed in Providers' order, and that the
// message naming them follows.
func TestEmbedders(t *testing.T) {
	if got, want := EmbeddingProviders(), []string{"openai", "gemini"}; !slices.Equal(got, want) {
		t.Fatalf("EmbeddingProviders() = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name           string
		embeds, tokens bool
	}{{"openai", true, true}, {"gemini", true, false}, {"anthropic", false, false}, {"nope", false, false}} {
		if Embeds(tc.name) != tc.embeds || EmbedsTokens(tc.name) != tc.tokens {
			t.Errorf("%s: Embeds %v, EmbedsTokens %v", tc.name, Embeds(tc.name), EmbedsTokens(tc.name))
		}
	}
	if got, want := EmbeddingModels(), "an openai/… or gemini/… embedding model"; got != want {
		t.Errorf("EmbeddingModels() = %q, want %q", got, want)
	}
}

// Ensure a provider's retry hint is read in each of its forms and bounded to a day, whatever
// its size (an overflowing number, +Inf, a date in the year 9999).
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header, value string
		want          time.Duration
	}{
		{"retry-after", "2", 2 * time.Second},
		{"retry-after", "0.5", 500 * time.Millisecond},
		{"retry-after-ms", "250", 250 * time.Millisecond},
		{"retry-after", "Sat, 28 Nov 2026 00:01:00 GMT", time.Minute},
		{"retry-after", "99999999999999", maxRetryAfter},
		{"retry-after-ms", "1e300", maxRetryAfter},
		{"retry-after", "+Inf", maxRetryAfter},
		{"retry-after", "Fri, 31 Dec 9999 23:59:59 GMT", maxRetryAfter},
		{"retry-after", "NaN", 0},
		{"retry-after", "-3", 0},
		{"retry-after", "Fri, 27 Nov 2026 00:00:00 GMT", 0},
		{"retry-after", "soon", 0},
	} {
		h := http.Header{}
		h.Set(tc.header, tc.value)
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("%s: %s → %v, want %v", tc.header, tc.value, got, tc.want)
		}
	}
}
