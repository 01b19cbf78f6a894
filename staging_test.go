package laurel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// memAggs is laurel.Aggregates over a map, as a store of the tests' own.
type memAggs struct {
	b       *laurel.Board
	current []laurel.Span // per window: a rolling window's current span
	m       map[string]laurel.Agg
	times   map[string][]int64 // of the member's events, for the rate rule: the test adds them
}

func newMemAggs(b *laurel.Board, now int64) *memAggs {
	a := &memAggs{b: b, m: map[string]laurel.Agg{}}
	for _, w := range b.Windows {
		var sp laurel.Span
		if w.IsRolling() {
			s, e := b.Calendar().Span(w, time.UnixMilli(now))
			sp = laurel.Span{Start: s.UnixMilli(), End: e.UnixMilli()}
		}
		a.current = append(a.current, sp)
	}
	return a
}

func aggKey(w int, sp laurel.AggSpan, member string) string {
	return fmt.Sprintf("%d/%d/%v/%s", w, sp.Start, sp.Current, member)
}

func (a *memAggs) Window(w int) (laurel.Marks, laurel.Span) { return laurel.NoMarks, a.current[w] }

func (a *memAggs) Agg(_ context.Context, w int, sp laurel.AggSpan, member string) (laurel.Agg, error) {
	return a.m[aggKey(w, sp, member)], nil
}

func (a *memAggs) SetAgg(w int, sp laurel.AggSpan, member string, v laurel.Agg) error {
	if v.Present() {
		a.m[aggKey(w, sp, member)] = v
	} else {
		delete(a.m, aggKey(w, sp, member))
	}
	return nil
}

func (a *memAggs) CountEvents(_ context.Context, member string, from, to int64, _ int) (int, error) {
	n := 0
	for _, ts := range a.times[member] {
		if ts > from && ts <= to {
			n++
		}
	}
	return n, nil
}

type stagedEvent struct {
	member    string
	value, ts int64
	seq       uint64
}

// want is the model's aggregate of events, worked out from its definition.
func want(b *laurel.Board, events []stagedEvent) (score, at int64, present bool) {
	for i, ev := range events {
		switch {
		case i == 0:
			score, at = ev.value, ev.ts
		case b.Mode == laurel.Sum:
			score, at = score+ev.value, max(at, ev.ts)
		case b.Mode == laurel.Best && b.Order.Better(ev.value, score):
			score, at = ev.value, ev.ts
		case b.Mode == laurel.Best && ev.value == score:
			at = min(at, ev.ts)
		case b.Mode == laurel.Last && ev.ts >= at: // events come in arrival order
			score, at = ev.value, ev.ts
		}
	}
	return score, at, len(events) > 0
}

