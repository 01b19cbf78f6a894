package laurel

import (
	"context"
	"time"
)

// Resolved is what a Query reads on a board: a window, the instant read, and the span. Which
// ranking answers it (open, closed, dropped) is the store's to say.
type Resolved struct {
	Window Window
	Name   string // the window's name
	At     int64  // the instant read, unix ms
	// Period is the calendar period read (by id, or the one holding At), all's one period, or
	// a rolling window's span at At. Closed and Total are left for the store.
	Period PeriodInfo
	// By is the query's field that chose Period, for errors about it: "period", or "at".
	By string
}

// Resolve checks q against the board and finds what it reads at now: the board's first
// window unless q names one, at q.At or now unless q names a period.
func (b *Board) Resolve(q Query, now int64) (Resolved, error) {
	if q.HasAt && q.Period != "" {
		return Resolved{}, FieldErrorf(EInvalid, "period", "give either at or period, not both")
	}
	w := b.Windows[0]
	if q.Window != "" {
		var ok bool
		if w, ok = b.Window(q.Window); !ok {
			if _, err := ParseWindow(q.Window); err != nil {
				return Resolved{}, FieldErrorf(EInvalid, "window", "%s", ErrorMessage(err))
			}
			return Resolved{}, FieldErrorf(EInvalid, "window", "board %q has no window %s", b.ID, q.Window)
		}
	}
	r := Resolved{Window: w, Name: w.String(), At: now, By: "period"}
	if q.HasAt {
		r.At, r.By = q.At, "at"
	}
	cal := b.Calendar()
	switch {
	case w.Kind == WindowAll:
		if q.Period != "" && q.Period != "all" {
			return Resolved{}, FieldErrorf(EInvalid, "period", "window all has one period, \"all\"")
		}
		r.Period = PeriodInfo{ID: "all"}
	case w.IsRolling():
		if q.Period != "" {
			return Resolved{}, FieldErrorf(EInvalid, "period", "window %s is rolling and has no periods; read it at an instant", r.Name)
		}
		s, e := cal.Span(w, time.UnixMilli(r.At))
		r.Period = PeriodInfo{Start: s.UnixMilli(), End: e.UnixMilli()}
	default:
		var p Period
		if q.Period != "" {
			var err error
			if p, err = cal.ParsePeriod(w, q.Period); err != nil {
				return Resolved{}, FieldErrorf(EInvalid, "period", "%s", ErrorMessage(err))
			}
		} else {
			p = cal.PeriodAt(w, time.UnixMilli(r.At))
		}
		r.Period = PeriodInfo{ID: p.ID, Start: p.Start.UnixMilli(), End: p.End.UnixMilli()}
	}
	if r.Period.End > maxTimeMillis || r.Period.Start < minTimeMillis {
		// Its bounds (or its id, in the board's time zone) would fall outside years
		// 0000–9999, in which times and ids are written (RFC 3339 has four-digit years).
		return Resolved{}, FieldErrorf(EInvalid, r.By, "reads a period that is not within years 0000–9999")
	}
	return r, nil
}

// CurrentPeriod describes the span of w that a read at t sees: its calendar period, all's
// one period, or a rolling window's span.
func (b *Board) CurrentPeriod(w Window, t int64) PeriodInfo {
	p := b.Calendar().PeriodAt(w, time.UnixMilli(t))
	if w.Kind == WindowAll {
		return PeriodInfo{ID: "all"}
	}
	return PeriodInfo{ID: p.ID, Start: p.Start.UnixMilli(), End: p.End.UnixMilli()}
}

// BoardsOf reads the boards of ids, in that order, with board (a Service's Board), leaving
// out those deleted meanwhile: Service.Boards over a list of ids.
func BoardsOf(ctx context.Context, ids []string, board func(context.Context, string) (BoardInfo, error)) ([]BoardInfo, error) {
	out := make([]BoardInfo, 0, len(ids))
	for _, id := range ids {
		info, err := board(ctx, id)
		if ErrorCode(err) == ENotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Query says what to read: a board's window (empty: its first) at an instant (HasAt; default
// now) or a calendar period by id. Giving both At and Period is EInvalid.
type Query struct {
	Board    string
	Window   string
	At       int64
	HasAt    bool
	Period   string
	Metadata bool // include members' profile metadata in entries
	// Cohort, when set, reads that member's cohort (cohorts.go) instead of the whole board;
	// a store alone keeps no cohorts and refuses it (package competition reads them).
	Cohort string
}

// ScoreRange limits a page to entries whose score lies in [Min, Max], when Has* is set.
type ScoreRange struct {
	Min, Max       int64
	HasMin, HasMax bool
}

// Read limits (docs/api.md).
const (
	DefaultPageLimit = 10
	MaxPageLimit     = 1000
	DefaultRadius    = 5
	MaxRadius        = 100
	MaxLookup        = 1000
	MaxBatch         = 1000

	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 1000
	DefaultStreamLimit  = 10
	MaxStreamLimit      = 100
)
