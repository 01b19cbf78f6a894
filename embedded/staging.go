package embedded

import (
	"context"

	"github.com/laurel/laurel"
)

// staged is a board's aggregates as a write sees them (laurel.Aggregates): the writer's
// overlay over the store, its cache, and the rolling windows' slots in memory. The domain's
// staging names one member some dozen times an event: staged finds its handle once.
type staged struct {
	tx     *txn
	b      *board
	member string // whose handle h is, when known
	h      uint32
	known  bool
}

// newStaged returns tx's staged, for b: one an operation, not one an event.
func newStaged(tx *txn, b *board) *staged {
	tx.aggs = staged{tx: tx, b: b}
	return &tx.aggs
}

// handle is txn.handle, remembered for the member the domain names next.
func (s *staged) handle(member string, create bool) (uint32, bool) {
	if s.known && member == s.member {
		return s.h, true
	}
	h, ok := s.tx.handle(s.b, member, create)
	if ok {
		s.member, s.h, s.known = member, h, true
	}
	return h, ok
}

func (s *staged) Window(i int) (laurel.Marks, laurel.Span) {
	w := s.b.windows[i]
	if w.w.IsRolling() {
		return w.marks, w.open[0].Bounds()
	}
	return w.marks, laurel.Span{}
}

func (s *staged) Agg(_ context.Context, i int, sp laurel.AggSpan, member string) (laurel.Agg, error) {
	w := s.b.windows[i]
	h, known := s.handle(member, false)
	if w.w.IsRolling() && !sp.Current {
		a, ok, err := s.tx.bucketGet(s.b, w, sp.Start, h, known, member)
		return toAgg(a, ok), err
	}
	if !known {
		return laurel.Agg{}, nil
	}
	v, ok := s.tx.entryGet(w, sp.Start, h)
	return toAgg(aggregate(v), ok), nil
}

func (s *staged) SetAgg(i int, sp laurel.AggSpan, member string, a laurel.Agg) error {
	w := s.b.windows[i]
	h, known := s.handle(member, a.Present())
	switch {
	case known:
	case w.w.IsRolling() && !sp.Current: // an older bucket's, in the store alone
		s.tx.setAgg(aggKey(s.b.cfg.ID, w.name, sp.Start, member), aggregate{}, false, 0)
		return nil
	default:
		return nil // nothing to remove
	}
	if w.w.IsRolling() && !sp.Current {
		s.tx.bucketSet(s.b, w, sp.Start, h, member, fromAgg(a), a.Present())
		return nil
	}
	s.tx.entrySet(s.b, w, sp.Start, sp.End, h, member, a)
	return nil
}

func (s *staged) CountEvents(_ context.Context, member string, from, to int64, _ int) (int, error) {
	return s.countEvents(member, from, to)
}

func toAgg(a aggregate, present bool) laurel.Agg {
	if !present {
		return laurel.Agg{}
	}
	return laurel.Agg{Score: a.score, Sub: a.sub, At: a.at, Count: 1}
}

func fromAgg(a laurel.Agg) aggregate { return aggregate{score: a.Score, at: a.At, sub: a.Sub} }

// key returns the aggregate's place in its ranking.
func (a aggregate) key() laurel.Key { return laurel.Key{Score: a.score, Sub: a.sub, At: a.at} }

// counted returns events as they count in aggregates.
func counted(events []storedEvent) []laurel.Counted {
	out := make([]laurel.Counted, len(events))
	for i, ev := range events {
		out[i] = laurel.Counted{Value: ev.value, Sub: ev.sub, TS: ev.ts, Seq: ev.seq, Tag: tagJSON(ev.tag)}
	}
	return out
}
