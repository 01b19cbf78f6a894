package http_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	lhttp "github.com/laurel/laurel/http"
)

// TestReviewQueue: a lap a hold rule holds is stored, its member hidden and a flag opened;
// the admin lists the open flags and confirms one (the lap retracted), clears another (the
// member back); the game reports a member with its reason; bad requests are refused with the
// API's codes; /metrics counts the held and the resolved.
func TestReviewQueue(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{
		Keys:   lhttp.Keys{Admin: []string{"admin-key"}, Write: []string{"game-key"}},
		Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k": currentSecret}},
	}})
	e.key = "admin-key"
	e.do("PUT", "/v1/boards/laps", map[string]any{"order": "asc", "mode": "best",
		"guard": map[string]any{"jump": map[string]any{"window": "all", "percent": 10, "action": "hold"}}}).must(t, 201)
	e.key = "game-key"
	e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "id": "a1", "value": 60_000}).must(t, 200)
	e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "bob", "id": "b1", "value": 61_000}).must(t, 200)
	res := e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "id": "a2", "value": 45_000}).must(t, 200)
	flag, _ := res.get("results", 0, "flag").(string)
	if flag == "" || res.get("results", 0, "status") != "applied" {
		t.Fatalf("a held lap: %s; want applied with a flag", res.raw)
	}
	if p := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200); p.get("total") != 1.0 || p.get("entries", 0, "member") != "bob" {
		t.Errorf("the board shows the held member: %s", p.raw)
	}
	e.do("GET", "/v1/flags", nil).isError(t, 403, "permission_denied", "")

	e.key = "admin-key"
	list := e.do("GET", "/v1/flags?state=open&board=laps", nil).must(t, 200)
	if list.get("flags", 0, "id") != flag || list.get("flags", 0, "rule") != "jump" || list.get("flags", 0, "events", 0, "id") != "a2" ||
		list.get("flags", 0, "events", 0, "value") != 45_000.0 || list.get("flags", 1) != nil {
		t.Fatalf("the open flags: %s", list.raw)
	}
	e.do("POST", "/v1/flags/"+flag, map[string]any{"action": "ban"}).isError(t, 400, "invalid_argument", "action")
	e.do("POST", "/v1/flags/0000000000000000ffff", map[string]any{"action": "clear"}).isError(t, 404, "not_found", "flag")
	if f := e.do("POST", "/v1/flags/"+flag, map[string]any{"action": "confirm"}).must(t, 200); f.get("state") != "confirmed" {
		t.Fatalf("confirm: %s", f.raw)
	}
	e.do("POST", "/v1/flags/"+flag, map[string]any{"action": "confirm"}).must(t, 200)
	e.do("POST", "/v1/flags/"+flag, map[string]any{"action": "clear"}).isError(t, 409, "conflict", "")
	e.do("POST", "/v1/members/ada/unhide", nil).must(t, 200)
	if p := e.do("GET", "/v1/boards/laps/members/ada", nil).must(t, 200); p.get("entry", "score") != 60_000.0 {
		t.Errorf("ada after her held lap was confirmed and she was unhidden: %s; want 60000", p.raw)
	}

	// The game reports a member: held at once; a member token cannot.
	bob := mint(t, "k", currentSecret, claimsFor("bob", "laps"))
	e.doKey(bob, "POST", "/v1/boards/laps/members/bob/flags", map[string]any{"reason": "x"}).isError(t, 403, "permission_denied", "")
	e.key = "game-key"
	e.do("POST", "/v1/boards/laps/members/bob/flags", map[string]any{}).isError(t, 400, "invalid_argument", "reason")
	e.do("POST", "/v1/boards/nope/members/bob/flags", map[string]any{"reason": "x"}).isError(t, 404, "not_found", "board")
	e.clock.Advance(time.Second)
	rep := e.do("POST", "/v1/boards/laps/members/bob/flags", map[string]any{"reason": "aimbot signature"}).must(t, 200)
	if rep.get("reason") != "aimbot signature" || rep.get("state") != "open" {
		t.Fatalf("a report: %s", rep.raw)
	}
	if p := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200); p.get("total") != 1.0 {
		t.Errorf("a reported member is ranked: %s", p.raw)
	}
	e.key = "admin-key"
	e.do("POST", fmt.Sprintf("/v1/flags/%s", rep.get("id")), map[string]any{"action": "clear"}).must(t, 200)
	if p := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200); p.get("total") != 2.0 {
		t.Errorf("a cleared member is not back: %s", p.raw)
	}
	if one := e.do("GET", "/v1/flags?limit=1", nil).must(t, 200); one.get("flags", 0, "id") != flag || one.get("flags", 1) != nil {
		t.Errorf("a page of one: %s", one.raw)
	}
	if next := e.do("GET", "/v1/flags?after="+flag, nil).must(t, 200); next.get("flags", 0, "id") != rep.get("id") {
		t.Errorf("the page after %s: %s", flag, next.raw)
	}
	e.do("GET", "/v1/flags?state=shut", nil).isError(t, 400, "invalid_argument", "state")

	m := string(e.do("GET", "/metrics", nil).must(t, 200).raw)
	for _, want := range []string{`laurel_guard_held_total{board="laps",rule="jump"} 1`, `laurel_guard_held_total{board="laps",rule="reported"} 1`,
		`laurel_flags_resolved_total{board="laps",resolution="confirmed",rule="jump"} 1`, `laurel_flags_resolved_total{board="laps",resolution="cleared",rule="reported"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestFlagWebhooks: a hook that asks for flags is told, signed from the same outbox as
// results, of a flag opened, of more events it held and of its resolution, each once; a
// hook that does not ask is told of none.
func TestFlagWebhooks(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/hooks/game", map[string]any{"url": "http://127.0.0.1:9/flags", "secret": "a-secret-of-16-bytes", "flags": true}).must(t, 201)
	if f := e.do("GET", "/v1/hooks/game", nil).must(t, 200).get("flags"); f != true {
		t.Fatalf("the hook shows flags %v", f)
	}
	e.do("PUT", "/v1/hooks/quiet", map[string]any{"url": "http://127.0.0.1:9/results", "secret": "a-secret-of-16-bytes"}).must(t, 201)
	e.do("PUT", "/v1/boards/laps", map[string]any{"order": "asc", "mode": "best",
		"guard": map[string]any{"jump": map[string]any{"window": "all", "percent": 10, "action": "hold"}}}).must(t, 201)
	collect := func(want int) {
		t.Helper()
		n, err := e.hooks.Collect(context.Background())
		if err != nil || n != want {
			t.Fatalf("collect: %d deliveries made, %v; want %d", n, err, want)
		}
	}
	bodies := func(hook string) []string {
		t.Helper()
		var out []string
		list := e.do("GET", "/v1/hooks/"+hook+"/deliveries", nil).must(t, 200)
		for i := 0; list.get("deliveries", i) != nil; i++ {
			d := e.do("GET", fmt.Sprintf("/v1/hooks/%s/deliveries/%s", hook, list.get("deliveries", i, "id")), nil).must(t, 200)
			out = append(out, fmt.Sprintf("%v %v %v %v", d.get("body", "type"), d.get("body", "flag", "member"), d.get("body", "flag", "state"), d.get("body", "delivery") == d.get("id")))
		}
		return out
	}
	e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "id": "a1", "value": 60_000}).must(t, 200)
	collect(0)
	flag := e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "id": "a2", "value": 45_000}).must(t, 200).get("results", 0, "flag")
	e.clock.Advance(time.Millisecond) // deliveries list by id, and ids by when their write was
	e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "id": "a3", "value": 40_000}).must(t, 200)
	collect(2)
	collect(0) // each notice is told once
	e.clock.Advance(time.Millisecond)
	e.do("POST", fmt.Sprintf("/v1/flags/%s", flag), map[string]any{"action": "confirm"}).must(t, 200)
	collect(1)
	want := []string{"flag.opened ada open true", "flag.held ada open true", "flag.resolved ada confirmed true"}
	if got := bodies("game"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the flags hook was told %q, want %q", got, want)
	}
	if got := bodies("quiet"); len(got) != 0 {
		t.Errorf("a hook that did not ask was told %q", got)
	}
}