// TestStaging: events staged one by one, and some retracted, leave every aggregate of every
// window — periods, all, rolling buckets and rolling windows' current spans — as the model
// computes it from the events counted, in every mode and order, in zones with DST.
func TestStaging(t *testing.T) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 7))
	for round := range 300 {
		mode := []string{"sum", "best", "last"}[rng.IntN(3)]
		order := []string{"desc", "asc"}[rng.IntN(2)]
		zone := []string{"UTC", "America/New_York", "Australia/Lord_Howe"}[rng.IntN(3)]
		late := "40d"
		spec := laurel.BoardSpec{Mode: &mode, Order: &order, Timezone: &zone, LateLimit: &late,
			Windows: []string{"all", "day", "week", "last7d", "last3h"}}
		b, err := spec.Apply("b", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + rng.Int64N(330*24*3600*1000)
		aggs := newMemAggs(&b, now)
		var events []stagedEvent
		members := []string{"ann", "bob", "cy"}
		for i := range 5 + rng.IntN(40) {
			ev := stagedEvent{member: members[rng.IntN(len(members))], value: rng.Int64N(21) - 10,
				ts: now - rng.Int64N(12*24*3600*1000), seq: uint64(i + 1)}
			if rng.IntN(4) == 0 && len(events) > 0 { // ties in time
				ev.ts = events[rng.IntN(len(events))].ts
			}
			if _, err := laurel.StageEvent(ctx, &b, aggs, ev.member, ev.value, ev.ts, ev.seq, now); err != nil {
				t.Fatalf("round %d: stage %+v: %v", round, ev, err)
			}
			events = append(events, ev)
		}
		for range rng.IntN(4) {
			k := rng.IntN(len(events))
			gone := events[k]
			events = slices.Delete(events, k, k+1)
			var rest []laurel.Counted
			for _, ev := range events {
				if ev.member == gone.member {
					rest = append(rest, laurel.Counted{Value: ev.value, TS: ev.ts, Seq: ev.seq})
				}
			}
			if err := laurel.Recompute(&b, aggs, gone.member, gone.ts, rest, now); err != nil {
				t.Fatalf("round %d: retract %+v: %v", round, gone, err)
			}
		}
		// Every aggregate the model has must be there, and nothing else.
		cal := b.Calendar()
		expected := map[string]bool{}
		check := func(w int, sp laurel.AggSpan, member string, in func(ts int64) bool) {
			var mine []stagedEvent
			for _, ev := range events {
				if ev.member == member && in(ev.ts) {
					mine = append(mine, ev)
				}
			}
			score, at, present := want(&b, mine)
			got, _ := aggs.Agg(ctx, w, sp, member)
			if got.Present() != present || present && (got.Score != score || got.At != at) {
				t.Fatalf("round %d: %s %s window %s span %+v: got %+v, want %d at %d (present %v)\nevents %+v",
					round, mode, order, b.Windows[w], sp, got, score, at, present, events)
			}
			if present {
				expected[aggKey(w, sp, member)] = true
			}
		}
		for w, win := range b.Windows {
			for _, member := range members {
				for _, ev := range events {
					start, end := cal.SpanOf(win, ev.ts)
					check(w, laurel.AggSpan{Span: laurel.Span{Start: start, End: end}}, member, func(ts int64) bool {
						return win.Kind == laurel.WindowAll || ts >= start && ts < end
					})
				}
				if cur := aggs.current[w]; win.IsRolling() {
					check(w, laurel.AggSpan{Span: cur, Current: true}, member, func(ts int64) bool { return ts >= cur.Start && ts < cur.End })
				}
			}
		}
		if len(aggs.m) != len(expected) {
			t.Fatalf("round %d: %d aggregates held, the model has %d", round, len(aggs.m), len(expected))
		}
	}
}

// TestStagingClosed: an event in a closed period is too late, naming the window; erasing a
// member leaves closed periods alone and removes the rest.
func TestStagingClosed(t *testing.T) {
	ctx := t.Context()
	late := "1h"
	spec := laurel.BoardSpec{LateLimit: &late, Windows: []string{"all", "day", "last7d"}}
	b, err := spec.Apply("b", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := mustTime(t, "2026-11-24T12:00:00Z").UnixMilli()
	aggs := newMemAggs(&b, now)
	yesterday := mustTime(t, "2026-11-23T12:00:00Z").UnixMilli()
	_, err = laurel.StageEvent(ctx, &b, aggs, "ann", 5, yesterday, 1, now)
	var e *laurel.Error
	if !asError(err, &e) || e.Code != laurel.ETooLate || e.Field != "ts" || !strings.Contains(e.Message, "window day") {
		t.Fatalf("an event in a closed period: %v", err)
	}
	if _, err := laurel.StageEvent(ctx, &b, aggs, "ann", 5, now-1000, 2, now); err != nil {
		t.Fatal(err)
	}
	if len(aggs.m) != 4 { // all, the day, the bucket, the current span
		t.Fatalf("one event: %d aggregates, want 4: %v", len(aggs.m), aggs.m)
	}
	if err := laurel.Erase(&b, aggs, "ann", []int64{now - 1000, yesterday}, now); err != nil {
		t.Fatal(err)
	}
	if len(aggs.m) != 0 {
		t.Fatalf("after erasing: %v", aggs.m)
	}
}
