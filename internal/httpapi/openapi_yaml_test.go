package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acme/app/docs"
)

// Ensure no keyword of docs/openapi.yaml is null outside example values. A YAML flow mapping
// splits at every comma, so `{type: string, description: The owner's e-mail, when known.}`
// describes the property with a keyword "when known." of value null and loses the end of the
// description; a code generator or a documentation viewer shows the description cut short.
func TestOpenAPI_NoNullKeywords(t *testing.T) {
	t.Parallel()
	raw, err := OpenAPIJSON(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// Values the description gives as data, where null is a value like any other.
	data := map[string]bool{"example": true, "examples": true, "default": true, "const": true, "enum": true}
	var walk func(v any, at []string)
	walk = func(v any, at []string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if data[k] {
					continue
				}
				if e == nil {
					t.Errorf("%s: keyword %q is null (a comma in a flow mapping's text? quote the text)", "/"+strings.Join(at, "/"), k)
				}
				walk(e, append(at, k))
			}
		case []any:
			for _, e := range v {
				walk(e, at)
			}
		}
	}
	walk(doc, nil)
}
