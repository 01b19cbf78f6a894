package laurel

import (
	"math"
	"time"
)

// NoTime stands for an instant that is not set.
const NoTime = math.MinInt64

// Marks record what a calendar window closed and dropped under an earlier, shorter late_limit
// or smaller keep, so that a closed period stays closed and a dropped one stays dropped when
// either grows again (DESIGN.md §1: closed periods never change). The zero Marks is not
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
