package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestPublishedTops: a page of a window's current top, answered without the store's lock from
// the view the writer publishes after each commit, equals the same page read under the lock
// (a read at an explicit instant, which never takes the view) — after writes, a new name, a
// hidden member, a deeper page than the view holds, and the period's end.
func TestPublishedTops(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 7))
	c := laureltest.NewClock("2026-11-22T23:50:00Z")
	e := testStore(t, "", c)
	ctx := context.Background()
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"day", "all", "last7d"}})
	var evs []laurel.Event
	for i := range 600 {
		evs = append(evs, laurel.Event{Board: "b", Member: fmt.Sprintf("m%03d", rng.IntN(250)), Value: int64(rng.IntN(50)), Name: ptr(fmt.Sprintf("M %d", i))})
	}
	submit(t, e, evs...)
	same := func(when string, held bool) {
		t.Helper()
		for _, window := range []string{"", "day", "all", "last7d"} {
			if held && !e.TopHeld("b", window) {
				t.Fatalf("%s: no published top for window %q", when, window)
			}
			for _, p := range [][2]int{{0, 10}, {0, 100}, {37, 20}, {95, 10}, {150, 20}, {240, 50}} {
				fast, err := e.Page(ctx, laurel.Query{Board: "b", Window: window}, p[0], p[1], laurel.ScoreRange{})
				if err != nil {
					t.Fatal(err)
				}
				locked, err := e.Page(ctx, laurel.Query{Board: "b", Window: window, At: c.Now(), HasAt: true}, p[0], p[1], laurel.ScoreRange{})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(fast, locked) {
					t.Fatalf("%s: window %q offset %d limit %d:\npublished %+v\nlocked    %+v", when, window, p[0], p[1], fast, locked)
				}
			}
		}
	}
	same("after writes", true)

	// A write to another board leaves this board's views: it changes nothing they show.
	putBoard(t, e, "other", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, e, laurel.Event{Board: "other", Member: "m001", Value: 5})
	same("after a write to another board", true)

	top, _ := e.Page(ctx, laurel.Query{Board: "b", Window: "all"}, 0, 1, laurel.ScoreRange{})
	leader := top.Entries[0].Member
	if _, err := e.PutProfile(ctx, leader, laurel.ProfileSpec{Name: ptr("Renamed")}); err != nil {
		t.Fatal(err)
	}
	same("right after a new name", false) // no view may answer with the old one
	submit(t, e, laurel.Event{Board: "b", Member: "m999", Value: 1})
	same("after a new name", true)
	if got, _ := e.Page(ctx, laurel.Query{Board: "b", Window: "all"}, 0, 1, laurel.ScoreRange{}); got.Entries[0].Name != "Renamed" {
		t.Fatalf("the leader's name after a change: %q", got.Entries[0].Name)
	}

	if err := e.Hide(ctx, leader); err != nil {
		t.Fatal(err)
	}
	same("right after hiding the leader", false)
	submit(t, e, laurel.Event{Board: "b", Member: "m998", Value: 1})
	same("after hiding the leader", true)

	c.Advance(15 * time.Minute) // into the next day: the day's view no longer holds
	if e.TopHeld("b", "day") {
		t.Fatal("the day's published top still holds after the day ended")
	}
	if p, err := e.Page(ctx, laurel.Query{Board: "b", Window: "day"}, 0, 10, laurel.ScoreRange{}); err != nil || p.Total != 0 {
		t.Fatalf("the new day's page: %+v, %v; want it empty", p, err)
	}
	submit(t, e, laurel.Event{Board: "b", Member: "m997", Value: 3})
	same("in the next day", true)
}
