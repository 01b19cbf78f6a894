package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	lhttp "github.com/laurel/laurel/http"
)

const solversSpec = `{"order": "desc", "mode": "sum", "windows": ["all", "week", "last7d"], "timezone": "UTC",
 "week_start": "monday", "late_limit": "24h", "keep": 12, "min_value": -100, "max_value": 100,
 "title": "Top solvers", "metadata": {}}`

func TestBoards(t *testing.T) {
	e := start(t, options{})

	// Create: 201 with the board.
	e.do("PUT", "/v1/boards/solvers", solversSpec).must(t, http.StatusCreated).is(t, `
	{"id": "solvers", "order": "desc", "mode": "sum", "windows": ["all", "week", "last7d"],
	 "timezone": "UTC", "week_start": "monday", "late_limit": "24h", "keep": 12,
	 "min_value": -100, "max_value": 100,
	 "title": "Top solvers", "metadata": {}, "created_at": "2026-11-22T10:00:00.000Z",
	 "current": {"all": {"period": {"id": "all"}, "total": 0},
	             "week": {"period": {"id": "2026-11-16", "start": "2026-11-16T00:00:00.000Z", "end": "2026-11-23T00:00:00.000Z"}, "total": 0},
	             "last7d": {"period": {"start": "2026-11-16T00:00:00.000Z", "end": "2026-11-23T00:00:00.000Z"}, "total": 0}}}`)

	// The same again: 200, unchanged.
	e.do("PUT", "/v1/boards/solvers", solversSpec).must(t, http.StatusOK)
	// An update of a mutable field: 200 with it.
	r := e.do("PUT", "/v1/boards/solvers", `{"title": "Solvers", "late_limit": "48h"}`).must(t, http.StatusOK)
	if r.get("title") != "Solvers" || r.get("late_limit") != "2d" {
		t.Fatalf("update: %s", r.raw)
	}
	// An immutable field: 409.
	e.do("PUT", "/v1/boards/solvers", `{"order": "asc"}`).isError(t, http.StatusConflict, "conflict", "order")
	e.do("PUT", "/v1/boards/solvers", `{"windows": ["all"]}`).isError(t, http.StatusConflict, "conflict", "windows")

	// Defaults, and min/max omitted when unset.
	e.do("PUT", "/v1/boards/plain", "").must(t, http.StatusCreated).is(t, `
	{"id": "plain", "order": "desc", "mode": "sum", "windows": ["all"], "timezone": "UTC",
	 "week_start": "monday", "late_limit": "24h", "keep": 12, "title": "", "metadata": {},
	 "created_at": "2026-11-22T10:00:00.000Z", "current": {"all": {"period": {"id": "all"}, "total": 0}}}`)

	// Invalid input.
	e.do("PUT", "/v1/boards/bad", `{"windows": ["all", "fortnight"]}`).isError(t, 400, "invalid_argument", "windows[1]")
	e.do("PUT", "/v1/boards/bad", `{"colour": "red"}`).isError(t, 400, "invalid_argument", "colour")
	e.do("PUT", "/v1/boards/bad", `{"keep": 1.5}`).isError(t, 400, "invalid_argument", "keep")
	e.do("PUT", "/v1/boards/bad", `{"min_value": "5"}`).isError(t, 400, "invalid_argument", "min_value")
	e.do("PUT", "/v1/boards/bad", `{"min_value": 99999999999999999999}`).isError(t, 400, "invalid_argument", "min_value")
	e.do("PUT", "/v1/boards/bad", `{"order": "sideways"}`).isError(t, 400, "invalid_argument", "order")
	e.do("PUT", "/v1/boards/bad", `{"timezone": "Mars/Olympus"}`).isError(t, 400, "invalid_argument", "timezone")
	e.do("PUT", "/v1/boards/bad", `{"title": "x"`).isError(t, 400, "invalid_argument", "")
	e.do("PUT", "/v1/boards/bad", `{} {}`).isError(t, 400, "invalid_argument", "")
	e.do("PUT", "/v1/boards/bad", `[]`).isError(t, 400, "invalid_argument", "")
	e.do("PUT", "/v1/boards/Bad!", `{}`).isError(t, 400, "invalid_argument", "board")
	e.do("GET", "/v1/boards/bad", nil).isError(t, 404, "not_found", "board")

	// The error body, word for word.
	e.do("PUT", "/v1/boards/bad", `{"keep": -1}`).is(t,
		`{"error": {"code": "invalid_argument", "message": "keep: must be 0 to 1000", "field": "keep"}}`)

	// List, sorted by id.
	r = e.do("GET", "/v1/boards", nil).must(t, 200)
	if r.get("boards", 0, "id") != "plain" || r.get("boards", 1, "id") != "solvers" || r.get("boards", 2) != nil {
		t.Fatalf("list: %s", r.raw)
	}

	// Delete: 204, then gone.
	r = e.do("DELETE", "/v1/boards/plain", nil).must(t, http.StatusNoContent)
	if len(r.raw) != 0 {
		t.Fatalf("204 with a body: %s", r.raw)
	}
	e.do("GET", "/v1/boards/plain", nil).isError(t, 404, "not_found", "board")
	e.do("DELETE", "/v1/boards/plain", nil).isError(t, 404, "not_found", "board")

	// Unknown endpoints and methods answer in JSON.
	e.do("GET", "/v1/nothing", nil).isError(t, 404, "not_found", "")
	r = e.do("PATCH", "/v1/boards/solvers", `{}`)
	r.isError(t, http.StatusMethodNotAllowed, "method_not_allowed", "")
	if r.header.Get("Allow") == "" {
		t.Fatal("405 without Allow")
	}
	// A path that a cleaning would change is not redirected to the cleaned one, another
	// resource (an empty member id before /around named the member "around"): 404.
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/boards/solvers/members//around"},
		{"GET", "/v1/boards/solvers/members/./around"},
		{"GET", "/v1/boards/solvers/members/../entries"},
		{"GET", "/v1/boards//entries"},
		{"POST", "/v1/members//hide"},
	} {
		if r := e.do(c.method, c.path, nil).isError(t, 404, "not_found", ""); r.header.Get("Location") != "" {
			t.Errorf("%s %s: redirected to %s", c.method, c.path, r.header.Get("Location"))
		}
	}
	// An id "." escaped reaches its route.
	e.do("GET", "/v1/boards/solvers/members/%2E", nil).isError(t, 404, "not_found", "member")
}

