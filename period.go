package laurel

import (
	"math"
	"strconv"
	"time"
)

// Calendar is the time frame of a board: the timezone its calendar windows and day buckets
// follow, and the weekday its weeks begin on. A nil Loc means UTC. WeekStart must be a valid
// time.Weekday (ParseWeekday returns one).
//
// # Periods follow the local clock
//
// A calendar period (and a rolling window's bucket) is a label of the board's local clock:
// an hour (2026-11-22T10), a date (2026-11-22), the first date of a week, a month or a year.
// The period of a label runs from the first instant at which the local clock reaches that
// label (or a later one) to the first instant at which it reaches the next label. In other
// words, an instant belongs to the latest label the clock has shown so far. So:
//
//   - Periods tile time without gap or overlap, and never go backwards.
//   - Spring forward: a label the clock skips has no period, and ParsePeriod rejects its id
//     (2026-03-08T02 in America/New_York; the date 2011-12-30 in Pacific/Apia). A day whose
//     midnight is skipped begins when the clock first shows that date: at 01:00 in
//     America/Santiago or America/Sao_Paulo on their DST days; such a day is 23 hours long.
//   - Fall back: the repeated local hour is ONE hour period, two hours long, whose id is what
//     the clock shows (2026-11-01T01 in America/New_York runs from 01:00 EDT to 02:00 EST),
//     and the day around it is 25 hours long.
//   - Only where the clock goes back across a label boundary (Pacific/Chatham goes from 03:45
//     back to 02:45) is the id ahead of the clock: that repeated 02:45–03:00 belongs to the
//     period 03, which is therefore two hours long, and 02 is one hour long.
//
// Week ids are the calendar date a week begins on, even in the one case where that date never
// happened on the clock (Pacific/Apia skipped Friday 2011-12-30, so with weeks beginning on
// Friday the week "2011-12-30" begins at the first instant of 2011-12-31).
//
// Ids are canonical, so each period has exactly one: they are defined for years 0000–9999,
// the range ParseTime accepts; outside it PeriodAt still answers, with ids ParsePeriod rejects.
type Calendar struct {
	Loc       *time.Location
	WeekStart time.Weekday
}

// Period is one period of a calendar window: its id and its span [Start, End). The period of
// the all window has ID "all" and zero Start and End (unbounded). Start and End are in the
// calendar's Loc.
type Period struct {
	ID         string
	Start, End time.Time
}

var weekdayNames = [7]string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// ParseWeekday reads a week_start: monday, tuesday, …, sunday (lower case).
func ParseWeekday(s string) (time.Weekday, error) {
	for d, name := range weekdayNames {
		if s == name {
			return time.Weekday(d), nil
		}
	}
	return 0, Errorf(EInvalid, "unknown weekday %q: want monday, tuesday, wednesday, thursday, friday, saturday or sunday", s)
}

// FormatWeekday returns the name of d that ParseWeekday reads (monday, …). A d out of range
// gives a description that ParseWeekday rejects.
func FormatWeekday(d time.Weekday) string {
	if d < 0 || int(d) >= len(weekdayNames) {
		return "weekday(" + strconv.Itoa(int(d)) + ")"
	}
	return weekdayNames[d]
}

// PeriodAt returns the period of w that contains t. For the all window that is Period{ID:
// "all"}; for a rolling window, which has no periods, it is the window's span at t (see Span)
// with an empty ID. It panics if w is not valid.
func (c Calendar) PeriodAt(w Window, t time.Time) Period {
	switch {
	case w.Kind == WindowAll && w.Valid():
		return Period{ID: "all"}
	case w.IsCalendar() && w.Valid():
		u := w.unit()
		label, start, end := c.locate(u, t.Unix())
		return c.period(u, label, start, end)
	case w.IsRolling() && w.Valid():
		start, end := c.Span(w, t)
		return Period{Start: start, End: end}
	}
	panic("laurel: PeriodAt: invalid window " + w.String())
}

