package postgres_test

import (
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestReadOfABoardMadeAgain: a node plans a read from the board's state it last found while it
// asks the index for the state again; a board that another node deleted and made again in the
// other order, its state now at the stamp the first node saw, is read in its new order, at
// once and by every read after.
func TestReadOfABoardMadeAgain(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	now := laureltest.NewClock("2026-11-22T10:00:00Z").Now
	a, b := store.Open(t, now), store.Open(t, now)
	write := func(node laurel.Service, order string) {
		putBoard(t, node, "x", laurel.BoardSpec{Order: &order, Windows: []string{"all", "day"}})
		submit(t, node,
			laurel.Event{Board: "x", Member: "m1", Value: 1},
			laurel.Event{Board: "x", Member: "m2", Value: 2},
			laurel.Event{Board: "x", Member: "m3", Value: 3})
	}
	read := func(want ...string) {
		t.Helper()
		for range 3 {
			for _, window := range []string{"all", "day"} {
				page, err := a.Page(ctx, laurel.Query{Board: "x", Window: window}, 0, 10, laurel.ScoreRange{})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, en := range page.Entries {
					got = append(got, en.Member)
					if want := int64(en.Member[1] - '0'); en.Score != want {
						t.Fatalf("%s: %s has %d, want %d", window, en.Member, en.Score, want)
					}
				}
				if len(got) != len(want) || got[0] != want[0] || got[2] != want[2] {
					t.Fatalf("%s: %v, want %v", window, got, want)
				}
			}
		}
	}
	stampOf := func() int64 {
		t.Helper()
		is, ok, err := store.Index.State(ctx, "x")
		if err != nil || !ok {
			t.Fatalf("the index's state of x: %v, %v", ok, err)
		}
		return is.Stamp
	}
	write(a, "desc")
	read("m3", "m2", "m1")
	stamp := stampOf()
	if err := b.DeleteBoard(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	write(b, "asc")
	if again := stampOf(); again != stamp {
		t.Fatalf("the board made again is at stamp %d, the first at %d: the test no longer reads a state of the same stamp", again, stamp)
	}
	read("m1", "m2", "m3")
	check(t, a)
}