func TestBoardCurrentTotals(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/solvers", strings.Replace(solversSpec, `"24h"`, `"7d"`, 1)).must(t, 201)
	e.do("POST", "/v1/boards/solvers/events", `{"events": [
		{"member": "alice", "value": 5, "ts": "2026-11-22T09:00:00Z"},
		{"member": "bob", "value": 2, "ts": "2026-11-21T09:00:00Z"},
		{"member": "carol", "value": 7, "ts": "2026-11-15T11:00:00Z"}]}`).must(t, 200)
	r := e.do("GET", "/v1/boards/solvers", nil).must(t, 200)
	for w, want := range map[string]float64{"all": 3, "week": 2, "last7d": 2} {
		if got := r.get("current", w, "total"); got != want {
			t.Errorf("current %s total %v, want %v", w, got, want)
		}
	}
}

func TestEvents(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/solvers", solversSpec).must(t, 201)
	e.do("PUT", "/v1/boards/other", `{"windows": ["all", "day"]}`).must(t, 201)

	e.do("POST", "/v1/boards/solvers/events",
		`{"member": "alice", "value": 5, "ts": "2026-11-22T10:00:00Z", "id": "solve-123", "name": "Alice"}`).must(t, 200).is(t, `
	{"results": [{"member": "alice", "id": "solve-123", "status": "applied",
	  "entries": {"all": {"rank": 1, "score": 5}, "week": {"rank": 1, "score": 5}, "last7d": {"rank": 1, "score": 5}}}]}`)
	// The name went to the profile.
	e.do("GET", "/v1/members/alice", nil).must(t, 200).is(t, `{"member": "alice", "name": "Alice", "metadata": {}, "hidden": false}`)

	// A retry is a duplicate; the same id with another value is a conflict.
	r := e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 5, "ts": "2026-11-22T10:00:00Z", "id": "solve-123"}`).must(t, 200)
	if r.get("results", 0, "status") != "duplicate" {
		t.Fatalf("retry: %s", r.raw)
	}
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 6, "id": "solve-123"}`).isError(t, 409, "conflict", "id")

	// A batch, without ranks.
	e.do("POST", "/v1/boards/solvers/events?ranks=false",
		`{"events": [{"member": "alice", "value": 5}, {"member": "bob", "value": 2, "id": "x-9"}]}`).must(t, 200).is(t, `
	{"results": [{"member": "alice", "status": "applied"}, {"member": "bob", "id": "x-9", "status": "applied"}]}`)
	// With ranks, and where bob came from.
	r = e.do("POST", "/v1/boards/solvers/events", `{"events": [{"member": "bob", "value": 20}]}`).must(t, 200)
	if r.get("results", 0, "entries", "all", "rank") != 1.0 || r.get("results", 0, "entries", "all", "score") != 22.0 {
		t.Fatalf("batch ranks: %s", r.raw)
	}
	if r.get("results", 0, "entries", "all", "previous", "rank") != 2.0 || r.get("results", 0, "entries", "all", "previous", "score") != 2.0 {
		t.Fatalf("batch previous: %s", r.raw)
	}

	// Across boards.
	r = e.do("POST", "/v1/events", `{"events": [{"board": "solvers", "member": "carol", "value": 1},
		{"board": "other", "member": "carol", "value": 4, "id": "c-1"}]}`).must(t, 200)
	if r.get("results", 1, "entries", "day", "score") != 4.0 || r.get("results", 0, "entries", "all", "rank") != 3.0 {
		t.Fatalf("cross-board: %s", r.raw)
	}
	e.do("POST", "/v1/events", `{"events": [{"member": "carol", "value": 1}]}`).isError(t, 400, "invalid_argument", "events[0].board")
	e.do("POST", "/v1/events", `{"events": [{"board": "nope", "member": "carol", "value": 1}]}`).isError(t, 404, "not_found", "events[0].board")

	// Atomic: one bad event rejects all.
	e.do("POST", "/v1/boards/solvers/events", `{"events": [{"member": "dave", "value": 1}, {"member": "dave", "value": 1000}]}`).
		isError(t, 400, "invalid_argument", "events[1].value")
	e.do("GET", "/v1/boards/solvers/members/dave", nil).isError(t, 404, "not_found", "member")

	// Values must be integers.
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1.5}`).is(t,
		`{"error": {"code": "invalid_argument", "message": "value: must be an integer", "field": "value"}}`).must(t, 400)
	e.do("POST", "/v1/boards/solvers/events", `{"events": [{"member": "a", "value": 1}, {"member": "a", "value": 1}, {"member": "a", "value": 1}, {"member": "alice", "value": 1e2}]}`).is(t,
		`{"error": {"code": "invalid_argument", "message": "events[3].value: must be an integer", "field": "events[3].value"}}`)
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": "5"}`).isError(t, 400, "invalid_argument", "value")
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 9223372036854775808}`).isError(t, 400, "invalid_argument", "value")
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice"}`).isError(t, 400, "invalid_argument", "value")
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1, "colour": "red"}`).isError(t, 400, "invalid_argument", "colour")
	e.do("POST", "/v1/boards/solvers/events", `{"events": [{"member": "alice", "value": 1, "colour": "red"}]}`).isError(t, 400, "invalid_argument", "events[0].colour")
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1, "board": "other"}`).isError(t, 400, "invalid_argument", "board")
	e.do("POST", "/v1/boards/solvers/events", `{"member": "a/b", "value": 1}`).isError(t, 400, "invalid_argument", "member")
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1, "ts": "yesterday"}`).isError(t, 400, "invalid_argument", "ts")
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1, "ts": "2026-11-22T11:00:00Z"}`).isError(t, 400, "invalid_argument", "ts")
	// An empty id is not "no id": it was, and its retries were counted again.
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1, "id": ""}`).isError(t, 400, "invalid_argument", "id")
	e.do("POST", "/v1/boards/solvers/events", `{"events": []}`).isError(t, 400, "invalid_argument", "events")
	e.do("POST", "/v1/boards/solvers/events", `not json`).isError(t, 400, "invalid_argument", "")
	e.do("POST", "/v1/boards/solvers/events", ``).isError(t, 400, "invalid_argument", "")

	// Too late.
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1, "ts": "2026-11-21T09:59:59Z"}`).isError(t, 400, "too_late", "ts")
	e.do("POST", "/v1/boards/solvers/events", `{"events": [{"member": "alice", "value": 1}, {"member": "alice", "value": 1, "ts": "2026-11-01T00:00:00Z"}]}`).
		isError(t, 400, "too_late", "events[1].ts")

	// Unknown board.
	e.do("POST", "/v1/boards/nope/events", `{"member": "alice", "value": 1}`).isError(t, 404, "not_found", "board")
	e.do("POST", "/v1/boards/nope/events", `{"events": [{"member": "alice", "value": 1}]}`).isError(t, 404, "not_found", "board")

	// Too large: a batch over 1000 events, a body over 1 MiB.
	var b strings.Builder
	b.WriteString(`{"events": [`)
	for i := range 1001 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"member": "m%d", "value": 1}`, i)
	}
	b.WriteString(`]}`)
	e.do("POST", "/v1/boards/solvers/events", b.String()).isError(t, 413, "payload_too_large", "events")
	big := `{"member": "alice", "value": 1, "name": "` + strings.Repeat("x", 1<<20) + `"}`
	e.do("POST", "/v1/boards/solvers/events", big).isError(t, 413, "payload_too_large", "")

	// Retract.
	e.do("DELETE", "/v1/boards/solvers/events/solve-123", nil).must(t, 200).is(t, `{"status": "retracted"}`)
	e.do("DELETE", "/v1/boards/solvers/events/solve-123", nil).isError(t, 404, "not_found", "id")
	e.do("DELETE", "/v1/boards/solvers/events/never", nil).isError(t, 404, "not_found", "id")
	e.do("DELETE", "/v1/boards/nope/events/x", nil).isError(t, 404, "not_found", "board")
	// An id with escaped characters.
	e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 1, "id": "a b/c"}`).must(t, 200)
	e.do("DELETE", "/v1/boards/solvers/events/a%20b%2Fc", nil).must(t, 200)
	// After retraction the id counts again.
	r = e.do("POST", "/v1/boards/solvers/events", `{"member": "alice", "value": 5, "id": "solve-123"}`).must(t, 200)
	if r.get("results", 0, "status") != "applied" {
		t.Fatalf("reuse after retraction: %s", r.raw)
	}
}

