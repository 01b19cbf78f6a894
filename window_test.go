package laurel_test

import (
	"testing"

	"github.com/laurel/laurel"
)

func TestParseWindow(t *testing.T) {
	valid := []struct {
		name              string
		want              laurel.Window
		calendar, rolling bool
	}{
		{"all", laurel.Window{Kind: laurel.WindowAll}, false, false},
		{"hour", laurel.Window{Kind: laurel.WindowHour}, true, false},
		{"day", laurel.Window{Kind: laurel.WindowDay}, true, false},
		{"week", laurel.Window{Kind: laurel.WindowWeek}, true, false},
		{"month", laurel.Window{Kind: laurel.WindowMonth}, true, false},
		{"year", laurel.Window{Kind: laurel.WindowYear}, true, false},
		{"last1d", laurel.Window{Kind: laurel.WindowLastDays, N: 1}, false, true},
		{"last7d", laurel.Window{Kind: laurel.WindowLastDays, N: 7}, false, true},
		{"last10d", laurel.Window{Kind: laurel.WindowLastDays, N: 10}, false, true},
		{"last30d", laurel.Window{Kind: laurel.WindowLastDays, N: 30}, false, true},
		{"last100d", laurel.Window{Kind: laurel.WindowLastDays, N: 100}, false, true},
		{"last366d", laurel.Window{Kind: laurel.WindowLastDays, N: 366}, false, true},
		{"last1h", laurel.Window{Kind: laurel.WindowLastHours, N: 1}, false, true},
		{"last24h", laurel.Window{Kind: laurel.WindowLastHours, N: 24}, false, true},
		{"last168h", laurel.Window{Kind: laurel.WindowLastHours, N: 168}, false, true},
	}
	for _, tc := range valid {
		w, err := laurel.ParseWindow(tc.name)
		if err != nil {
			t.Errorf("ParseWindow(%q): %v", tc.name, err)
			continue
		}
		if w != tc.want {
			t.Errorf("ParseWindow(%q) = %+v, want %+v", tc.name, w, tc.want)
		}
		if got := w.String(); got != tc.name {
			t.Errorf("ParseWindow(%q).String() = %q", tc.name, got)
		}
		if !w.Valid() || w.IsCalendar() != tc.calendar || w.IsRolling() != tc.rolling {
			t.Errorf("%q: Valid %v, IsCalendar %v, IsRolling %v; want true, %v, %v",
				tc.name, w.Valid(), w.IsCalendar(), w.IsRolling(), tc.calendar, tc.rolling)
		}
	}

	invalid := []string{
		"", " ", "All", "ALL", "Day", " all", "all ", "all\n", "alls", "hours", "daily", "weekly",
		"days", "last", "lastd", "lasth", "last0d", "last0h", "last00d", "last07d", "last01h",
		"last367d", "last999d", "last1000d", "last169h", "last200h", "last-1d", "last+1d",
		"last1", "last1w", "last1m", "last1y", "last1D", "last1H", "Last1d", "last 1d", "last1 d",
		"last1dd", "last1.5d", "last1e2d", "last0x1d", "last\u0661d", "last\x001d", "last7d\x00",
		"last99999999999999999999d", "last18446744073709551617d", "1d", "7d", "d", "h", "last7",
	}
	for _, s := range invalid {
		w, err := laurel.ParseWindow(s)
		if err == nil {
			t.Errorf("ParseWindow(%q) = %+v, want an error", s, w)
			continue
		}
		if code := laurel.ErrorCode(err); code != laurel.EInvalid {
			t.Errorf("ParseWindow(%q): code %q, want %q", s, code, laurel.EInvalid)
		}
		if laurel.ErrorMessage(err) == "" {
			t.Errorf("ParseWindow(%q): empty message", s)
		}
	}
}

func TestWindowInvalidValues(t *testing.T) {
	for _, w := range []laurel.Window{
		{},
		{Kind: laurel.WindowAll, N: 1},
		{Kind: laurel.WindowDay, N: 7},
		{Kind: laurel.WindowLastDays},
		{Kind: laurel.WindowLastDays, N: -1},
		{Kind: laurel.WindowLastDays, N: 367},
		{Kind: laurel.WindowLastHours, N: 169},
		{Kind: 200, N: 3},
	} {
		if w.Valid() {
			t.Errorf("%+v: Valid() = true", w)
		}
		// The name of an invalid window must not read back as some valid window.
		if got, err := laurel.ParseWindow(w.String()); err == nil {
			t.Errorf("%+v: String() = %q parses as %+v", w, w.String(), got)
		}
	}
}

// Every valid window's name reads back to it, and names are distinct.
func TestWindowNamesRoundTrip(t *testing.T) {
	seen := map[string]laurel.Window{}
	var all []laurel.Window
	for k := laurel.WindowAll; k <= laurel.WindowYear; k++ {
		all = append(all, laurel.Window{Kind: k})
	}
	for n := 1; n <= laurel.MaxLastDays; n++ {
		all = append(all, laurel.Window{Kind: laurel.WindowLastDays, N: n})
	}
	for n := 1; n <= laurel.MaxLastHours; n++ {
		all = append(all, laurel.Window{Kind: laurel.WindowLastHours, N: n})
	}
	for _, w := range all {
		name := w.String()
		if other, dup := seen[name]; dup {
			t.Errorf("%+v and %+v are both named %q", w, other, name)
		}
		seen[name] = w
		got, err := laurel.ParseWindow(name)
		if err != nil || got != w {
			t.Errorf("ParseWindow(%q) = %+v, %v; want %+v", name, got, err, w)
		}
	}
}

func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"all", "hour", "day", "week", "month", "year", "last1d", "last7d",
		"last366d", "last367d", "last24h", "last168h", "last169h", "last07d", "last0d", "last", "", "lastxd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := laurel.ParseWindow(s)
		if err != nil {
			if code := laurel.ErrorCode(err); code != laurel.EInvalid {
				t.Fatalf("ParseWindow(%q): code %q", s, code)
			}
			return
		}
		if !w.Valid() {
			t.Fatalf("ParseWindow(%q) = %+v, not Valid", s, w)
		}
		if w.String() != s {
			t.Fatalf("ParseWindow(%q).String() = %q: not canonical", s, w.String())
		}
		again, err := laurel.ParseWindow(w.String())
		if err != nil || again != w {
			t.Fatalf("ParseWindow(%q) round trip: %+v, %v; want %+v", s, again, err, w)
		}
		if w.IsCalendar() && w.IsRolling() {
			t.Fatalf("%q is both calendar and rolling", s)
		}
	})
}
