package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	lhttp "github.com/laurel/laurel/http"
)

// The web page, driven by a real headless Chromium: Debian's /usr/bin/chromium. The board's
// screenshot is a test artifact (go test -run Browser -artifacts ./http/ keeps it);
// LAUREL_SCREENSHOT=docs/screenshot.png also writes the README's.

const chromiumPath = "/usr/bin/chromium"

// TestBrowser runs the page against an in-process server, in one browser with a tab per subtest.
func TestBrowser(t *testing.T) {
	browser := startBrowser(t)

	e := start(t, options{})
	seedArena(t, e)

	t.Run("Boards", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/")
		tab.wait(`document.querySelector('#boards a.card[data-board="arena"]')`)
		href := evalJS[string](tab, `document.querySelector('#boards a.card[data-board="arena"]').getAttribute('href')`)
		if href != "/boards/arena" {
			t.Errorf("link to the board: %q", href)
		}
		// The card previews the board's top 3 in its first window, and labels its counts.
		top := apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=3")
		tab.wait(`document.querySelectorAll('a.card[data-board="arena"] ol.preview li').length === 3`)
		got := evalJS[[]string](tab, `[...document.querySelectorAll('a.card[data-board="arena"] ol.preview li')].map((li) => li.dataset.member)`)
		if want := []string{top[0].Member, top[1].Member, top[2].Member}; !slices.Equal(got, want) {
			t.Errorf("top 3 on the card: %v, want %v", got, want)
		}
		if score := evalJS[string](tab, `document.querySelector('a.card[data-board="arena"] ol.preview li b').textContent`); score != thousands(top[0].Score)+" pts" {
			t.Errorf("the leader's score on the card: %q, want it with separators and the board's unit", score)
		}
		if label := evalJS[string](tab, `document.querySelector('a.card[data-board="arena"] ul.wins li').textContent`); !strings.HasSuffix(label, "players") {
			t.Errorf("a window's count is not labelled: %q", label)
		}
	})

	t.Run("Board", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/arena")
		tab.waitView("all||0|25|")
		want := apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=25")
		tab.checkRows(want)
		if len(want) != 25 {
			t.Errorf("%d rows from the API, want 25", len(want))
		}
		// m27 has no name: the page shows its id.
		if !slices.ContainsFunc(want, func(r pageRow) bool { return r.Member == "m27" && r.Name == "m27" }) {
			t.Errorf("m27 is not on the page under its id")
		}
		if title := evalJS[string](tab, `document.getElementById('title').textContent`); title != "Arena" {
			t.Errorf("title %q", title)
		}
		// The podium's rows differ in colour only: every row has the same height, font and gap
		// to the next (a style of the index cards once leaked onto the third row).
		tab.wait(`![...document.querySelectorAll('#rows > li.row')].some((r) => r.getAnimations().length)`) // entered
		if got := evalJS[string](tab, `(() => {
			const rows = [...document.querySelectorAll('#rows > li.row')].slice(0, 6);
			const box = rows.map((r) => r.getBoundingClientRect());
			const font = rows.map((r) => getComputedStyle(r.querySelector('.name')).fontSize);
			const out = [];
			for (let i = 1; i < rows.length; i++) {
				out.push(Math.round(box[i].height) + '/' + Math.round(box[i].top - box[i - 1].bottom) + '/' + font[i]);
			}
			return [...new Set(out)].join(' ');
		})()`); strings.Contains(got, " ") {
			t.Errorf("rows laid out differently (height/gap/font of rows 2–6): %s", got)
		}
		// Scores carry thousands separators and the board's unit (its metadata's "unit").
		if score := evalJS[string](tab, `document.querySelector('#rows > li.row .score').textContent`); score != thousands(want[0].Score)+" pts" {
			t.Errorf("the leader's score on the page: %q", score)
		}
		// Nothing has moved yet: the movement column takes no space.
		if !evalJS[bool](tab, `document.getElementById('rows').classList.contains('still') && document.querySelector('#rows .move').offsetWidth === 0`) {
			t.Error("an empty movement column takes space")
		}
	})

	t.Run("Tags", func(t *testing.T) {
		// A quiet second line under the name shows the tag of the event that made the score,
		// on the rows that have one; the others show none.
		e.do("PUT", "/v1/boards/laps", map[string]any{"order": "asc", "mode": "best"}).must(t, 201)
		e.do("POST", "/v1/boards/laps/events", map[string]any{"events": []map[string]any{
			{"member": "ada", "value": 59_000, "tag": map[string]any{"car": "kart-3", "lap": 4}}, {"member": "bob", "value": 60_000}}}).must(t, 200)
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/laps")
		tab.waitView("all||0|25|")
		tab.wait(`document.querySelectorAll('#rows > li.row').length === 2`)
		if got := evalJS[string](tab, `document.querySelector('#rows > li.row[data-member="ada"] .tag').textContent`); got != "car kart-3 · lap 4" {
			t.Errorf("ada's tag line: %q", got)
		}
		if evalJS[bool](tab, `document.querySelector('#rows > li.row[data-member="bob"] .tag').offsetHeight > 0`) {
			t.Error("bob's row, without a tag, shows a tag line")
		}
	})

	t.Run("Subscore", func(t *testing.T) {
		// A board with a subscore shows it quietly beside each score, and ranks equal scores by
		// it; the header says how ties go. A board without (laps, above) shows none.
		e.do("PUT", "/v1/boards/race", map[string]any{"order": "asc", "subscore": "asc", "mode": "best"}).must(t, 201)
		e.do("POST", "/v1/boards/race/events", map[string]any{"events": []map[string]any{
			{"member": "ada", "value": 61_000, "subscore": 2}, {"member": "bob", "value": 61_000, "subscore": 1}, {"member": "cy", "value": 62_000}}}).must(t, 200)
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/race")
		tab.waitView("all||0|25|")
		tab.wait(`document.querySelectorAll('#rows > li.row').length === 3`)
		if got := evalJS[string](tab, `[...document.querySelectorAll('#rows > li.row')].map((r) => r.dataset.member + ' ' + r.querySelector('.score').textContent + ' ' + r.querySelector('.subscore').textContent).join(', ')`); got != "bob 61,000 1, ada 61,000 2, cy 62,000 0" {
			t.Errorf("the rows (member, score, subscore): %q", got)
		}
		if !evalJS[bool](tab, `(() => { const r = document.querySelector('#rows > li.row'); const s = r.querySelector('.score').getBoundingClientRect(), q = r.querySelector('.subscore').getBoundingClientRect();
			return q.height > 0 && q.left >= s.right && parseFloat(getComputedStyle(r.querySelector('.subscore')).fontSize) < parseFloat(getComputedStyle(r.querySelector('.score')).fontSize); })()`) {
			t.Error("the subscore is not beside the score, smaller")
		}
		if got := evalJS[string](tab, `document.getElementById('sub').textContent`); !strings.Contains(got, "ties: lowest subscore") {
			t.Errorf("the header does not say how ties go: %q", got)
		}
		laps := newTab(t, browser)
		laps.open(e.url + "/boards/laps")
		laps.waitView("all||0|25|")
		laps.wait(`document.querySelectorAll('#rows > li.row').length === 2`)
		if evalJS[bool](laps, `[...document.querySelectorAll('#rows > li.row .subscore')].some((s) => s.offsetWidth > 0 || s.textContent !== '')`) {
			t.Error("a board without a subscore shows one")
		}
	})

	t.Run("Live", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/arena")
		tab.waitView("all||0|25|")
		tab.wait(`document.getElementById('status').dataset.state === 'live'`)
		evalJS[chromedp.Void](tab, `window.notReloaded = true; window.glided = [];
			document.addEventListener('transitionrun', (ev) => { if (ev.propertyName === 'transform') window.glided.push(ev.target.dataset.member) })`)
		// m10 is far down all time; 1000 more takes it to the top.
		e.do("POST", "/v1/boards/arena/events", map[string]any{"member": "m10", "value": 1000}).must(t, 200)
		want := apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=25")
		if want[0].Member != "m10" {
			t.Fatalf("m10 is not first: %+v", want[0])
		}
		tab.waitFor(5*time.Second, `(() => { const r = document.querySelector('#rows > li.row'); return r && r.dataset.member === 'm10' && r.dataset.rank === '1' })()`)
		tab.checkRows(want)
		if score := evalJS[string](tab, `document.querySelector('#rows > li.row .score').textContent`); score != thousands(want[0].Score)+" pts" || !strings.Contains(score, ",") {
			t.Errorf("m10's score on the page: %q, want %s pts with a thousands separator", score, want[0].Score)
		}
		if !evalJS[bool](tab, `window.notReloaded === true`) {
			t.Error("the page reloaded")
		}
		if move := evalJS[string](tab, `document.querySelector('#rows > li.row[data-member="m10"] .move').className`); move != "move up" {
			t.Errorf("m10's arrow: %q, want up", move)
		}
		tab.waitFor(2*time.Second, `window.glided.includes('m10')`) // its row glides to its new place
		if evalJS[bool](tab, `document.getElementById('rows').classList.contains('still')`) {
			t.Error("the movement column is hidden while rows show moves")
		}
		// Everyone m10 passed moved down one.
		if move := evalJS[string](tab, `document.querySelector('#rows > li.row[data-rank="2"] .move').className`); move != "move down" {
			t.Errorf("rank 2's arrow: %q, want down", move)
		}
	})

	t.Run("Windows", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/arena")
		tab.waitView("all||0|25|")
		all := tab.rows()
		tab.click(`#windows button[data-window="week"]`)
		tab.waitView("week||0|25|")
		week := apiRows(t, e, "/v1/boards/arena/entries?window=week&limit=25")
		tab.checkRows(week)
		if slices.Equal(all, week) {
			t.Error("the week shows what all time shows")
		}
		if p := evalJS[string](tab, `document.querySelector('#windows button[aria-pressed="true"]').dataset.window`); p != "week" {
			t.Errorf("pressed window %q", p)
		}
		// The current week counts down to its end (the board's clock is the test's, the
		// browser's the machine's: the text is checked, not the figure).
		tab.wait(`!document.getElementById('countdown').hidden`)
		if c := evalJS[string](tab, `document.getElementById('countdown').textContent`); !strings.HasPrefix(c, "Ends in ") && !strings.HasPrefix(c, "Ended") {
			t.Errorf("countdown %q", c)
		}
		// The past week, from the period picker: read once, not live.
		tab.wait(`!document.querySelector('label.period').hidden && [...document.querySelectorAll('#period option')].some(o => o.value === '2026-11-09')`)
		evalJS[chromedp.Void](tab, `(() => { const s = document.getElementById('period'); s.value = '2026-11-09'; s.dispatchEvent(new Event('change')); })()`)
		tab.waitView("week|2026-11-09|0|25|")
		tab.wait(`document.getElementById('countdown').hidden`) // a past period has nothing to count down
		tab.checkRows(apiRows(t, e, "/v1/boards/arena/entries?window=week&period=2026-11-09&limit=25"))
		tab.wait(`document.getElementById('status').dataset.state === 'static'`)
	})

	t.Run("Search", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/arena?limit=10")
		tab.waitView("all||0|10|")
		all := apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=30")
		target := all[19] // rank 20: well below the first page
		if err := chromedp.Do(tab.ctx, chromedp.SendKeys(chromedp.CSS("#q"), target.Member+"\n")); err != nil {
			t.Fatal(err)
		}
		tab.wait(fmt.Sprintf(`(() => { const r = document.querySelector('#rows > li.row.me'); return r && r.dataset.member === %q })()`, target.Member))
		// A page of 10 around it: 5 before it, 4 after (the radius 5 the page asks for, cut).
		want := apiRows(t, e, "/v1/boards/arena/members/"+target.Member+"/around?window=all&radius=5")[:10]
		if want[5].Member != target.Member {
			t.Fatalf("the page around %s: %+v", target.Member, want)
		}
		tab.waitView(fmt.Sprintf("all||%d|10|%s", want[0].Rank-1, target.Member))
		tab.checkRows(want)
		if want[0].Rank == 1 {
			t.Errorf("the around view starts at rank 1: %+v", want)
		}
		if me := tab.rows(); !slices.ContainsFunc(me, func(r pageRow) bool { return r.Me && r.Member == target.Member && r.Rank == target.Rank }) {
			t.Errorf("%s is not highlighted at rank %d: %+v", target.Member, target.Rank, me)
		}
		// The panel of the member, with its rank history.
		tab.wait(`!document.getElementById('member').hidden && document.querySelector('#chart svg circle.last')`)
		if score := evalJS[string](tab, `document.querySelectorAll('#member .stat b')[1].textContent`); score != thousands(target.Score)+" pts" {
			t.Errorf("the panel's score: %q, want %s pts", score, target.Score)
		}
		if !evalJS[bool](tab, `document.getElementById('pinned').hidden`) {
			t.Error("the member is pinned below a page that shows it")
		}
		// Paging away from the member keeps it in sight: its row pinned under the page.
		tab.click(`#next`)
		tab.waitView(fmt.Sprintf("all||%d|10|", want[0].Rank-1+10))
		tab.wait(fmt.Sprintf(`(() => { const r = document.querySelector('#pinned > li.row.me'); return !document.getElementById('pinned').hidden && r && r.dataset.member === %q && r.dataset.rank === %q })()`, target.Member, fmt.Sprint(target.Rank)))
	})

	// After Find, the leaders are one labelled click away: the top of the board, the member
	// found still selected and pinned under it.
	t.Run("TopAfterFind", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/arena?limit=10")
		tab.waitView("all||0|10|")
		if !evalJS[bool](tab, `document.getElementById('top').offsetParent === null`) {
			t.Error("a way to the top is shown at the top")
		}
		target := apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=30")[24] // rank 25
		if err := chromedp.Do(tab.ctx, chromedp.SendKeys(chromedp.CSS("#q"), target.Member+"\n")); err != nil {
			t.Fatal(err)
		}
		tab.wait(fmt.Sprintf(`document.getElementById('rows').dataset.view.endsWith('|10|%s') && document.querySelector('#rows > li.row.me')?.dataset.member === %q`, target.Member, target.Member))
		if first := tab.rows()[0]; first.Rank == 1 {
			t.Fatalf("the page around rank 25 starts at rank 1: the test tests nothing")
		}
		if label := evalJS[string](tab, `document.getElementById('top').textContent`); !strings.Contains(label, "Top") {
			t.Errorf("the way to the top is labelled %q", label)
		}
		tab.click("#top")
		tab.waitView("all||0|10|")
		tab.checkRows(apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=10"))
		tab.wait(fmt.Sprintf(`(() => { const r = document.querySelector('#pinned > li.row.me'); return !document.getElementById('pinned').hidden && r && r.dataset.member === %q && r.dataset.rank === '25' })()`, target.Member))
		if !evalJS[bool](tab, `!document.getElementById('member').hidden && document.getElementById('top').offsetParent === null`) {
			t.Error("at the top: the member's panel is closed, or the way to the top still shows")
		}
		if u := evalJS[string](tab, `location.search`); !strings.Contains(u, "member="+target.Member) || strings.Contains(u, "offset=") {
			t.Errorf("the page's URL at the top: %q", u)
		}
		// Paged down, it shows again.
		tab.click("#next")
		tab.waitView("all||10|10|")
		tab.wait(`document.getElementById('top').offsetParent !== null`)
	})

	// A member found on the first page is shown there, the leader on top: the page around it
	// would start below rank 1 and hide the leader.
	t.Run("FindKeepsTheLeader", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/arena?limit=10")
		tab.waitView("all||0|10|")
		all := apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=10")
		target := all[6] // rank 7: around it, the page would be ranks 3–11
		if around := apiRows(t, e, "/v1/boards/arena/members/"+target.Member+"/around?window=all&radius=4"); around[0].Rank == 1 {
			t.Fatalf("the page around %s starts at rank 1: the test tests nothing", target.Member)
		}
		if err := chromedp.Do(tab.ctx, chromedp.SendKeys(chromedp.CSS("#q"), target.Member+"\n")); err != nil {
			t.Fatal(err)
		}
		tab.wait(fmt.Sprintf(`(() => { const r = document.querySelector('#rows > li.row.me'); return r && r.dataset.member === %q })()`, target.Member))
		tab.waitView("all||0|10|")
		tab.checkRows(apiRows(t, e, "/v1/boards/arena/entries?window=all&limit=10"))
		if first := tab.rows()[0]; first.Rank != 1 {
			t.Errorf("the first row is rank %d, not the leader", first.Rank)
		}
	})

	t.Run("MissingBoard", func(t *testing.T) {
		tab := newTab(t, browser)
		tab.open(e.url + "/boards/nope")
		tab.wait(`document.getElementById('notice').textContent.includes('There is no board “nope”')`)
		if !evalJS[bool](tab, `document.querySelector('.pager').offsetParent === null && document.querySelector('.controls').offsetParent === null`) { // not rendered
			t.Error("a missing board shows a pager or controls")
		}
		if href := evalJS[string](tab, `document.querySelector('#notice a').getAttribute('href')`); href != "/" {
			t.Errorf("the way back: %q", href)
		}
		if state := evalJS[string](tab, `document.getElementById('status').dataset.state`); state == "error" {
			t.Error("a missing board shows the server's status as an error")
		}
	})

	t.Run("BoardDeletedWhileWatched", func(t *testing.T) {
		s := start(t, options{})
		s.do("PUT", "/v1/boards/brief", map[string]any{"windows": []string{"all"}}).must(t, 201)
		s.do("POST", "/v1/boards/brief/events", map[string]any{"member": "ann", "value": 1}).must(t, 200)
		tab := newTab(t, browser)
		tab.open(s.url + "/boards/brief")
		tab.wait(`document.getElementById('status').dataset.state === 'live'`)
		s.do("DELETE", "/v1/boards/brief", nil).must(t, 204)
		tab.wait(`document.getElementById('notice').textContent.includes('There is no board “brief” any more') && document.getElementById('status').dataset.state === 'idle'`)
		time.Sleep(1500 * time.Millisecond) // no reconnecting to a board that is gone
		if state := evalJS[string](tab, `document.getElementById('status').dataset.state`); state != "idle" {
			t.Errorf("the status after the board was deleted: %s", state)
		}
	})

	t.Run("WrongKey", func(t *testing.T) {
		k := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Read: []string{"read-key"}}}})
		tab := newTab(t, browser)
		tab.open(k.url + "/?key=wrong")
		tab.wait(`document.getElementById('notice').textContent.includes('does not know the key of this page') && document.getElementById('status').dataset.state === 'error' && document.getElementById('status').textContent === 'Error'`)
	})

	t.Run("Key", func(t *testing.T) {
		k := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{"admin-key"}, Read: []string{"read-key"}}}})
		k.key = "admin-key"
		seedArena(t, k)
		tab := newTab(t, browser)
		tab.open(k.url + "/boards/arena")
		tab.wait(`document.getElementById('notice').textContent.includes('?key=')`)
		tab.open(k.url + "/boards/arena?key=read-key")
		tab.waitView("all||0|25|")
		tab.wait(`document.getElementById('status').dataset.state === 'live'`)
		k.do("POST", "/v1/boards/arena/events", map[string]any{"member": "m03", "value": 5000}).must(t, 200)
		tab.waitFor(5*time.Second, `document.querySelector('#rows > li.row').dataset.member === 'm03'`)
		tab.checkRows(apiRows(t, k, "/v1/boards/arena/entries?window=all&limit=25"))
	})

	t.Run("Screenshot", func(t *testing.T) {
		s := start(t, options{})
		seedShowcase(t, s)
		tab := newTab(t, browser)
		if err := chromedp.Do(tab.ctx, chromedp.EmulateViewport(1200, 900)); err != nil {
			t.Fatal(err)
		}
		// The page's clock is the server's (the fake one of the test), so that the week counts
		// down to its end rather than having ended days ago on the machine's clock.
		if err := chromedp.Do(tab.ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
			_, err := cdp.Call(ctx, target, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
				Source: fmt.Sprintf(`(() => {
					const Real = Date, offset = %d - Real.now();
					globalThis.Date = class extends Real {
						constructor(...a) { super(...(a.length ? a : [Real.now() + offset])); }
						static now() { return Real.now() + offset; }
					};
				})()`, s.clock.Now())})
			return err
		})); err != nil {
			t.Fatal(err)
		}
		// grace is on the first page: the page shows it live, grace highlighted, her chart aside.
		tab.open(s.url + "/boards/puzzles?member=grace")
		tab.waitView("week||0|25|")
		tab.wait(`document.querySelector('#rows > li.row.me').dataset.member === 'grace'`)
		tab.wait(`document.querySelector('#chart svg circle.last') && document.getElementById('status').dataset.state === 'live'`)
		// Two solves while the page watches: the rows glide and show their moves.
		s.do("POST", "/v1/boards/puzzles/events", map[string]any{"events": []map[string]any{
			{"member": "grace", "value": 45}, {"member": "barbara", "value": 40}}}).must(t, 200)
		tab.wait(`document.querySelector('#rows > li.row.me[data-member="grace"][data-rank="2"] .move.up') && document.querySelector('#rows > li.row[data-member="barbara"][data-rank="5"]')`)
		if c := evalJS[string](tab, `document.getElementById('countdown').textContent`); !strings.HasPrefix(c, "Ends in ") {
			t.Errorf("countdown %q on the server's clock", c)
		}
		time.Sleep(1500 * time.Millisecond) // let the glide and the highlights end
		png, err := chromedp.Run(tab.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		save := []string{filepath.Join(t.ArtifactDir(), "board.png")}
		if p := os.Getenv("LAUREL_SCREENSHOT"); p != "" {
			// Relative to the module's root, where the README is: LAUREL_SCREENSHOT=docs/screenshot.png.
			if !filepath.IsAbs(p) {
				p = filepath.Join("..", p)
			}
			save = append(save, p)
		}
		for _, p := range save {
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", p)
		}
	})

	t.Run("FollowsTheMemberOffThePage", func(t *testing.T) {
		// A board of its own: ten members, the top 5 on the page, dan selected at rank 4.
		s := start(t, options{})
		s.do("PUT", "/v1/boards/race", map[string]any{"windows": []string{"all"}}).must(t, 201)
		var evs []map[string]any
		for i, m := range []string{"ann", "ben", "cy", "dan", "eve", "fay", "gus", "hal", "ivy", "jo"} {
			evs = append(evs, map[string]any{"member": m, "value": 100 - 5*i})
		}
		s.do("POST", "/v1/boards/race/events", map[string]any{"events": evs}).must(t, 200)
		tab := newTab(t, browser)
		tab.open(s.url + "/boards/race?limit=10&member=dan")
		tab.wait(`document.querySelector('#member .stat b')?.textContent === '#4'`)
		// Seven pass dan on the live top 10: it leaves the page, and its panel and pinned row
		// follow the board, not its last place on the page.
		for _, m := range []string{"eve", "fay", "gus", "hal", "ivy", "jo", "kim"} {
			s.do("POST", "/v1/boards/race/events", map[string]any{"member": m, "value": 100}).must(t, 200)
		}
		want := s.do("GET", "/v1/boards/race/members/dan", nil).must(t, 200)
		rank := fmt.Sprintf("#%v", want.get("entry", "rank"))
		if rank != "#11" {
			t.Fatalf("dan is %s from the API, want #11", rank)
		}
		tab.waitFor(5*time.Second, fmt.Sprintf(`document.querySelector('#member .stat b')?.textContent === %q && document.querySelector('#pinned li.row')?.dataset.rank === '11'`, rank))
		if of := evalJS[string](tab, `document.querySelector('#member .stat small').textContent`); of != "of 11" {
			t.Errorf("dan's panel: %s %s, want of 11", rank, of)
		}
	})

	t.Run("MemberPanelSaysWhoPassed", func(t *testing.T) {
		s := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{"admin-key"}},
			Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k2": currentSecret}}}})
		s.key = "admin-key"
		s.do("PUT", "/v1/boards/duel", map[string]any{"windows": []string{"all"}, "mode": "best"}).must(t, 201)
		s.do("POST", "/v1/boards/duel/events", `{"events": [{"member": "ann", "value": 100}, {"member": "ben", "value": 90},
			{"member": "dan", "value": 80, "name": "Dan"}, {"member": "ada", "value": 10, "name": "Ada"}]}`).must(t, 200)
		// Anyone's page names the member selected.
		tab := newTab(t, browser)
		tab.open(s.url + "/boards/duel?key=admin-key&member=dan")
		tab.wait(`document.querySelector('#member .stat b')?.textContent === '#3' && document.getElementById('member-feed')?.dataset.live`)
		s.do("POST", "/v1/boards/duel/events", `{"member": "ada", "value": 85}`).must(t, 200)
		tab.waitFor(5*time.Second, `document.getElementById('member-feed')?.textContent === 'Ada passed Dan · #3 → #4'`)
		// The member's own page, opened with its token, says "you".
		own := newTab(t, browser)
		own.open(s.url + "/boards/duel?member=dan&key=" + mint(t, "k2", currentSecret, claimsFor("dan", "duel")))
		own.wait(`document.querySelector('#member .stat b')?.textContent === '#4' && document.getElementById('member-feed')?.dataset.live`)
		s.do("POST", "/v1/boards/duel/events", `{"member": "dan", "value": 87}`).must(t, 200)
		own.waitFor(5*time.Second, `document.getElementById('member-feed')?.textContent === 'You passed Ada · #4 → #3'`)
		s.do("POST", "/v1/boards/duel/events", `{"member": "ada", "value": 95}`).must(t, 200)
		own.waitFor(5*time.Second, `document.getElementById('member-feed')?.textContent === 'Ada passed you · #3 → #4'`)
	})

	t.Run("ResultsOnceThePeriodCloses", func(t *testing.T) {
		// Yesterday ended 10 hours ago and takes late events for 15: its results show once it
		// closes, without a reload.
		s := start(t, options{})
		s.do("PUT", "/v1/boards/daily", map[string]any{"windows": []string{"day"}, "late_limit": "15h",
			"rewards": []map[string]any{{"window": "day", "ranks": []int{1, 1}, "reward": map[string]any{"chest": "gold"}}}}).must(t, 201)
		s.do("POST", "/v1/boards/daily/events", map[string]any{"member": "ann", "value": 3, "ts": "2026-11-21T20:00:00Z"}).must(t, 200)
		tab := newTab(t, browser)
		tab.open(s.url + "/boards/daily")
		tab.waitView("day||0|25|")
		tab.wait(`!document.getElementById('period').parentElement.hidden`) // the page read the periods: yesterday's is open
		if !evalJS[bool](tab, `document.getElementById('results').hidden`) {
			t.Fatal("results shown for a period still open")
		}
		s.clock.Advance(6 * time.Hour) // closed
		tab.waitFor(10*time.Second, `!document.getElementById('results').hidden && document.querySelector('#results li[data-member="ann"] .reward')?.textContent === 'chest: gold'`)
	})

	// A board whose unit is one of time shows its scores as times: on the page, its card,
	// a member's panel, the results and the admin console, all through the one scoreText.
	t.Run("Durations", func(t *testing.T) {
		s := start(t, options{})
		s.do("PUT", "/v1/boards/laps", map[string]any{"order": "asc", "mode": "best", "windows": []string{"all", "day"}, "late_limit": "1d",
			"metadata": map[string]any{"unit": "ms"}, "rewards": []map[string]any{{"window": "day", "ranks": []int{1, 3}, "reward": map[string]any{"cup": 1}}}}).must(t, 201)
		s.do("POST", "/v1/boards/laps/events", map[string]any{"events": []map[string]any{
			{"member": "ann", "value": 43700, "ts": "2026-11-21T20:00:00Z"}, {"member": "ben", "value": 61250, "ts": "2026-11-21T20:00:00Z"},
			{"member": "cy", "value": 3723456, "ts": "2026-11-21T20:00:00Z"}, {"member": "ann", "value": 44100}}}).must(t, 200)
		s.do("PUT", "/v1/boards/laps", map[string]any{"late_limit": "1h"}).must(t, 200) // yesterday closes
		times := []string{"0:43.700", "1:01.250", "1:02:03.456"}

		tab := newTab(t, browser)
		tab.open(s.url + "/")
		// The function itself, for each unit of time and the edges.
		for _, c := range []struct {
			unit  string
			value int64
			want  string
		}{
			{"ms", 43700, "0:43.700"}, {"ms", 0, "0:00.000"}, {"ms", 59999, "0:59.999"}, {"ms", 60000, "1:00.000"},
			{"ms", 3723456, "1:02:03.456"}, {"ms", -1500, "-0:01.500"}, {" ms ", 7, "0:00.007"},
			{"cs", 4370, "0:43.70"}, {"cs", 5, "0:00.05"}, {"s", 125, "2:05"}, {"s", 86399, "23:59:59"}, {"s", 360000, "100:00:00"},
			{"pts", 48127, "48,127 pts"}, {"", 48127, "48,127"}, {"MS", 5, "5 MS"}, {"toString", 5, "5 toString"},
		} {
			got := evalJS[string](tab, fmt.Sprintf(`laurelUI.scoreText({metadata: {unit: %q}}, %d)`, c.unit, c.value))
			if got != c.want {
				t.Errorf("%d %q reads %q, want %q", c.value, c.unit, got, c.want)
			}
		}

		// The card on the list of boards.
		tab.wait(`document.querySelectorAll('a.card[data-board="laps"] ol.preview li').length === 3`)
		if got := evalJS[[]string](tab, `[...document.querySelectorAll('a.card[data-board="laps"] ol.preview li b')].map((b) => b.textContent)`); !slices.Equal(got, times) {
			t.Errorf("the card's top 3: %v, want %v", got, times)
		}
		// The board's rows, and a member's panel.
		tab.open(s.url + "/boards/laps?member=cy")
		tab.waitView("all||0|25|")
		if got := evalJS[[]string](tab, `[...document.querySelectorAll('#rows > li.row .score')].map((s) => s.textContent)`); !slices.Equal(got, times) {
			t.Errorf("the rows' scores: %v, want %v", got, times)
		}
		tab.wait(`document.querySelectorAll('#member .stat b')[1]?.textContent === '1:02:03.456'`)
		if !evalJS[bool](tab, `[...document.querySelectorAll('#member .stat b')].every((b) => b.scrollWidth <= b.clientWidth)`) {
			t.Error("a stat of the panel is cut short") // as the time was in a third of the panel
		}
		// Yesterday's results, under the day.
		tab.click(`#windows button[data-window="day"]`)
		tab.wait(`document.querySelectorAll('#results li .score').length === 3`)
		if got := evalJS[[]string](tab, `[...document.querySelectorAll('#results li .score')].map((s) => s.textContent)`); !slices.Equal(got, times) {
			t.Errorf("yesterday's results: %v, want %v", got, times)
		}
		// The console's standings of a member.
		tab.open(s.url + "/admin")
		tab.wait(`document.getElementById('member-search')`) // an open server: no key to give
		tab.submit("member-search", map[string]string{"member-q": "cy"})
		tab.wait(`document.querySelector('#member-boards tr[data-board="laps"] li[data-window="all"] b')`)
		if got := evalJS[string](tab, `document.querySelector('#member-boards tr[data-board="laps"] li[data-window="all"] b').textContent`); got != "#3 · 1:02:03.456" {
			t.Errorf("cy in the console: %q, want #3 · 1:02:03.456", got)
		}
	})

	t.Run("League", func(t *testing.T) {
		// A league on its own server, whose clock passes a day's close.
		s := start(t, options{})
		s.do("PUT", "/v1/boards/lg", map[string]any{"windows": []string{"day"}, "late_limit": "1h",
			"cohorts": map[string]any{"window": "day", "size": 3, "tiers": []string{"bronze", "silver"}, "promote": 1, "demote": 1},
			"rewards": []map[string]any{{"window": "day", "ranks": []int{1, 1}, "reward": map[string]any{"chest": "gold"}}}}).must(t, 201)
		s.do("POST", "/v1/boards/lg/events", `{"events": [{"member": "ann", "value": 9}, {"member": "ben", "value": 5}, {"member": "cy", "value": 2}]}`).must(t, 200)
		s.clock.Advance(24 * time.Hour)
		s.do("POST", "/v1/boards/lg/events", `{"events": [{"member": "ann", "value": 1}, {"member": "dee", "value": 4}]}`).must(t, 200)
		tab := newTab(t, browser)
		tab.open(s.url + "/boards/lg?member=ann")
		// Yesterday's results under the board: ann's gold chest.
		tab.wait(`!document.getElementById('results').hidden && document.querySelector('#results li[data-member="ann"] .reward')`)
		if r := evalJS[string](tab, `document.querySelector('#results li[data-member="ann"] .reward').textContent`); r != "chest: gold" {
			t.Errorf("ann's reward on the page: %q", r)
		}
		// ann's panel: promoted to silver, placed today in a silver cohort, first of it.
		tab.wait(`!document.getElementById('league').hidden && document.getElementById('league').textContent.includes('silver/1')`)
		league := evalJS[string](tab, `document.getElementById('league').textContent`)
		for _, want := range []string{"Cohortsilver/1", "In cohort#1", "Tiersilver", "bronze → silver"} {
			if !strings.Contains(league, want) {
				t.Errorf("ann's league panel %q lacks %q", league, want)
			}
		}
	})
}

