package embedded_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

var slotsSeed = flag.Uint64("slots-seed", 0, "seed of TestSlots (0: from the clock)")

// TestSlots: a span's aggregates by handle give back every score and time set, through the
// switch from a map to chunks, a chunk's base moved as times drift, and its widening once
// its times spread over more than 32 bits of milliseconds; scores and times at the ends of
// int64 included. A span whose times stay within a few weeks keeps every chunk narrow (12
// bytes an entry, the memory budget's reason for them).
func TestSlots(t *testing.T) {
	seed := *slotsSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-slots-seed to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	const handles = 20000
	s := embedded.NewSlots()
	model := map[uint32][2]int64{}
	t.Cleanup(func() { checkSlots(t, s, model) })
	set := func(h uint32, score, at int64) {
		s.Set(h, score, at, handles)
		model[h] = [2]int64{score, at}
	}
	day := int64(24 * time.Hour / time.Millisecond)
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC).UnixMilli()

	// Times within a day, then drifting forward a day at a time for ten weeks: some events
	// late by up to a day, as a rolling window's or a day's spans see them.
	for d := range int64(70) {
		for range 3000 {
			h := uint32(rng.IntN(handles))
			if rng.IntN(10) == 0 {
				s.Del(h)
				delete(model, h)
				continue
			}
			set(h, rng.Int64N(1e6)-5e5, t0+d*day+rng.Int64N(2*day)-day)
		}
		if d == 0 {
			checkSlots(t, s, model)
		}
		// Old times leave as a rolling window moves: every member last seen more than a week
		// ago is dropped.
		for h, v := range model {
			if v[1] < t0+(d-7)*day {
				s.Del(h)
				delete(model, h)
			}
		}
	}
	checkSlots(t, s, model)
	if narrow, wide := s.Chunks(); wide != 0 || narrow == 0 {
		t.Fatalf("times within a week of each other: %d narrow chunks, %d wide; want all narrow", narrow, wide)
	}

	// Times spread wide: years apart, and the ends of int64.
	far := []int64{math.MinInt64 + 1, math.MaxInt64, 0, -1, t0 - 400*day, t0 + 400*day}
	scores := []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}
	for range 2000 {
		h := uint32(rng.IntN(handles))
		set(h, scores[rng.IntN(len(scores))], far[rng.IntN(len(far))])
	}
	checkSlots(t, s, model)
	if _, wide := s.Chunks(); wide == 0 {
		t.Fatal("times years apart: no chunk turned wide")
	}

	// A clone holds the same entries and shares none with the original.
	c := s.Clone()
	checkSlots(t, c, model)
	for h := range uint32(handles) {
		c.Del(h)
	}
	if c.Len() != 0 {
		t.Fatalf("clone emptied: %d entries left", c.Len())
	}
	checkSlots(t, s, model)
}

func checkSlots(t *testing.T, s embedded.Slots, model map[uint32][2]int64) {
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("%d entries, want %d", s.Len(), len(model))
	}
	for h, want := range model {
		score, at, ok := s.Get(h)
		if !ok || score != want[0] || at != want[1] {
			t.Fatalf("handle %d: (%d, %d, %v), want (%d, %d)", h, score, at, ok, want[0], want[1])
		}
	}
	seen := 0
	s.Each(func(h uint32, score, at int64) {
		seen++
		if want, ok := model[h]; !ok || want != [2]int64{score, at} {
			t.Fatalf("each: handle %d (%d, %d), want %v (present %v)", h, score, at, want, ok)
		}
	})
	if seen != len(model) {
		t.Fatalf("each gave %d entries, want %d", seen, len(model))
	}
}

