package http_test

import (
	"strings"
	"testing"
	"time"
)

// TestCohorts: a board of cohorts of two, read for a member's cohort every way the API reads
// — page, member, around, lookup, rank, the live page, a closed week's results — and its
// cohort by id; history is ranked on the whole board only, and a board without cohorts says so.
func TestCohorts(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/lg", map[string]any{"windows": []string{"week"}, "cohorts": map[string]any{"window": "week", "size": 2},
		"rewards": []map[string]any{{"window": "week", "ranks": []int{1, 1}, "reward": map[string]any{"promote": true}}}}).must(t, 201)
	// ann and ben fill cohort 1, cy and dee cohort 2, in that order of arrival.
	for _, ev := range []string{`{"member": "ann", "value": 5}`, `{"member": "ben", "value": 9}`, `{"member": "cy", "value": 1}`, `{"member": "dee", "value": 7}`} {
		e.do("POST", "/v1/boards/lg/events", ev).must(t, 200)
	}
	c := e.do("GET", "/v1/boards/lg/members/cy/cohort", nil).must(t, 200)
	if c.get("id") != "all/2" || c.get("members", 0) != "cy" || c.get("members", 1) != "dee" || c.get("period") != "2026-11-16" {
		t.Fatalf("cy's cohort: %s", c.raw)
	}
	p := e.do("GET", "/v1/boards/lg/entries?cohort=cy", nil).must(t, 200)
	if p.get("total") != 2.0 || p.get("entries", 0, "member") != "dee" || p.get("entries", 1, "member") != "cy" || p.get("entries", 1, "rank") != 2.0 {
		t.Fatalf("cy's cohort's page: %s", p.raw)
	}
	if m := e.do("GET", "/v1/boards/lg/members/ann?cohort=ann", nil).must(t, 200); m.get("entry", "rank") != 2.0 || m.get("total") != 2.0 {
		t.Fatalf("ann in her cohort: %s", m.raw)
	}
	e.do("GET", "/v1/boards/lg/members/cy?cohort=ann", nil).isError(t, 404, "not_found", "member") // not in ann's cohort
	if a := e.do("GET", "/v1/boards/lg/members/dee/around?cohort=dee&radius=1", nil).must(t, 200); len(a.get("entries").([]any)) != 2 {
		t.Fatalf("around dee in her cohort: %s", a.raw)
	}
	if l := e.do("POST", "/v1/boards/lg/lookup?cohort=ben", `{"members": ["ann", "cy"]}`).must(t, 200); l.get("entries", 0, "member") != "ann" || len(l.get("entries").([]any)) != 1 {
		t.Fatalf("lookup in ben's cohort: %s", l.raw)
	}
	if r := e.do("GET", "/v1/boards/lg/rank?cohort=ann&score=6", nil).must(t, 200); r.get("rank") != 2.0 || r.get("total") != 2.0 {
		t.Fatalf("rank of 6 in ann's cohort: %s", r.raw)
	}
	// History in a cohort: ann's one write left her first of a cohort of one.
	if h := e.do("GET", "/v1/boards/lg/members/ann/history?cohort=ann", nil).must(t, 200); len(h.get("points").([]any)) != 1 ||
		h.get("points", 0, "rank") != 1.0 || h.get("points", 0, "score") != 5.0 {
		t.Fatalf("ann's history in her cohort: %s", h.raw)
	}
	e.do("GET", "/v1/boards/lg/members/ann/history?cohort=ben", nil).isError(t, 400, "invalid_argument", "cohort")
	e.do("GET", "/v1/boards/lg/entries?cohort=zed", nil).isError(t, 404, "not_found", "cohort")
	e.do("PUT", "/v1/boards/plain", map[string]any{}).must(t, 201)
	e.do("GET", "/v1/boards/plain/entries?cohort=ann", nil).isError(t, 400, "invalid_argument", "cohort")

	// The live page of a cohort follows its changes.
	ch, _ := e.openStream("/v1/boards/lg/stream?cohort=cy")
	if first := next(t, ch, 5*time.Second); !strings.Contains(first.data, `"dee"`) || strings.Contains(first.data, `"ben"`) {
		t.Fatalf("cy's cohort's live page: %s", first.data)
	}
	e.do("POST", "/v1/boards/lg/events", `{"member": "cy", "value": 10}`).must(t, 200)
	if ev := next(t, ch, time.Second); !strings.Contains(ev.data, `"rank":1,"member":"cy","score":11`) {
		t.Fatalf("after cy's event: %s", ev.data)
	}
	// cy's history in her cohort, a point a write: first of one at her first (dee came after),
	// first of two with 11 at her second. Dee's arrival, not cy's write, left no point of cy's.
	if h := e.do("GET", "/v1/boards/lg/members/cy/history?cohort=cy", nil).must(t, 200); len(h.get("points").([]any)) != 2 ||
		h.get("points", 0, "rank") != 1.0 || h.get("points", 0, "score") != 11.0 || h.get("points", 1, "rank") != 1.0 {
		t.Fatalf("cy's history in her cohort: %s", h.raw)
	}

	// A week later (and a day of late_limit) the week is closed: each cohort's first is rewarded.
	e.clock.Advance(8 * 24 * time.Hour)
	res := e.do("GET", "/v1/boards/lg/periods/2026-11-16/results", nil).must(t, 200)
	if res.get("rewarded") != 2.0 || res.get("results", 0, "member") != "ben" || res.get("results", 0, "cohort") != "all/1" ||
		res.get("results", 1, "member") != "cy" || res.get("results", 1, "cohort") != "all/2" || res.get("results", 1, "rank") != 1.0 {
		t.Fatalf("results by cohort: %s", res.raw)
	}
	if old := e.do("GET", "/v1/boards/lg/entries?cohort=cy&period=2026-11-16", nil).must(t, 200); old.get("period", "closed") != true || old.get("total") != 2.0 {
		t.Fatalf("cy's cohort in the closed week: %s", old.raw)
	}
	// A board deleted takes its cohorts with it: made again, it starts afresh.
	e.do("DELETE", "/v1/boards/lg", nil).must(t, 204)
	e.do("PUT", "/v1/boards/lg", map[string]any{"windows": []string{"week"}, "cohorts": map[string]any{"window": "week", "size": 2}}).must(t, 201)
	e.do("GET", "/v1/boards/lg/members/cy/cohort?period=2026-11-16", nil).isError(t, 404, "not_found", "cohort")
}