// seedArena makes the board "arena", whose scores are in "pts": 30 members all time, 20 of
// them this week, 6 today, with names but m27's.
func seedArena(t *testing.T, e *env) {
	t.Helper()
	e.do("PUT", "/v1/boards/arena", map[string]any{"windows": []string{"all", "week", "day"}, "late_limit": "30d", "title": "Arena",
		"metadata": map[string]any{"unit": "pts"}}).must(t, 201)
	var events []map[string]any
	for i := 1; i <= 30; i++ {
		m := fmt.Sprintf("m%02d", i)
		ev := map[string]any{"member": m, "value": 100 + 3*i, "ts": "2026-11-10T12:00:00Z"}
		if i != 27 {
			ev["name"] = fmt.Sprintf("Player %d", i)
		}
		events = append(events, ev)
		if i <= 20 {
			events = append(events, map[string]any{"member": m, "value": (i*37)%50 + 1, "ts": "2026-11-20T12:00:00Z"})
		}
		if i%5 == 0 {
			events = append(events, map[string]any{"member": m, "value": i, "ts": "2026-11-22T09:00:00Z"})
		}
	}
	e.do("POST", "/v1/boards/arena/events", map[string]any{"events": events}).must(t, 200)
}

// seedShowcase makes the board of the README's screenshot: ten players solving puzzles over a
// week, sent in the order of time, so that each history point is the rank right after it.
func seedShowcase(t *testing.T, e *env) {
	t.Helper()
	e.do("PUT", "/v1/boards/puzzles", map[string]any{"windows": []string{"week", "all", "day"}, "late_limit": "7d", "title": "Puzzle Masters"}).must(t, 201)
	players := []struct {
		id, name string
		total    int
	}{
		{"ada", "Ada Lovelace", 412}, {"linus", "Linus Torvalds", 388}, {"margaret", "Margaret Hamilton", 361},
		{"grace", "Grace Hopper", 345}, {"alan", "Alan Turing", 322}, {"barbara", "Barbara Liskov", 297},
		{"ken", "Ken Thompson", 270}, {"radia", "Radia Perlman", 244}, {"donald", "Donald Knuth", 219},
		{"frances", "Frances Allen", 187},
	}
	monday := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
	type event struct {
		ts time.Time
		ev map[string]any
	}
	var events []event
	add := func(i int, hours, value int) {
		p := players[i]
		events = append(events, event{monday.Add(time.Duration(hours)*time.Hour + time.Duration(i)*time.Minute),
			map[string]any{"member": p.id, "name": p.name, "value": value}})
	}
	for i, p := range players {
		if p.id == "grace" {
			// A slow start, then a climb through the week.
			for j, v := range []int{20, 35, 60, 90, 140} {
				add(i, 10+j*28, v)
			}
			continue
		}
		// Four solves a day apart, the best players first.
		for j := range 4 {
			v := p.total / 4
			if j == 3 {
				v = p.total - 3*v
			}
			add(i, 8+i*3+j*30, v)
		}
	}
	slices.SortFunc(events, func(a, b event) int { return a.ts.Compare(b.ts) })
	for _, x := range events {
		x.ev["ts"] = x.ts.Format(time.RFC3339)
		e.do("POST", "/v1/boards/puzzles/events", x.ev).must(t, 200)
	}
}

