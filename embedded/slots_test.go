package embedded_test

import (
	"flag"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/laurel/laurel/embedded"
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
