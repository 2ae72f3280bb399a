package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/acme/app/docs"
	"github.com/acme/app/mock/mockfile"
)

// openAPIJSON converts the embedded YAML description to JSON once.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) { return OpenAPIJSON(docs.OpenAPI) })

// OpenAPIJSON converts an OpenAPI description from YAML to JSON.
func OpenAPIJSON(src []byte) ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("openapi: parse: %w", err)
	}
	out, err := json.Marshal(mockfile.JSONValue(doc))
	if err != nil {
		return nil, fmt.Errorf("openapi: encode: %w", err)
	}
	return out, nil
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
