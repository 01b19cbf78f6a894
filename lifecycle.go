package laurel

import (
	"math"
	"time"
)

// NoTime stands for an instant that is not set.
const NoTime = math.MinInt64

// Marks record what a calendar window closed and dropped under an earlier, shorter late_limit
// or smaller keep, so that a closed period stays closed and a dropped one stays dropped when
// either grows again (docs/design.md: closed periods never change). The zero Marks is not
// valid; NoMarks is a window's before any change.
type Marks struct {
	ClosedThrough int64 `json:"closed_through"` // the start of the newest period closed so; NoTime if none
	DroppedBefore int64 `json:"dropped_before"` // every period starting before it was dropped so; NoTime if none
}

// NoMarks are the marks of a window whose board never changed late_limit or keep.
var NoMarks = Marks{NoTime, NoTime}

// NewestClosed returns the newest period of the calendar window w of b closed at now: the
// one that ended late_limit ago or earlier, or one closed under an earlier late_limit.
func (m Marks) NewestClosed(b *Board, w Window, now int64) Period {
	cal := b.Calendar()
	p := cal.PrevPeriod(w, cal.PeriodAt(w, time.UnixMilli(now-b.LateLimit.Milliseconds())))
	if m.ClosedThrough != NoTime && m.ClosedThrough > p.Start.UnixMilli() {
		p = cal.PeriodAt(w, time.UnixMilli(m.ClosedThrough))
	}
	return p
}

// IsClosed reports whether the period of w starting at start has closed by now.
func (m Marks) IsClosed(b *Board, w Window, start, now int64) bool {
	return start <= m.NewestClosed(b, w, now).Start.UnixMilli()
}

// KeptFrom returns the start of the oldest period of the calendar window w that is still
// kept at now: a closed period stays readable until more than keep newer periods have closed,
// so the newest closed period and keep before it are kept, whether they held data or not; or
// later, when a smaller keep or late_limit dropped more before.
func (m Marks) KeptFrom(b *Board, w Window, now int64) int64 {
	cal := b.Calendar()
	p := m.NewestClosed(b, w, now)
	for range b.Keep {
		p = cal.PrevPeriod(w, p)
	}
	return max(p.Start.UnixMilli(), m.DroppedBefore)
}

// DropTime returns when the closed period of w starting at oldest is dropped: once keep+1
// newer periods have closed. A time long past means now.
func (m Marks) DropTime(b *Board, w Window, oldest int64) int64 {
	cal := b.Calendar()
	p := cal.PeriodAt(w, time.UnixMilli(oldest))
	for range b.Keep + 1 {
		p = cal.NextPeriod(w, p)
	}
	if m.ClosedThrough != NoTime && p.Start.UnixMilli() <= m.ClosedThrough {
		return math.MinInt64 + 1 // closed already: due now
	}
	return p.End.UnixMilli() + b.LateLimit.Milliseconds()
}

// After returns the marks of w once b's late_limit or keep changes at now: what is closed or
// dropped then stays so.
func (m Marks) After(b *Board, w Window, now int64) Marks {
	return Marks{m.NewestClosed(b, w, now).Start.UnixMilli(), m.KeptFrom(b, w, now)}
}

// A store keeps, for each window of a board, what it needs of that window's spans: a
// calendar window's open periods that hold data (oldest first) and its kept closed periods
// (newest first), all's one span, a rolling window's current span. The functions below
// decide, from those and the board's configuration, what closes, what is kept and what
// dropped, and when the board next has work; where a rolling window moves is rolling.go's,
// and which source answers a read plan.go's. Stores do the I/O; they never compare end,
// late_limit and now themselves.

// Span is a window's span [Start, End) in unix ms: a calendar period, a rolling window's
// span or bucket; all's span is {0, 0}.
type Span struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Bounds returns the span itself: a Span is Spanned.
func (s Span) Bounds() Span { return s }

// Holds reports whether s contains the span [start, end).
func (s Span) Holds(start, end int64) bool { return start >= s.Start && end <= s.End }

// Spanned is what a store keeps of one span (its ranking, its frozen period): the lifecycle
// only needs its bounds.
type Spanned interface{ Bounds() Span }

// PeriodClosed reports whether the period p of a calendar window of b has closed at now:
// late_limit after its end, or under an earlier late_limit that closed through it.
func (m Marks) PeriodClosed(b *Board, p Span, now int64) bool {
	return p.End+b.LateLimit.Milliseconds() <= now || m.ClosedThrough != NoTime && p.Start <= m.ClosedThrough
}

// Closing returns how many of open, a calendar window's open periods oldest first, have
// closed at now: the store freezes them with their ranks and stops taking events in them.
func Closing[S Spanned](b *Board, m Marks, open []S, now int64) int {
	n := 0
	for n < len(open) && m.PeriodClosed(b, open[n].Bounds(), now) {
		n++
	}
	return n
}

// Kept returns how many of closed, a calendar window's closed periods newest first, are
// still kept at now under marks m, and when the oldest of those is dropped (NoTime when none
// is): the store deletes closed[n:].
func Kept[S Spanned](b *Board, w Window, m Marks, closed []S, now int64) (n int, dropAt int64) {
	from := m.KeptFrom(b, w, now)
	for n < len(closed) && closed[n].Bounds().Start >= from {
		n++
	}
	if n == 0 {
		return 0, NoTime
	}
	return n, m.DropTime(b, w, closed[n-1].Bounds().Start)
}

// Deadline returns when a window next has work, given the oldest of its open spans (ok
// false: none) and when its oldest kept closed period is dropped: a calendar period
// closing, a rolling window's oldest bucket leaving, a closed period dropped. NoTime: never.
func Deadline(b *Board, w Window, oldest Span, ok bool, dropAt int64) int64 {
	t := int64(NoTime)
	switch {
	case ok && w.IsCalendar():
		t = oldest.End + b.LateLimit.Milliseconds()
	case ok && w.IsRolling():
		t = oldest.End
	}
	return Earliest(t, dropAt)
}

// Earliest returns the earliest of instants, NoTime standing for none.
func Earliest(ts ...int64) int64 {
	d := int64(NoTime)
	for _, t := range ts {
		if t != NoTime && (d == NoTime || t < d) {
			d = t
		}
	}
	return d
}

// Due reports whether a deadline (NoTime: none) has come at now.
func Due(deadline, now int64) bool { return deadline != NoTime && deadline <= now }