// TestLeague: two tiers, cohorts of two; the first of the day moves up, and its next day's
// cohort is of its new tier; the day's results reward each tier by its own rules.
func TestLeague(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/lg", map[string]any{"windows": []string{"day"}, "late_limit": "1h",
		"cohorts": map[string]any{"window": "day", "size": 2, "tiers": []string{"bronze", "silver"}, "promote": 1, "demote": 1},
		"rewards": []map[string]any{{"window": "day", "tier": "gold", "ranks": []int{1, 1}, "reward": map[string]any{}}}}).isError(t, 400, "invalid_argument", "rewards[0].tier")
	e.do("PUT", "/v1/boards/lg", map[string]any{"windows": []string{"day"}, "late_limit": "1h",
		"cohorts": map[string]any{"window": "day", "size": 2, "tiers": []string{"bronze", "silver"}, "promote": 1, "demote": 1},
		"rewards": []map[string]any{
			{"window": "day", "tier": "silver", "ranks": []int{1, 1}, "reward": map[string]any{"chest": "silver"}},
			{"window": "day", "tier": "bronze", "ranks": []int{1, 1}, "reward": map[string]any{"chest": "bronze"}}}}).must(t, 201)
	e.do("POST", "/v1/boards/lg/events", `{"events": [{"member": "ann", "value": 5}, {"member": "ben", "value": 3}]}`).must(t, 200)
	if c := e.do("GET", "/v1/boards/lg/members/ann/cohort", nil).must(t, 200); c.get("id") != "bronze/1" {
		t.Fatalf("ann's first cohort: %s", c.raw)
	}
	e.clock.Advance(24 * time.Hour) // Monday 10:00: Sunday has closed
	tr := e.do("GET", "/v1/boards/lg/members/ann/tier", nil).must(t, 200)
	if tr.get("tier") != "silver" || tr.get("moves", 0, "period") != "2026-11-22" || tr.get("moves", 0, "from") != "bronze" ||
		tr.get("moves", 0, "to") != "silver" || tr.get("moves", 0, "rank") != 1.0 || tr.get("moves", 0, "of") != 2.0 {
		t.Fatalf("ann's tier: %s", tr.raw)
	}
	if tr := e.do("GET", "/v1/boards/lg/members/ben/tier", nil).must(t, 200); tr.get("tier") != "bronze" {
		t.Fatalf("ben's tier: %s", tr.raw)
	}
	e.do("POST", "/v1/boards/lg/events", `{"member": "ann", "value": 1}`).must(t, 200)
	if c := e.do("GET", "/v1/boards/lg/members/ann/cohort", nil).must(t, 200); c.get("id") != "silver/1" {
		t.Fatalf("ann's cohort the next day: %s", c.raw)
	}
	res := e.do("GET", "/v1/boards/lg/periods/2026-11-22/results", nil).must(t, 200)
	if res.get("rewarded") != 1.0 || res.get("results", 0, "member") != "ann" || res.get("results", 0, "reward", "chest") != "bronze" {
		t.Fatalf("Sunday's results: %s", res.raw)
	}
	e.do("PUT", "/v1/boards/plain", map[string]any{}).must(t, 201)
	e.do("GET", "/v1/boards/plain/members/ann/tier", nil).isError(t, 400, "invalid_argument", "")
}

// TestCohortsRemovedStayReadable: "cohorts": {} stops placing members, and the placements
// made stay readable (docs/api.md): a member's cohort and a read within it.
func TestCohortsRemovedStayReadable(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/cb", map[string]any{"windows": []string{"day"}, "cohorts": map[string]any{"window": "day", "size": 2}}).must(t, 201)
	e.do("POST", "/v1/boards/cb/events", `{"events": [{"member": "ann", "value": 5}, {"member": "ben", "value": 3}]}`).must(t, 200)
	today := t0.Format(time.DateOnly)
	e.do("GET", "/v1/boards/cb/members/ann/cohort?period="+today, nil).must(t, 200)
	e.do("PUT", "/v1/boards/cb", map[string]any{"cohorts": map[string]any{}}).must(t, 200)
	if c := e.do("GET", "/v1/boards/cb/members/ann/cohort?period="+today, nil).must(t, 200); c.get("id") != "all/1" {
		t.Fatalf("ann's cohort once cohorts were removed: %s", c.raw)
	}
	if p := e.do("GET", "/v1/boards/cb/entries?cohort=ann&period="+today, nil).must(t, 200); p.get("total") != 2.0 || p.get("entries", 1, "member") != "ben" {
		t.Fatalf("ann's cohort's entries once cohorts were removed: %s", p.raw)
	}
	e.do("POST", "/v1/boards/cb/events", map[string]any{"member": "cy", "value": 1}).must(t, 200)
	e.do("GET", "/v1/boards/cb/members/cy/cohort?period="+today, nil).isError(t, 404, "not_found", "cohort")
}
