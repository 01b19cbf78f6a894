package http_test

import (
	"strings"
	"testing"

	lhttp "github.com/laurel/laurel/http"
)

// TestGuardedBoard: a trusted board takes the game server's events and refuses a member
// token's; a jump its guard refuses is 422 guard_refused, naming the event, and stores
// nothing of its batch.
func TestGuardedBoard(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{
		Keys:   lhttp.Keys{Admin: []string{"admin-key"}, Write: []string{"game-key"}},
		Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k": currentSecret}},
	}})
	e.key = "admin-key"
	e.do("PUT", "/v1/boards/laps", map[string]any{"order": "asc", "mode": "best",
		"guard": map[string]any{"trusted": true, "jump": map[string]any{"window": "all", "percent": 10}}}).must(t, 201)
	if g := e.do("GET", "/v1/boards/laps", nil).must(t, 200).get("guard", "jump", "percent"); g != 10.0 {
		t.Errorf("the board shows its guard's jump percent as %v", g)
	}
	e.key = "game-key"
	e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "value": 60_000}).must(t, 200)
	e.do("POST", "/v1/boards/laps/events", map[string]any{"events": []map[string]any{
		{"member": "bob", "value": 50_000}, {"member": "ada", "value": 45_000}}}).isError(t, 422, "guard_refused", "events[1].value")
	if p := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200); p.get("total") != 1.0 {
		t.Errorf("a refused batch stored something: %s", p.raw)
	}
	ada := mint(t, "k", currentSecret, claimsFor("ada", "laps"))
	e.doKey(ada, "POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "value": 59_000}).isError(t, 403, "permission_denied", "board")
	e.do("POST", "/v1/boards/laps/events", map[string]any{"member": "ada", "value": 59_000}).must(t, 200)
	e.doKey(ada, "POST", "/v1/events", map[string]any{"events": []map[string]any{{"board": "laps", "member": "ada", "value": 58_000}}}).
		isError(t, 403, "permission_denied", "events[0].board")

	e.key = "admin-key"
	m := string(e.do("GET", "/metrics", nil).must(t, 200).raw)
	for _, want := range []string{`laurel_guard_refused_total{board="laps",rule="jump"} 1`, `laurel_guard_refused_total{board="laps",rule="trusted"} 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestRateRule: a rate rule refuses a member's event past its max in the interval, 422
// guard_refused at the event's ts, counted in /metrics by rule; a bad rule is 400 naming its
// field.
func TestRateRule(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/kills", map[string]any{"guard": map[string]any{"rate": map[string]any{"max": 2, "interval": "1m"}}}).must(t, 201)
	if g := e.do("GET", "/v1/boards/kills", nil).must(t, 200).get("guard", "rate", "interval"); g != "1m" {
		t.Errorf("the board shows its rate's interval as %v", g)
	}
	e.do("POST", "/v1/boards/kills/events", map[string]any{"events": []map[string]any{{"member": "ada", "value": 1}, {"member": "ada", "value": 1}}}).must(t, 200)
	e.do("POST", "/v1/boards/kills/events", map[string]any{"events": []map[string]any{
		{"member": "bob", "value": 1}, {"member": "ada", "value": 1}}}).isError(t, 422, "guard_refused", "events[1].ts")
	if p := e.do("GET", "/v1/boards/kills/entries", nil).must(t, 200); p.get("total") != 1.0 {
		t.Errorf("a refused batch stored something: %s", p.raw)
	}
	e.do("PUT", "/v1/boards/kills", map[string]any{"guard": map[string]any{"rate": map[string]any{"max": 2, "interval": "1m", "action": "ban"}}}).
		isError(t, 400, "invalid_argument", "guard.rate.action")
	e.do("PUT", "/v1/boards/kills", map[string]any{"guard": map[string]any{"rate": map[string]any{"interval": "1m"}}}).
		isError(t, 400, "invalid_argument", "guard.rate.max")
	if m := string(e.do("GET", "/metrics", nil).must(t, 200).raw); !strings.Contains(m, `laurel_guard_refused_total{board="kills",rule="rate"} 1`) {
		t.Errorf("metrics lack the rate rule's refusal")
	}
}
