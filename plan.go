package laurel

import (
	"cmp"
	"slices"
)

// Source names what answers a read.
type Source uint8

const (
	// FromOpen: the store's ranking of an open span: all's, a rolling window's current
	// span, or the calendar period with data that starts at ReadPlan.Period.Start.
	FromOpen Source = iota
	// FromClosed: the closed period ReadPlan.Closed of the window, as frozen.
	FromClosed
	// FromBuckets: a rolling window at another instant than its current span, merged from
	// its buckets over ReadPlan.Period's span.
	FromBuckets
	// FromNothing: a period that holds no data: an empty ranking.
	FromNothing
)

// ReadPlan is how a store answers a read: from which source, and with which period (its
// Closed set, its Total left to the source).
type ReadPlan struct {
	Source Source
	Closed int // the index of the closed period, for FromClosed
	Period PeriodInfo
}

// Plan decides how a store answers the read res at now, from what it keeps of the window:
// open, its open spans (a calendar window's periods with data, oldest first; a rolling
// window's current span), and closed, its kept closed periods, newest first. A period no
// longer kept is ENotFound.
func Plan[O, C Spanned](b *Board, res Resolved, m Marks, open []O, closed []C, now int64) (ReadPlan, error) {
	p := ReadPlan{Period: res.Period}
	w, want := res.Window, Span{res.Period.Start, res.Period.End}
	switch {
	case w.Kind == WindowAll:
		return p, nil
	case w.IsRolling():
		if len(open) == 0 || open[0].Bounds() != want {
			p.Source = FromBuckets
		}
		return p, nil
	}
	p.Period.Closed = m.PeriodClosed(b, want, now)
	if _, ok := find(open, want.Start); ok {
		return p, nil
	}
	if want.Start < m.KeptFrom(b, w, now) {
		return p, FieldErrorf(ENotFound, res.By, "period %s of window %s is no longer kept", res.Period.ID, res.Name)
	}
	for i, cp := range closed {
		if cp.Bounds().Start == want.Start {
			p.Source, p.Closed, p.Period.Closed = FromClosed, i, true
			return p, nil
		}
	}
	p.Source = FromNothing
	return p, nil
}

// find returns the index of the span of spans (sorted by start) that starts at start.
func find[S Spanned](spans []S, start int64) (int, bool) {
	return slices.BinarySearchFunc(spans, start, func(s S, t int64) int { return cmp.Compare(s.Bounds().Start, t) })
}

// PeriodList lists a calendar window's kept periods, newest first: cur (the period a read at
// now sees, with its total), the open ones with data (openTotal gives the total of open[i]),
// and the closed ones (closedTotal gives the total of closed[i], as shown). It answers
// Service.Periods; all has its one period, and a rolling window none (EInvalid).
func PeriodList[O, C Spanned](b *Board, w Window, cur PeriodInfo, open []O, closed []C, openTotal, closedTotal func(i int) int) ([]PeriodInfo, error) {
	switch {
	case w.IsRolling():
		return nil, FieldErrorf(EInvalid, "window", "window %s is rolling and has no periods", w)
	case w.Kind == WindowAll:
		return []PeriodInfo{cur}, nil
	}
	var out []PeriodInfo
	listedCur := false
	for i := len(open) - 1; i >= 0; i-- {
		sp := open[i].Bounds()
		if !listedCur && sp.Start < cur.Start {
			out = append(out, cur)
			listedCur = true
		}
		if sp.Start == cur.Start {
			listedCur = true
		}
		p := b.CurrentPeriod(w, sp.Start)
		p.Total = openTotal(i)
		if p.Total == 0 && sp.Start != cur.Start {
			// Emptied (its events retracted, its members erased): a store may keep its span
			// until it restarts, or drop it; listed, the answer would differ between them.
			continue
		}
		out = append(out, p)
	}
	if !listedCur {
		out = append(out, cur)
	}
	for i := range closed {
		p := b.CurrentPeriod(w, closed[i].Bounds().Start)
		p.Closed, p.Total = true, closedTotal(i)
		out = append(out, p)
	}
	return out, nil
}
