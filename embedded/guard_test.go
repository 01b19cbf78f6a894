package embedded_test

import (
	"context"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestGuard: each rule of a board's guard decides as its model, on one store.
//
//	go test ./embedded/ -run TestGuard -v -seed=N  # replay a failure
func TestGuard(t *testing.T) {
	laureltest.Guard(t, func(t testing.TB, now func() int64) []laurel.Service {
		target := laureltest.EmbeddedTarget(t)
		s, err := target.Open(t, now)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { target.Close(s) })
		return []laurel.Service{s}
	})
}

// TestGuardInDumps: a board's guard goes through a dump, and judges on the store it lands in.
func TestGuardInDumps(t *testing.T) {
	ctx := context.Background()
	now := func() int64 { return 1_795_000_000_000 }
	from, err := laureltest.EmbeddedTarget(t).Open(t, now)
	if err != nil {
		t.Fatal(err)
	}
	defer from.(*embedded.Store).Close()
	spec := laurel.BoardSpec{Mode: ptr("best"), Guard: &laurel.GuardSpec{Trusted: ptr(true),
		Jump: &laurel.GuardRuleSpec{Window: "all", Percent: ptr(int64(10))}}}
	if _, _, err := from.PutBoard(ctx, "laps", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := from.Submit(ctx, []laurel.Event{{Board: "laps", Member: "ada", Value: 100}}, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	to := laureltest.IntoEmbedded(t, from.(*embedded.Store), now)
	b, err := to.Board(ctx, "laps")
	if err != nil || b.Guard == nil || !b.Guard.Trusted || b.Guard.Jump == nil || b.Guard.Jump.Percent != 10 {
		t.Fatalf("the board after a dump: %+v, %v", b.Guard, err)
	}
	if _, err := to.Submit(ctx, []laurel.Event{{Board: "laps", Member: "ada", Value: 120}}, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EGuardRefused {
		t.Errorf("a jump after the dump: %v, want guard_refused", err)
	}
}

// TestReview: the review queue decides as its model, on one store.
func TestReview(t *testing.T) {
	laureltest.Review(t, func(t testing.TB, now func() int64) []laurel.Service {
		target := laureltest.EmbeddedTarget(t)
		s, err := target.Open(t, now)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { target.Close(s) })
		return []laurel.Service{s}
	})
}

// TestGuardRateInDumps: the rate rule judges on the times of the events in memory, which a
// store read from a dump holds as the store it came from did.
func TestGuardRateInDumps(t *testing.T) {
	ctx := context.Background()
	now := func() int64 { return 1_795_000_000_000 }
	from, err := laureltest.EmbeddedTarget(t).Open(t, now)
	if err != nil {
		t.Fatal(err)
	}
	defer from.(*embedded.Store).Close()
	spec := laurel.BoardSpec{Guard: &laurel.GuardSpec{Rate: &laurel.RateSpec{Max: ptr(int64(2)), Interval: "1m"}}}
	if _, _, err := from.PutBoard(ctx, "kills", spec); err != nil {
		t.Fatal(err)
	}
	two := []laurel.Event{{Board: "kills", Member: "ada", Value: 1}, {Board: "kills", Member: "ada", Value: 1}}
	if _, err := from.Submit(ctx, two, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	third := []laurel.Event{{Board: "kills", Member: "ada", Value: 1}}
	if _, err := from.Submit(ctx, third, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EGuardRefused || laurel.GuardRuleOf(err) != "rate" {
		t.Errorf("a third event in a minute: %v, want guard_refused by the rate rule", err)
	}
	to := laureltest.IntoEmbedded(t, from.(*embedded.Store), now)
	b, err := to.Board(ctx, "kills")
	if err != nil || b.Guard == nil || b.Guard.Rate == nil || b.Guard.Rate.Max != 2 {
		t.Fatalf("the board after a dump: %+v, %v", b.Guard, err)
	}
	if _, err := to.Submit(ctx, third, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EGuardRefused {
		t.Errorf("a third event after the dump: %v, want guard_refused", err)
	}
	// An import of an event older than late_limit is judged from the store: exact all the same.
	old := now() - 30*3_600_000
	imported := []laurel.Event{{Board: "kills", Member: "ada", Value: 1, TS: old, HasTS: true}, {Board: "kills", Member: "ada", Value: 1, TS: old + 1, HasTS: true}}
	if _, err := to.Submit(ctx, imported, laurel.SubmitOptions{Import: true}); err != nil {
		t.Fatal(err)
	}
	imported = []laurel.Event{{Board: "kills", Member: "ada", Value: 1, TS: old + 2, HasTS: true}}
	if _, err := to.Submit(ctx, imported, laurel.SubmitOptions{Import: true}); laurel.ErrorCode(err) != laurel.EGuardRefused {
		t.Errorf("a third imported event in a minute: %v, want guard_refused", err)
	}
}
