package http_test

import (
	"github.com/laurel/laurel/laureltest"
	"net/http"
	"testing"
	"time"
)

// seed creates the board "solvers" (all, week, last7d; late_limit 7d) with, at t0:
//
//	all:  dave 9 (first there), alice 9, bob 7, carol 3, erin 1
//	week: alice 9, bob 7, carol 3, erin 1 (dave scored the week before)
func seed(t *testing.T, e *env) {
	t.Helper()
	e.do("PUT", "/v1/boards/solvers", `{"windows": ["all", "week", "last7d"], "late_limit": "7d"}`).must(t, 201)
	e.do("POST", "/v1/boards/solvers/events", `{"events": [
		{"member": "alice", "value": 5, "ts": "2026-11-22T09:00:00Z", "name": "Alice"},
		{"member": "alice", "value": 4, "ts": "2026-11-20T09:00:00Z", "id": "a-1"},
		{"member": "bob", "value": 7, "ts": "2026-11-21T08:00:00Z"},
		{"member": "carol", "value": 3, "ts": "2026-11-16T01:00:00Z"},
		{"member": "dave", "value": 9, "ts": "2026-11-15T12:00:00Z"},
		{"member": "erin", "value": 1, "ts": "2026-11-22T09:30:00Z"}]}`).must(t, 200)
}

// members returns the members of a page's entries, in order.
func members(r response) []string {
	var out []string
	entries, _ := r.get("entries").([]any)
	for _, en := range entries {
		out = append(out, en.(map[string]any)["member"].(string))
	}
	return out
}

func sameMembers(t *testing.T, r response, want ...string) {
	t.Helper()
	got := members(r)
	if len(got) != len(want) {
		t.Fatalf("members %v, want %v: %s", got, want, r.raw)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("members %v, want %v: %s", got, want, r.raw)
		}
	}
}

