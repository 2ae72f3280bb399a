// Package openapi turns an OpenAPI 3.0 or 3.1 description into routes of a [mock.Interceptor]
// that answer and validate requests as Stoplight Prism's mock server does, so a Go test can
// mock an API it only has the description of, in process, without a server.
//
// [Load] reads a description (YAML or JSON) and the files its $refs name, checks it (a
// *[LoadError] lists each problem with its file, line and JSON pointer) and prepares every
// operation. [Spec.Definitions] gives the operations as [mock.Definitions]: an operation answers
// its lowest 2xx response (else default, else the first) with the first example of the media
// type the Accept header prefers, or a body built from the schema; the Prefer header picks
// another status (code=404), a named example (example=NAME) or generated data (dynamic=true).
// Requests are checked first: security requirements (401), path, query and header parameters
// and JSON bodies against their schemas (422 application/problem+json with a located
// validation list, or the operation's own 422, 400 or default answer), media types (415).
// A path's undefined methods answer 405; [NotFound] is the 404 for unknown paths.
//
// Every outside input is bounded: file sizes and counts, $ref chains, nesting, YAML alias
// expansion, and the size and depth of generated answers, so a huge or cyclic description
// gives an error or a finite answer, never a hang.
package openapi