// ParsePeriod returns the period of w whose id is id. Only canonical ids are accepted (hour
// 2026-11-22T10, day 2026-11-22, week 2026-11-16, month 2026-11, year 2026, and all), so one
// period has one id. An id the clock skips in this timezone, or a week id that is not a
// WeekStart date, is invalid too. Rolling windows have no periods.
func (c Calendar) ParsePeriod(w Window, id string) (Period, error) {
	switch {
	case !w.Valid():
		return Period{}, Errorf(EInvalid, "period %q: invalid window %s", id, w)
	case w.Kind == WindowAll:
		if id != "all" {
			return Period{}, Errorf(EInvalid, "period %q: window all has one period, \"all\"", id)
		}
		return Period{ID: "all"}, nil
	case w.IsRolling():
		return Period{}, Errorf(EInvalid, "period %q: window %s is rolling and has no periods; read it at an instant", id, w)
	}
	u := w.unit()
	label, err := c.parseLabel(u, id)
	if err != nil {
		return Period{}, err
	}
	got, start, end := c.locate(u, firstAtLeast(c.location(), label))
	if got != label {
		return Period{}, Errorf(EInvalid, "period %q does not exist in %s: the clock skips it", id, c.location())
	}
	return c.period(u, got, start, end), nil
}

// SpanOf returns the span of w that holds an event at ts (unix ms), where the event is
// aggregated: its calendar period, its rolling bucket, or all's (0, 0). It does not allocate:
// a write asks it for every event and window. It panics if w is not valid.
func (c Calendar) SpanOf(w Window, ts int64) (start, end int64) {
	if w.Kind == WindowAll {
		return 0, 0
	}
	_, s, e := c.locate(bucketUnit(w, "SpanOf"), time.UnixMilli(ts).Unix())
	return s * 1000, e * 1000
}

// NextPeriod returns the period of the calendar window w that follows p: it begins at p.End.
// It panics if w is not a calendar window.
func (c Calendar) NextPeriod(w Window, p Period) Period {
	u := periodUnit(w, "NextPeriod")
	label, start, end := c.locate(u, p.End.Unix())
	return c.period(u, label, start, end)
}

// PrevPeriod returns the period of the calendar window w before p: it ends at p.Start.
// It panics if w is not a calendar window.
func (c Calendar) PrevPeriod(w Window, p Period) Period {
	u := periodUnit(w, "PrevPeriod")
	label, start, end := c.locate(u, p.Start.Unix()-1)
	return c.period(u, label, start, end)
}

// Bucket returns the bucket containing t of a rolling window: its local date for last<N>d,
// its local clock hour for last<N>h, which are the same spans as the day and hour periods.
// For a calendar window it returns the span of the period containing t, and for all two zero
// times. Bucket boundaries are whole seconds, so start.UnixMilli() is an exact key. It does
// not allocate. It panics if w is not valid.
func (c Calendar) Bucket(w Window, t time.Time) (start, end time.Time) {
	if w.Kind == WindowAll && w.Valid() {
		return time.Time{}, time.Time{}
	}
	u := bucketUnit(w, "Bucket")
	_, s, e := c.locate(u, t.Unix())
	return c.instant(s), c.instant(e)
}

// NextBucket returns the bucket of w after the one containing t (see Bucket). It panics if w
// is all or not valid.
func (c Calendar) NextBucket(w Window, t time.Time) (start, end time.Time) {
	u := bucketUnit(w, "NextBucket")
	_, _, e := c.locate(u, t.Unix())
	_, s, e := c.locate(u, e)
	return c.instant(s), c.instant(e)
}

// PrevBucket returns the bucket of w before the one containing t (see Bucket). It panics if w
// is all or not valid.
func (c Calendar) PrevBucket(w Window, t time.Time) (start, end time.Time) {
	u := bucketUnit(w, "PrevBucket")
	_, s, _ := c.locate(u, t.Unix())
	_, s, e := c.locate(u, s-1)
	return c.instant(s), c.instant(e)
}

