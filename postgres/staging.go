package postgres

import (
	"context"

	"github.com/laurel/laurel"
)

// staged is a board's aggregates as a step sees them (laurel.Aggregates): the rows the step
// has read or written, over the database.
type staged struct {
	s *step
	b *boardStep
}

func (a staged) Window(i int) (laurel.Marks, laurel.Span) {
	ws := &a.b.st.Windows[i]
	if ws.w.IsRolling() {
		return ws.Marks, ws.Open[0]
	}
	return ws.Marks, laurel.Span{}
}

// key is where the step keeps an aggregate: a rolling window's merge over its current span
// under currentSpan, the others under their span's start.
func (a staged) key(i int, sp laurel.AggSpan, member string) aggKey {
	name := a.b.st.Windows[i].Name
	if sp.Current {
		return aggKey{name, currentSpan, member}
	}
	return aggKey{name, sp.Start, member}
}

func (a staged) Agg(ctx context.Context, i int, sp laurel.AggSpan, member string) (laurel.Agg, error) {
	v, err := a.s.get(ctx, a.b, a.key(i, sp, member))
	return v.agg(), err
}

func (a staged) SetAgg(i int, sp laurel.AggSpan, member string, agg laurel.Agg) error {
	if ws := &a.b.st.Windows[i]; ws.w.IsCalendar() && agg.Present() {
		if err := a.b.open(ws, sp.Start, sp.End); err != nil {
			return err
		}
	}
	a.b.set(a.key(i, sp, member), valOf(agg))
	return nil
}

func (a staged) CountEvents(ctx context.Context, member string, from, to int64, _ int) (int, error) {
	return a.s.countEvents(ctx, a.b, member, from, to)
}

// counted returns events as they count in aggregates.
func counted(events []storedEvent) []laurel.Counted {
	out := make([]laurel.Counted, len(events))
	for i, ev := range events {
		out[i] = laurel.Counted{Value: ev.value, Sub: ev.sub, TS: ev.ts, Seq: uint64(ev.seq)}
	}
	return out
}
