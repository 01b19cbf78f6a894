package laurel

import (
	"time"
)

// Tournament makes a board a competition with rules of entry (docs/design.md, "Tournaments"):
// when it is open, how many members each run takes, whether they must join first, and how
// many of a member's events count. A run is a period of the tournament's window (a daily
// tournament runs once a day), or the whole tournament when it has no window.
type Tournament struct {
	Start, End   int64         // unix ms; events before Start or from End on are refused; 0: unbounded
	Window       string        // the calendar window whose periods are the runs; "": one run
	Duration     time.Duration // a run takes events for its first Duration only; 0: all of it
	MaxMembers   int           // members a run takes, first come first served; 0: any number
	JoinRequired bool          // a member's events are refused until it joins the run
	MaxAttempts  int           // events of a member that a run counts; 0: any number
}

// TournamentSpec is a tournament in the API's words. On a board update it replaces the
// board's tournament whole; an empty one removes it.
type TournamentSpec struct {
	Start        *string `json:"start,omitempty"`
	End          *string `json:"end,omitempty"`
	Window       *string `json:"window,omitempty"`
	Duration     *string `json:"duration,omitempty"`
	MaxMembers   *int    `json:"max_members,omitempty"`
	JoinRequired *bool   `json:"join_required,omitempty"`
	MaxAttempts  *int    `json:"max_attempts,omitempty"`
}

// Bounds of a tournament's max_members and max_attempts (each counted event id is kept).
const (
	MaxTournamentMembers  = 1_000_000
	MaxTournamentAttempts = 1000
)

// tournamentOf checks spec against the board and returns its tournament; nil for an empty spec.
func tournamentOf(spec *TournamentSpec, b *Board) (*Tournament, error) {
	if *spec == (TournamentSpec{}) {
		return nil, nil
	}
	t := &Tournament{}
	var err error
	if spec.Start != nil {
		if t.Start, err = ParseTime(*spec.Start); err != nil {
			return nil, FieldErrorf(EInvalid, "tournament.start", "%s", ErrorMessage(err))
		}
	}
	if spec.End != nil {
		if t.End, err = ParseTime(*spec.End); err != nil {
			return nil, FieldErrorf(EInvalid, "tournament.end", "%s", ErrorMessage(err))
		}
		if spec.Start != nil && t.End <= t.Start {
			return nil, FieldErrorf(EInvalid, "tournament.end", "must be after start")
		}
	}
	if spec.Window != nil {
		w, ok := b.Window(*spec.Window)
		if !ok || !w.IsCalendar() {
			return nil, FieldErrorf(EInvalid, "tournament.window", "must be one of the board's calendar windows (hour, day, week, month, year): its periods are the runs")
		}
		t.Window = *spec.Window
	}
	if spec.Duration != nil {
		if t.Duration, err = ParseDuration(*spec.Duration); err != nil {
			return nil, FieldErrorf(EInvalid, "tournament.duration", "must be a positive duration such as 90s, 1h or 7d")
		}
		if t.Window == "" && spec.Start == nil {
			return nil, FieldErrorf(EInvalid, "tournament.duration", "needs a window (each run is open for its first duration) or a start (the tournament ends a duration after it)")
		}
	}
	count := func(field string, v *int, most int) (int, error) {
		if v == nil {
			return 0, nil
		}
		if *v < 1 || *v > most {
			return 0, FieldErrorf(EInvalid, "tournament."+field, "must be 1 to %d", most)
		}
		return *v, nil
	}
	if t.MaxMembers, err = count("max_members", spec.MaxMembers, MaxTournamentMembers); err != nil {
		return nil, err
	}
	if t.MaxAttempts, err = count("max_attempts", spec.MaxAttempts, MaxTournamentAttempts); err != nil {
		return nil, err
	}
	t.JoinRequired = spec.JoinRequired != nil && *spec.JoinRequired
	return t, nil
}

// Spec returns the tournament in the API's words.
func (t *Tournament) Spec() *TournamentSpec {
	s := &TournamentSpec{}
	if t.Start != 0 {
		s.Start = ptr(FormatTime(t.Start))
	}
	if t.End != 0 {
		s.End = ptr(FormatTime(t.End))
	}
	if t.Window != "" {
		s.Window = ptr(t.Window)
	}
	if t.Duration != 0 {
		s.Duration = ptr(FormatDuration(t.Duration))
	}
	if t.MaxMembers != 0 {
		s.MaxMembers = ptr(t.MaxMembers)
	}
	if t.JoinRequired {
		s.JoinRequired = ptr(true)
	}
	if t.MaxAttempts != 0 {
		s.MaxAttempts = ptr(t.MaxAttempts)
	}
	return s
}

// Run is one run of a tournament: its id (the period's, or "all"), and when it takes events.
type Run struct {
	ID         string
	Start, End int64 // [Start, End), unix ms; End 0: no end
}

// RunAt returns the run of the tournament that an event at ts belongs to, or an error that
// says why no run takes it: before the start (invalid_argument), after the end or after its
// run's duration (too_late). The error is about the field "ts".
func (b *Board) RunAt(ts int64) (Run, error) {
	t := b.Tournament
	if t.Start != 0 && ts < t.Start {
		return Run{}, FieldErrorf(EInvalid, "ts", "the tournament starts at %s", FormatTime(t.Start))
	}
	end := t.End
	if t.Window == "" && t.Duration != 0 {
		end = t.Start + t.Duration.Milliseconds()
	}
	if end != 0 && ts >= end {
		return Run{}, FieldErrorf(ETooLate, "ts", "the tournament ended at %s", FormatTime(end))
	}
	if t.Window == "" {
		return Run{ID: "all", Start: t.Start, End: end}, nil
	}
	w, _ := b.Window(t.Window)
	p := b.Calendar().PeriodAt(w, time.UnixMilli(ts))
	r := Run{ID: p.ID, Start: max(p.Start.UnixMilli(), t.Start), End: p.End.UnixMilli()}
	if t.Duration != 0 {
		r.End = min(r.End, p.Start.UnixMilli()+t.Duration.Milliseconds())
	}
	if end != 0 {
		r.End = min(r.End, end)
	}
	if ts >= r.End {
		return Run{}, FieldErrorf(ETooLate, "ts", "run %s of the tournament took events until %s; the next opens with the next %s", r.ID, FormatTime(r.End), t.Window)
	}
	return r, nil
}

// Entrant is a member's entry in the run of a tournament taking events now.
type Entrant struct {
	Board       string
	Member      string
	Run         Run
	Joined      bool  // the member has an entry in the run (joined, or has played)
	JoinedAt    int64 // unix ms, when Joined
	Attempts    int   // events the run counted of the member
	MaxAttempts int   // 0: any number
	Members     int   // members with an entry in the run, when the run has a cap; else -1
	MaxMembers  int   // 0: any number
}
