package laurel

import (
	"context"
	"encoding/json"
	"time"
)

// Staging turns an event, or the retraction of one, into the changes of a member's
// aggregates in every window of its board, the same way in every store. A store supplies
// the aggregates it holds through Aggregates, within one write; the rules below decide which
// aggregates an event touches and what they become.

// AggSpan names one aggregate of a member in a window: a calendar period's (Span is the
// period), all's (Span is {0, 0}), a rolling window's bucket (Span is the bucket), or the
// merge of a rolling window's buckets over its current span (Current; Span is that span).
type AggSpan struct {
	Span
	Current bool
}

// Aggregates is what a store holds of one board's aggregates, seen from inside a write: a
// read sees what the write has set before it. Windows are numbered as the board lists them.
type Aggregates interface {
	// Window returns what staging needs of window w at the write's instant: its marks (what
	// closed under an earlier late_limit) and, for a rolling window, its current span.
	Window(w int) (m Marks, current Span)
	// Agg returns the member's aggregate in sp of window w; the zero Agg when it has none.
	Agg(ctx context.Context, w int, sp AggSpan, member string) (Agg, error)
	// SetAgg sets the member's aggregate in sp of window w; an Agg not Present removes it.
	SetAgg(w int, sp AggSpan, member string, a Agg) error
	// CountEvents counts the member's counted events on the board at times in (from, to],
	// those the write staged before included, up to limit at least (it may stop there). The
	// rate rule asks it, of boards with one only.
	CountEvents(ctx context.Context, member string, from, to int64, limit int) (int, error)
}

// Counted is an event as it counts in aggregates: its value, time and arrival order, and its
// tag, which an aggregate it makes carries (Merge; TagOf finds the same among the events).
type Counted struct {
	Value int64
	Sub   int64
	TS    int64
	Seq   uint64
	Tag   json.RawMessage
}

// StageEvent is StageCounted for an event without a tag.
func StageEvent(ctx context.Context, b *Board, aggs Aggregates, member string, value, ts int64, seq uint64, now int64) (held string, err error) {
	return StageCounted(ctx, b, aggs, member, Counted{Value: value, TS: ts, Seq: seq}, now)
}

// StageCounted adds the member's event ev to every window of b at now:
// to its calendar period (ETooLate when that has closed) or all, and to its rolling bucket
// and, when the bucket lies in the window's current span, to that span's merge. The rules of
// the board's guard are judged on the span the event enters in their window: the period, all,
// the rolling span or, for an event before it, the bucket. An error names the window
// (WindowError) or the rule; the caller abandons the write. The rate rule is judged first, on
// the member's events (Aggregates.CountEvents). An event that breaks a rule whose
// action is hold is staged in every window all the same, and held names the rule: the caller
// hides its member and opens a flag in the same write (flags.go).
// The aggregates it sets carry ev's Seq and Tag where ev made them (Merge).
func StageCounted(ctx context.Context, b *Board, aggs Aggregates, member string, ev Counted, now int64) (held string, err error) {
	if b.Guard != nil {
		breach, rule, err := b.Guard.judgeRate(ctx, aggs, member, ev.TS)
		if err != nil {
			return "", err
		}
		if breach != nil {
			if rule.Action != Hold {
				return "", breach
			}
			held = "rate"
		}
	}
	cal := b.Calendar()
	value, ts, one := ev.Value, ev.TS, ev.Agg()
	// add adds the event to the member's aggregate in sp; judged: the span the event enters
	// in window w, where the rules of the board's guard in w are judged.
	add := func(w int, sp AggSpan, cur Agg, judged bool) error {
		next, err := Merge(b.Mode, b.Ordering(), cur, one)
		if err == nil && judged && b.Guard != nil {
			if breach, rule := b.Guard.judge(b, b.Windows[w], cur, next, value); breach != nil {
				if rule.Action != Hold {
					return breach
				}
				if held == "" {
					held = GuardRuleOf(breach)
				}
			}
		}
		if err == nil {
			err = aggs.SetAgg(w, sp, member, next)
		}
		return err
	}
	for i, w := range b.Windows {
		m, current := aggs.Window(i)
		start, end := cal.SpanOf(w, ts)
		bucket := AggSpan{Span: Span{start, end}}
		err := func() error {
			switch {
			case w.IsRolling():
				if !current.Holds(start, end) {
					cur, err := aggs.Agg(ctx, i, bucket, member)
					if err != nil {
						return err
					}
					return add(i, bucket, cur, true)
				}
				merged := AggSpan{Span: current, Current: true}
				combined, err := aggs.Agg(ctx, i, merged, member)
				if err != nil {
					return err
				}
				// A member absent from the current span has no event in any of its buckets.
				var cur Agg
				if combined.Present() {
					if cur, err = aggs.Agg(ctx, i, bucket, member); err != nil {
						return err
					}
				}
				if err := add(i, bucket, cur, false); err != nil {
					return err
				}
				return add(i, merged, combined, true)
			case w.IsCalendar() && m.PeriodClosed(b, bucket.Span, now):
				id := cal.PeriodAt(w, time.UnixMilli(ts)).ID
				return Errorf(ETooLate, "falls in period %s of window %s, which is closed", id, w)
			}
			cur, err := aggs.Agg(ctx, i, bucket, member)
			if err != nil {
				return err
			}
			return add(i, bucket, cur, true)
		}()
		if err != nil {
			return "", WindowError(err)
		}
	}
	return held, nil
}

