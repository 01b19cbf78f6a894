package http

import _ "embed"

// OpenAPI is the OpenAPI 3.0 description of the API (docs/api.md, except "Live and history"), as
// JSON. openapi_test.go keeps it in step with the routes of the Server.
//
//go:embed openapi.json
var OpenAPI []byte
