package http_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"

	lhttp "github.com/laurel/laurel/http"
)

// laurel serves the JavaScript client as it is in clients/js, at /assets/laurel.js: its own
// pages call the API through it, and a game's page on an allowed origin may import it from
// there.
func TestWebServesTheClient(t *testing.T) {
	want, err := os.ReadFile("../clients/js/index.js")
	if err != nil {
		t.Fatal(err)
	}
	const game = "http://game.example"
	e := start(t, options{cfg: lhttp.Config{CORSOrigins: []string{game}}})
	req, _ := http.NewRequest("GET", e.url+"/assets/laurel.js", nil)
	req.Header.Set("Origin", game)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || !bytes.Equal(got, want) {
		t.Fatalf("GET /assets/laurel.js: %d %s, %d bytes; want clients/js/index.js (%d bytes)",
			resp.StatusCode, resp.Header.Get("Content-Type"), len(got), len(want))
	}
	if o := resp.Header.Get("Access-Control-Allow-Origin"); o != game {
		t.Errorf("Access-Control-Allow-Origin %q: a module script of another origin needs it", o)
	}
}
