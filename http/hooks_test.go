package http_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// TestDeletedBoardForgetsItsHooks: DELETE of a board forgets what the hooks know of it, so
// that a board made again under its id is told of its periods, one named as one the old board
// was told of included, under a delivery id of its own.
func TestDeletedBoardForgetsItsHooks(t *testing.T) {
	e := start(t, options{})
	ctx := context.Background()
	board := func(late string, status int) {
		t.Helper()
		e.do("PUT", "/v1/boards/g", map[string]any{"windows": []string{"day"}, "late_limit": late,
			"rewards": []map[string]any{{"window": "day", "ranks": []int{1, 1}, "reward": map[string]any{}}}}).must(t, status)
	}
	collect := func() {
		t.Helper()
		if _, err := e.hooks.Collect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	board("1s", 201)
	e.do("PUT", "/v1/hooks/h", map[string]any{"url": "http://127.0.0.1:1/h", "secret": "0123456789abcdef"}).must(t, 201)
	day := e.clock.Now()
	e.do("POST", "/v1/boards/g/events", map[string]any{"member": "ann", "value": 1}).must(t, 200)
	e.clock.Advance(24 * time.Hour) // the day has closed
	collect()
	e.clock.Advance(time.Second)
	e.do("DELETE", "/v1/boards/g", nil).must(t, 204)
	board("48h", 201)
	e.do("POST", "/v1/boards/g/events?import=true", map[string]any{"member": "ben", "value": 1, "ts": laurel.FormatTime(day)}).must(t, 200)
	e.clock.Advance(time.Second)
	board("1s", 200) // which closes the day again, on the new board
	e.clock.Advance(2 * time.Minute)
	collect()
	ds := e.do("GET", "/v1/hooks/h/deliveries", nil).must(t, 200)
	var ids []string
	for i := range ds.get("deliveries").([]any) {
		ids = append(ids, ds.get("deliveries", i, "id").(string))
	}
	if len(ids) != 2 || !strings.HasPrefix(ids[1], ids[0]+"~") {
		t.Fatalf("deliveries %q; want the old board's day, then one of the new board's under an id of its own", ids)
	}
}
