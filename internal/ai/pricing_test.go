package ai

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Ensure names resolve to table entries: exact, provider-prefixed and dated snapshots.
func TestPrices_Lookup(t *testing.T) {
	t.Parallel()
	p, err := LoadPrices("", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ provider, model, want string }{
		{"openai", "gpt-4o-mini", "gpt-4o-mini"},
		{"openai", "gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"anthropic", "claude-haiku-4-5-20251001", "claude-haiku-4-5"},
		{"anthropic", "claude-3-5-haiku-20241022", "claude-3-5-haiku-20241022"},
		{"gemini", "gemini-2.5-flash-lite", "gemini/gemini-2.5-flash-lite"},
		{"gemini", "models/gemini-1.5-flash-002", "gemini/gemini-1.5-flash"},
		{"openai", "no-such-model", ""},
	}
	for _, tt := range tests {
		key, _, ok := p.Lookup(tt.provider, tt.model)
		if key != tt.want || ok != (tt.want != "") {
			t.Errorf("Lookup(%s, %s) = %q, %v; want %q", tt.provider, tt.model, key, ok, tt.want)
		}
	}
}

// Ensure a price tier applies past its prompt length, and a pricing file overrides entries.
func TestPrices_TiersAndOverride(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(file, []byte(`{"gpt-4o-mini":{"input_cost_per_token":1e-6,"output_cost_per_token":2e-6},
		"my-model":{"input_cost_per_token":3e-6,"output_cost_per_token":4e-6,"max_tokens":8192}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPrices(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, provider, model string
		tok                   Tokens
		want                  float64
	}{
		{"OverriddenNoCacheRateBillsInput", "openai", "gpt-4o-mini", Tokens{Prompt: 100, CacheRead: 50, Completion: 10}, 100*1e-6 + 10*2e-6},
		{"AddedEntry", "openai", "my-model", Tokens{Prompt: 10, Completion: 10}, 10*3e-6 + 10*4e-6},
		{"BelowTier", "anthropic", "claude-haiku-5-5", Tokens{Prompt: 100_000, Completion: 10}, 100_000*1e-7 + 10*5e-7},
		{"AboveTier", "anthropic", "claude-haiku-5-5", Tokens{Prompt: 100_001, CacheRead: 1, Completion: 10}, 100_000*5e-7 + 1*5e-8 + 10*2.5e-6},
	}
	for _, tt := range tests {
		got, _ := p.Cost(tt.provider, tt.model, tt.tok)
		if math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: cost %g, want %g", tt.name, got, tt.want)
		}
	}
	if _, err := LoadPrices(filepath.Join(t.TempDir(), "missing.json"), nil); err == nil {
		t.Error("a missing pricing file is not an error")
	}
}

// Ensure made-up model names cannot stop the price cache from caching real models: once more
// names than the cache holds have been looked up, a model in use is still cached, the
// made-up names looked up longest ago are gone, and a real model seen for the first time is
// cached.
func TestPrices_CacheKeepsRealModels(t *testing.T) {
	t.Parallel()
	p, err := LoadPrices("", nil)
	if err != nil {
		t.Fatal(err)
	}
	inUse := modelKey{"openai", "gpt-4o-mini"}
	for i := range 2 * maxModels {
		if i%100 == 0 {
			if _, _, ok := p.Lookup(inUse.provider, inUse.model); !ok {
				t.Fatalf("%s has no price", inUse.model)
			}
		}
		if _, _, ok := p.Lookup("openai", fmt.Sprintf("made-up-%d", i)); ok {
			t.Fatalf("made-up-%d has a price", i)
		}
	}
	if !p.cache.Contains(inUse) {
		t.Errorf("%v, in use, was evicted by made-up names", inUse)
	}
	if p.cache.Contains(modelKey{"openai", "made-up-0"}) {
		t.Error("the first made-up name is still cached after 2×maxModels others")
	}
	if n := p.cache.Len(); n != maxModels {
		t.Errorf("the cache holds %d entries, want its bound %d", n, maxModels)
	}
	late := modelKey{"anthropic", "claude-haiku-4-5"}
	if key, _, ok := p.Lookup(late.provider, late.model); !ok || key != "claude-haiku-4-5" {
		t.Fatalf("Lookup(%v) = %q, %v", late, key, ok)
	}
	if !p.cache.Contains(late) {
		t.Errorf("%v, looked up after the made-up names, was not cached", late)
	}
}