// Span returns what w covers at the instant t. For a rolling window of N buckets: from the
// start of the bucket N−1 buckets before the one containing t to the end of the one
// containing t, exactly N buckets (a bucket the clock skips is not one of them). For a
// calendar window it is the period containing t, and for all two zero times (unbounded).
// It panics if w is not valid.
func (c Calendar) Span(w Window, t time.Time) (start, end time.Time) {
	switch {
	case w.Kind == WindowAll && w.Valid():
		return time.Time{}, time.Time{}
	case w.IsCalendar() && w.Valid():
		return c.Bucket(w, t)
	case w.IsRolling() && w.Valid():
		s, e := c.span(w.unit(), w.N, t.Unix())
		return c.instant(s), c.instant(e)
	}
	panic("laurel: Span: invalid window " + w.String())
}

// calUnit is the clock label a period or bucket is made of.
type calUnit uint8

const (
	unitNone calUnit = iota
	unitHour
	unitDay
	unitWeek
	unitMonth
	unitYear
)

const (
	secondsPerHour = 60 * 60
	secondsPerDay  = 24 * secondsPerHour

	// maxZoneOffset bounds the UTC offset of every zone, in seconds. tzdata's extremes are
	// about ±16h (local mean times of the 19th century), so no clock is ever a day from UTC.
	maxZoneOffset = secondsPerDay
)

func (w Window) unit() calUnit {
	switch w.Kind {
	case WindowHour, WindowLastHours:
		return unitHour
	case WindowDay, WindowLastDays:
		return unitDay
	case WindowWeek:
		return unitWeek
	case WindowMonth:
		return unitMonth
	case WindowYear:
		return unitYear
	}
	return unitNone
}

// bucketUnit returns the unit of a valid window other than all, or panics on behalf of op:
// a caller that passes such a window has skipped validation.
func bucketUnit(w Window, op string) calUnit {
	if !w.Valid() || w.Kind == WindowAll {
		panic("laurel: " + op + ": window " + w.String() + " has no buckets")
	}
	return w.unit()
}

// periodUnit returns the unit of a calendar window, or panics on behalf of op.
func periodUnit(w Window, op string) calUnit {
	if !w.Valid() || !w.IsCalendar() {
		panic("laurel: " + op + ": window " + w.String() + " is not a calendar window")
	}
	return w.unit()
}

func (c Calendar) location() *time.Location {
	if c.Loc == nil {
		return time.UTC
	}
	return c.Loc
}

func (c Calendar) instant(sec int64) time.Time { return time.Unix(sec, 0).In(c.location()) }

func (c Calendar) period(u calUnit, label, start, end int64) Period {
	return Period{ID: formatLabel(u, label), Start: c.instant(start), End: c.instant(end)}
}

// The arithmetic below works on unix seconds (instants) and on wall seconds: local clock
// readings counted as seconds since 1970-01-01T00:00 on that clock, a uniform calendar with no
// DST, where a label is the wall second it begins at. Period boundaries are whole seconds
// because zone offsets and transitions are.

// locate returns the label of unit u containing the instant sec and that label's span
// [start, end) of instants, per the model in the Calendar doc.
func (c Calendar) locate(u calUnit, sec int64) (label, start, end int64) {
	loc := c.location()
	off, zoneStart, zoneEnd := zoneAt(loc, sec)
	label = c.floorWall(u, sec+off)
	next := c.nextWall(u, label)
	// Fast path, nearly always taken: one offset holds from well before the label begins
	// (earlier instants show earlier clocks, as no offset reaches maxZoneOffset) to its end.
	if zoneStart <= label-maxZoneOffset && next-off < zoneEnd {
		return label, label - off, next - off
	}
	start = firstAtLeast(loc, label)
	end = firstAtLeast(loc, next)
	// The clock may have gone back across a label boundary; the latest label shown holds.
	for end <= sec {
		label, start = next, end
		next = c.nextWall(u, label)
		end = firstAtLeast(loc, next)
	}
	return label, start, end
}

