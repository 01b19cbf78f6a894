package laurel_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

type event struct {
	value, sub, ts int64
	seq            uint64
}

// aggregateByDefinition computes docs/design.md's aggregate of events directly from the text.
func aggregateByDefinition(m laurel.Mode, o laurel.Ordering, events []event) laurel.Agg {
	if len(events) == 0 {
		return laurel.Agg{}
	}
	a := laurel.Agg{Count: int64(len(events))}
	switch m {
	case laurel.Sum:
		// the sums of the values and of the subscores; reached_at is the latest ts among
		// the counted events
		a.At = math.MinInt64
		for _, e := range events {
			a.Score += e.value
			a.Sub += e.sub
			a.At = max(a.At, e.ts)
		}
	case laurel.Best:
		// the best (value, subscore) pair: the better value, of equal values the better
		// subscore; reached_at is the ts of the earliest event that has it
		best, bestSub := events[0].value, events[0].sub
		for _, e := range events {
			if o.Score.Better(e.value, best) || e.value == best && o.Sub.Better(e.sub, bestSub) {
				best, bestSub = e.value, e.sub
			}
		}
		a.Score, a.Sub, a.At = best, bestSub, math.MaxInt64
		for _, e := range events {
			if e.value == best && e.sub == bestSub {
				a.At = min(a.At, e.ts)
			}
		}
	case laurel.Last:
		// the value of the event with the latest ts; ties: the later arrival
		last := events[0]
		for _, e := range events {
			if e.ts > last.ts || e.ts == last.ts && e.seq > last.seq {
				last = e
			}
		}
		a.Score, a.Sub, a.At, a.Seq = last.value, last.sub, last.ts, last.seq
	}
	return a
}

// TestAggregateAgainstDefinition folds random events in arrival order with Add, and merges
// random partitions of them with Merge, and compares both with the definition; tagged, the
// same with Merge, and their tags with TagOf's among the events. Boards with a subscore of
// either order and without one (every subscore 0) alike.
func TestAggregateAgainstDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 0))
	var orderings []laurel.Ordering
	for _, o := range []laurel.Order{laurel.Desc, laurel.Asc} {
		orderings = append(orderings, laurel.Ordering{Score: o},
			laurel.Ordering{Score: o, Sub: laurel.Desc, HasSub: true}, laurel.Ordering{Score: o, Sub: laurel.Asc, HasSub: true})
	}
	for _, m := range []laurel.Mode{laurel.Sum, laurel.Best, laurel.Last} {
		for _, o := range orderings {
			for range 2000 {
				events := make([]event, rng.IntN(8))
				for i := range events {
					events[i] = event{value: int64(rng.IntN(7) - 3), ts: int64(rng.IntN(5)), seq: uint64(i + 1)}
					if o.HasSub {
						events[i].sub = int64(rng.IntN(5) - 2)
					}
				}
				want := aggregateByDefinition(m, o, events)

				tagged := rng.IntN(2) == 0
				var counted []laurel.Counted
				var folded laurel.Agg
				var parts [3]laurel.Agg
				for _, e := range events {
					c := laurel.Counted{Value: e.value, Sub: e.sub, TS: e.ts, Seq: e.seq}
					if rng.IntN(3) > 0 {
						c.Tag = json.RawMessage(fmt.Sprintf(`"t%d"`, e.seq))
					}
					counted = append(counted, c)
					var err error
					p := rng.IntN(3)
					if tagged {
						folded, err = laurel.Merge(m, o, folded, c.Agg())
						if err == nil {
							parts[p], err = laurel.Merge(m, o, parts[p], c.Agg())
						}
					} else {
						folded, err = laurel.Add(m, o, folded, e.value, e.sub, e.ts, e.seq)
						if err == nil {
							parts[p], err = laurel.Add(m, o, parts[p], e.value, e.sub, e.ts, e.seq)
						}
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				merged, err := laurel.Merge(m, o, parts[2], parts[0])
				if err == nil {
					merged, err = laurel.Merge(m, o, merged, parts[1])
				}
				if err != nil {
					t.Fatal(err)
				}
				if !sameAgg(m, folded, want) || !sameAgg(m, merged, want) {
					t.Fatalf("%v %v of %v: folded %+v, merged %+v, want %+v", m, o, events, folded, merged, want)
				}
				if tagged {
					tag := string(laurel.TagOf(m, laurel.Key{Score: want.Score, Sub: want.Sub, At: want.At}, counted))
					if folded.Tag != tag || merged.Tag != tag {
						t.Fatalf("%v %v of %+v: tags folded %q, merged %q, want %q", m, o, counted, folded.Tag, merged.Tag, tag)
					}
				}
			}
		}
	}
}

// sameAgg compares what the mode defines: Seq matters only for Last; tags are compared apart.
func sameAgg(m laurel.Mode, a, b laurel.Agg) bool {
	if m != laurel.Last {
		a.Seq, b.Seq = 0, 0
	}
	a.Tag, b.Tag = "", ""
	return a == b
}

func TestSumOverflowIsRejected(t *testing.T) {
	desc := laurel.Ordering{Score: laurel.Desc, Sub: laurel.Desc, HasSub: true}
	a, err := laurel.Add(laurel.Sum, desc, laurel.Agg{}, math.MaxInt64-1, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{2, math.MaxInt64} {
		got, err := laurel.Add(laurel.Sum, desc, a, v, 0, 2, 2)
		if laurel.ErrorCode(err) != laurel.EInvalid || got != a {
			t.Fatalf("adding %d to %d: %+v, %v; want invalid_argument and no change", v, a.Score, got, err)
		}
	}
	b, _ := laurel.Add(laurel.Sum, desc, laurel.Agg{}, math.MinInt64, 0, 1, 1)
	if _, err := laurel.Add(laurel.Sum, desc, b, -1, 0, 2, 2); laurel.ErrorCode(err) != laurel.EInvalid {
		t.Fatalf("underflow: %v, want invalid_argument", err)
	}
	if got, err := laurel.Add(laurel.Sum, desc, a, 1, 0, 2, 2); err != nil || got.Score != math.MaxInt64 {
		t.Fatalf("reaching MaxInt64 exactly: %+v, %v", got, err)
	}
	// The subscores add up as the scores do: their overflow is refused alike.
	c, _ := laurel.Add(laurel.Sum, desc, laurel.Agg{}, 1, math.MaxInt64, 1, 1)
	if got, err := laurel.Add(laurel.Sum, desc, c, 1, 1, 2, 2); laurel.ErrorCode(err) != laurel.EInvalid || got != c {
		t.Fatalf("subscore overflow: %+v, %v; want invalid_argument and no change", got, err)
	}
}