// thousands writes digits as the page does in the browser's (English) locale: 1234 is "1,234".
func thousands(digits string) string {
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	for i := len(digits) - 3; i > 0; i -= 3 {
		digits = digits[:i] + "," + digits[i:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// pageRow is a row of the board as the page shows it, or as the API says it should.
type pageRow struct {
	Rank   int    `json:"rank"`
	Member string `json:"member"`
	Name   string `json:"name"`
	Score  string `json:"score"` // digits only
	Me     bool   `json:"me"`
}

var nonDigits = regexp.MustCompile(`[^0-9-]`)

// apiRows reads a Page from the API as the rows the page should show.
func apiRows(t *testing.T, e *env, path string) []pageRow {
	t.Helper()
	r := e.do("GET", path, nil).must(t, 200)
	var p struct {
		Entries []struct {
			Rank   int    `json:"rank"`
			Member string `json:"member"`
			Name   string `json:"name"`
			Score  int64  `json:"score"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(r.raw, &p); err != nil {
		t.Fatal(err)
	}
	rows := []pageRow{}
	for _, x := range p.Entries {
		name := x.Name
		if name == "" {
			name = x.Member
		}
		rows = append(rows, pageRow{Rank: x.Rank, Member: x.Member, Name: name, Score: fmt.Sprint(x.Score)})
	}
	return rows
}

// startBrowser starts the one browser of the test: Debian's Chromium, without which the test
// fails under CI=true and is skipped elsewhere.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: CI must install Chromium (apt-get install chromium)", chromiumPath)
		}
		t.Skipf("%s is missing: install Chromium (apt-get install chromium) to run the browser tests", chromiumPath)
	}
	// The background-networking flags matter: without them this machine's closed network
	// refuses the browser's connections.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to no deadline
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return ctx
}

// tab is one browser tab of a subtest. It fails the test on the page's uncaught exceptions and
// its console errors.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

func newTab(t *testing.T, browser context.Context) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	tb := &tab{t: t, ctx: ctx}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	entries := chromedp.Events(ctx, log.EntryAdded)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			tb.fail(fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
		}
	})
	wg.Go(func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			// Failed requests are the network's; the page handles them.
			if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
				tb.fail(fmt.Sprintf("console %s error: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, e := range tb.errors {
			t.Error(e)
		}
	})
	return tb
}

func (tb *tab) fail(msg string) {
	tb.mu.Lock()
	tb.errors = append(tb.errors, msg)
	tb.mu.Unlock()
}

func (tb *tab) open(url string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		tb.t.Fatalf("open %s: %v", url, err)
	}
}

func (tb *tab) click(sel string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		tb.t.Fatalf("click %s: %v", sel, err)
	}
}

// wait waits until the JavaScript expression is truthy.
func (tb *tab) wait(expr string) {
	tb.t.Helper()
	tb.waitFor(10*time.Second, expr)
}

func (tb *tab) waitFor(d time.Duration, expr string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, d+time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(25*time.Millisecond)))
	if err != nil {
		tb.t.Fatalf("waiting for %s: %v\nthe page: %s", expr, err, tb.describe())
	}
}

// waitView waits until the rows on screen are those of a view: window|period|offset|limit|member.
func (tb *tab) waitView(view string) {
	tb.t.Helper()
	tb.wait(fmt.Sprintf(`document.getElementById('rows')?.dataset.view === %q`, view))
}

const rowsJS = `[...document.querySelectorAll('#rows > li.row')].map((li) => ({
	rank: +li.querySelector('.rank').textContent,
	member: li.dataset.member,
	name: li.querySelector('.name').textContent,
	score: li.querySelector('.score').textContent,
	me: li.classList.contains('me'),
}))`

// rows reads the rows on screen from what they show.
func (tb *tab) rows() []pageRow {
	tb.t.Helper()
	rows := evalJS[[]pageRow](tb, rowsJS)
	for i := range rows {
		rows[i].Score = nonDigits.ReplaceAllString(rows[i].Score, "")
	}
	return rows
}

func (tb *tab) checkRows(want []pageRow) {
	tb.t.Helper()
	got := tb.rows()
	for i := range got {
		got[i].Me = false
	}
	if !slices.Equal(got, want) {
		tb.t.Fatalf("rows on the page\n got %+v\nwant %+v", got, want)
	}
}

func (tb *tab) describe() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({url: location.href,
		view: document.getElementById('rows')?.dataset.view, status: document.getElementById('status')?.textContent,
		notice: document.getElementById('notice')?.textContent, rows: document.querySelectorAll('#rows > li.row').length})`))
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(s)
}

func evalJS[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
