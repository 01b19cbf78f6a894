package laurel_test

import (
	"archive/zip"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

func calendarZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func calendarWindow(t testing.TB, name string) laurel.Window {
	t.Helper()
	w, err := laurel.ParseWindow(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func calendarInstant(t testing.TB, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func calendarSamePeriod(a, b laurel.Period) bool {
	return a.ID == b.ID && a.Start.Equal(b.Start) && a.End.Equal(b.End)
}

func calendarFmtPeriod(p laurel.Period) string {
	return fmt.Sprintf("{%q %s – %s}", p.ID, p.Start.UTC().Format(time.RFC3339), p.End.UTC().Format(time.RFC3339))
}

func TestParseWeekday(t *testing.T) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		if got := laurel.FormatWeekday(d); got != name {
			t.Errorf("FormatWeekday(%v) = %q", d, got)
		}
		if got, err := laurel.ParseWeekday(name); err != nil || got != d {
			t.Errorf("ParseWeekday(%q) = %v, %v", name, got, err)
		}
	}
	for _, s := range []string{"", "Monday", "MONDAY", "mon", "mo", "monday ", "0", "1", "weekday(7)", laurel.FormatWeekday(7), laurel.FormatWeekday(-1)} {
		if d, err := laurel.ParseWeekday(s); err == nil || laurel.ErrorCode(err) != laurel.EInvalid {
			t.Errorf("ParseWeekday(%q) = %v, %v; want invalid_argument", s, d, err)
		}
	}
}

// Worked examples, each checked by hand against the zone's rules.
func TestPeriodAtExamples(t *testing.T) {
	for _, tc := range []struct {
		zone       string
		weekStart  time.Weekday
		window, at string
		id         string
		start, end string // empty for all
	}{
		// docs/api.md's example board, on 2026-11-22 (a Sunday).
		{"UTC", time.Monday, "week", "2026-11-22T10:00:00Z", "2026-11-16", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z"},
		{"UTC", time.Monday, "last7d", "2026-11-22T10:00:00Z", "", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z"},
		{"UTC", time.Monday, "all", "2026-11-22T10:00:00Z", "all", "", ""},
		{"UTC", time.Sunday, "week", "2026-11-22T10:00:00Z", "2026-11-22", "2026-11-22T00:00:00Z", "2026-11-29T00:00:00Z"},
		{"UTC", time.Saturday, "week", "2026-11-22T10:00:00Z", "2026-11-21", "2026-11-21T00:00:00Z", "2026-11-28T00:00:00Z"},
		{"UTC", time.Monday, "hour", "2026-11-22T10:59:59.999Z", "2026-11-22T10", "2026-11-22T10:00:00Z", "2026-11-22T11:00:00Z"},
		{"UTC", time.Monday, "day", "2026-11-22T00:00:00Z", "2026-11-22", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z"},
		{"UTC", time.Monday, "month", "2026-12-31T23:59:59Z", "2026-12", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"UTC", time.Monday, "month", "2024-02-29T12:00:00Z", "2024-02", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"},
		{"UTC", time.Monday, "year", "2026-11-22T10:00:00Z", "2026", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"UTC", time.Monday, "last1h", "2026-11-22T10:30:00Z", "", "2026-11-22T10:00:00Z", "2026-11-22T11:00:00Z"},
		{"UTC", time.Monday, "last24h", "2026-11-22T10:30:00Z", "", "2026-11-21T11:00:00Z", "2026-11-22T11:00:00Z"},
		{"UTC", time.Monday, "last366d", "2026-11-22T10:30:00Z", "", "2025-11-22T00:00:00Z", "2026-11-23T00:00:00Z"},
		// The local date, not the UTC one.
		{"Asia/Kolkata", time.Monday, "hour", "2026-11-22T10:15:00+05:30", "2026-11-22T10", "2026-11-22T04:30:00Z", "2026-11-22T05:30:00Z"},
		{"Asia/Kolkata", time.Monday, "day", "2026-11-21T20:00:00Z", "2026-11-22", "2026-11-21T18:30:00Z", "2026-11-22T18:30:00Z"},
		{"America/New_York", time.Monday, "year", "2027-01-01T03:00:00Z", "2026", "2026-01-01T05:00:00Z", "2027-01-01T05:00:00Z"},
		// New York, spring forward: 02:00 EST is 03:00 EDT; the day is 23 hours.
		{"America/New_York", time.Monday, "day", "2026-03-08T12:00:00-04:00", "2026-03-08", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"},
		{"America/New_York", time.Monday, "hour", "2026-03-08T01:59:59-05:00", "2026-03-08T01", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"},
		{"America/New_York", time.Monday, "hour", "2026-03-08T03:00:00-04:00", "2026-03-08T03", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"},
		{"America/New_York", time.Monday, "week", "2026-03-08T12:00:00-04:00", "2026-03-02", "2026-03-02T05:00:00Z", "2026-03-09T04:00:00Z"},
		// New York, fall back: the repeated 01:00 is one period of two hours; the day is 25.
		{"America/New_York", time.Monday, "hour", "2026-11-01T01:10:00-04:00", "2026-11-01T01", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"},
		{"America/New_York", time.Monday, "hour", "2026-11-01T01:50:00-05:00", "2026-11-01T01", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"},
		{"America/New_York", time.Monday, "hour", "2026-11-01T02:00:00-05:00", "2026-11-01T02", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"},
		{"America/New_York", time.Monday, "day", "2026-11-01T23:00:00-05:00", "2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"},
		{"Europe/Berlin", time.Monday, "hour", "2026-10-25T02:30:00+01:00", "2026-10-25T02", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z"},
		{"Europe/Berlin", time.Monday, "hour", "2026-03-29T03:00:00+02:00", "2026-03-29T03", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"},
		// Lord Howe moves by half an hour: a 30-minute hour in spring, a 90-minute one in autumn.
		{"Australia/Lord_Howe", time.Monday, "hour", "2026-10-04T02:45:00+11:00", "2026-10-04T02", "2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z"},
		{"Australia/Lord_Howe", time.Monday, "hour", "2026-04-05T01:45:00+10:30", "2026-04-05T01", "2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z"},
		{"Australia/Lord_Howe", time.Monday, "day", "2026-04-05T12:00:00+10:30", "2026-04-05", "2026-04-04T13:00:00Z", "2026-04-05T13:30:00Z"},
		// Santiago changes at midnight: in spring the day begins at 01:00.
		{"America/Santiago", time.Monday, "day", "2018-08-12T12:00:00-03:00", "2018-08-12", "2018-08-12T04:00:00Z", "2018-08-13T03:00:00Z"},
		{"America/Santiago", time.Monday, "hour", "2018-08-12T01:30:00-03:00", "2018-08-12T01", "2018-08-12T04:00:00Z", "2018-08-12T05:00:00Z"},
		{"America/Santiago", time.Monday, "week", "2018-08-12T12:00:00-03:00", "2018-08-06", "2018-08-06T04:00:00Z", "2018-08-13T03:00:00Z"},
		{"America/Santiago", time.Sunday, "week", "2018-08-12T12:00:00-03:00", "2018-08-12", "2018-08-12T04:00:00Z", "2018-08-19T03:00:00Z"},
		{"America/Santiago", time.Monday, "day", "2018-05-12T23:30:00-04:00", "2018-05-12", "2018-05-12T03:00:00Z", "2018-05-13T04:00:00Z"},
		{"America/Santiago", time.Monday, "hour", "2018-05-12T23:30:00-04:00", "2018-05-12T23", "2018-05-13T02:00:00Z", "2018-05-13T04:00:00Z"},
		{"America/Sao_Paulo", time.Monday, "day", "2018-11-04T12:00:00-02:00", "2018-11-04", "2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z"},
		{"America/Sao_Paulo", time.Monday, "month", "2018-11-04T12:00:00-02:00", "2018-11", "2018-11-01T03:00:00Z", "2018-12-01T02:00:00Z"},
		{"America/Sao_Paulo", time.Monday, "day", "2018-02-17T23:30:00-03:00", "2018-02-17", "2018-02-17T02:00:00Z", "2018-02-18T03:00:00Z"},
		// Apia skipped Friday 2011-12-30 when it crossed the date line.
		{"Pacific/Apia", time.Monday, "day", "2011-12-29T23:59:59-10:00", "2011-12-29", "2011-12-29T10:00:00Z", "2011-12-30T10:00:00Z"},
		{"Pacific/Apia", time.Monday, "day", "2011-12-31T00:00:00+14:00", "2011-12-31", "2011-12-30T10:00:00Z", "2011-12-31T10:00:00Z"},
		{"Pacific/Apia", time.Friday, "week", "2011-12-31T12:00:00+14:00", "2011-12-30", "2011-12-30T10:00:00Z", "2012-01-05T10:00:00Z"},
		{"Pacific/Apia", time.Friday, "week", "2011-12-29T12:00:00-10:00", "2011-12-23", "2011-12-23T10:00:00Z", "2011-12-30T10:00:00Z"},
		{"Pacific/Apia", time.Monday, "month", "2011-12-31T12:00:00+14:00", "2011-12", "2011-12-01T10:00:00Z", "2011-12-31T10:00:00Z"},
		{"Pacific/Apia", time.Monday, "last2d", "2011-12-31T12:00:00+14:00", "", "2011-12-29T10:00:00Z", "2011-12-31T10:00:00Z"},
		// Chatham goes back from 03:45 to 02:45: the repeated quarter hour stays in 03.
		{"Pacific/Chatham", time.Monday, "hour", "2026-04-04T14:10:00Z", "2026-04-05T03", "2026-04-04T13:15:00Z", "2026-04-04T15:15:00Z"},
		{"Pacific/Chatham", time.Monday, "hour", "2026-04-04T13:00:00Z", "2026-04-05T02", "2026-04-04T12:15:00Z", "2026-04-04T13:15:00Z"},
		// Rolling windows count buckets, not hours: a skipped hour is not one of them, and the
		// two-hour hour of the fall back is one.
		{"America/New_York", time.Monday, "last24h", "2026-03-08T12:00:00-04:00", "", "2026-03-07T17:00:00Z", "2026-03-08T17:00:00Z"},
		{"America/New_York", time.Monday, "last24h", "2026-11-01T12:00:00-05:00", "", "2026-10-31T17:00:00Z", "2026-11-01T18:00:00Z"},
		{"America/New_York", time.Monday, "last2d", "2026-03-09T10:00:00-04:00", "", "2026-03-08T05:00:00Z", "2026-03-10T04:00:00Z"},
		{"America/New_York", time.Monday, "last366d", "2026-11-22T10:00:00-05:00", "", "2025-11-22T05:00:00Z", "2026-11-23T05:00:00Z"},
	} {
		name := fmt.Sprintf("%s/%s/%s/%s", tc.zone, laurel.FormatWeekday(tc.weekStart), tc.window, tc.at)
		cal := laurel.Calendar{Loc: calendarZone(t, tc.zone), WeekStart: tc.weekStart}
		w := calendarWindow(t, tc.window)
		want := laurel.Period{ID: tc.id}
		if tc.start != "" {
			want.Start, want.End = calendarInstant(t, tc.start), calendarInstant(t, tc.end)
		}
		at := calendarInstant(t, tc.at)
		got := cal.PeriodAt(w, at)
		if !calendarSamePeriod(got, want) {
			t.Errorf("%s: PeriodAt = %s, want %s", name, calendarFmtPeriod(got), calendarFmtPeriod(want))
			continue
		}
		if s, e := cal.Span(w, at); !s.Equal(want.Start) || !e.Equal(want.End) {
			t.Errorf("%s: Span = %v, %v", name, s, e)
		}
		if w.IsCalendar() || w.Kind == laurel.WindowAll {
			if p, err := cal.ParsePeriod(w, tc.id); err != nil || !calendarSamePeriod(p, want) {
				t.Errorf("%s: ParsePeriod(%q) = %s, %v", name, tc.id, calendarFmtPeriod(p), err)
			}
		}
		if w.IsCalendar() {
			if s, e := cal.Bucket(w, at); !s.Equal(want.Start) || !e.Equal(want.End) {
				t.Errorf("%s: Bucket = %v, %v", name, s, e)
			}
		}
	}
}

func TestParsePeriodInvalid(t *testing.T) {
	for _, tc := range []struct {
		zone      string
		weekStart time.Weekday
		window    string
		id        string
	}{
		{"UTC", time.Monday, "hour", "2026-11-22T24"},
		{"UTC", time.Monday, "hour", "2026-11-22T1"},
		{"UTC", time.Monday, "hour", "2026-11-22T010"},
		{"UTC", time.Monday, "hour", "2026-11-22 10"},
		{"UTC", time.Monday, "hour", "2026-11-22t10"},
		{"UTC", time.Monday, "hour", "2026-11-22T10:00"},
		{"UTC", time.Monday, "hour", "2026-11-22T10Z"},
		{"UTC", time.Monday, "hour", "2026-11-22"},
		{"UTC", time.Monday, "hour", "2026-11-31T00"},
		{"UTC", time.Monday, "day", "2026-11-22T10"},
		{"UTC", time.Monday, "day", "2026-11-2"},
		{"UTC", time.Monday, "day", "2026-1-22"},
		{"UTC", time.Monday, "day", "20261122"},
		{"UTC", time.Monday, "day", "2026/11/22"},
		{"UTC", time.Monday, "day", "2026-02-29"},
		{"UTC", time.Monday, "day", "2100-02-29"},
		{"UTC", time.Monday, "day", "2026-11-32"},
		{"UTC", time.Monday, "day", "2026-00-01"},
		{"UTC", time.Monday, "day", "2026-11-00"},
		{"UTC", time.Monday, "day", "2026-11-22Z"},
		{"UTC", time.Monday, "day", "+2026-11-22"},
		{"UTC", time.Monday, "day", "-2026-11-22"},
		{"UTC", time.Monday, "day", "12026-11-22"},
		{"UTC", time.Monday, "day", " 2026-11-22"},
		{"UTC", time.Monday, "day", "2026-11-22 "},
		{"UTC", time.Monday, "day", "２026-11-22"},
		{"UTC", time.Monday, "day", ""},
		{"UTC", time.Monday, "week", "2026-11-22"}, // a Sunday
		{"UTC", time.Monday, "week", "2026-11-17"}, // a Tuesday
		{"UTC", time.Sunday, "week", "2026-11-16"},
		{"UTC", time.Monday, "week", "2026-W47"},
		{"UTC", time.Monday, "month", "2026-13"},
		{"UTC", time.Monday, "month", "2026-00"},
		{"UTC", time.Monday, "month", "2026-1"},
		{"UTC", time.Monday, "month", "2026-11-01"},
		{"UTC", time.Monday, "month", "2026"},
		{"UTC", time.Monday, "year", "26"},
		{"UTC", time.Monday, "year", "02026"},
		{"UTC", time.Monday, "year", "-2026"},
		{"UTC", time.Monday, "year", "2026-"},
		{"UTC", time.Monday, "year", "all"},
		{"UTC", time.Monday, "all", ""},
		{"UTC", time.Monday, "all", "ALL"},
		{"UTC", time.Monday, "all", "2026"},
		{"UTC", time.Monday, "last7d", "2026-11-22"},
		{"UTC", time.Monday, "last7d", "all"},
		{"UTC", time.Monday, "last24h", "2026-11-22T10"},
		// Labels the clock skips.
		{"America/New_York", time.Monday, "hour", "2026-03-08T02"},
		{"Europe/Berlin", time.Monday, "hour", "2026-03-29T02"},
		{"America/Santiago", time.Monday, "hour", "2018-08-12T00"},
		{"America/Sao_Paulo", time.Monday, "hour", "2018-11-04T00"},
		{"Pacific/Apia", time.Monday, "day", "2011-12-30"},
		{"Pacific/Apia", time.Monday, "hour", "2011-12-30T00"},
		{"Pacific/Apia", time.Monday, "hour", "2011-12-30T23"},
	} {
		cal := laurel.Calendar{Loc: calendarZone(t, tc.zone), WeekStart: tc.weekStart}
		p, err := cal.ParsePeriod(calendarWindow(t, tc.window), tc.id)
		if err == nil {
			t.Errorf("%s %s %s: ParsePeriod(%q) = %s, want an error", tc.zone, laurel.FormatWeekday(tc.weekStart), tc.window, tc.id, calendarFmtPeriod(p))
			continue
		}
		if code := laurel.ErrorCode(err); code != laurel.EInvalid {
			t.Errorf("ParsePeriod(%q): code %q", tc.id, code)
		}
	}
	// The zero Calendar is UTC.
	if p, err := (laurel.Calendar{}).ParsePeriod(calendarWindow(t, "day"), "2026-11-22"); err != nil ||
		!p.Start.Equal(calendarInstant(t, "2026-11-22T00:00:00Z")) {
		t.Errorf("zero Calendar: %s, %v", calendarFmtPeriod(p), err)
	}
}

// calendarTrack follows one window of one calendar through TestCalendarOracle, comparing
// the Calendar with a brute-force model computed from the local clock's fields: a period is
// the latest label that the clock has shown.
type calendarTrack struct {
	cal    laurel.Calendar
	w      laurel.Window
	key    func(lt time.Time) int64 // the label that the clock reading lt shows, as a number
	format func(key int64) string   // the period id of a label

	maxKey      int64 // the latest label the clock has shown so far
	maxID       string
	prev        laurel.Period // the period of the previous sample
	prevAt      time.Time
	started     bool
	seen        map[string]bool // every period id met, between the first and last samples
	first       int64
	clockBehind int // samples at which the clock showed an earlier label than the period's
}

func calendarFloorDiv(a, b int64) int64 {
	if a%b != 0 && (a < 0) != (b < 0) {
		return a/b - 1
	}
	return a / b
}

// calendarDayNumber is the number of the local date of lt, counted from 1970-01-01.
func calendarDayNumber(lt time.Time) int64 {
	y, m, d := lt.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400 // exact: a multiple of 86400
}

func calendarDayID(day int64) string { return time.Unix(day*86400, 0).UTC().Format("2006-01-02") }

func newCalendarTrack(cal laurel.Calendar, w laurel.Window) *calendarTrack {
	tr := &calendarTrack{cal: cal, w: w, seen: map[string]bool{}}
	switch w.Kind {
	case laurel.WindowHour:
		tr.key = func(lt time.Time) int64 { return calendarDayNumber(lt)*24 + int64(lt.Hour()) }
		tr.format = func(k int64) string {
			day := calendarFloorDiv(k, 24)
			return fmt.Sprintf("%sT%02d", calendarDayID(day), k-day*24)
		}
	case laurel.WindowDay:
		tr.key = calendarDayNumber
		tr.format = calendarDayID
	case laurel.WindowWeek:
		tr.key = func(lt time.Time) int64 {
			return calendarDayNumber(lt) - int64((int(lt.Weekday())-int(cal.WeekStart)+7)%7)
		}
		tr.format = calendarDayID
	case laurel.WindowMonth:
		tr.key = func(lt time.Time) int64 { return int64(lt.Year())*12 + int64(lt.Month()) - 1 }
		tr.format = func(k int64) string {
			y := calendarFloorDiv(k, 12)
			return fmt.Sprintf("%04d-%02d", y, k-y*12+1)
		}
	case laurel.WindowYear:
		tr.key = func(lt time.Time) int64 { return int64(lt.Year()) }
		tr.format = func(k int64) string { return fmt.Sprintf("%04d", k) }
	}
	return tr
}

// checkPeriod checks what can be checked of a period from the clock alone: the clock shows
// its label at Start and an earlier one just before, a later one at End; and the Calendar finds
// it again from its id, from its ends and from its neighbours.
func (tr *calendarTrack) checkPeriod(t *testing.T, p laurel.Period) {
	t.Helper()
	loc := tr.cal.Loc
	if !p.Start.Before(p.End) {
		t.Fatalf("%s: empty period %s", tr.w, calendarFmtPeriod(p))
	}
	label := tr.key(p.Start.In(loc))
	if got := tr.format(label); got != p.ID {
		t.Fatalf("%s: period %s: the clock shows %s at its start", tr.w, calendarFmtPeriod(p), got)
	}
	if before := tr.key(p.Start.Add(-time.Nanosecond).In(loc)); before >= label {
		t.Fatalf("%s: period %s: the clock already showed %s before its start", tr.w, calendarFmtPeriod(p), tr.format(before))
	}
	if after := tr.key(p.End.In(loc)); after <= label {
		t.Fatalf("%s: period %s: the clock shows %s at its end", tr.w, calendarFmtPeriod(p), tr.format(after))
	}
	if q, err := tr.cal.ParsePeriod(tr.w, p.ID); err != nil || !calendarSamePeriod(q, p) {
		t.Fatalf("%s: ParsePeriod(%q) = %s, %v; want %s", tr.w, p.ID, calendarFmtPeriod(q), err, calendarFmtPeriod(p))
	}
	for _, at := range []time.Time{p.Start, p.End.Add(-time.Nanosecond), p.End.Add(-time.Millisecond)} {
		if q := tr.cal.PeriodAt(tr.w, at); !calendarSamePeriod(q, p) {
			t.Fatalf("%s: PeriodAt(%v) = %s; want %s", tr.w, at, calendarFmtPeriod(q), calendarFmtPeriod(p))
		}
	}
	if s, e := tr.cal.Bucket(tr.w, p.Start); !s.Equal(p.Start) || !e.Equal(p.End) {
		t.Fatalf("%s: Bucket(%v) = %v, %v; want %s", tr.w, p.Start, s, e, calendarFmtPeriod(p))
	}
}

// sample checks the period at one instant, and every period since the previous sample.
func (tr *calendarTrack) sample(t *testing.T, at time.Time, lt time.Time, clockMayGoBack bool) laurel.Period {
	// No t.Helper(): it would cost more than the rest of this hot loop.
	k := tr.key(lt)
	if !tr.started || k > tr.maxKey {
		tr.maxKey, tr.maxID = k, tr.format(k)
	}
	if k < tr.maxKey {
		tr.clockBehind++
		if !clockMayGoBack {
			t.Fatalf("%s at %v: the clock shows %s after %s", tr.w, lt, tr.format(k), tr.maxID)
		}
	}
	p := tr.cal.PeriodAt(tr.w, at)
	if at.Before(p.Start) || !at.Before(p.End) {
		t.Fatalf("%s: PeriodAt(%v) = %s does not contain it", tr.w, at, calendarFmtPeriod(p))
	}
	if p.ID != tr.maxID {
		t.Fatalf("%s: PeriodAt(%v) = %s; the latest label the clock has shown is %s (it shows %s)", tr.w, lt, calendarFmtPeriod(p), tr.maxID, tr.format(k))
	}
	if !tr.started {
		tr.started, tr.first = true, tr.maxKey
		tr.checkPeriod(t, p)
		tr.prev, tr.prevAt = p, at
		return p
	}
	if p.ID == tr.prev.ID {
		if !calendarSamePeriod(p, tr.prev) {
			t.Fatalf("%s: one id, two periods: %s and %s", tr.w, calendarFmtPeriod(tr.prev), calendarFmtPeriod(p))
		}
		tr.prevAt = at
		return p
	}
	// Walk from the previous sample's period to this one: they must tile time, and every
	// period met on the way must lie between the two samples.
	q := tr.prev
	for steps := 0; ; steps++ {
		n := tr.cal.NextPeriod(tr.w, q)
		if !n.Start.Equal(q.End) {
			t.Fatalf("%s: NextPeriod(%s) = %s: gap or overlap", tr.w, calendarFmtPeriod(q), calendarFmtPeriod(n))
		}
		if back := tr.cal.PrevPeriod(tr.w, n); !calendarSamePeriod(back, q) {
			t.Fatalf("%s: PrevPeriod(%s) = %s; want %s", tr.w, calendarFmtPeriod(n), calendarFmtPeriod(back), calendarFmtPeriod(q))
		}
		if n.ID <= q.ID {
			t.Fatalf("%s: NextPeriod(%s) = %s goes backwards", tr.w, calendarFmtPeriod(q), calendarFmtPeriod(n))
		}
		tr.checkPeriod(t, n)
		tr.seen[n.ID] = true
		if n.ID == p.ID {
			if !calendarSamePeriod(n, p) {
				t.Fatalf("%s: NextPeriod reaches %s, PeriodAt gives %s", tr.w, calendarFmtPeriod(n), calendarFmtPeriod(p))
			}
			break
		}
		if !tr.prevAt.Before(n.Start) || at.Before(n.End) || steps > 50 {
			t.Fatalf("%s: walking from %s (at %v) to %s (at %v), met %s", tr.w, calendarFmtPeriod(tr.prev), tr.prevAt, calendarFmtPeriod(p), at, calendarFmtPeriod(n))
		}
		q = n
	}
	tr.prev, tr.prevAt = p, at
	return p
}

// checkExistence checks that ParsePeriod accepts exactly the ids of the periods met, among
// all the labels strictly between the first and the last sample.
func (tr *calendarTrack) checkExistence(t *testing.T) {
	t.Helper()
	// Week labels are day numbers: every date is tried, week start or not.
	last := tr.key(tr.prev.Start.In(tr.cal.Loc))
	for k := tr.first + 1; k < last; k++ {
		id := tr.format(k)
		_, err := tr.cal.ParsePeriod(tr.w, id)
		if (err == nil) != tr.seen[id] {
			t.Fatalf("%s: ParsePeriod(%q): error %v, but the period was met: %v", tr.w, id, err, tr.seen[id])
		}
		if err != nil && laurel.ErrorCode(err) != laurel.EInvalid {
			t.Fatalf("%s: ParsePeriod(%q): %v", tr.w, id, err)
		}
	}
}

// checkSpan checks a rolling window at an instant against a walk over its buckets.
func calendarCheckSpan(t *testing.T, cal laurel.Calendar, w laurel.Window, at time.Time) {
	t.Helper()
	start, end := cal.Span(w, at)
	if p := cal.PeriodAt(w, at); p.ID != "" || !p.Start.Equal(start) || !p.End.Equal(end) {
		t.Fatalf("%s at %v: PeriodAt = %s, Span = %v, %v", w, at, calendarFmtPeriod(p), start, end)
	}
	if _, e := cal.Bucket(w, at); !e.Equal(end) {
		t.Fatalf("%s at %v: Span ends at %v, the bucket at %v", w, at, end, e)
	}
	s, e := cal.Bucket(w, start)
	if !s.Equal(start) {
		t.Fatalf("%s at %v: Span begins at %v, inside the bucket %v – %v", w, at, start, s, e)
	}
	n := 1
	for e.Before(end) {
		ns, ne := cal.NextBucket(w, s)
		if !ns.Equal(e) || !ns.Before(ne) {
			t.Fatalf("%s: NextBucket(%v) = %v, %v after %v", w, s, ns, ne, e)
		}
		if ps, pe := cal.PrevBucket(w, ns); !ps.Equal(s) || !pe.Equal(e) {
			t.Fatalf("%s: PrevBucket(%v) = %v, %v; want %v, %v", w, ns, ps, pe, s, e)
		}
		s, e = ns, ne
		n++
	}
	if !e.Equal(end) || n != w.N {
		t.Fatalf("%s at %v: Span %v – %v holds %d buckets (the last ends at %v)", w, at, start, end, n, e)
	}
}

var calendarOracleZones = []struct {
	name     string
	from, to string // at least two years, around the zone's quirks
	// clockGoesBack: the windows whose clock label goes back at least once in [from, to);
	// in the others the period must always be what the clock shows.
	clockGoesBack []string
	// embedded: load the zone from Go's own tzdata, as time/tzdata does on a system without
	// zoneinfo. It lists transitions only until a zone's current rules began and leaves the
	// rest to the rule string, which the time package handles differently.
	embedded bool
}{
	{"UTC", "2025-06-01", "2027-07-01", nil, false},
	{"America/New_York", "2025-06-01", "2027-07-01", nil, false},
	{"Europe/Berlin", "2025-06-01", "2027-07-01", nil, false},
	{"Asia/Kolkata", "2025-06-01", "2027-07-01", nil, false},
	{"Australia/Lord_Howe", "2025-06-01", "2027-07-01", nil, false},
	{"America/Santiago", "2017-11-01", "2019-12-01", nil, false},                  // DST changes at midnight
	{"America/Sao_Paulo", "2017-06-01", "2019-07-01", nil, false},                 // DST changes at midnight, until 2019
	{"Pacific/Apia", "2010-11-01", "2012-12-01", nil, false},                      // the skipped 2011-12-30
	{"Pacific/Chatham", "2025-06-01", "2027-07-01", []string{"hour"}, false},      // back from 03:45 to 02:45
	{"America/Sitka", "1867-01-01", "1869-01-01", []string{"hour", "day"}, false}, // Alaska, 1867: back by a day
	{"Pacific/Kiritimati", "1994-01-01", "1996-01-01", nil, false},                // skipped 1994-12-31
	{"America/New_York", "2028-03-01", "2029-04-01", nil, true},                   // through 2028-12-31, a leap year's last day
	{"Australia/Lord_Howe", "2028-03-01", "2029-05-01", nil, true},
	{"America/Santiago", "2028-03-01", "2029-05-01", nil, true},
}

// calendarEmbeddedZone loads a zone from the tzdata that Go embeds with time/tzdata (the
// same file as $GOROOT/lib/time/zoneinfo.zip), bypassing the system's zoneinfo.
func calendarEmbeddedZone(t testing.TB, name string) *time.Location {
	t.Helper()
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	file := filepath.Join(strings.TrimSpace(string(root)), "lib", "time", "zoneinfo.zip")
	z, err := zip.OpenReader(file)
	if err != nil {
		t.Skipf("no embedded tzdata to test with: %v", err)
	}
	defer z.Close()
	f, err := z.Open(name)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("%s: %s: %v", file, name, err)
	}
	loc, err := time.LoadLocationFromTZData(name, data)
	if err != nil {
		t.Fatalf("%s: %s: %v", file, name, err)
	}
	return loc
}

// calendarTransitions returns the instants in [from, to) at which loc's UTC offset changes,
// found by looking at every hour and bisecting (the oracle does not trust ZoneBounds, which
// the time package gets wrong on December 31 of leap years in some zones).
func calendarTransitions(loc *time.Location, from, to time.Time) []time.Time {
	offset := func(at time.Time) int { _, off := at.In(loc).Zone(); return off }
	var found []time.Time
	for lo := from; lo.Before(to); lo = lo.Add(time.Hour) {
		hi := lo.Add(time.Hour)
		if offset(lo) == offset(hi) {
			continue
		}
		a, b := lo, hi // offset(a) != offset(b); transitions are on whole seconds
		for b.Sub(a) > time.Second {
			mid := a.Add(b.Sub(a) / 2).Truncate(time.Second)
			if offset(mid) == offset(a) {
				a = mid
			} else {
				b = mid
			}
		}
		found = append(found, b)
	}
	return found
}

// TestCalendarOracle steps through two years or more in each zone, every 13 minutes from a
// random phase, at every zone transition and the seconds around it, and at random instants.
// Hours and days are checked at every sample; the longer windows at every fifth and at each
// transition, which is plenty for periods of six days or more.
func TestCalendarOracle(t *testing.T) {
	seed := laureltest.Seed(t)
	for zi, z := range calendarOracleZones {
		name := strings.ReplaceAll(z.name, "/", "_")
		if z.embedded {
			name += "/embedded"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(zi)))
			loc := calendarZone(t, z.name)
			if z.embedded {
				loc = calendarEmbeddedZone(t, z.name)
			}
			from, to := calendarInstant(t, z.from+"T00:00:00Z"), calendarInstant(t, z.to+"T00:00:00Z")

			type sample struct {
				at  time.Time
				all bool // check every window, not only hours and days
			}
			const step = 13 * time.Minute
			var samples []sample
			for at := from.Add(time.Duration(rng.Int64N(int64(step)))); at.Before(to); at = at.Add(step) {
				samples = append(samples, sample{at, len(samples)%5 == 0})
			}
			transitions := calendarTransitions(loc, from, to)
			for _, x := range transitions {
				for _, d := range []time.Duration{-time.Second, -time.Nanosecond, 0, time.Second} {
					samples = append(samples, sample{x.Add(d), true})
				}
			}
			for range 2000 {
				at := from.Add(time.Duration(rng.Int64N(int64(to.Sub(from))))).Truncate(time.Millisecond)
				samples = append(samples, sample{at, rng.IntN(2) == 0})
			}
			slices.SortFunc(samples, func(a, b sample) int { return a.at.Compare(b.at) })
			t.Logf("%d samples, %d changes of UTC offset", len(samples), len(transitions))

			base := laurel.Calendar{Loc: loc, WeekStart: time.Monday}
			hourTrack := newCalendarTrack(base, calendarWindow(t, "hour"))
			dayTrack := newCalendarTrack(base, calendarWindow(t, "day"))
			tracks := []*calendarTrack{hourTrack, dayTrack,
				newCalendarTrack(base, calendarWindow(t, "month")),
				newCalendarTrack(base, calendarWindow(t, "year"))}
			for ws := time.Sunday; ws <= time.Saturday; ws++ {
				tracks = append(tracks, newCalendarTrack(laurel.Calendar{Loc: loc, WeekStart: ws}, calendarWindow(t, "week")))
			}
			goesBack := make([]bool, len(tracks))
			for i, tr := range tracks {
				goesBack[i] = slices.Contains(z.clockGoesBack, tr.w.String()) ||
					tr.w.Kind == laurel.WindowWeek && slices.Contains(z.clockGoesBack, "day")
			}
			lastDays, lastHours := laurel.Window{Kind: laurel.WindowLastDays}, laurel.Window{Kind: laurel.WindowLastHours}

			for i, s := range samples {
				lt := s.at.In(loc)
				for ti, tr := range tracks {
					if ti < 2 || s.all || i == len(samples)-1 {
						tr.sample(t, s.at, lt, goesBack[ti])
					}
				}
				// Buckets are the day and hour periods.
				lastDays.N, lastHours.N = 1+rng.IntN(laurel.MaxLastDays), 1+rng.IntN(laurel.MaxLastHours)
				for _, c := range []struct {
					w  laurel.Window
					tr *calendarTrack
				}{{lastDays, dayTrack}, {lastHours, hourTrack}} {
					if start, end := base.Bucket(c.w, s.at); !start.Equal(c.tr.prev.Start) || !end.Equal(c.tr.prev.End) {
						t.Fatalf("Bucket(%s, %v) = %v, %v; want %s", c.w, s.at, start, end, calendarFmtPeriod(c.tr.prev))
					}
				}
				if i%97 == 0 {
					if rng.IntN(2) == 0 {
						lastDays.N = []int{1, 2, 7, 30, laurel.MaxLastDays}[rng.IntN(5)]
						lastHours.N = []int{1, 2, 24, 25, laurel.MaxLastHours}[rng.IntN(5)]
					}
					calendarCheckSpan(t, base, lastDays, s.at)
					calendarCheckSpan(t, base, lastHours, s.at)
				}
			}
			for _, tr := range tracks {
				tr.checkExistence(t)
				if slices.Contains(z.clockGoesBack, tr.w.String()) && tr.clockBehind == 0 {
					t.Errorf("%s: no sample caught the clock going back", tr.w)
				}
			}
		})
	}
}

// Random instants over four centuries in zones with odd histories, checked with what the
// clock alone tells about a period and its neighbours.
func TestCalendarRandomInstants(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 0))
	zones := []string{
		"UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe",
		"America/Santiago", "America/Sao_Paulo", "Pacific/Apia", "Pacific/Chatham", "America/Sitka",
		"Asia/Manila", "Pacific/Kiritimati", "Pacific/Kwajalein", "Africa/Casablanca", "Europe/Dublin",
		"Antarctica/Troll", "America/St_Johns", "America/Havana", "Asia/Tehran", "Asia/Gaza",
		"Asia/Kathmandu", "Australia/Eucla", "Europe/Moscow", "America/Caracas", "Europe/Amsterdam",
	}
	windows := []string{"hour", "day", "week", "month", "year"}
	lo, hi := calendarInstant(t, "1800-01-01T00:00:00Z"), calendarInstant(t, "2200-01-01T00:00:00Z")
	for _, zone := range zones {
		loc := calendarZone(t, zone)
		for range 600 {
			at := lo.Add(time.Duration(rng.Int64N(int64(hi.Sub(lo)))))
			if rng.IntN(2) == 0 { // near a zone transition, where it matters
				s, e := at.In(loc).ZoneBounds()
				if edge := []time.Time{s, e}[rng.IntN(2)]; !edge.IsZero() {
					at = edge.Add(time.Duration(rng.Int64N(int64(60*time.Hour))) - 30*time.Hour)
				}
			}
			at = at.Truncate(time.Millisecond)
			cal := laurel.Calendar{Loc: loc, WeekStart: time.Weekday(rng.IntN(7))}
			w := calendarWindow(t, windows[rng.IntN(len(windows))])
			tr := newCalendarTrack(cal, w)
			p := cal.PeriodAt(w, at)
			if at.Before(p.Start) || !at.Before(p.End) {
				t.Fatalf("%s %s: PeriodAt(%v) = %s does not contain it", zone, w, at, calendarFmtPeriod(p))
			}
			if k := tr.key(at.In(loc)); tr.format(k) > p.ID {
				t.Fatalf("%s %s: PeriodAt(%v) = %s, behind the clock", zone, w, at.In(loc), calendarFmtPeriod(p))
			}
			tr.checkPeriod(t, p)
			if s, e := cal.SpanOf(w, at.UnixMilli()); s != p.Start.UnixMilli() || e != p.End.UnixMilli() {
				t.Fatalf("%s %s: SpanOf(%v) = [%d, %d), PeriodAt %s", zone, w, at, s, e, calendarFmtPeriod(p))
			}
			next, prev := cal.NextPeriod(w, p), cal.PrevPeriod(w, p)
			if !next.Start.Equal(p.End) || !prev.End.Equal(p.Start) || next.ID <= p.ID || prev.ID >= p.ID {
				t.Fatalf("%s %s: around %s: %s, %s", zone, w, calendarFmtPeriod(p), calendarFmtPeriod(prev), calendarFmtPeriod(next))
			}
			tr.checkPeriod(t, next)
			tr.checkPeriod(t, prev)
			if rng.IntN(10) == 0 {
				for _, w := range []laurel.Window{
					{Kind: laurel.WindowLastDays, N: 1 + rng.IntN(laurel.MaxLastDays)},
					{Kind: laurel.WindowLastHours, N: 1 + rng.IntN(laurel.MaxLastHours)},
				} {
					calendarCheckSpan(t, cal, w, at)
					bs, be := cal.Bucket(w, at)
					if s, e := cal.SpanOf(w, at.UnixMilli()); s != bs.UnixMilli() || e != be.UnixMilli() {
						t.Fatalf("%s %s: SpanOf(%v) = [%d, %d), Bucket [%v, %v)", zone, w, at, s, e, bs, be)
					}
				}
			}
		}
	}
}

// Bucket and SpanOf run on every event, SpanOf for every window: they must not allocate.
func TestBucketDoesNotAllocate(t *testing.T) {
	cal := laurel.Calendar{Loc: calendarZone(t, "America/New_York"), WeekStart: time.Monday}
	for _, at := range []time.Time{time.Now(), calendarInstant(t, "2026-11-01T01:30:00-05:00"), calendarInstant(t, "2026-03-08T03:30:00-04:00")} {
		for _, name := range []string{"last7d", "last24h"} {
			w := calendarWindow(t, name)
			if n := testing.AllocsPerRun(100, func() { cal.Bucket(w, at) }); n != 0 {
				t.Errorf("Bucket(%s, %v): %v allocations", name, at, n)
			}
		}
		for _, name := range []string{"hour", "day", "week", "month", "year", "all", "last7d"} {
			w := calendarWindow(t, name)
			if n := testing.AllocsPerRun(100, func() { cal.SpanOf(w, at.UnixMilli()) }); n != 0 {
				t.Errorf("SpanOf(%s, %v): %v allocations", name, at, n)
			}
		}
	}
}

func TestCalendarPanicsOnMisuse(t *testing.T) {
	cal := laurel.Calendar{}
	for name, f := range map[string]func(){
		"NextPeriod(all)":       func() { cal.NextPeriod(calendarWindow(t, "all"), laurel.Period{ID: "all"}) },
		"PrevPeriod(last7d)":    func() { cal.PrevPeriod(calendarWindow(t, "last7d"), laurel.Period{}) },
		"NextBucket(all)":       func() { cal.NextBucket(calendarWindow(t, "all"), time.Now()) },
		"PeriodAt(zero window)": func() { cal.PeriodAt(laurel.Window{}, time.Now()) },
		"Bucket(zero window)":   func() { cal.Bucket(laurel.Window{}, time.Now()) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

func FuzzParsePeriod(f *testing.F) {
	zones := []string{"UTC", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia", "Pacific/Chatham", "America/Santiago", "America/Sitka"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = calendarZone(f, z)
	}
	windows := []string{"all", "hour", "day", "week", "month", "year", "last7d"}
	for _, c := range []struct {
		zone, ws, window uint8
		id               string
	}{
		{0, 1, 1, "2026-11-22T10"}, {0, 1, 2, "2026-11-22"}, {0, 1, 3, "2026-11-16"}, {0, 1, 4, "2026-11"},
		{0, 1, 5, "2026"}, {0, 1, 0, "all"}, {1, 1, 1, "2026-03-08T02"}, {1, 1, 1, "2026-11-01T01"},
		{2, 1, 1, "2026-10-04T02"}, {3, 5, 3, "2011-12-30"}, {3, 1, 2, "2011-12-30"}, {4, 1, 1, "2026-04-05T03"},
		{5, 0, 2, "2018-08-12"}, {6, 1, 2, "1867-10-18"}, {0, 1, 2, "0000-01-01"}, {0, 1, 5, "9999"},
		{0, 1, 6, "2026-11-22"}, {0, 1, 2, "2026-02-29"},
	} {
		f.Add(c.zone, c.ws, c.window, c.id)
	}
	f.Fuzz(func(t *testing.T, zone, ws, window uint8, id string) {
		cal := laurel.Calendar{Loc: locs[int(zone)%len(locs)], WeekStart: time.Weekday(ws % 7)}
		w := calendarWindow(t, windows[int(window)%len(windows)])
		p, err := cal.ParsePeriod(w, id)
		if err != nil {
			if code := laurel.ErrorCode(err); code != laurel.EInvalid {
				t.Fatalf("ParsePeriod(%q): code %q", id, code)
			}
			return
		}
		if p.ID != id {
			t.Fatalf("ParsePeriod(%q).ID = %q: not canonical", id, p.ID)
		}
		if w.Kind == laurel.WindowAll {
			if !calendarSamePeriod(p, laurel.Period{ID: "all"}) {
				t.Fatalf("ParsePeriod(all, %q) = %s", id, calendarFmtPeriod(p))
			}
			return
		}
		tr := newCalendarTrack(cal, w)
		tr.checkPeriod(t, p)
		next, prev := cal.NextPeriod(w, p), cal.PrevPeriod(w, p)
		if !next.Start.Equal(p.End) || !prev.End.Equal(p.Start) {
			t.Fatalf("around %s: %s, %s", calendarFmtPeriod(p), calendarFmtPeriod(prev), calendarFmtPeriod(next))
		}
		if q := cal.NextPeriod(w, prev); !calendarSamePeriod(q, p) {
			t.Fatalf("NextPeriod(PrevPeriod(%s)) = %s", calendarFmtPeriod(p), calendarFmtPeriod(q))
		}
		if q := cal.PrevPeriod(w, next); !calendarSamePeriod(q, p) {
			t.Fatalf("PrevPeriod(NextPeriod(%s)) = %s", calendarFmtPeriod(p), calendarFmtPeriod(q))
		}
	})
}

var calendarSink laurel.Period
var calendarSinkTime time.Time

func BenchmarkPeriodAt(b *testing.B) {
	for _, c := range []struct{ zone, window string }{
		{"UTC", "day"}, {"America/New_York", "hour"}, {"America/New_York", "day"}, {"America/New_York", "week"},
		{"America/New_York", "month"}, {"America/New_York", "year"}, {"Australia/Lord_Howe", "day"},
	} {
		b.Run(strings.ReplaceAll(c.zone, "/", "_")+"/"+c.window, func(b *testing.B) {
			cal := laurel.Calendar{Loc: calendarZone(b, c.zone), WeekStart: time.Monday}
			w, at := calendarWindow(b, c.window), time.Now()
			b.ReportAllocs()
			for b.Loop() {
				calendarSink = cal.PeriodAt(w, at)
			}
		})
	}
}

func BenchmarkBucket(b *testing.B) {
	for _, c := range []struct {
		zone, window, at string
		embedded         bool // the zone from Go's tzdata, as on a system without zoneinfo
	}{
		{"UTC", "last7d", "", false}, {"America/New_York", "last7d", "", false}, {"America/New_York", "last24h", "", false},
		{"America/New_York", "last24h", "2026-11-01T01:30:00-05:00", false}, {"America/New_York", "last7d", "2031-06-01T12:00:00Z", false},
		{"Australia/Lord_Howe", "last7d", "", false},
		{"America/New_York", "last7d", "", true}, {"America/New_York", "last7d", "2031-06-01T12:00:00Z", true},
	} {
		name := strings.ReplaceAll(c.zone, "/", "_") + "/" + c.window
		if c.at != "" {
			name += "/" + c.at
		}
		if c.embedded {
			name += "/embedded"
		}
		b.Run(name, func(b *testing.B) {
			cal := laurel.Calendar{Loc: calendarZone(b, c.zone), WeekStart: time.Monday}
			if c.embedded {
				cal.Loc = calendarEmbeddedZone(b, c.zone)
			}
			w, at := calendarWindow(b, c.window), time.Now()
			if c.at != "" {
				at = calendarInstant(b, c.at)
			}
			b.ReportAllocs()
			for b.Loop() {
				calendarSinkTime, _ = cal.Bucket(w, at)
			}
		})
	}
}

func BenchmarkSpan(b *testing.B) {
	for _, c := range []struct{ zone, window string }{
		{"UTC", "last366d"}, {"America/New_York", "last7d"}, {"America/New_York", "last366d"}, {"America/New_York", "last168h"},
	} {
		b.Run(strings.ReplaceAll(c.zone, "/", "_")+"/"+c.window, func(b *testing.B) {
			cal := laurel.Calendar{Loc: calendarZone(b, c.zone), WeekStart: time.Monday}
			w, at := calendarWindow(b, c.window), time.Now()
			b.ReportAllocs()
			for b.Loop() {
				calendarSinkTime, _ = cal.Span(w, at)
			}
		})
	}
}
