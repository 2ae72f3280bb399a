package templates_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"

	"github.com/acme/app/internal/templates"
)

// Ensure regex, symbol and JavaScript values with control, non-printable or
// invalid UTF-8 characters are written as valid JSON strings that decode to
// the stored text.
func TestValue_StringLikeTypesAreValidJSON(t *testing.T) {
	t.Parallel()
	const odd = "a\x01b\tc\x7fd\u00ade\U000e0001f<g>&\"\\"
	for _, tc := range []struct {
		name string
		v    any
		want string // the decoded JSON string
	}{
		{"Regex", primitive.Regex{Pattern: odd, Options: "i"}, "/" + odd + "/i"},
		{"Symbol", primitive.Symbol(odd), odd},
		{"JavaScript", primitive.JavaScript(odd), odd},
		{"InvalidUTF8", primitive.Symbol("x\xffy"), "x\ufffdy"},
		{"Plain", primitive.JavaScript("function(a, b) { return a < b && b > 0 }"), "function(a, b) { return a < b && b > 0 }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, err := bson.Marshal(bson.D{{Key: "v", Value: tc.v}})
			if err != nil {
				t.Fatal(err)
			}
			rv := bson.Raw(doc).Lookup("v")
			var v templates.Value
			if err := v.UnmarshalBSONValue(rv.Type, rv.Value); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			var got string
			if err := json.Unmarshal(out, &got); err != nil || got != tc.want {
				t.Fatalf("%s decodes to %q (%v), want %q", out, got, err, tc.want)
			}
			if raw, _ := v.MarshalJSON(); tc.name == "Plain" && string(raw) != strconv.Quote(tc.want) {
				t.Fatalf("printable text written as %s, want it as before: %s", raw, strconv.Quote(tc.want))
			}
		})
	}
}