// span returns the instants [start, end) covered by the n buckets of unit u that end with the
// one containing sec. It jumps over stretches with one offset instead of walking bucket by
// bucket, so last366d costs a few zone lookups per transition, not 366 steps.
func (c Calendar) span(u calUnit, n int, sec int64) (start, end int64) {
	loc := c.location()
	_, start, end = c.locate(u, sec)
	step := int64(secondsPerHour)
	if u == unitDay {
		step = secondsPerDay
	}
	for left := int64(n - 1); left > 0; {
		before := start - 1
		off, zoneStart, _ := zoneAt(loc, before)
		label := c.floorWall(u, before+off)
		if zoneStart <= label-maxZoneOffset {
			// The bucket of label and the ones before it, while they begin at least
			// maxZoneOffset into this zone's span, are consecutive labels at fixed steps.
			k := left
			if zoneStart != math.MinInt64 {
				if fit := (label-maxZoneOffset-zoneStart)/step + 1; fit < k {
					k = fit
				}
			}
			start = label - (k-1)*step - off
			left -= k
			continue
		}
		_, start, _ = c.locate(u, before)
		left--
	}
	return start, end
}

// firstAtLeast returns the first instant at which loc's clock reads wall or later.
func firstAtLeast(loc *time.Location, wall int64) int64 {
	// Before wall−maxZoneOffset every clock reads less than wall.
	u := wall - maxZoneOffset
	for {
		off, _, zoneEnd := zoneAt(loc, u)
		at := max(wall-off, u)
		if at < zoneEnd {
			return at
		}
		u = zoneEnd
	}
}

// zoneAt returns the UTC offset of loc at the instant sec and the span [start, end) of
// instants over which loc keeps that zone (math.MinInt64, math.MaxInt64 when unbounded).
func zoneAt(loc *time.Location, sec int64) (off, start, end int64) {
	t := time.Unix(sec, 0).In(loc)
	_, o := t.Zone()
	s, e := t.ZoneBounds()
	start, end = math.MinInt64, math.MaxInt64
	if !s.IsZero() {
		start = s.Unix()
	}
	if !e.IsZero() {
		end = e.Unix()
	}
	if end <= sec {
		// Past its last listed transition a zone follows its TZ rule string, and there Go
		// (1.26 and before) ends the last stretch of a year 365 days after January 1, UTC:
		// on December 31 of a leap year that is not after sec. The stretch really runs to
		// January 1, one day later, and no rule string has a change on that day.
		end += secondsPerDay
		if end <= sec { // never seen; keep the loops over stretches moving all the same
			start, end = sec, sec+1
		}
	}
	return int64(o), start, end
}

// floorWall returns the label of unit u containing the wall second wall.
func (c Calendar) floorWall(u calUnit, wall int64) int64 {
	switch u {
	case unitHour:
		return floorDiv(wall, secondsPerHour) * secondsPerHour
	case unitDay:
		return floorDiv(wall, secondsPerDay) * secondsPerDay
	case unitWeek:
		days := floorDiv(wall, secondsPerDay)
		return (days - floorMod(days+epochWeekday-int64(c.WeekStart), 7)) * secondsPerDay
	case unitMonth:
		y, m, _ := civilFromDays(floorDiv(wall, secondsPerDay))
		return daysFromCivil(y, m, 1) * secondsPerDay
	default: // unitYear
		y, _, _ := civilFromDays(floorDiv(wall, secondsPerDay))
		return daysFromCivil(y, 1, 1) * secondsPerDay
	}
}

// nextWall returns the label of unit u after the label label.
func (c Calendar) nextWall(u calUnit, label int64) int64 {
	switch u {
	case unitHour:
		return label + secondsPerHour
	case unitDay:
		return label + secondsPerDay
	case unitWeek:
		return label + 7*secondsPerDay
	case unitMonth:
		y, m, _ := civilFromDays(floorDiv(label, secondsPerDay))
		if m == 12 {
			return daysFromCivil(y+1, 1, 1) * secondsPerDay
		}
		return daysFromCivil(y, m+1, 1) * secondsPerDay
	default: // unitYear
		y, _, _ := civilFromDays(floorDiv(label, secondsPerDay))
		return daysFromCivil(y+1, 1, 1) * secondsPerDay
	}
}