func TestTooLateClosedPeriod(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/daily", `{"windows": ["day"], "late_limit": "1h"}`).must(t, 201)
	e.do("POST", "/v1/boards/daily/events", `{"member": "a", "value": 1, "ts": "2026-11-22T09:30:00Z"}`).must(t, 200)
	e.clock.Advance(16 * time.Hour) // 2026-11-23T02:00: the 22nd closed at 01:00
	e.do("PUT", "/v1/boards/daily", `{"late_limit": "7d"}`).must(t, 200)
	// Within late_limit now, but the period is closed.
	e.do("POST", "/v1/boards/daily/events", `{"member": "a", "value": 1, "ts": "2026-11-22T12:00:00Z"}`).isError(t, 400, "too_late", "ts")
}

// TestImport: the admin key may submit events older than late_limit with ?import=true, never
// into a closed period; a write key may not import at all.
func TestImport(t *testing.T) {
	keys := lhttp.Keys{Admin: []string{"adm"}, Write: []string{"wri"}}
	e := start(t, options{cfg: lhttp.Config{Keys: keys}})
	e.doKey("adm", "PUT", "/v1/boards/b", `{"windows": ["all", "week"], "late_limit": "1h"}`).must(t, 201)
	old := `{"member": "a", "value": 5, "ts": "2026-11-22T06:00:00Z", "id": "old-1"}`
	e.doKey("wri", "POST", "/v1/boards/b/events", old).isError(t, 400, "too_late", "ts")
	e.doKey("wri", "POST", "/v1/boards/b/events?import=true", old).isError(t, 403, "permission_denied", "import")
	e.doKey("adm", "POST", "/v1/boards/b/events?import=maybe", old).isError(t, 400, "invalid_argument", "import")
	e.doKey("adm", "POST", "/v1/boards/b/events?import=true", old).must(t, 200).
		is(t, `{"results": [{"member": "a", "id": "old-1", "status": "applied",
			"entries": {"all": {"rank": 1, "score": 5}, "week": {"rank": 1, "score": 5}}}]}`)
	e.doKey("adm", "POST", "/v1/events?import=true&ranks=false", `{"events": [{"board": "b", "member": "c", "value": 2, "ts": "2026-11-20T06:00:00Z"}]}`).
		must(t, 200).is(t, `{"results": [{"member": "c", "status": "applied"}]}`)
	if got := e.doKey("wri", "GET", "/v1/boards/b/entries?window=week", nil).get("total"); got != float64(2) {
		t.Fatalf("week total %v, want 2", got)
	}
	// Last week closed an hour after it ended: not even an import reaches it.
	e.doKey("adm", "POST", "/v1/boards/b/events?import=true", `{"member": "a", "value": 1, "ts": "2026-11-15T06:00:00Z"}`).
		isError(t, 400, "too_late", "ts")
}
