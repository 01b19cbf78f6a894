package embedded

import "github.com/laurel/laurel"

// staged is a board's aggregates as a write sees them (laurel.Aggregates): the writer's
// overlay over the store, its cache, and the rolling windows' slots in memory.
type staged struct {
	tx *txn
	b  *board
}

func (s staged) Window(i int) (laurel.Marks, laurel.Span) {
	w := s.b.windows[i]
	if w.w.IsRolling() {
		return w.marks, w.open[0].Bounds()
	}
	return w.marks, laurel.Span{}
}

func (s staged) Agg(i int, sp laurel.AggSpan, member string) (laurel.Agg, error) {
	w := s.b.windows[i]
	if w.w.IsRolling() && !sp.Current {
		a, ok, err := s.tx.bucketGet(s.b, w, sp.Start, member)
		return toAgg(a, ok), err
	}
	v, ok := s.tx.entryGet(s.b, w, sp.Start, member)
	return toAgg(aggregate(v), ok), nil
}

func (s staged) SetAgg(i int, sp laurel.AggSpan, member string, a laurel.Agg) error {
	w := s.b.windows[i]
	if w.w.IsRolling() && !sp.Current {
		s.tx.bucketSet(s.b, w, sp.Start, member, fromAgg(a), a.Present())
		return nil
	}
	s.tx.entrySet(s.b, w, sp.Start, sp.End, member, slot(fromAgg(a)), a.Present())
	return nil
}

func toAgg(a aggregate, present bool) laurel.Agg {
	if !present {
		return laurel.Agg{}
	}
	return laurel.Agg{Score: a.score, At: a.at, Count: 1}
}

func fromAgg(a laurel.Agg) aggregate { return aggregate{a.Score, a.At} }

// counted returns events as they count in aggregates.
func counted(events []storedEvent) []laurel.Counted {
	out := make([]laurel.Counted, len(events))
	for i, ev := range events {
		out[i] = laurel.Counted{Value: ev.value, TS: ev.ts, Seq: ev.seq}
	}
	return out
}
