package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/docs"
)

// openAPIJSON converts the embedded YAML description to JSON once.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) { return OpenAPIJSON(docs.OpenAPI) })

// OpenAPIJSON converts an OpenAPI description from YAML to JSON.
func OpenAPIJSON(src []byte) ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("openapi: parse: %w", err)
	}
	out, err := json.Marshal(jsonable(doc))
	if err != nil {
		return nil, fmt.Errorf("openapi: encode: %w", err)
	}
	return out, nil
}

// jsonable turns the maps YAML decodes with non-string keys (a status code such as 200) into
// maps with string keys.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
		return t
	}
	return v
}

// handleOpenAPI answers the OpenAPI 3.1 description of the API as JSON.
func handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := openAPIJSON()
		if err != nil {
			writeError(w, r, err)
			return
		}
		w.Header()["Content-Type"] = jsonContentType
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(body)
	})
}
