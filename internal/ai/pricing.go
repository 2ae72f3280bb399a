package ai

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/acme/app/internal/usage"
)

// embeddedPrices is the price table shipped in the binary (LiteLLM's field names, USD per
// token). It is never fetched at run time; ai.pricing_file overrides entries by key.
//
//go:embed prices.json
var embeddedPrices []byte

// Price is one model's unit prices (USD per token).
type Price struct {
	Input      float64
	Output     float64
	CacheRead  float64 // 0: billed as input
	CacheWrite float64 // 0: billed as input
	// CacheWrite1h is the rate of cache writes kept an hour (Anthropic's
	// cache_creation_input_token_cost_above_1hr; 0: twice the input rate, as Anthropic bills).
	CacheWrite1h float64
	tiers        []tier // higher prices past a prompt length, ascending
	provider     string // litellm_provider ("" when the entry does not say)
	mode         string // LiteLLM's mode: chat, embedding ("" when the entry does not say)
}

// tier holds the prices that apply when the prompt has more than above tokens.
type tier struct {
	above                                int64
	input, output, cacheRead, cacheWrite *float64
}

// Tokens are the counts a cost is computed from. Prompt includes the cached ones.
type Tokens struct {
	Prompt, Completion, CacheRead, CacheWrite int64
	CacheWrite1h                              int64 // the part of CacheWrite kept an hour (Anthropic)
}

// Prices is the price table.
type Prices struct {
	entries map[string]Price
	log     *slog.Logger

	cache *modelCache[lookup] // the lookups of the models last priced
}

type lookup struct {
	key   string
	price Price
	ok    bool
}

var tierField = regexp.MustCompile(`^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)_above_(\d+)k_tokens$`)

// PricingFileError is a price file that cannot be read or used.
type PricingFileError struct {
	File string
	Err  error
}

func (e *PricingFileError) Error() string { return "ai.pricing_file " + e.File + ": " + e.Err.Error() }
func (e *PricingFileError) Unwrap() error { return e.Err }

// LoadPrices returns the embedded table, with the entries of file (if not empty) laid over it.
// A file that cannot be read or used is a *PricingFileError.
func LoadPrices(file string, log *slog.Logger) (*Prices, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Prices{entries: map[string]Price{}, log: log, cache: newModelCache[lookup]()}
	if err := p.add(embeddedPrices); err != nil {
		return nil, fmt.Errorf("ai: embedded price table: %w", err)
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, &PricingFileError{File: file, Err: err}
		}
		if err := p.add(data); err != nil {
			return nil, &PricingFileError{File: file, Err: err}
		}
	}
	return p, nil
}

func (p *Prices) add(data []byte) error {
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("not a JSON object of model entries: %w", err)
	}
	for key, fields := range raw {
		if strings.HasPrefix(key, "_") || key == "sample_spec" {
			continue
		}
		var pr Price
		tiers := map[int64]*tier{}
		for name, v := range fields {
			var base *float64 // the Price field name sets, or nil for a tier field
			var m []string    // a tier field's submatches
			switch name {
			case "input_cost_per_token":
				base = &pr.Input
			case "output_cost_per_token":
				base = &pr.Output
			case "cache_read_input_token_cost":
				base = &pr.CacheRead
			case "cache_creation_input_token_cost":
				base = &pr.CacheWrite
			case "cache_creation_input_token_cost_above_1hr":
				base = &pr.CacheWrite1h
			case "litellm_provider":
				if err := json.Unmarshal(v, &pr.provider); err != nil {
					return fmt.Errorf("%s.%s must be a string", key, name)
				}
				continue
			case "mode":
				if err := json.Unmarshal(v, &pr.mode); err != nil {
					return fmt.Errorf("%s.%s must be a string", key, name)
				}
				continue
			default:
				if m = tierField.FindStringSubmatch(name); m == nil {
					continue // other LiteLLM fields (context window, provider, …)
				}
			}
			var f float64
			if err := json.Unmarshal(v, &f); err != nil || f < 0 {
				return fmt.Errorf("%s.%s must be a non-negative number", key, name)
			}
			if base != nil {
				*base = f
				continue
			}
			k, _ := strconv.ParseInt(m[2], 10, 64)
			t := tiers[k]
			if t == nil {
				t = &tier{above: k * 1000}
				tiers[k] = t
			}
			switch m[1] {
			case "input_cost_per_token":
				t.input = &f
			case "output_cost_per_token":
				t.output = &f
			case "cache_read_input_token_cost":
				t.cacheRead = &f
			case "cache_creation_input_token_cost":
				t.cacheWrite = &f
			}
		}
		for _, t := range tiers {
			pr.tiers = append(pr.tiers, *t)
		}
		sort.Slice(pr.tiers, func(i, j int) bool { return pr.tiers[i].above < pr.tiers[j].above })
		p.entries[key] = pr
	}
	return nil
}

