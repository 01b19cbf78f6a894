package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/webhook"
)

// TestBrowserAdmin drives the admin console at /admin in a real Chromium, against a server
// with an admin key and a read key, and checks what it did through the API.
func TestBrowserAdmin(t *testing.T) {
	browser := startBrowser(t)
	const adminKey, readKey = "admin-key-of-the-test", "read-key-of-the-test"
	e := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{adminKey}, Read: []string{readKey}}}})
	e.key = adminKey
	seedArena(t, e)

	t.Run("SignIn", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/admin")
		tab.wait(`document.getElementById('login')`)
		for _, c := range []struct{ key, want string }{
			{"no-such-key", "not known"},
			{readKey, "This is a read key: the console needs an admin key."},
		} {
			tab.submit("login", map[string]string{"admin-key": c.key})
			tab.wait(fmt.Sprintf(`document.getElementById('login-msg').textContent.includes(%q)`, c.want))
			if evalJS[bool](tab, `!!document.getElementById('health')`) {
				t.Fatalf("the console opened with %s", c.key)
			}
		}
		tab.submit("login", map[string]string{"admin-key": adminKey})
		tab.wait(`document.getElementById('health') && document.querySelector('#admin-boards tr[data-board="arena"]')`)
		// The key is in this tab's session storage, and nowhere else.
		if got := evalJS[string](tab, `sessionStorage.getItem('laurel.adminKey')`); got != adminKey {
			t.Errorf("session storage holds %q", got)
		}
		if n := evalJS[int](tab, `localStorage.length`); n != 0 {
			t.Errorf("local storage holds %d items", n)
		}
		if u := evalJS[string](tab, `location.href`); strings.Contains(u, adminKey) {
			t.Errorf("the key is in the URL: %s", u)
		}
		// A reload keeps the tab signed in; another tab is not.
		tab.open(e.url + "/admin")
		tab.wait(`document.getElementById('health')`)
		other := newTab(t, browser)
		other.open(e.url + "/admin")
		other.wait(`document.getElementById('login')`)
		tab.click("#signout")
		tab.wait(`document.getElementById('login') && sessionStorage.getItem('laurel.adminKey') === null`)
	})

	t.Run("Boards", func(t *testing.T) {
		tab := signedIn(t, browser, e, adminKey)
		tab.wait(`document.querySelector('#admin-boards tr[data-board="arena"]')`)

		// Checked in the page: nothing is sent.
		tab.submit("board-form", map[string]string{"board-id": "Bad Id", "board-metadata": "{not json"})
		tab.wait(`document.getElementById('board-id-error').textContent !== '' && document.getElementById('board-metadata-error').textContent.startsWith('Not JSON')`)
		e.do("GET", "/v1/boards/bad-id", nil).isError(t, 404, "not_found", "board")
		// Checked by the server: its answer shows at the field it names.
		tab.submit("board-form", map[string]string{"board-id": "league", "board-metadata": "", "board-windows": "all, fortnight"})
		tab.wait(`document.getElementById('board-windows-error').textContent.includes('fortnight')`)
		e.do("GET", "/v1/boards/league", nil).isError(t, 404, "not_found", "board")

		tab.submit("board-form", map[string]string{"board-id": "league", "board-title": "League", "board-windows": "all, week",
			"board-order": "asc", "board-subscore": "desc", "board-keep": "4", "board-metadata": `{"season": 3}`})
		tab.wait(`document.getElementById('board-form-msg').textContent === 'Created board league.'`)
		tab.wait(`document.querySelector('#admin-boards tr[data-board="league"]')`)
		if b := e.do("GET", "/v1/boards/league", nil).must(t, 200); fmt.Sprintf("%v %v %v %v %v %v", b.get("title"), b.get("order"), b.get("subscore"), b.get("keep"), b.get("windows"), b.get("metadata", "season")) != "League asc desc 4 [all week] 3" {
			t.Fatalf("the board created: %s", b.raw)
		}

		// Edit: immutable fields are fixed; a window is added; removing one is refused at its field.
		tab.click(`#admin-boards tr[data-board="league"] button.edit`)
		tab.wait(`document.getElementById('board-form-title').textContent === 'Edit league' && document.getElementById('board-order').disabled && document.getElementById('board-id').disabled`)
		if got := evalJS[string](tab, `(() => { const s = document.getElementById('board-subscore'); return s.value + ' ' + s.disabled; })()`); got != "desc true" {
			t.Errorf("the subscore in the edit form (value, disabled): %s", got)
		}
		tab.submit("board-form", map[string]string{"board-title": "League 2", "board-windows": "all, week, last7d"})
		tab.wait(`document.getElementById('board-form-msg').textContent === 'Saved board league.'`)
		if b := e.do("GET", "/v1/boards/league", nil).must(t, 200); fmt.Sprintf("%v %v", b.get("title"), b.get("windows")) != "League 2 [all week last7d]" {
			t.Fatalf("the board edited: %s", b.raw)
		}
		tab.submit("board-form", map[string]string{"board-windows": "all"})
		tab.wait(`document.getElementById('board-windows-error').textContent !== ''`)
		if b := e.do("GET", "/v1/boards/league", nil); fmt.Sprint(b.get("windows")) != "[all week last7d]" {
			t.Fatalf("a refused edit changed the board: %s", b.raw)
		}

		// Delete takes a second click.
		tab.click(`#admin-boards tr[data-board="league"] button.danger`)
		e.do("GET", "/v1/boards/league", nil).must(t, 200)
		tab.click(`#admin-boards tr[data-board="league"] button.danger`)
		tab.wait(`!document.querySelector('#admin-boards tr[data-board="league"]')`)
		e.do("GET", "/v1/boards/league", nil).isError(t, 404, "not_found", "board")
		// The form that edited it leaves it: a Save there made it again, with default settings.
		tab.wait(`document.getElementById('board-form-title').textContent === 'New board' && document.getElementById('board-form-msg').textContent === 'Deleted board league.'`)
		if id := evalJS[string](tab, `document.getElementById('board-id').value`); id != "" {
			t.Errorf("the form still names the deleted board: id %q", id)
		}
		tab.submit("board-form", map[string]string{})
		tab.wait(`document.getElementById('board-id-error').textContent !== ''`)
		e.do("GET", "/v1/boards/league", nil).isError(t, 404, "not_found", "board")

		// Deleted elsewhere while the form edits it: Save says so and makes nothing; the form
		// then creates it, with its settings, when asked to.
		e.do("PUT", "/v1/boards/relay", map[string]any{"windows": []string{"all", "day"}, "order": "asc"}).must(t, 201)
		tab.open(e.url + "/admin")
		tab.click(`#admin-boards tr[data-board="relay"] button.edit`)
		tab.wait(`document.getElementById('board-form-title').textContent === 'Edit relay'`)
		e.do("DELETE", "/v1/boards/relay", nil).must(t, 204)
		tab.submit("board-form", map[string]string{"board-title": "Relay"})
		tab.wait(`document.getElementById('board-form-msg').textContent.startsWith('Board relay was deleted since you opened it')`)
		e.do("GET", "/v1/boards/relay", nil).isError(t, 404, "not_found", "board")
		if got := evalJS[string](tab, `[document.getElementById('board-form-title').textContent, document.getElementById('board-save').textContent,
			document.getElementById('board-id').value, document.getElementById('board-id').disabled, document.getElementById('board-order').value].join('|')`); got != "New board|Create|relay|false|asc" {
			t.Errorf("the form after its board was found deleted: %s; want a new board relay with its settings", got)
		}
		tab.wait(`!document.querySelector('#admin-boards tr[data-board="relay"]')`)
		tab.submit("board-form", map[string]string{})
		tab.wait(`document.getElementById('board-form-msg').textContent === 'Created board relay.'`)
		if b := e.do("GET", "/v1/boards/relay", nil).must(t, 200); fmt.Sprintf("%v %v %v", b.get("title"), b.get("order"), b.get("windows")) != "Relay asc [all day]" {
			t.Fatalf("the board made again: %s", b.raw)
		}
		// Deleted and made again elsewhere: Save changes nothing, and the form shows the new one.
		tab.click(`#admin-boards tr[data-board="relay"] button.edit`)
		tab.wait(`document.getElementById('board-form-title').textContent === 'Edit relay'`)
		e.do("DELETE", "/v1/boards/relay", nil).must(t, 204)
		e.clock.Advance(time.Second) // a board is told from one made before under its id by its created_at
		e.do("PUT", "/v1/boards/relay", map[string]any{"windows": []string{"week"}, "title": "Relay 2"}).must(t, 201)
		tab.submit("board-form", map[string]string{"board-title": "Relay 3"})
		tab.wait(`document.getElementById('board-form-msg').textContent.startsWith('Board relay was deleted and made again since you opened it') &&
			document.getElementById('board-title').value === 'Relay 2' && document.getElementById('board-windows').value === 'week'`)
		if b := e.do("GET", "/v1/boards/relay", nil).must(t, 200); b.get("title") != "Relay 2" {
			t.Fatalf("the board made again elsewhere was changed by a Save of the old one: %s", b.raw)
		}
		e.do("DELETE", "/v1/boards/relay", nil).must(t, 204)
	})

	t.Run("Members", func(t *testing.T) {
		tab := signedIn(t, browser, e, adminKey)
		look := func(member string) {
			tab.submit("member-search", map[string]string{"member-q": member})
			tab.wait(fmt.Sprintf(`document.querySelector('#member-out .member-card[data-member=%q]')`, member))
		}
		// m30 plays on a second board too: the lookup goes across boards.
		e.do("PUT", "/v1/boards/duel", map[string]any{"windows": []string{"all"}}).must(t, 201)
		e.do("POST", "/v1/boards/duel/events", map[string]any{"events": []map[string]any{{"member": "m01", "value": 9}, {"member": "m30", "value": 4}}}).must(t, 200)
		look("m30")
		if got := evalJS[string](tab, `document.querySelector('#member-boards tr[data-board="duel"] li[data-window="all"] b').textContent`); got != "#2 · 4" {
			t.Errorf("m30 on the second board: %q, want #2 · 4", got)
		}
		// Its standing in each window of each board is the API's.
		for _, w := range []string{"all", "week", "day"} {
			entry := e.do("GET", "/v1/boards/arena/members/m30?window="+w, nil).must(t, 200)
			want := fmt.Sprintf("#%v · %v pts", entry.get("entry", "rank"), entry.get("entry", "score")) // the board's unit
			got := evalJS[string](tab, fmt.Sprintf(`document.querySelector('#member-boards tr[data-board="arena"] li[data-window=%q] b').textContent`, w))
			if got != want {
				t.Errorf("m30 in %s: %q on the page, %q from the API", w, got, want)
			}
		}
		total := func() float64 {
			return e.do("GET", "/v1/boards/arena/entries", nil).must(t, 200).get("total").(float64)
		}
		before := total()

		tab.click("#member-hide")
		tab.wait(`document.querySelector('#member-out .member-card')?.dataset.hidden === 'true'`)
		if hidden := e.do("GET", "/v1/members/m30", nil).must(t, 200).get("hidden"); hidden != true || total() != before-1 {
			t.Fatalf("after hide: hidden %v, total %v (was %v)", hidden, total(), before)
		}
		tab.click("#member-unhide")
		tab.wait(`document.querySelector('#member-out .member-card')?.dataset.hidden === 'false' && document.querySelector('#member-boards')`)
		if total() != before {
			t.Fatalf("after unhide: total %v, want %v", total(), before)
		}

		tab.click("#member-delete")
		e.do("GET", "/v1/members/m30", nil).must(t, 200) // one click asks again
		tab.click("#member-delete")
		tab.wait(`document.getElementById('member-msg')?.textContent === 'Erased everywhere.' && document.getElementById('member-none')`)
		e.do("GET", "/v1/members/m30", nil).isError(t, 404, "not_found", "member")
		e.do("GET", "/v1/boards/arena/members/m30", nil).isError(t, 404, "not_found", "member")
	})

	t.Run("Review", func(t *testing.T) {
		e.do("PUT", "/v1/boards/laps", map[string]any{"order": "asc", "mode": "best",
			"guard": map[string]any{"jump": map[string]any{"window": "all", "percent": 10, "action": "hold"}}}).must(t, 201)
		for _, ev := range []map[string]any{{"member": "rev-ada", "id": "a1", "value": 60_000}, {"member": "rev-bo", "id": "b1", "value": 61_000},
			{"member": "rev-ada", "id": "a2", "value": 45_000}, {"member": "rev-bo", "id": "b2", "value": 50_000}} {
			e.do("POST", "/v1/boards/laps/events", ev).must(t, 200)
		}
		if total := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200).get("total"); total != 0.0 {
			t.Fatalf("the held members are ranked: total %v", total)
		}
		tab := signedIn(t, browser, e, adminKey)
		ada, bo := `#admin-flags tr[data-member="rev-ada"]`, `#admin-flags tr[data-member="rev-bo"]`
		tab.wait(fmt.Sprintf(`document.querySelector(%q) && document.querySelector(%q)`, ada, bo))
		if got := evalJS[string](tab, fmt.Sprintf(`document.querySelector(%q).textContent`, ada)); !strings.Contains(got, "jump rule") || !strings.Contains(got, "(a2)") {
			t.Errorf("ada's row: %q, want the rule and the held lap", got)
		}
		tab.click(ada + " button.confirm")
		tab.wait(fmt.Sprintf(`document.querySelector(%q).classList.contains('armed')`, ada+" button.confirm"))
		if st := e.do("GET", "/v1/flags?member=rev-ada", nil).must(t, 200).get("flags", 0, "state"); st != "open" {
			t.Fatalf("one click confirmed: %v", st) // it asks again
		}
		tab.click(ada + " button.confirm")
		// The confirmation retracts the held events, a write: under the race detector on a
		// loaded machine this wait once ran out at a wait's usual 10 s.
		tab.waitFor(30*time.Second, fmt.Sprintf(`!document.querySelector(%q) && document.getElementById('review-msg').textContent.includes('retracted')`, ada))
		if st := e.do("GET", "/v1/flags?member=rev-ada", nil).must(t, 200).get("flags", 0, "state"); st != "confirmed" {
			t.Fatalf("ada's flag after Confirm: %v", st)
		}
		e.do("GET", "/v1/members/rev-ada", nil).must(t, 200)
		tab.click(bo + " button.clear")
		tab.wait(fmt.Sprintf(`!document.querySelector(%q) && document.getElementById('admin-flags').children.length === 0`, bo))
		if p := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200); p.get("total") != 1.0 || p.get("entries", 0, "score") != 50_000.0 {
			t.Fatalf("after Clear: %s; want bo with his held lap", p.raw)
		}
		e.do("POST", "/v1/members/rev-ada/unhide", nil).must(t, 200)
		if p := e.do("GET", "/v1/boards/laps/members/rev-ada", nil).must(t, 200); p.get("entry", "score") != 60_000.0 {
			t.Fatalf("ada after Confirm and unhide: %s; want her lap before the held one", p.raw)
		}
	})

	t.Run("Webhooks", func(t *testing.T) {
		ctx := context.Background()
		// The dispatcher's rules over the server's store, as serve runs them; one attempt
		// before a delivery fails, so that the test makes a failed one in one step.
		svc := competition.New(e.store, e.store, e.clock.Now)
		hs := &webhook.Outbox{Records: e.store, Service: svc, Results: svc.Results,
			Encode: lhttp.EncodeDelivery, Now: e.clock.Now, MaxAttempts: 1}
		e.do("PUT", "/v1/boards/cup", map[string]any{"windows": []string{"all", "day"},
			"rewards": []map[string]any{{"window": "day", "ranks": []int{1, 1}, "reward": map[string]any{"chest": "gold"}}}}).must(t, 201)
		e.do("POST", "/v1/boards/cup/events", map[string]any{"events": []map[string]any{{"member": "m01", "value": 5}, {"member": "m02", "value": 3}}}).must(t, 200)
		tab := signedIn(t, browser, e, adminKey)
		tab.wait(`document.getElementById('hook-form') && document.getElementById('admin-hooks')`)

		// Checked in the page: nothing is sent.
		tab.submit("hook-form", map[string]string{"hook-id": "Bad Id", "hook-url": "ftp://game.example", "hook-secret": "short"})
		tab.wait(`['id', 'url', 'secret'].every((f) => document.getElementById('hook-' + f + '-error').textContent !== '')`)
		if n := len(e.do("GET", "/v1/hooks", nil).must(t, 200).get("hooks").([]any)); n != 0 {
			t.Fatalf("%d hooks after a refused form", n)
		}
		// Checked by the server: its answer shows at the field it names.
		tab.click("#hook-secret-new")
		secret := evalJS[string](tab, `document.getElementById('hook-secret').value`)
		if len(secret) != 64 {
			t.Fatalf("a generated secret of %d characters: %q", len(secret), secret)
		}
		tab.submit("hook-form", map[string]string{"hook-id": "game", "hook-url": "http://127.0.0.1:9/results", "hook-boards": "cup, Not A Board"})
		tab.wait(`document.getElementById('hook-boards-error').textContent.includes('must match')`)
		e.do("GET", "/v1/hooks/game", nil).isError(t, 404, "not_found", "hook")

		tab.submit("hook-form", map[string]string{"hook-boards": "cup"})
		tab.wait(`document.getElementById('hook-form-msg').textContent.startsWith('Created webhook game')`)
		tab.wait(`document.querySelector('#admin-hooks tr[data-hook="game"]')`)
		if hk := e.do("GET", "/v1/hooks/game", nil).must(t, 200); fmt.Sprintf("%v %v", hk.get("url"), hk.get("boards")) != "http://127.0.0.1:9/results [cup]" {
			t.Fatalf("the hook created: %s", hk.raw)
		}
		if hk, err := hs.Hook(ctx, "game"); err != nil || hk.Secret != secret {
			t.Fatalf("the hook's secret is %q (%v), the page generated %q", hk.Secret, err, secret)
		}
		// An edit that leaves the secret empty keeps it; no boards is every board.
		tab.click(`#admin-hooks tr[data-hook="game"] button.edit`)
		tab.wait(`document.getElementById('hook-form-title').textContent === 'Edit webhook game' && document.getElementById('hook-id').disabled`)
		tab.submit("hook-form", map[string]string{"hook-boards": ""})
		tab.wait(`document.getElementById('hook-form-msg').textContent === 'Saved webhook game.'`)
		tab.wait(`document.querySelector('#admin-hooks tr[data-hook="game"] td:nth-child(3)').textContent === 'every board'`)
		if hk, err := hs.Hook(ctx, "game"); err != nil || hk.Secret != secret || len(hk.Boards) != 0 {
			t.Fatalf("the hook edited: %+v (%v); want the secret kept and every board", hk, err)
		}

		// The day closes; its delivery is made and its one attempt fails.
		e.clock.Advance(48 * time.Hour)
		if made, err := hs.Collect(ctx); err != nil || made != 1 {
			t.Fatalf("collect made %d deliveries (%v), want the day's one", made, err)
		}
		claimed, err := hs.Claim(ctx, 10, time.Minute)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d deliveries (%v)", len(claimed), err)
		}
		d, err := hs.Finish(ctx, claimed[0], 502, "the receiver answered 502 Bad Gateway")
		if err != nil || d.State != laurel.DeliveryFailed {
			t.Fatalf("after a failed attempt: %+v (%v)", d, err)
		}
		row := fmt.Sprintf(`#admin-deliveries tr[data-delivery=%q]`, d.ID)
		tab.click(`#admin-hooks tr[data-hook="game"] button.show-deliveries`)
		tab.wait(fmt.Sprintf(`document.querySelector('%s')?.dataset.state === 'failed'`, row))
		if got := evalJS[string](tab, fmt.Sprintf(`document.querySelector('%s').textContent`, row)); !strings.Contains(got, "cup · day") ||
			!strings.Contains(got, d.Period) || !strings.Contains(got, "502") || !strings.Contains(got, "Bad Gateway") {
			t.Errorf("the delivery's row: %q", got)
		}
		// One state at a time.
		pick := func(state string) {
			evalJS[chromedp.Void](tab, fmt.Sprintf(`(() => { const s = document.getElementById('delivery-state'); s.value = %q; s.dispatchEvent(new Event('change')); })()`, state))
		}
		pick("pending")
		tab.wait(`document.getElementById('deliveries-msg').textContent === 'None pending.' && !document.querySelector('#admin-deliveries tr')`)
		pick("failed")
		tab.wait(fmt.Sprintf(`document.querySelector('%s')`, row))
		// Its body, as the receiver gets it.
		tab.click(row + " button.body")
		tab.wait(`document.querySelector('#admin-deliveries tr.delivery-body pre')`)
		var body map[string]any
		if err := json.Unmarshal([]byte(evalJS[string](tab, `document.querySelector('#admin-deliveries tr.delivery-body pre').textContent`)), &body); err != nil ||
			body["type"] != "period.results" || body["delivery"] != d.ID || fmt.Sprint(body["rewarded"]) != "1" {
			t.Errorf("the body shown: %v (%v)", body, err)
		}
		// A replay makes it pending again, with a fresh count.
		tab.click(row + " button.replay")
		tab.wait(fmt.Sprintf(`document.querySelector('%s')?.dataset.state === 'pending' && !document.querySelector('#admin-deliveries tr.delivery-body')`, row))
		if got := e.do("GET", "/v1/hooks/game/deliveries/"+d.ID, nil).must(t, 200); got.get("state") != "pending" || got.get("attempts") != 0.0 {
			t.Fatalf("after a replay in the page: %s", got.raw)
		}

		// Delete takes a second click, and closes its deliveries.
		tab.click(`#admin-hooks tr[data-hook="game"] button.danger`)
		e.do("GET", "/v1/hooks/game", nil).must(t, 200)
		tab.click(`#admin-hooks tr[data-hook="game"] button.danger`)
		tab.wait(`!document.querySelector('#admin-hooks tr[data-hook="game"]') && document.getElementById('hook-deliveries').hidden`)
		e.do("GET", "/v1/hooks/game", nil).isError(t, 404, "not_found", "hook")
		// The form that edited it leaves it too.
		tab.wait(`document.getElementById('hook-form-title').textContent === 'New webhook' && document.getElementById('hook-form-msg').textContent === 'Deleted webhook game.'`)
	})

	t.Run("Health", func(t *testing.T) {
		tab := signedIn(t, browser, e, adminKey)
		tab.wait(`document.querySelector('#health [data-metric="store"] b').textContent === 'ready'`)
		// Events sent while the console watches show as an ingest rate.
		deadline := time.Now().Add(15 * time.Second)
		for i := 0; ; i++ {
			e.do("POST", "/v1/boards/arena/events", map[string]any{"member": "m01", "value": 1}).must(t, 200)
			rate := evalJS[string](tab, `document.querySelector('#health [data-metric="ingest"] b').textContent`)
			if v, ok := strings.CutSuffix(rate, " events/s"); ok {
				if f, err := strconv.ParseFloat(strings.ReplaceAll(v, ",", ""), 64); err == nil && f > 0 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no ingest rate after %d events: %q", i+1, rate)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The API requests that sent them show too; the console's own polling does not count.
		if got := evalJS[string](tab, `document.querySelector('#health [data-metric="requests"] b').textContent`); got == "0 req/s" {
			t.Errorf("requests: %q while events are sent", got)
		}
		for metric, pattern := range map[string]string{"p99": "≤ ", "memory": "MiB", "requests": "req/s"} {
			if got := evalJS[string](tab, fmt.Sprintf(`document.querySelector('#health [data-metric=%q] b').textContent`, metric)); !strings.Contains(got, pattern) {
				t.Errorf("%s shows %q, want %q in it", metric, got, pattern)
			}
		}
	})
}

// signedIn opens the console in a new tab, signed in with key.
func signedIn(t *testing.T, browser context.Context, e *env, key string) *tab {
	t.Helper()
	tab := newTab(t, browser)
	tab.open(e.url + "/admin")
	tab.wait(`document.getElementById('login')`)
	tab.submit("login", map[string]string{"admin-key": key})
	tab.wait(`document.getElementById('health')`)
	return tab
}

// submit fills the fields of a form, each by its element id, as typing would, and submits it.
func (tb *tab) submit(form string, values map[string]string) {
	tb.t.Helper()
	b, _ := json.Marshal(values)
	evalJS[chromedp.Void](tb, fmt.Sprintf(`(() => {
		for (const [id, v] of Object.entries(%s)) {
			const el = document.getElementById(id);
			el.value = v;
			el.dispatchEvent(new Event('input', { bubbles: true }));
		}
		document.getElementById(%q).requestSubmit();
	})()`, b, form))
}