func TestReads(t *testing.T) {
	e := start(t, options{})
	seed(t, e)

	// A page of a calendar window, exactly.
	e.do("GET", "/v1/boards/solvers/entries?window=week&limit=2", nil).must(t, 200).is(t, `
	{"board": "solvers", "window": "week",
	 "period": {"id": "2026-11-16", "start": "2026-11-16T00:00:00.000Z", "end": "2026-11-23T00:00:00.000Z", "closed": false},
	 "total": 4, "entries": [
	  {"rank": 1, "member": "alice", "score": 9, "reached_at": "2026-11-22T09:00:00.000Z", "name": "Alice"},
	  {"rank": 2, "member": "bob", "score": 7, "reached_at": "2026-11-21T08:00:00.000Z"}]}`)
	// The default window is the first: all, with ties broken by who got there first.
	r := e.do("GET", "/v1/boards/solvers/entries", nil).must(t, 200)
	sameMembers(t, r, "dave", "alice", "bob", "carol", "erin")
	if p := r.get("period"); len(p.(map[string]any)) != 1 || r.get("period", "id") != "all" {
		t.Fatalf("all period: %s", r.raw)
	}
	// A rolling window's span has no id.
	r = e.do("GET", "/v1/boards/solvers/entries?window=last7d", nil).must(t, 200)
	sameMembers(t, r, "alice", "bob", "carol", "erin")
	if p := r.get("period").(map[string]any); len(p) != 2 || p["start"] != "2026-11-16T00:00:00.000Z" || p["end"] != "2026-11-23T00:00:00.000Z" {
		t.Fatalf("rolling period: %s", r.raw)
	}
	// Tomorrow, carol's Monday has left last7d.
	r = e.do("GET", "/v1/boards/solvers/entries?window=last7d&at=2026-11-23T10:00:00Z", nil).must(t, 200)
	sameMembers(t, r, "alice", "bob", "erin")

	// offset, limit, score range.
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries?offset=1&limit=2", nil).must(t, 200), "alice", "bob")
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries?min_score=2&max_score=8", nil).must(t, 200), "bob", "carol")
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries?min_score=2&offset=1&limit=1", nil).must(t, 200), "alice")
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries?offset=50", nil).must(t, 200))
	if r := e.do("GET", "/v1/boards/solvers/entries?offset=50", nil); r.get("entries") == nil {
		t.Fatalf("entries must be [] when empty: %s", r.raw)
	}

	// A period by id, or by an instant in it.
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries?window=week&period=2026-11-09", nil).must(t, 200), "dave")
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries?window=week&at=2026-11-10T00:00:00Z", nil).must(t, 200), "dave")
	// A period with no data reads as empty.
	r = e.do("GET", "/v1/boards/solvers/entries?window=week&period=2026-11-30", nil).must(t, 200)
	if r.get("total") != 0.0 {
		t.Fatalf("empty period: %s", r.raw)
	}

	// Bad parameters.
	e.do("GET", "/v1/boards/solvers/entries?window=fortnight", nil).isError(t, 400, "invalid_argument", "window")
	e.do("GET", "/v1/boards/solvers/entries?window=day", nil).isError(t, 400, "invalid_argument", "window")
	e.do("GET", "/v1/boards/solvers/entries?window=week&at=2026-11-10T00:00:00Z&period=2026-11-09", nil).isError(t, 400, "invalid_argument", "period")
	e.do("GET", "/v1/boards/solvers/entries?window=week&period=last-week", nil).isError(t, 400, "invalid_argument", "period")
	e.do("GET", "/v1/boards/solvers/entries?at=noon", nil).isError(t, 400, "invalid_argument", "at")
	e.do("GET", "/v1/boards/solvers/entries?limit=0", nil).isError(t, 400, "invalid_argument", "limit")
	e.do("GET", "/v1/boards/solvers/entries?limit=1001", nil).isError(t, 400, "invalid_argument", "limit")
	e.do("GET", "/v1/boards/solvers/entries?offset=-1", nil).isError(t, 400, "invalid_argument", "offset")
	e.do("GET", "/v1/boards/solvers/entries?min_score=1.5", nil).isError(t, 400, "invalid_argument", "min_score")
	e.do("GET", "/v1/boards/solvers/entries?metadata=maybe", nil).isError(t, 400, "invalid_argument", "metadata")
	e.do("GET", "/v1/boards/nope/entries", nil).isError(t, 404, "not_found", "board")

	// One member.
	e.do("GET", "/v1/boards/solvers/members/bob?window=week", nil).must(t, 200).is(t, `
	{"board": "solvers", "window": "week",
	 "period": {"id": "2026-11-16", "start": "2026-11-16T00:00:00.000Z", "end": "2026-11-23T00:00:00.000Z", "closed": false},
	 "total": 4, "entry": {"rank": 2, "member": "bob", "score": 7, "reached_at": "2026-11-21T08:00:00.000Z", "percentile": 66.66}}`)
	e.do("GET", "/v1/boards/solvers/members/dave?window=week", nil).isError(t, 404, "not_found", "member")
	e.do("GET", "/v1/boards/solvers/members/nobody", nil).isError(t, 404, "not_found", "member")

	// Around.
	r = e.do("GET", "/v1/boards/solvers/members/carol/around?radius=1", nil).must(t, 200)
	sameMembers(t, r, "bob", "carol", "erin")
	if r.get("total") != 5.0 || r.get("entries", 0, "rank") != 3.0 {
		t.Fatalf("around: %s", r.raw)
	}
	sameMembers(t, e.do("GET", "/v1/boards/solvers/members/erin/around?radius=1", nil).must(t, 200), "bob", "carol", "erin")
	sameMembers(t, e.do("GET", "/v1/boards/solvers/members/dave/around?radius=1", nil).must(t, 200), "dave", "alice", "bob")
	sameMembers(t, e.do("GET", "/v1/boards/solvers/members/bob/around", nil).must(t, 200), "dave", "alice", "bob", "carol", "erin")
	e.do("GET", "/v1/boards/solvers/members/dave/around?window=week", nil).isError(t, 404, "not_found", "member")
	e.do("GET", "/v1/boards/solvers/members/bob/around?radius=101", nil).isError(t, 400, "invalid_argument", "radius")

	// Lookup.
	r = e.do("POST", "/v1/boards/solvers/lookup", `{"members": ["erin", "alice", "zed"]}`).must(t, 200)
	sameMembers(t, r, "alice", "erin")
	if r.get("entries", 1, "rank") != 5.0 || r.get("total") != 5.0 {
		t.Fatalf("lookup: %s", r.raw)
	}
	sameMembers(t, e.do("POST", "/v1/boards/solvers/lookup", `{"members": ["dave", "bob"], "window": "week", "period": "2026-11-09"}`).must(t, 200), "dave")
	sameMembers(t, e.do("POST", "/v1/boards/solvers/lookup", `{"members": ["dave", "bob"], "window": "week", "at": "2026-11-22T00:00:00Z"}`).must(t, 200), "bob")
	e.do("POST", "/v1/boards/solvers/lookup", `{"members": ["a"], "window": "week", "at": "2026-11-22T00:00:00Z", "period": "2026-11-16"}`).isError(t, 400, "invalid_argument", "period")
	// In the query or the body, not both (the body's was read, the query's not).
	e.do("POST", "/v1/boards/solvers/lookup?window=week", `{"members": ["a"], "window": "all"}`).isError(t, 400, "invalid_argument", "window")
	sameMembers(t, e.do("POST", "/v1/boards/solvers/lookup?window=week&period=2026-11-09", `{"members": ["dave", "bob"]}`).must(t, 200), "dave")
	e.do("POST", "/v1/boards/solvers/lookup", `{"members": ["a"], "friends": true}`).isError(t, 400, "invalid_argument", "friends")
	e.do("POST", "/v1/boards/solvers/lookup", `{"members": "a"}`).isError(t, 400, "invalid_argument", "members")
	e.do("POST", "/v1/boards/solvers/lookup", `{"members": ["a/b"]}`).isError(t, 400, "invalid_argument", "members[0]")

	// Rank of a score.
	e.do("GET", "/v1/boards/solvers/rank?score=8", nil).must(t, 200).is(t, `{"rank": 3, "total": 5}`)
	e.do("GET", "/v1/boards/solvers/rank?score=9", nil).must(t, 200).is(t, `{"rank": 3, "total": 5}`)
	e.do("GET", "/v1/boards/solvers/rank?score=100&window=week", nil).must(t, 200).is(t, `{"rank": 1, "total": 4}`)
	e.do("GET", "/v1/boards/solvers/rank", nil).isError(t, 400, "invalid_argument", "score")
	e.do("GET", "/v1/boards/solvers/rank?score=x", nil).isError(t, 400, "invalid_argument", "score")

	// Periods, newest first.
	r = e.do("GET", "/v1/boards/solvers/periods?window=week", nil).must(t, 200)
	if first, _ := r.get("periods", 0).(map[string]any); first == nil {
		t.Fatalf("periods: %s", r.raw)
	}
	want := map[string]any{"id": "2026-11-16", "start": "2026-11-16T00:00:00.000Z", "end": "2026-11-23T00:00:00.000Z", "closed": false, "total": 4.0}
	for k, v := range want {
		if r.get("periods", 0, k) != v {
			t.Fatalf("periods[0].%s = %v, want %v: %s", k, r.get("periods", 0, k), v, r.raw)
		}
	}
	if r.get("periods", 1, "id") != "2026-11-09" || r.get("periods", 1, "total") != 1.0 {
		t.Fatalf("periods: %s", r.raw)
	}
	e.do("GET", "/v1/boards/solvers/periods?window=last7d", nil).isError(t, 400, "invalid_argument", "window")

	// Metadata on request.
	e.do("PUT", "/v1/members/alice", `{"metadata": {"country": "SE"}}`).must(t, 200)
	r = e.do("GET", "/v1/boards/solvers/entries?window=week&limit=1&metadata=true", nil).must(t, 200)
	if r.get("entries", 0, "metadata", "country") != "SE" || r.get("entries", 0, "name") != "Alice" {
		t.Fatalf("metadata: %s", r.raw)
	}
	r = e.do("GET", "/v1/boards/solvers/entries?window=week&limit=1", nil).must(t, 200)
	if r.get("entries", 0, "metadata") != nil {
		t.Fatalf("metadata not asked for: %s", r.raw)
	}
}

