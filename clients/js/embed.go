// Package js holds the JavaScript client's source (index.js), so that laurel serves it as it
// is, with no build step: its own web page calls the API through it, and a game's page may
// load it from there (/assets/laurel.js). Its tests are node's, run by js_test.go.
package js

import _ "embed"

// Source is index.js, the client's ES module.
//
//go:embed index.js
var Source []byte