// Recompute sets the member's aggregates in every window of b, in the spans that hold ts,
// from events: the member's counted events once the one at ts was retracted, in arrival
// order. Each is computed again from the events, so a retracted best falls back to the next
// best. Closed periods do not change.
func Recompute(b *Board, aggs Aggregates, member string, ts int64, events []Counted, now int64) error {
	cal := b.Calendar()
	for i, w := range b.Windows {
		m, current := aggs.Window(i)
		start, end := cal.SpanOf(w, ts)
		sp := Span{start, end}
		if w.IsCalendar() && m.PeriodClosed(b, sp, now) {
			continue
		}
		a, err := AggOf(b.Mode, b.Ordering(), events, sp)
		if err == nil {
			err = aggs.SetAgg(i, AggSpan{Span: sp}, member, a)
		}
		if err == nil && w.IsRolling() && current.Holds(start, end) {
			var c Agg
			if c, err = AggOf(b.Mode, b.Ordering(), events, current); err == nil {
				err = aggs.SetAgg(i, AggSpan{Span: current, Current: true}, member, c)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// AggOf aggregates the events whose time lies in sp (all's {0, 0}: every one), in arrival
// order, with the tag of the one that made it. Every event
// was accepted while the sums that held it fitted in an int64, but a part of such a sum need
// not (+max, −1 fits; +max alone after the −1 is retracted, plus more, may not): that is
// EInvalid.
func AggOf(m Mode, o Ordering, events []Counted, sp Span) (Agg, error) {
	var a Agg
	for _, ev := range events {
		if sp != (Span{}) && (ev.TS < sp.Start || ev.TS >= sp.End) {
			continue
		}
		n, err := Merge(m, o, a, ev.Agg())
		if err != nil {
			return a, err
		}
		a = n
	}
	return a, nil
}

// SpanAgg is one aggregate of a member in a window being built from its events.
type SpanAgg struct {
	AggSpan
	Agg    Agg
	Closed bool // a calendar period closed at the build's instant: the store freezes it
}

// BuildWindow computes a member's aggregates in window w, added to b at now, from its counted
// events: one per period or bucket its events fall in (Closed when a calendar period has
// closed by now under the window's marks m), and for a rolling window the merge over its
// current span when the member is present there.
func BuildWindow(b *Board, w Window, m Marks, current Span, events []Counted, now int64) ([]SpanAgg, error) {
	cal := b.Calendar()
	var out []SpanAgg
	seen := make(map[int64]bool)
	for _, ev := range events {
		start, end := cal.SpanOf(w, ev.TS)
		if seen[start] {
			continue
		}
		seen[start] = true
		sp := Span{start, end}
		a, err := AggOf(b.Mode, b.Ordering(), events, sp)
		if err != nil {
			return nil, err
		}
		out = append(out, SpanAgg{AggSpan: AggSpan{Span: sp}, Agg: a, Closed: w.IsCalendar() && m.PeriodClosed(b, sp, now)})
	}
	if w.IsRolling() {
		c, err := AggOf(b.Mode, b.Ordering(), events, current)
		if err != nil {
			return nil, err
		}
		if c.Present() {
			out = append(out, SpanAgg{AggSpan: AggSpan{Span: current, Current: true}, Agg: c})
		}
	}
	return out, nil
}

// Erase removes the member's aggregates from every window of b at now, in the spans that
// hold the times of its events, and from rolling windows' current spans: a member deleted.
// Closed periods keep theirs; the store leaves the member out of them as it reads them.
func Erase(b *Board, aggs Aggregates, member string, times []int64, now int64) error {
	cal := b.Calendar()
	for i, w := range b.Windows {
		m, current := aggs.Window(i)
		for _, ts := range times {
			start, end := cal.SpanOf(w, ts)
			sp := Span{start, end}
			if w.IsCalendar() && m.PeriodClosed(b, sp, now) {
				continue
			}
			if err := aggs.SetAgg(i, AggSpan{Span: sp}, member, Agg{}); err != nil {
				return err
			}
		}
		if w.IsRolling() {
			if err := aggs.SetAgg(i, AggSpan{Span: current, Current: true}, member, Agg{}); err != nil {
				return err
			}
		}
	}
	return nil
}
