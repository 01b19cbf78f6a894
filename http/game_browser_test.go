package http_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	lhttp "github.com/laurel/laurel/http"
)

// TestBrowserGameClient: a game's web page, on an origin of its own, uses the JavaScript
// client with a member token its server minted: it submits its player's score and watches
// the live top through CORS, as docs/api.md's "Member tokens" walks through.
func TestBrowserGameClient(t *testing.T) {
	browser := startBrowser(t)
	var laurelURL, token string
	game := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			// The client comes from laurel itself, as README's game walk-through loads it.
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><title>game</title><script type="module">
import { Laurel } from '%s/assets/laurel.js';
const laurel = new Laurel({ url: %q, key: %q });
try {
  window.submitted = await laurel.submitBoardEvents('solvers', { member: 'ada', value: 7 });
} catch (err) {
  window.submitted = { error: String(err) };
}
for await (const page of laurel.streamPage('solvers', { limit: 3 })) {
  window.streamed = page;
  break;
}
</script>`, laurelURL, laurelURL, token)
		default:
			http.NotFound(w, r)
		}
	}))
	defer game.Close()

	e := start(t, options{cfg: lhttp.Config{
		Keys:        lhttp.Keys{Admin: []string{"admin-key"}},
		Tokens:      lhttp.Tokens{Secrets: map[string][]byte{"k2": currentSecret}},
		CORSOrigins: []string{game.URL},
	}})
	e.key = "admin-key"
	e.do("PUT", "/v1/boards/solvers", map[string]any{}).must(t, 201)
	e.do("POST", "/v1/boards/solvers/events", map[string]any{"member": "bob", "value": 5}).must(t, 200)
	laurelURL, token = e.url, mint(t, "k2", currentSecret, claimsFor("ada", "solvers"))

	tab := newTab(t, browser)
	tab.open(game.URL + "/")
	tab.wait(`window.submitted && window.streamed`)
	if got := evalJS[string](tab, `JSON.stringify(window.submitted)`); !regexp.MustCompile(`^\[\{"member":"ada","id":"[^"]+","status":"applied","entries":\{"all":\{"rank":1,"score":7\}\}\}\]$`).MatchString(got) {
		t.Errorf("the game page's submit: %s", got)
	}
	if got := evalJS[string](tab, `window.streamed.entries.map((e) => e.member + ':' + e.score).join(',')`); got != "ada:7,bob:5" {
		t.Errorf("the game page's live top: %s", got)
	}
	e.do("GET", "/v1/boards/solvers/members/ada", nil).must(t, 200)

	// laurel's own page takes the token as its key: its boards are listed (a token may not list
	// every board), and the board shows live.
	e.do("PUT", "/v1/boards/elsewhere", map[string]any{}).must(t, 201)
	tab.open(e.url + "/?key=" + token)
	tab.wait(`document.querySelector('#boards a.card[data-board="solvers"]')`)
	if n := evalJS[int](tab, `document.querySelectorAll('#boards a.card').length`); n != 1 {
		t.Errorf("%d boards listed for a token of one board", n)
	}
	href := evalJS[string](tab, `document.querySelector('#boards a.card[data-board="solvers"]').getAttribute('href')`)
	if href != "/boards/solvers?key="+token {
		t.Fatalf("the card leads to %s", href)
	}
	tab.open(e.url + href)
	tab.waitView("all||0|25|")
	tab.wait(`document.getElementById('status').dataset.state === 'live' && document.querySelector('#rows > li.row').dataset.member === 'ada'`)
}
