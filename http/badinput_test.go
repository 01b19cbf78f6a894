package http_test

import (
	"strings"
	"testing"
)

// TestBadInputChangesNothing: malformed input gets a clear error with the API's codes, and
// nothing of it is stored.
func TestBadInputChangesNothing(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/b", `{}`).must(t, 201)

	// Invalid UTF-8 would become U+FFFD, and "u\xff" and "u\xfe" the same member.
	e.do("POST", "/v1/boards/b/events", "{\"member\": \"u\xff\", \"value\": 1}").isError(t, 400, "invalid_argument", "")
	e.do("POST", "/v1/boards/b/events", "{\"member\": \"u\", \"value\": 1, \"name\": \"A\xfeB\"}").isError(t, 400, "invalid_argument", "")
	e.do("PUT", "/v1/members/alice", "{\"metadata\": {\"city\": \"\xc3\"}}").isError(t, 400, "invalid_argument", "")
	e.do("GET", "/v1/members/u%FF", nil).isError(t, 400, "invalid_argument", "member")
	// So would an unpaired surrogate escape: "\ud800" and "\udc00" were the same member.
	for _, m := range []string{`\ud800`, `\udc00`, `a\ud83d`, `\ud83d\u0041`, `\ud83d\ud83d\ude00`} {
		e.do("POST", "/v1/boards/b/events", `{"member": "`+m+`", "value": 1}`).isError(t, 400, "invalid_argument", "")
	}
	e.do("PUT", "/v1/members/alice", `{"name": "\udfff"}`).isError(t, 400, "invalid_argument", "")
	empty(t, e)
	e.do("GET", "/v1/members/alice", nil).isError(t, 404, "not_found", "member")
	// A pair is one character, and an escaped backslash before "ud800" no escape.
	e.do("POST", "/v1/boards/b/events", `{"events": [{"member": "\ud83d\ude00", "value": 1, "id": "p1"}, {"member": "a\\ud800", "value": 1, "id": "p2"}]}`).must(t, 200)
	e.do("DELETE", "/v1/boards/b/events/p1", nil).must(t, 200)
	e.do("DELETE", "/v1/boards/b/events/p2", nil).must(t, 200)
	empty(t, e)
	e.do("GET", "/v1/members/alice", nil).isError(t, 404, "not_found", "member")

	// A null body is not an object.
	e.do("PUT", "/v1/boards/nothing", `null`).isError(t, 400, "invalid_argument", "")
	e.do("PUT", "/v1/members/alice", ` null `).isError(t, 400, "invalid_argument", "")
	e.do("GET", "/v1/boards/nothing", nil).isError(t, 404, "not_found", "board")

	// A malformed query is refused, not read as the defaults.
	e.do("GET", "/v1/boards/b/entries?limit=%zz", nil).isError(t, 400, "invalid_argument", "")
	e.do("POST", "/v1/boards/b/events?ranks=%", `{"member": "u", "value": 1}`).isError(t, 400, "invalid_argument", "")
	empty(t, e)

	// A route that takes no body refuses one (it was ignored: the client's fields were not
	// what was done); an empty object, or none, is taken.
	e.do("POST", "/v1/boards/b/events", `{"member": "u", "value": 1, "id": "e1"}`).must(t, 200)
	e.do("DELETE", "/v1/boards/b/events/e1", `{"reason": "cheat"}`).isError(t, 400, "invalid_argument", "reason")
	e.do("POST", "/v1/members/u/hide", `garbage`).isError(t, 400, "invalid_argument", "")
	e.do("DELETE", "/v1/boards/b", `{"force": true}`).isError(t, 400, "invalid_argument", "force")
	if r := e.do("GET", "/v1/boards/b/entries", nil).must(t, 200); r.body["total"] != float64(1) {
		t.Fatalf("board b after refused bodies: %s; want u ranked", r.raw)
	}
	e.do("POST", "/v1/members/u/unhide", ` {} `).must(t, 200)
	e.do("DELETE", "/v1/boards/b/events/e1", nil).must(t, 200)
	empty(t, e)

	// A period past year 9999 has no id or time to answer in (Berlin's day of New Year's Eve
	// 9999 UTC, 23:00 on, is "10000-01-01").
	e.do("PUT", "/v1/boards/berlin", `{"windows": ["day"], "timezone": "Europe/Berlin"}`).must(t, 201)
	e.do("GET", "/v1/boards/berlin/entries?at=9999-12-31T23:59:59Z", nil).isError(t, 400, "invalid_argument", "at")
	e.do("GET", "/v1/boards/berlin/entries?at=9999-12-30T12:00:00Z", nil).must(t, 200)

	// A wrong method says so, and which methods the path takes.
	r := e.do("DELETE", "/v1/boards", nil).isError(t, 405, "method_not_allowed", "")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("405 with Allow %q", allow)
	}

	// Messages read as written: no HTML escapes.
	r = e.do("PUT", "/v1/boards/c", `{"windows": ["<week>"]}`).isError(t, 400, "invalid_argument", "windows[0]")
	if raw := string(r.raw); strings.Contains(raw, `\u003c`) || !strings.Contains(raw, "<week>") {
		t.Errorf("error body %s: want <week> as written", raw)
	}
}

// empty checks that board b ranks no one.
func empty(t *testing.T, e *env) {
	t.Helper()
	if r := e.do("GET", "/v1/boards/b/entries", nil).must(t, 200); r.body["total"] != float64(0) {
		t.Fatalf("board b: %s; want no one ranked", r.raw)
	}
}
