package openapi

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Ensure generated data is valid against its schema, every time: formats, bounds (exclusive
// ones too), lengths, item counts, enums, type lists, oneOf and allOf.
func TestDynamicDataIsValid(t *testing.T) {
	t.Parallel()
	s, err := Load("testdata/shapes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	op := s.ops[0]
	media := op.chosen.media[0]
	schema := op.body.media[0].schema
	g := &generator{s: s, rnd: rand.New(rand.NewPCG(1, 2))}
	seen := map[string]bool{}
	for i := range 300 {
		g.made = 0
		v := g.value(media.schema, 0)
		b, err := marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var decoded any
		if err := json.Unmarshal(b, &decoded); err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(decoded); err != nil {
			t.Fatalf("value %d is not valid: %s\n%v", i, b, err)
		}
		seen[string(b)] = true
	}
	if len(seen) < 290 {
		t.Errorf("300 generated values, only %d different", len(seen))
	}
}

// Ensure the static answer follows the sampler's rules: the minimum (exclusive bounds moved in),
// strings cut or repeated to their lengths, minItems items, the first choice of a oneOf,
// merged allOf parts, the first non-null type of a list.
func TestStaticAnswer(t *testing.T) {
	t.Parallel()
	s, err := Load("testdata/shapes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(s.ops[0].chosen.media[0].static.b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": 10.0, "step": 5.0, "name": "string", "long": "stringstringstringstringstringstringstri",
		"kind": "circle", "tags": []any{"string", "string"}, "size": 0.5, "ratio": -5.0,
		"when": "2019-08-24T14:15:22Z", "day": "2019-08-24", "mail": "user@example.com",
		"site": "http://example.com", "uid": "095be615-a8ad-4c33-8e9c-c7612fbf6c9f", "ip": "192.168.0.1",
		"flag": true, "maybe": "string", "pick": 1.0, "parts": []any{map[string]any{"a": 0.0, "b": true}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("static answer (-want +got):\n%s", d)
	}
}

// Ensure the answers a description keeps from load stay within maxKept: past it, the others
// are built per request.
func TestKeptAnswersAreBounded(t *testing.T) {
	t.Parallel()
	s, err := Load("testdata/large.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lazy := 0
	for _, op := range s.ops {
		for _, m := range op.chosen.media {
			if m.static.lazy {
				lazy++
			}
		}
	}
	if s.kept > maxKept || lazy == 0 {
		t.Errorf("kept %d bytes (bound %d), %d answers built per request; want some", s.kept, maxKept, lazy)
	}
}
