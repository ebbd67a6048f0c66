// Package docs holds the documents of reserve that the daemon serves: the
// OpenAPI 3.1 description of its HTTP API (openapi.yaml), served at
// /api/v1/openapi.yaml. It holds only data; it must not import the server
// or the engine.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