// TestDenseSpansOverMonths: a board of 5000 members, each ranked in spans held in chunks,
// written to 600 times a day for 100 days. Every window's scores and reached_at stay exact, live
// and after a restart: all's chunks, whose times come to spread over more than 49 days,
// turn wide; a month's stay narrow, their bases moved as the month goes on.
func TestDenseSpansOverMonths(t *testing.T) {
	c := laureltest.NewClock("2026-01-01T12:00:00Z")
	dir := t.TempDir()
	e := testStoreWith(t, dir, embedded.Options{Now: c.Now})
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "month", "last7d"}})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	type point struct{ ts, value int64 }
	const members = 5000
	history := make([][]point, members) // each member's events, in order
	names := make([]string, members)
	for m := range names {
		names[m] = fmt.Sprintf("m%04d", m)
	}
	send := func(evs []laurel.Event) {
		for len(evs) > 0 {
			n := min(len(evs), 500)
			submit(t, e, evs[:n]...)
			evs = evs[n:]
		}
	}
	var evs []laurel.Event
	for m := range members {
		evs = append(evs, laurel.Event{Board: "b", Member: names[m], Value: 1, TS: c.Now(), HasTS: true})
		history[m] = append(history[m], point{c.Now(), 1})
	}
	send(evs)

	// want gives each member's score and reached_at over the events in [from, to).
	want := func(from, to int64) map[string][2]int64 {
		out := map[string][2]int64{}
		for m, h := range history {
			var score, at int64
			seen := false
			for _, p := range h {
				if p.ts >= from && p.ts < to {
					score, at, seen = score+p.value, p.ts, true
				}
			}
			if seen {
				out[names[m]] = [2]int64{score, at}
			}
		}
		return out
	}
	day := int64(24 * time.Hour / time.Millisecond)
	check := func(when string) {
		t.Helper()
		now := c.Now()
		month := time.UnixMilli(now).UTC()
		monthStart := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC).UnixMilli()
		dayStart := now - now%day
		for window, w := range map[string]map[string][2]int64{
			"all":    want(math.MinInt64, math.MaxInt64),
			"month":  want(monthStart, math.MaxInt64),
			"last7d": want(dayStart-6*day, math.MaxInt64),
		} {
			var entries []laurel.Entry
			for offset := 0; offset <= members; offset += 1000 {
				page, err := e.Page(context.Background(), laurel.Query{Board: "b", Window: window}, offset, 1000, laurel.ScoreRange{})
				if err != nil {
					t.Fatal(err)
				}
				entries = append(entries, page.Entries...)
			}
			if len(entries) != len(w) {
				t.Fatalf("%s, %s: %d entries, want %d", when, window, len(entries), len(w))
			}
			for _, en := range entries {
				if got := [2]int64{en.Score, en.ReachedAt}; got != w[en.Member] {
					t.Fatalf("%s, %s: %s has (score, reached_at) %v, want %v", when, window, en.Member, got, w[en.Member])
				}
			}
		}
	}

	for d := 1; d <= 100; d++ {
		c.Advance(24 * time.Hour)
		evs = evs[:0]
		for k := range 600 {
			m := rng.IntN(members)
			ts := c.Now() - 12*int64(time.Hour/time.Millisecond) + int64(k)*1000 // in order, within the day
			v := int64(1 + rng.IntN(5))
			evs = append(evs, laurel.Event{Board: "b", Member: names[m], Value: v, TS: ts, HasTS: true})
			history[m] = append(history[m], point{ts, v})
		}
		send(evs)
		if d%25 == 0 {
			check(fmt.Sprintf("day %d", d))
		}
		if d == 58 { // February's last day: its span holds most members, its times 27 days apart
			if narrow, wide := e.SpanChunks("b", "month"); wide != 0 || narrow == 0 {
				t.Errorf("February's chunks: %d narrow, %d wide; want all narrow", narrow, wide)
			}
		}
	}
	if _, wide := e.SpanChunks("b", "all"); wide == 0 {
		t.Error("all's times spread over 100 days, and no chunk of it is wide")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = testStoreWith(t, dir, embedded.Options{Now: c.Now})
	check("after a restart")
}

// TestSlotSubscores: subscores are kept beside the aggregates only once one is not 0, and
// come back with them through the switch from a map to chunks, deletions, entries set again
// with 0, and a clone.
func TestSlotSubscores(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 7))
	const handles = 20000
	s := embedded.NewSlots()
	for h := range uint32(5000) {
		s.Set(h, int64(h), 1, handles)
	}
	if s.KeepsSubs() {
		t.Fatal("slots without a subscore made room for subscores")
	}
	model := map[uint32][3]int64{}
	for h := range uint32(5000) {
		model[h] = [3]int64{int64(h), 0, 1}
	}
	check := func(s embedded.Slots, when string) {
		t.Helper()
		if s.Len() != len(model) {
			t.Fatalf("%s: %d entries, want %d", when, s.Len(), len(model))
		}
		for h, want := range model {
			score, sub, at, ok := s.GetSub(h)
			if !ok || [3]int64{score, sub, at} != want {
				t.Fatalf("%s: handle %d: (%d, %d, %d, %v), want %v", when, h, score, sub, at, ok, want)
			}
		}
		n := 0
		s.EachSub(func(h uint32, sub int64) {
			n++
			if sub != model[h][1] {
				t.Fatalf("%s: each: handle %d subscore %d, want %d", when, h, sub, model[h][1])
			}
		})
		if n != len(model) {
			t.Fatalf("%s: each gave %d entries, want %d", when, n, len(model))
		}
	}
	for i := range 40000 {
		h := uint32(rng.IntN(handles))
		switch r := rng.IntN(10); {
		case r == 0:
			s.Del(h)
			delete(model, h)
		default:
			sub := int64(0)
			if r > 3 {
				sub = rng.Int64() >> rng.IntN(64)
			}
			score, at := rng.Int64N(100), int64(1_800_000_000_000+i)
			s.SetSub(h, score, sub, at, handles)
			model[h] = [3]int64{score, sub, at}
		}
		if i == 100 || i == 10000 {
			check(s, fmt.Sprintf("step %d", i))
		}
	}
	check(s, "the end")
	c := s.Clone()
	check(c, "a clone")
	for h := range uint32(handles) {
		c.Del(h)
	}
	check(s, "the original after its clone was emptied")
}
