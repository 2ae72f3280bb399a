package mockfile_test

import (
	"encoding/json"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/mock/mockfile"
)

// Ensure JSONValue makes any YAML document encodable as JSON: mappings with non-string keys
// (status codes, booleans) at any depth, inside sequences too, become string-keyed; scalars
// are kept.
func TestJSONValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"scalar", `42`, `42`},
		{"null", `~`, `null`},
		{"string keys", "a: 1\nb: [x, y]", `{"a":1,"b":["x","y"]}`},
		{"status codes", "responses:\n  200: {description: OK}\n  404: {description: Missing}", `{"responses":{"200":{"description":"OK"},"404":{"description":"Missing"}}}`},
		{"inside a sequence", "- 1: one\n- {true: yes}", `[{"1":"one"},{"true":"yes"}]`},
		{"deep", "a: {b: [{c: {7: d}}]}", `{"a":{"b":[{"c":{"7":"d"}}]}}`},
		{"float key", "1.5: x", `{"1.5":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v any
			if err := yaml.Unmarshal([]byte(tc.yaml), &v); err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(mockfile.JSONValue(v))
			if err != nil || string(got) != tc.want {
				t.Fatalf("JSON of %q = %s, %v; want %s", tc.yaml, got, err, tc.want)
			}
		})
	}
}
