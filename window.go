package laurel

import "strconv"

// WindowKind is what a Window ranks: everything, one calendar period, or a rolling span.
type WindowKind uint8

// The kinds of window (docs/design.md "Windows"). The zero WindowKind is no window at all, so a
// Window left unset is caught rather than read as "all".
const (
	WindowAll       WindowKind = iota + 1 // all: everything, forever
	WindowHour                            // hour: one local clock hour
	WindowDay                             // day: one local date
	WindowWeek                            // week: seven local dates from the board's week_start
	WindowMonth                           // month: one local calendar month
	WindowYear                            // year: one local calendar year
	WindowLastDays                        // last<N>d: the day bucket of the instant read and the N−1 before it
	WindowLastHours                       // last<N>h: the hour bucket of the instant read and the N−1 before it
)

// Bounds on N of the rolling windows.
const (
	MaxLastDays  = 366
	MaxLastHours = 168
)

// Window is one time window of a board. N is the number of buckets of a rolling window
// (WindowLastDays, WindowLastHours) and 0 for every other kind. Windows come from
// ParseWindow; String gives the name back, and distinct windows have distinct names.
type Window struct {
	Kind WindowKind
	N    int
}

// ParseWindow reads a window name: all, hour, day, week, month, year, last<N>d (1 ≤ N ≤ 366)
// or last<N>h (1 ≤ N ≤ 168), N in decimal without sign or leading zeros. Only that canonical
// spelling is accepted, so one window has exactly one name.
func ParseWindow(s string) (Window, error) {
	switch s {
	case "all":
		return Window{Kind: WindowAll}, nil
	case "hour":
		return Window{Kind: WindowHour}, nil
	case "day":
		return Window{Kind: WindowDay}, nil
	case "week":
		return Window{Kind: WindowWeek}, nil
	case "month":
		return Window{Kind: WindowMonth}, nil
	case "year":
		return Window{Kind: WindowYear}, nil
	}
	const prefix = "last"
	if len(s) < len(prefix)+2 || s[:len(prefix)] != prefix {
		return Window{}, Errorf(EInvalid, "unknown window %q: want all, hour, day, week, month, year, last<N>d or last<N>h", s)
	}
	digits, unit := s[len(prefix):len(s)-1], s[len(s)-1]
	var w Window
	switch unit {
	case 'd':
		w.Kind = WindowLastDays
	case 'h':
		w.Kind = WindowLastHours
	default:
		return Window{}, Errorf(EInvalid, "unknown window %q: a rolling window is last<N>d or last<N>h", s)
	}
	// At most three digits: every valid N has at most three, and it keeps n from overflowing.
	if len(digits) > 3 {
		return Window{}, Errorf(EInvalid, "window %q: N is out of range", s)
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return Window{}, Errorf(EInvalid, "window %q: N must be a decimal number", s)
		}
		n = n*10 + int(c-'0')
	}
	if digits[0] == '0' {
		return Window{}, Errorf(EInvalid, "window %q: N must be at least 1, written without leading zeros", s)
	}
	w.N = n
	if limit := w.maxN(); n > limit {
		return Window{}, Errorf(EInvalid, "window %q: N must be between 1 and %d", s, limit)
	}
	return w, nil
}

// maxN is the largest N of a rolling kind (0 for the others).
func (w Window) maxN() int {
	switch w.Kind {
	case WindowLastDays:
		return MaxLastDays
	case WindowLastHours:
		return MaxLastHours
	}
	return 0
}

// Valid reports whether w is a window that ParseWindow can return.
func (w Window) Valid() bool {
	switch {
	case w.Kind >= WindowAll && w.Kind <= WindowYear:
		return w.N == 0
	case w.IsRolling():
		return w.N >= 1 && w.N <= w.maxN()
	}
	return false
}

// String returns the canonical name of w, which ParseWindow reads back. An invalid w gives a
// description that ParseWindow rejects.
func (w Window) String() string {
	if !w.Valid() {
		return "invalid-window(" + strconv.Itoa(int(w.Kind)) + "," + strconv.Itoa(w.N) + ")"
	}
	switch w.Kind {
	case WindowAll:
		return "all"
	case WindowHour:
		return "hour"
	case WindowDay:
		return "day"
	case WindowWeek:
		return "week"
	case WindowMonth:
		return "month"
	case WindowYear:
		return "year"
	case WindowLastDays:
		return "last" + strconv.Itoa(w.N) + "d"
	default: // WindowLastHours
		return "last" + strconv.Itoa(w.N) + "h"
	}
}

// IsCalendar reports whether w is a sequence of calendar periods: hour, day, week, month or year.
func (w Window) IsCalendar() bool { return w.Kind >= WindowHour && w.Kind <= WindowYear }

// IsRolling reports whether w is a rolling window, evaluated at an instant: last<N>d or last<N>h.
func (w Window) IsRolling() bool { return w.Kind == WindowLastDays || w.Kind == WindowLastHours }