// formatLabel returns the period id of a label.
func formatLabel(u calUnit, label int64) string {
	days := floorDiv(label, secondsPerDay)
	y, m, d := civilFromDays(days)
	var buf [32]byte
	b := appendYear(buf[:0], y)
	if u == unitYear {
		return string(b)
	}
	b = append(b, '-')
	b = append2(b, m)
	if u == unitMonth {
		return string(b)
	}
	b = append(b, '-')
	b = append2(b, d)
	if u == unitHour {
		b = append(b, 'T')
		b = append2(b, int((label-days*secondsPerDay)/secondsPerHour))
	}
	return string(b)
}

// Period id layouts, for messages.
var labelLayouts = [...]string{
	unitHour:  "YYYY-MM-DDTHH",
	unitDay:   "YYYY-MM-DD",
	unitWeek:  "YYYY-MM-DD",
	unitMonth: "YYYY-MM",
	unitYear:  "YYYY",
}

// parseLabel reads a canonical period id of unit u into its label (wall seconds).
func (c Calendar) parseLabel(u calUnit, id string) (int64, error) {
	layout := labelLayouts[u]
	ok := len(id) == len(layout)
	for i := 0; ok && i < len(id); i++ {
		if layout[i] >= 'A' && layout[i] <= 'Z' && layout[i] != 'T' {
			ok = id[i] >= '0' && id[i] <= '9'
		} else {
			ok = id[i] == layout[i]
		}
	}
	if !ok {
		return 0, Errorf(EInvalid, "period %q is not a %s period id: want %s", id, unitName(u), layout)
	}
	y, m, d, h := atoi(id[0:4]), 1, 1, 0
	if len(id) >= 7 {
		m = atoi(id[5:7])
	}
	if len(id) >= 10 {
		d = atoi(id[8:10])
	}
	if len(id) >= 13 {
		h = atoi(id[11:13])
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(int64(y), m) {
		return 0, Errorf(EInvalid, "period %q: no such date", id)
	}
	if h > 23 {
		return 0, Errorf(EInvalid, "period %q: no such hour", id)
	}
	days := daysFromCivil(int64(y), m, d)
	if u == unitWeek {
		if wd := time.Weekday(floorMod(days+epochWeekday, 7)); wd != c.WeekStart {
			return 0, Errorf(EInvalid, "period %q is a %s, but weeks begin on %s", id, FormatWeekday(wd), FormatWeekday(c.WeekStart))
		}
	}
	return days*secondsPerDay + int64(h)*secondsPerHour, nil
}

func unitName(u calUnit) string {
	return [...]string{unitHour: "hour", unitDay: "day", unitWeek: "week", unitMonth: "month", unitYear: "year"}[u]
}

// atoi reads a string of ASCII digits that the caller has checked.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// appendYear appends a year as four digits, or as a plain integer outside 0000–9999.
func appendYear(b []byte, y int64) []byte {
	if y < 0 || y > 9999 {
		return strconv.AppendInt(b, y, 10)
	}
	return append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
}

// append2 appends 0 ≤ n ≤ 99 as two digits.
func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

// epochWeekday is the weekday of 1970-01-01, day 0 of the wall calendar.
const epochWeekday = int64(time.Thursday)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the day number (days since 1970-01-01) of the proleptic Gregorian
// date y-m-d; civilFromDays is its inverse. (Howard Hinnant's algorithms: a few integer
// operations, where the time package would go through time.Date.)
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400                     // [0, 399]
	mp := int64((m + 9) % 12)              // March = 0
	doy := (153*mp+2)/5 + int64(d) - 1     // [0, 365]
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468
}

func civilFromDays(days int64) (y int64, m, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365]
	mp := (5*doy + 2) / 153                                // March = 0
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}
