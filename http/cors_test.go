package http_test

import (
	"net/http"
	"strings"
	"testing"

	lhttp "github.com/laurel/laurel/http"
)

// TestCORS: a browser page of an allowed origin may call the API, its preflight answered with
// what it asks for; any other origin gets no CORS header, so its browser hides the answer, and
// its preflight a 403 that says why.
func TestCORS(t *testing.T) {
	ask := func(t *testing.T, base, method, path, origin string, preflight bool) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		if preflight {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	const game = "https://game.example"
	e := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Read: []string{"read-key"}}, CORSOrigins: []string{game, "http://127.0.0.1:8080"}}})

	resp := ask(t, e.url, "OPTIONS", "/v1/boards/b/events", game, true)
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != game || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") || h.Get("Access-Control-Max-Age") == "" {
		t.Errorf("preflight from an allowed origin: %d %v", resp.StatusCode, h)
	}
	resp = ask(t, e.url, "GET", "/v1/boards", game, false)
	if h := resp.Header; resp.StatusCode != 401 || h.Get("Access-Control-Allow-Origin") != game || h.Get("Vary") != "Origin" ||
		h.Get("Access-Control-Expose-Headers") != "Retry-After" {
		t.Errorf("a request from an allowed origin: %d %v (its error must reach the page too)", resp.StatusCode, h)
	}
	for _, origin := range []string{"https://evil.example", "https://game.example.evil.example", "http://game.example"} {
		resp = ask(t, e.url, "OPTIONS", "/v1/boards/b/events", origin, true)
		if resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s: %d %v", origin, resp.StatusCode, resp.Header)
		}
		if resp = ask(t, e.url, "GET", "/v1/boards", origin, false); resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("a request from %s: %v", origin, resp.Header)
		}
	}

	// Any origin: "*", and no Vary.
	anyOrigin := start(t, options{cfg: lhttp.Config{CORSOrigins: []string{"*"}}})
	if resp := ask(t, anyOrigin.url, "GET", "/v1/boards", "https://elsewhere.example", false); resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Vary") != "" {
		t.Errorf("with any origin allowed: %v", resp.Header)
	}
	// None configured (the default): no CORS header at all.
	none := start(t, options{})
	if resp := ask(t, none.url, "OPTIONS", "/v1/boards", game, true); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight with no origin allowed: %d %v", resp.StatusCode, resp.Header)
	}
}