func TestClosedAndDroppedPeriods(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/daily", `{"windows": ["day"], "late_limit": "1h", "keep": 1}`).must(t, 201)
	e.do("POST", "/v1/boards/daily/events", `{"member": "a", "value": 3}`).must(t, 200)
	e.clock.Advance(16 * time.Hour) // the 22nd closed at the 23rd 01:00
	e.do("GET", "/v1/boards/daily/entries?period=2026-11-22", nil).must(t, 200).is(t, `
	{"board": "daily", "window": "day",
	 "period": {"id": "2026-11-22", "start": "2026-11-22T00:00:00.000Z", "end": "2026-11-23T00:00:00.000Z", "closed": true},
	 "total": 1, "entries": [{"rank": 1, "member": "a", "score": 3, "reached_at": "2026-11-22T10:00:00.000Z"}]}`)
	e.clock.Advance(3 * 24 * time.Hour) // two more closed: more than keep
	e.do("GET", "/v1/boards/daily/entries?period=2026-11-22", nil).isError(t, 404, "not_found", "period")
	e.do("GET", "/v1/boards/daily/members/a?period=2026-11-22", nil).isError(t, 404, "not_found", "period")
	// Read at an instant, the field is the one the request gave.
	e.do("GET", "/v1/boards/daily/members/a?at=2026-11-22T12:00:00Z", nil).isError(t, 404, "not_found", "at")
}