// dated suffixes that name a snapshot of a model family.
var snapshotSuffix = regexp.MustCompile(`(-\d{4}-\d{2}-\d{2}|-\d{8}|-\d{3}|-latest|@\d{8})$`)

// Lookup returns the table entry for a provider's model: the exact name, the provider-prefixed
// name (LiteLLM's "gemini/…"), then the family of a dated snapshot
// (gpt-4o-mini-2024-07-18 → gpt-4o-mini). A model without a price is logged when it enters
// the cache of the models last looked up.
func (p *Prices) Lookup(provider, model string) (string, Price, bool) {
	k := modelKey{provider, model}
	if l, ok := p.cache.Get(k); ok {
		return l.key, l.price, l.ok
	}
	l := p.find(provider, model)
	p.cache.Add(k, l)
	if !l.ok {
		p.log.Warn("ai: no price for model: its cost is 0; add it to ai.pricing_file", "provider", provider, "model", model)
	}
	return l.key, l.price, l.ok
}

func (p *Prices) find(provider, model string) lookup {
	name := strings.TrimPrefix(model, "models/")
	for {
		for _, k := range []string{name, provider + "/" + name} {
			if pr, ok := p.entries[k]; ok {
				return lookup{key: k, price: pr, ok: true}
			}
		}
		next := snapshotSuffix.ReplaceAllString(name, "")
		if next == name || next == "" {
			return lookup{}
		}
		name = next
	}
}

// Cost returns the cost of a request and the unit prices used. Cached reads are billed at the
// cache-read rate, cache writes at the cache-write rate, the rest of the prompt at the input
// rate; a price tier applies when the prompt is longer than its threshold. An unknown model
// costs 0 (and is logged once).
func (p *Prices) Cost(provider, model string, t Tokens) (float64, usage.UnitPrices) {
	key, pr, ok := p.Lookup(provider, model)
	if !ok {
		return 0, usage.UnitPrices{}
	}
	in, out, cr, cw := pr.Input, pr.Output, pr.CacheRead, pr.CacheWrite
	for _, tr := range pr.tiers {
		if t.Prompt <= tr.above {
			break
		}
		if tr.input != nil {
			in = *tr.input
		}
		if tr.output != nil {
			out = *tr.output
		}
		if tr.cacheRead != nil {
			cr = *tr.cacheRead
		}
		if tr.cacheWrite != nil {
			cw = *tr.cacheWrite
		}
	}
	if cr == 0 {
		cr = in
	}
	if cw == 0 {
		cw = in
	}
	cw1h := pr.CacheWrite1h
	if cw1h == 0 {
		cw1h = 2 * in
	}
	plain := max(t.Prompt-t.CacheRead-t.CacheWrite, 0)
	w1h := min(max(t.CacheWrite1h, 0), t.CacheWrite)
	cost := float64(plain)*in + float64(t.CacheRead)*cr + float64(t.CacheWrite-w1h)*cw + float64(w1h)*cw1h + float64(t.Completion)*out
	up := usage.UnitPrices{Entry: key, Input: in, Output: out, CacheRead: cr, CacheWrite: cw}
	if w1h > 0 {
		up.CacheWrite1h = cw1h
	}
	return cost, up
}

// ProviderOf returns the provider whose model the table names model: an entry found for
// that provider (exact, prefixed or a dated snapshot's family) whose litellm_provider is
// that provider.
func (p *Prices) ProviderOf(model string) (string, bool) {
	for _, name := range providerNames {
		if l := p.find(name, model); l.ok && l.price.provider == name {
			return name, true
		}
	}
	return "", false
}

// Models returns the models the table prices for provider, sorted, without LiteLLM's
// "provider/" prefix.
func (p *Prices) Models(provider string) []string {
	var out []string
	for key, pr := range p.entries {
		if pr.provider == provider {
			out = append(out, strings.TrimPrefix(key, provider+"/"))
		}
	}
	sort.Strings(out)
	return out
}
