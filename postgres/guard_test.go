package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestGuard: each rule of a board's guard decides as its model, on three nodes over one
// store, and exactly under concurrent writes to one member through all of them.
//
//	go test ./postgres/ -run TestGuard -v -seed=N  # replay a failure
func TestGuard(t *testing.T) {
	laureltest.Guard(t, func(t testing.TB, now func() int64) []laurel.Service {
		s := laureltest.NewScaleOutStore(t)
		return []laurel.Service{s.Open(t, now), s.Open(t, now), s.Open(t, now)}
	})
}

// TestReview: the review queue decides as its model, each step through another of three
// nodes over one store.
func TestReview(t *testing.T) {
	laureltest.Review(t, func(t testing.TB, now func() int64) []laurel.Service {
		s := laureltest.NewScaleOutStore(t)
		return []laurel.Service{s.Open(t, now), s.Open(t, now), s.Open(t, now)}
	})
}

// TestHoldsInDumps: flags and the hidden marks of holds go through dumps between the stores,
// and resolve on the store they land in: a scale-out store's dump into an embedded store, and
// that one's back into a new scale-out store, where the held lap's confirmation leaves the
// board as if it never came.
func TestHoldsInDumps(t *testing.T) {
	ctx := context.Background()
	now := func() int64 { return 1_795_000_000_000 }
	from := laureltest.NewScaleOutStore(t).Open(t, now)
	spec := laurel.BoardSpec{Order: ptr("asc"), Mode: ptr("best"), Windows: []string{"all"},
		Guard: &laurel.GuardSpec{Jump: &laurel.GuardRuleSpec{Window: "all", Percent: ptr(int64(10)), Action: ptr("hold")}}}
	if _, _, err := from.PutBoard(ctx, "laps", spec); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []laurel.Event{{Board: "laps", Member: "ada", ID: "a1", Value: 60_000}, {Board: "laps", Member: "bob", ID: "b1", Value: 61_000},
		{Board: "laps", Member: "ada", ID: "a2", Value: 45_000}} {
		if _, err := from.Submit(ctx, []laurel.Event{ev}, laurel.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := laurel.ListFlags(ctx, from, laurel.FlagFilter{}, "", 10)
	if err != nil || len(want) != 1 {
		t.Fatalf("flags: %+v, %v", want, err)
	}
	emb := laureltest.IntoEmbedded(t, from, now)
	var dump bytes.Buffer
	if err := laureltest.Export(emb, &dump); err != nil {
		t.Fatal(err)
	}
	rd, err := laurel.NewDumpReader(&dump)
	if err != nil {
		t.Fatal(err)
	}
	to := laureltest.NewScaleOutStore(t).Open(t, now)
	if err := to.Import(ctx, rd, []string{"laps"}); err != nil {
		t.Fatal(err)
	}
	board := func(s laurel.Service, want string) {
		t.Helper()
		p, err := s.Page(ctx, laurel.Query{Board: "laps", Window: "all"}, 0, 10, laurel.ScoreRange{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range p.Entries {
			got = append(got, fmt.Sprintf("%s:%d", e.Member, e.Score))
		}
		if fmt.Sprint(got) != want {
			t.Errorf("the board: %v, want %s", got, want)
		}
	}
	for name, s := range map[string]laurel.FlagQueue{"embedded": emb, "scale-out": to} {
		got, err := laurel.ListFlags(ctx, s, laurel.FlagFilter{State: laurel.FlagOpen}, "", 10)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: flags %+v, %v; want %+v", name, got, err, want)
		}
		board(s.(laurel.Service), "[bob:61000]")
	}
	f, _, err := laurel.ResolveFlag(ctx, to, to, want[0].ID, laurel.Resolution{Action: "confirm"})
	if err != nil || f.State != laurel.FlagConfirmed {
		t.Fatalf("confirm after the dumps: %+v, %v", f, err)
	}
	if err := to.Unhide(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	board(to, "[ada:60000 bob:61000]")
}
