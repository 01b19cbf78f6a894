package http_test

import (
	"testing"
	"time"

	lhttp "github.com/laurel/laurel/http"
)

// TestTournament: a run that must be joined, takes two members and two attempts each, and
// opens at a start: joins (a member token for its own member only), a full run, spent
// attempts, a member who did not join, and events before the start, each refused with the
// API's code and field and counted nowhere.
func TestTournament(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{
		Keys:   lhttp.Keys{Admin: []string{"admin-key"}},
		Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k2": currentSecret}},
	}})
	e.key = "admin-key"
	// t0 is Sunday 10:00 UTC: a daily tournament from noon, each run open until 20:00.
	e.do("PUT", "/v1/boards/cup", map[string]any{"windows": []string{"day", "all"}, "tournament": map[string]any{
		"start": "2026-11-22T12:00:00Z", "window": "day", "duration": "20h", "join_required": true, "max_members": 2, "max_attempts": 2}}).must(t, 201)
	board := e.do("GET", "/v1/boards/cup", nil).must(t, 200)
	if board.get("tournament", "duration") != "20h" || board.get("tournament", "max_attempts") != 2.0 {
		t.Fatalf("the board shows %s", board.raw)
	}
	e.do("POST", "/v1/boards/cup/members/ada/join", nil).must(t, 400) // before the start
	r := e.do("POST", "/v1/boards/cup/events", map[string]any{"member": "ada", "value": 5})
	r.isError(t, 400, "invalid_argument", "ts") // a single event's fields are named plainly

	e.clock.Set("2026-11-22T13:00:00Z")
	ada := mint(t, "k2", currentSecret, claimsFor("ada", "cup"))
	r = e.doKey(ada, "POST", "/v1/boards/cup/members/ada/join", nil).must(t, 201)
	if r.get("run", "id") != "2026-11-22" || r.get("run", "end") != "2026-11-22T20:00:00.000Z" || r.get("members") != 1.0 || r.get("joined") != true {
		t.Fatalf("join: %s", r.raw)
	}
	e.doKey(ada, "POST", "/v1/boards/cup/members/ada/join", nil).must(t, 200)
	e.doKey(ada, "POST", "/v1/boards/cup/members/bob/join", nil).isError(t, 403, "permission_denied", "member")
	e.do("POST", "/v1/boards/cup/members/bob/join", nil).must(t, 201)
	e.do("POST", "/v1/boards/cup/members/cy/join", nil).isError(t, 409, "conflict", "member") // full
	e.do("POST", "/v1/boards/cup/events", map[string]any{"member": "cy", "value": 9}).isError(t, 409, "conflict", "member")

	e.doKey(ada, "POST", "/v1/boards/cup/events", map[string]any{"events": []map[string]any{
		{"member": "ada", "value": 5, "id": "a1"}, {"member": "ada", "value": 7, "id": "a2"}}}).must(t, 200)
	e.doKey(ada, "POST", "/v1/boards/cup/events", map[string]any{"member": "ada", "value": 7, "id": "a2"}).must(t, 200) // a retry: not counted
	e.doKey(ada, "POST", "/v1/boards/cup/events", map[string]any{"events": []map[string]any{{"member": "ada", "value": 9}}}).isError(t, 409, "conflict", "events[0].member")
	r = e.doKey(ada, "GET", "/v1/boards/cup/members/ada/entry", nil).must(t, 200)
	if r.get("attempts") != 2.0 || r.get("max_attempts") != 2.0 {
		t.Fatalf("entry: %s", r.raw)
	}
	if got := e.do("GET", "/v1/boards/cup/members/ada?window=day", nil).must(t, 200).get("entry", "score"); got != 12.0 {
		t.Fatalf("ada's score %v, want 12: the refused attempt must not count", got)
	}
	// After 20:00 the day's run takes nothing; the next day's run starts empty.
	e.clock.Set("2026-11-22T20:00:00Z")
	e.doKey(ada, "POST", "/v1/boards/cup/events", map[string]any{"member": "ada", "value": 1}).isError(t, 400, "too_late", "ts")
	e.clock.Advance(5 * time.Hour)
	r = e.doKey(ada, "GET", "/v1/boards/cup/members/ada/entry", nil).must(t, 200)
	if r.get("run", "id") != "2026-11-23" || r.get("joined") != false || r.get("attempts") != 0.0 || r.get("members") != 0.0 {
		t.Fatalf("the next run: %s", r.raw)
	}
	e.do("GET", "/v1/boards/nope/members/ada/entry", nil).isError(t, 404, "not_found", "board")
	e.do("PUT", "/v1/boards/plain", map[string]any{}).must(t, 201)
	e.do("POST", "/v1/boards/plain/members/ada/join", nil).isError(t, 400, "invalid_argument", "")
	e.do("PUT", "/v1/boards/cup", map[string]any{"tournament": map[string]any{"window": "week"}}).isError(t, 400, "invalid_argument", "tournament.window")
}

// TestUncappedTournamentEntries: a tournament with no cap and no join step still records its
// entries from events (docs/design.md: a member enters by its first event of the run, each
// applied event an attempt), and a join after scoring keeps the attempts.
func TestUncappedTournamentEntries(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/tn", map[string]any{"windows": []string{"all"}, "tournament": map[string]any{
		"start": "2026-11-22T09:50:00Z", "end": "2026-11-22T10:10:00Z"}}).must(t, 201)
	e.do("POST", "/v1/boards/tn/events", map[string]any{"member": "ann", "value": 1}).must(t, 200)
	if r := e.do("GET", "/v1/boards/tn/members/ann/entry", nil).must(t, 200); r.get("joined") != true || r.get("attempts") != 1.0 || r.get("run", "id") != "all" {
		t.Fatalf("ann's entry after an event: %s", r.raw)
	}
	if r := e.do("POST", "/v1/boards/tn/members/ann/join", nil).must(t, 200); r.get("attempts") != 1.0 {
		t.Fatalf("ann joined after scoring: %s", r.raw)
	}
	e.do("POST", "/v1/boards/tn/members/ben/join", nil).must(t, 201)
	e.do("POST", "/v1/boards/tn/events", map[string]any{"events": []map[string]any{{"member": "ben", "value": 2}, {"member": "ben", "value": 3}}}).must(t, 200)
	if r := e.do("GET", "/v1/boards/tn/members/ben/entry", nil).must(t, 200); r.get("joined") != true || r.get("attempts") != 2.0 {
		t.Fatalf("ben's entry after joining and two events: %s", r.raw)
	}
}
