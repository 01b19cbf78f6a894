package http_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/laureltest"
)

// TestSubscore: a board with a subscore shows it in its configuration and refuses to change
// it; its events carry one (decoded as strictly as value; none is 0), its entries rank by
// score then subscore, and every answer that shows an entry or a standing shows
// "subscore": n — pages, member, around, lookup, a write's entries and previous, history
// points, a closed period's results, the live page and the member's stream. A board without
// a subscore shows none anywhere and refuses an event's (400, field subscore) and /rank's. The
// Go client reads the subscores back. On the embedded store, its webhooks included.
func TestSubscore(t *testing.T) { subscoreStory(t, start(t, options{})) }

// TestSubscoreScaleOut tells the same story on a node of the scale-out store (without its
// webhooks, which this server does not run there).
func TestSubscoreScaleOut(t *testing.T) {
	clock := laureltest.NewClock(t0.Format(time.RFC3339))
	store := laureltest.NewScaleOutStore(t).Open(t, clock.Now)
	contests := competition.New(store, store, clock.Now)
	subscoreStory(t, start(t, options{clock: clock, service: contests,
		cfg: lhttp.Config{Contests: contests, Watcher: store, MemberWatcher: store}}))
}

func subscoreStory(t *testing.T, e *env) {
	// A race: the lower time wins, and of equal times the fewer penalties.
	b := e.do("PUT", "/v1/boards/race", map[string]any{"order": "asc", "subscore": "asc", "mode": "best", "windows": []string{"all", "day"},
		"late_limit": "1h", "rewards": []map[string]any{{"window": "day", "ranks": []int{1, 10}, "reward": map[string]any{"medal": true}}}}).must(t, 201)
	if b.get("subscore") != "asc" {
		t.Fatalf("the board does not show its subscore: %s", b.raw)
	}
	if b := e.do("GET", "/v1/boards/race", nil).must(t, 200); b.get("subscore") != "asc" {
		t.Fatalf("GET shows no subscore: %s", b.raw)
	}
	if e.hooks != nil {
		e.do("PUT", "/v1/hooks/game", map[string]any{"url": "http://127.0.0.1:1/h", "secret": "0123456789abcdef", "boards": []string{"race"}}).must(t, 201)
	}
	e.do("PUT", "/v1/boards/race", map[string]any{"subscore": "desc"}).isError(t, 409, "conflict", "subscore")
	e.do("PUT", "/v1/boards/race", map[string]any{"subscore": ""}).isError(t, 409, "conflict", "subscore")
	e.do("PUT", "/v1/boards/race", map[string]any{"title": "The race"}).must(t, 200) // left out: kept
	e.do("PUT", "/v1/boards/bad", map[string]any{"subscore": "up"}).isError(t, 400, "invalid_argument", "subscore")

	w := e.do("POST", "/v1/boards/race/events", `{"member": "ada", "value": 61000, "subscore": 2}`).must(t, 200)
	if got := w.get("results", 0, "entries", "all", "subscore"); got != 2.0 {
		t.Errorf("the write's entry shows subscore %v, want 2: %s", got, w.raw)
	}
	e.do("POST", "/v1/boards/race/events", `{"events": [{"member": "bob", "value": 61000, "subscore": 1}, {"member": "cy", "value": 62000}]}`).must(t, 200)
	w = e.do("POST", "/v1/boards/race/events", `{"member": "ada", "value": 61000, "subscore": 0}`).must(t, 200)
	if got, prev := w.get("results", 0, "entries", "all", "subscore"), w.get("results", 0, "entries", "all", "previous", "subscore"); got != 0.0 || prev != 2.0 {
		t.Errorf("ada's better pair: subscore %v (want 0), previous %v (want 2): %s", got, prev, w.raw)
	}
	if got := w.get("results", 0, "entries", "all", "rank"); got != 1.0 {
		t.Errorf("ada's (61000, 0) ranks %v, want 1 (before bob's (61000, 1)): %s", got, w.raw)
	}

	page := e.do("GET", "/v1/boards/race/entries", nil).must(t, 200)
	var p struct {
		Entries []struct {
			Member string `json:"member"`
			Score  int64  `json:"score"`
			Sub    *int64 `json:"subscore"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(page.raw, &p); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range p.Entries {
		if en.Sub == nil {
			t.Fatalf("an entry without a subscore on a board with one: %s", page.raw)
		}
		got = append(got, en.Member+" "+strconv.FormatInt(en.Score, 10)+"/"+strconv.FormatInt(*en.Sub, 10))
	}
	if want := "ada 61000/0, bob 61000/1, cy 62000/0"; strings.Join(got, ", ") != want {
		t.Errorf("the page ranks %s, want %s", strings.Join(got, ", "), want)
	}
	if !strings.Contains(string(page.raw), `"score":61000,"subscore":1,"reached_at"`) {
		t.Errorf("the subscore does not follow the score: %s", page.raw)
	}
	for _, path := range []string{"/v1/boards/race/members/bob?window=day", "/v1/boards/race/members/bob/around"} {
		if r := e.do("GET", path, nil).must(t, 200); !strings.Contains(string(r.raw), `"member":"bob","score":61000,"subscore":1`) {
			t.Errorf("%s lacks bob's subscore: %s", path, r.raw)
		}
	}
	if r := e.do("POST", "/v1/boards/race/lookup", map[string]any{"members": []string{"cy", "bob"}}).must(t, 200); !strings.Contains(string(r.raw), `"member":"bob","score":61000,"subscore":1`) ||
		!strings.Contains(string(r.raw), `"member":"cy","score":62000,"subscore":0`) {
		t.Errorf("the lookup lacks the subscores: %s", r.raw)
	}
	r := e.do("GET", "/v1/boards/race/rank?score=61000&subscore=1", nil).must(t, 200)
	if r.get("rank") != 3.0 || r.get("total") != 3.0 {
		t.Errorf("rank of (61000, 1): %s, want rank 3 (after ada and bob) of 3", r.raw)
	}
	if r := e.do("GET", "/v1/boards/race/rank?score=61000", nil).must(t, 200); r.get("rank") != 2.0 {
		t.Errorf("rank of (61000, 0 by default): %s, want 2 (after ada's same pair)", r.raw)
	}
	e.do("GET", "/v1/boards/race/rank?score=61000&subscore=x", nil).isError(t, 400, "invalid_argument", "subscore")

	// The Go client reads what the server wrote: the subscores, and the pages' HasSub.
	c := lhttp.NewClient(e.url)
	ctx := context.Background()
	q := laurel.Query{Board: "race"}
	if p, err := c.Page(ctx, q, 0, 10, laurel.ScoreRange{}); err != nil || !p.HasSub || len(p.Entries) != 3 || p.Entries[1].Member != "bob" || p.Entries[1].Sub != 1 {
		t.Errorf("the client's page: %+v, %v", p, err)
	}
	if me, err := c.Member(ctx, q, "bob"); err != nil || !me.HasSub || me.Entry.Sub != 1 {
		t.Errorf("the client's member entry: %+v, %v", me, err)
	}
	if rank, total, err := c.RankOf(ctx, q, 61000, 1); err != nil || rank != 3 || total != 3 {
		t.Errorf("the client's rank of (61000, 1): %d of %d, %v", rank, total, err)
	}
	if res, err := c.Submit(ctx, []laurel.Event{{Board: "race", Member: "eve", Value: 63000, Sub: -2, HasSub: true}}, laurel.SubmitOptions{}); err != nil || res[0].Entries["all"] != (laurel.Standing{Rank: 4, Score: 63000, Sub: -2}) {
		t.Errorf("the client's submit: %+v, %v", res, err)
	}
	if pts, err := c.History(ctx, "race", "all", "ada", 10); err != nil || len(pts) != 2 || pts[0].Sub != 0 || pts[1].Sub != 2 {
		t.Errorf("the client's history: %+v, %v", pts, err)
	}

	h := e.do("GET", "/v1/boards/race/members/ada/history?window=all", nil).must(t, 200)
	if h.get("points", 0, "subscore") != 0.0 || h.get("points", 1, "subscore") != 2.0 {
		t.Errorf("ada's points do not carry their subscores (0, then 2): %s", h.raw)
	}

	ch, _ := e.openStream("/v1/boards/race/stream?window=day")
	if ev := next(t, ch, 5*time.Second); !strings.Contains(ev.data, `"member":"bob","score":61000,"subscore":1`) {
		t.Errorf("the live page lacks bob's subscore: %s", ev.data)
	}
	ms, _ := e.openStream("/v1/boards/race/members/bob/stream?window=day")
	if ev := next(t, ms, 5*time.Second); !strings.Contains(ev.data, `"rank":2,"score":61000,"subscore":1`) {
		t.Errorf("bob's stream lacks his subscore: %s", ev.data)
	}
	e.do("POST", "/v1/boards/race/events", `{"member": "bob", "value": 61000, "subscore": -1}`).must(t, 200)
	if ev := next(t, ms, 5*time.Second); !strings.Contains(ev.data, `"rank":1,"score":61000,"subscore":-1,"previous":{"rank":2,"score":61000,"subscore":1}`) ||
		!strings.Contains(ev.data, `"passed":{"rank":2,"member":"ada","score":61000,"subscore":0`) {
		t.Errorf("bob's stream after his better pair: %s", ev.data)
	}

	// Sunday closes: its results keep each entry's subscore.
	e.clock.Advance(24 * time.Hour)
	res := e.do("GET", "/v1/boards/race/periods/2026-11-22/results?window=day", nil).must(t, 200)
	if !strings.Contains(string(res.raw), `"rank":1,"member":"bob","score":61000,"subscore":-1`) || !strings.Contains(string(res.raw), `"member":"cy","score":62000,"subscore":0`) ||
		!strings.Contains(string(res.raw), `"member":"eve","score":63000,"subscore":-2`) {
		t.Errorf("the closed period's results lack the subscores: %s", res.raw)
	}
	if e.hooks != nil {
		if _, err := e.hooks.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := e.do("GET", "/v1/hooks/game/deliveries", nil).must(t, 200); d.get("deliveries", 0, "id") == nil {
			t.Errorf("no delivery of the closed day: %s", d.raw)
		} else if body := e.do("GET", "/v1/hooks/game/deliveries/"+d.get("deliveries", 0, "id").(string), nil).must(t, 200); !strings.Contains(string(body.raw), `"member":"bob","score":61000,"subscore":-1`) {
			t.Errorf("the webhook's body lacks the subscores: %s", body.raw)
		}
	}
	if r := e.do("GET", "/v1/boards/race/entries?period=2026-11-22&window=day", nil).must(t, 200); !strings.Contains(string(r.raw), `"member":"ada","score":61000,"subscore":0`) {
		t.Errorf("the closed period's page lacks ada's subscore: %s", r.raw)
	}

	// Bad subscores, and a board without one.
	e.do("POST", "/v1/boards/race/events", `{"member": "dee", "value": 1, "subscore": 1.5}`).isError(t, 400, "invalid_argument", "subscore")
	e.do("POST", "/v1/boards/race/events", `{"events": [{"member": "dee", "value": 1}, {"member": "dee", "value": 1, "subscore": "1"}]}`).isError(t, 400, "invalid_argument", "events[1].subscore")
	e.do("POST", "/v1/boards/race/events", `{"member": "dee", "value": 1, "subscore": 9223372036854775808}`).isError(t, 400, "invalid_argument", "subscore")
	e.do("PUT", "/v1/boards/plain", map[string]any{"windows": []string{"all"}}).must(t, 201)
	if b := e.do("GET", "/v1/boards/plain", nil).must(t, 200); b.get("subscore") != nil {
		t.Errorf("a board without a subscore shows one: %s", b.raw)
	}
	e.do("PUT", "/v1/boards/plain", map[string]any{"subscore": "asc"}).isError(t, 409, "conflict", "subscore")
	e.do("POST", "/v1/boards/plain/events", `{"member": "ada", "value": 5, "subscore": 1}`).isError(t, 400, "invalid_argument", "subscore")
	e.do("POST", "/v1/events", `{"events": [{"board": "plain", "member": "ada", "value": 5}, {"board": "plain", "member": "bob", "value": 5, "subscore": 0}]}`).
		isError(t, 400, "invalid_argument", "events[1].subscore")
	w = e.do("POST", "/v1/boards/plain/events", `{"member": "ada", "value": 5, "subscore": null}`).must(t, 200)
	w = e.do("POST", "/v1/boards/plain/events", `{"member": "ada", "value": 6}`).must(t, 200)
	for _, r := range []response{w, e.do("GET", "/v1/boards/plain/entries", nil).must(t, 200), e.do("GET", "/v1/boards/plain/members/ada", nil).must(t, 200),
		e.do("GET", "/v1/boards/plain/members/ada/history", nil).must(t, 200)} {
		if strings.Contains(string(r.raw), "subscore") {
			t.Errorf("a board without a subscore shows one: %s", r.raw)
		}
	}
	e.do("GET", "/v1/boards/plain/rank?score=5&subscore=1", nil).isError(t, 400, "invalid_argument", "subscore")
	e.do("GET", "/v1/boards/plain/rank?score=5&subscore=0", nil).must(t, 200)

	// A board deleted and made again with a subscore: a write's answer shows it at once.
	e.do("DELETE", "/v1/boards/plain", nil).must(t, 204)
	e.do("PUT", "/v1/boards/plain", map[string]any{"windows": []string{"all"}, "subscore": "desc"}).must(t, 201)
	if w := e.do("POST", "/v1/boards/plain/events", `{"member": "ada", "value": 5, "subscore": 4}`).must(t, 200); w.get("results", 0, "entries", "all", "subscore") != 4.0 {
		t.Errorf("the board made again with a subscore: %s", w.raw)
	}
}