func TestMembers(t *testing.T) {
	e := start(t, options{})
	seed(t, e)

	e.do("PUT", "/v1/members/alice", `{"name": "Alice A.", "metadata": {"country": "SE"}}`).must(t, 200).is(t,
		`{"member": "alice", "name": "Alice A.", "metadata": {"country": "SE"}, "hidden": false}`)
	e.do("GET", "/v1/members/alice", nil).must(t, 200).is(t,
		`{"member": "alice", "name": "Alice A.", "metadata": {"country": "SE"}, "hidden": false}`)
	e.do("PUT", "/v1/members/alice", `{"name": "Alice"}`).must(t, 200).is(t,
		`{"member": "alice", "name": "Alice", "metadata": {"country": "SE"}, "hidden": false}`)
	e.do("GET", "/v1/members/nobody", nil).isError(t, 404, "not_found", "member")
	e.do("PUT", "/v1/members/alice", `{"nick": "A"}`).isError(t, 400, "invalid_argument", "nick")
	e.do("PUT", "/v1/members/alice", `{"metadata": [1]}`).isError(t, 400, "invalid_argument", "metadata")
	e.do("PUT", "/v1/members/alice", `{"name": 5}`).isError(t, 400, "invalid_argument", "name")

	// Escaped member ids.
	e.do("PUT", "/v1/members/z%C3%A9%20z", `{"name": "Zé"}`).must(t, 200)
	e.do("POST", "/v1/boards/solvers/events", `{"member": "zé z", "value": 2}`).must(t, 200)
	r := e.do("GET", "/v1/boards/solvers/members/z%C3%A9%20z", nil).must(t, 200)
	if r.get("entry", "member") != "zé z" || r.get("entry", "name") != "Zé" {
		t.Fatalf("escaped member: %s", r.raw)
	}

	// Hide and unhide.
	e.do("POST", "/v1/members/dave/hide", nil).must(t, 200)
	r = e.do("GET", "/v1/boards/solvers/entries", nil).must(t, 200)
	sameMembers(t, r, "alice", "bob", "carol", "zé z", "erin")
	e.do("GET", "/v1/boards/solvers/members/dave", nil).isError(t, 404, "not_found", "member")
	e.do("POST", "/v1/members/dave/unhide", nil).must(t, 200)
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries", nil).must(t, 200), "dave", "alice", "bob", "carol", "zé z", "erin")

	// Delete: everywhere.
	e.do("DELETE", "/v1/members/alice", nil).must(t, http.StatusNoContent)
	e.do("GET", "/v1/members/alice", nil).isError(t, 404, "not_found", "member")
	e.do("GET", "/v1/boards/solvers/members/alice", nil).isError(t, 404, "not_found", "member")
	sameMembers(t, e.do("GET", "/v1/boards/solvers/entries?window=week", nil).must(t, 200), "bob", "carol", "zé z", "erin")
}

func TestRestart(t *testing.T) {
	dir, c := t.TempDir(), laureltest.NewClock(t0.Format(time.RFC3339))
	e := start(t, options{dir: dir, clock: c})
	seed(t, e)
	e.do("PUT", "/v1/members/bob", `{"name": "Bob"}`).must(t, 200)
	before := e.do("GET", "/v1/boards/solvers/entries?window=week", nil).must(t, 200)
	e.close()

	e = start(t, options{dir: dir, clock: c})
	e.do("GET", "/v1/boards/solvers/entries?window=week", nil).must(t, 200).is(t, string(before.raw))
	if r := e.do("GET", "/v1/boards/solvers/entries?window=week", nil); r.get("entries", 1, "name") != "Bob" {
		t.Fatalf("profile lost: %s", r.raw)
	}
	// Ids survive too.
	r := e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 4, "ts": "2026-11-20T09:00:00Z", "id": "a-1"}`).must(t, 200)
	if r.get("results", 0, "status") != "duplicate" {
		t.Fatalf("id lost: %s", r.raw)
	}
}
