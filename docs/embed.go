// Package docs embeds the documents the binary serves: the OpenAPI description of the HTTP API.
package docs

import _ "embed"

// OpenAPI is openapi.yaml, the OpenAPI 3.1 description of every route of the HTTP API, served
// as JSON at GET /api/openapi.json.
//
//go:embed openapi.yaml
var OpenAPI []byte
