package laurel

import "time"

// Roll is how a rolling window's span moves to the instant now. The buckets in Leaving
// leave the window and those in Entering enter it (events may be up to five minutes ahead of
// the clock, so a bucket may hold data before it enters); when nothing of From remains
// (Whole), To is computed whole from its buckets instead.
type Roll struct {
	From, To          Span
	Leaving, Entering Span
	Whole             bool
}

// RollTo returns where the rolling window w, now over cur, moves at now; ok is false when
// it stays.
func (b *Board) RollTo(w Window, cur Span, now int64) (r Roll, ok bool) {
	s, e := b.Calendar().Span(w, time.UnixMilli(now))
	to := Span{s.UnixMilli(), e.UnixMilli()}
	if to == cur {
		return Roll{}, false
	}
	r = Roll{From: cur, To: to, Whole: to.Start >= cur.End || to.Start < cur.Start}
	if !r.Whole {
		r.Leaving, r.Entering = Span{cur.Start, to.Start}, Span{cur.End, to.End}
	}
	return r, true
}
