package laurel

import (
	"strconv"
	"time"
)

// durationDay is the duration unit "d": 24 hours, whatever the clocks do.
const durationDay = 24 * time.Hour

// ParseDuration reads a positive duration such as "90s", "1h", "7d" or "1d12h": what
// time.ParseDuration reads (units ns, us, µs, ms, s, m, h, fractions such as "1.5h",
// several parts such as "1h30m"), plus the unit d of 24 hours, and without a sign. Zero, a
// sign, an unknown unit and anything over the range of time.Duration are invalid.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, Errorf(EInvalid, "empty duration: want a number and a unit, such as 90s, 1h or 7d")
	}
	// The loop follows time.ParseDuration (same grammar, same float rounding of fractions),
	// so that both read alike whatever they share.
	var total uint64
	for rest := s; rest != ""; {
		c := rest[0]
		if c != '.' && (c < '0' || c > '9') {
			return 0, durationError(s)
		}
		var (
			v, f  uint64  // the digits before and after the point
			scale float64 = 1
			ok    bool
		)
		n := len(rest)
		if v, rest, ok = leadingUint(rest); !ok {
			return 0, Errorf(EInvalid, "duration %q is too long", s)
		}
		digits := n != len(rest)
		if rest != "" && rest[0] == '.' {
			m := len(rest) - 1
			f, scale, rest = leadingFraction(rest[1:])
			digits = digits || m != len(rest)
		}
		if !digits {
			return 0, durationError(s)
		}
		i := 0
		for i < len(rest) && rest[i] != '.' && (rest[i] < '0' || rest[i] > '9') {
			i++
		}
		if i == 0 {
			return 0, Errorf(EInvalid, "duration %q: missing unit: want ns, us, ms, s, m, h or d", s)
		}
		unit, known := durationUnit(rest[:i])
		if !known {
			return 0, Errorf(EInvalid, "duration %q: unknown unit %q: want ns, us, ms, s, m, h or d", s, rest[:i])
		}
		rest = rest[i:]
		if v > 1<<63/unit {
			return 0, Errorf(EInvalid, "duration %q is too long", s)
		}
		v *= unit
		if f > 0 {
			v += uint64(float64(f) * (float64(unit) / scale))
		}
		if total += v; v > 1<<63 || total > 1<<63-1 {
			return 0, Errorf(EInvalid, "duration %q is too long", s)
		}
	}
	if total == 0 {
		return 0, Errorf(EInvalid, "duration %q must be positive", s)
	}
	return time.Duration(total), nil
}

func durationError(s string) error {
	return Errorf(EInvalid, "invalid duration %q: want a positive number and a unit, such as 90s, 1h or 7d", s)
}

func durationUnit(u string) (uint64, bool) {
	switch u {
	case "ns":
		return uint64(time.Nanosecond), true
	case "us", "µs" /* U+00B5 */, "μs" /* U+03BC */ :
		return uint64(time.Microsecond), true
	case "ms":
		return uint64(time.Millisecond), true
	case "s":
		return uint64(time.Second), true
	case "m":
		return uint64(time.Minute), true
	case "h":
		return uint64(time.Hour), true
	case "d":
		return uint64(durationDay), true
	}
	return 0, false
}

// leadingUint consumes leading digits; ok is false when their value is over 1<<63.
func leadingUint(s string) (x uint64, rest string, ok bool) {
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if x > 1<<63/10 {
			return 0, s, false
		}
		if x = x*10 + uint64(s[i]-'0'); x > 1<<63 {
			return 0, s, false
		}
	}
	return x, s[i:], true
}

// leadingFraction consumes leading digits after a point, keeping as many as fit.
func leadingFraction(s string) (x uint64, scale float64, rest string) {
	i, full := 0, false
	scale = 1
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if full {
			continue
		}
		if x > (1<<63-1)/10 {
			full = true
			continue
		}
		y := x*10 + uint64(s[i]-'0')
		if y > 1<<63 {
			full = true
			continue
		}
		x, scale = y, scale*10
	}
	return x, scale, s[i:]
}

// FormatDuration writes d as one integer and the largest unit that divides it exactly, among
// d, h, m, s, ms, us and ns, except that d is used from two days up: 90s → "90s",
// 1h30m → "90m", 24h → "24h" (the late_limit default, as docs/api.md shows it), 48h → "2d",
// 7d → "7d", 1d12h → "36h", 1.5s → "1500ms". ParseDuration reads the result back to d.
// Zero and negative durations, which ParseDuration rejects, come out the same way ("0s",
// "-5m").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	// Every unit divides the next, so the first that divides d is the largest that does.
	units := [...]struct {
		name string
		size time.Duration
	}{{"d", durationDay}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", time.Nanosecond}}
	for _, u := range units {
		if d%u.size != 0 || u.name == "d" && (d/u.size < 2 && d/u.size > -2) {
			continue
		}
		return strconv.FormatInt(int64(d/u.size), 10) + u.name
	}
	panic("unreachable: every duration is a whole number of nanoseconds")
}

// Instants that ParseTime accepts and FormatTime writes in four-digit years.
const (
	minTimeMillis = -62167219200000 // 0000-01-01T00:00:00.000Z
	maxTimeMillis = 253402300799999 // 9999-12-31T23:59:59.999Z
)

// ParseTime reads an RFC 3339 time with a zone, such as "2026-11-22T10:00:00Z" or
// "2026-11-22T12:00:00.5+02:00", and returns it in unix milliseconds, any digits past the
// millisecond dropped (so the instant is rounded down). As RFC 3339 allows, "T" and "Z" may be
// lower case, and -00:00 means UTC. Leap seconds (:60) and instants outside years 0000–9999
// UTC are invalid.
func ParseTime(s string) (int64, error) {
	// YYYY-MM-DDTHH:MM:SS[.F+](Z|±HH:MM)
	const head = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(head)+1 {
		return 0, timeError(s)
	}
	for i := 0; i < len(head); i++ {
		switch c := s[i]; head[i] {
		case 'd':
			if c < '0' || c > '9' {
				return 0, timeError(s)
			}
		case 'T':
			if c != 'T' && c != 't' {
				return 0, timeError(s)
			}
		default:
			if c != head[i] {
				return 0, timeError(s)
			}
		}
	}
	year, month, day := atoi(s[0:4]), atoi(s[5:7]), atoi(s[8:10])
	hour, minute, second := atoi(s[11:13]), atoi(s[14:16]), atoi(s[17:19])
	rest := s[len(head):]
	millis := 0
	if rest[0] == '.' {
		i := 1
		for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
			if i <= 3 {
				millis = millis*10 + int(rest[i]-'0')
			}
		}
		if i == 1 {
			return 0, timeError(s)
		}
		for n := i; n <= 3; n++ { // ".5" is 500 ms
			millis *= 10
		}
		rest = rest[i:]
	}
	offset := 0
	switch {
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
		isDigits(rest[1:3]) && isDigits(rest[4:6]):
		oh, om := atoi(rest[1:3]), atoi(rest[4:6])
		if oh > 23 || om > 59 {
			return 0, Errorf(EInvalid, "time %q: zone offset out of range", s)
		}
		offset = oh*60 + om
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, Errorf(EInvalid, "time %q needs a zone: Z or ±hh:mm, as in 2026-11-22T10:00:00Z", s)
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(int64(year), month) ||
		hour > 23 || minute > 59 || second > 59 {
		return 0, Errorf(EInvalid, "time %q: no such date or time of day", s)
	}
	secs := daysFromCivil(int64(year), month, day)*secondsPerDay +
		int64(hour*3600+minute*60+second) - int64(offset)*60
	ms := secs*1000 + int64(millis)
	if ms < minTimeMillis || ms > maxTimeMillis {
		return 0, Errorf(EInvalid, "time %q is out of range: years 0000–9999 UTC", s)
	}
	return ms, nil
}

func timeError(s string) error {
	return Errorf(EInvalid, "time %q is not RFC 3339: want a time such as 2026-11-22T10:00:00Z or 2026-11-22T12:00:00.000+02:00", s)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatTime writes unix milliseconds as RFC 3339 in UTC with exactly three fraction digits:
// 2026-11-22T10:00:00.000Z. ParseTime reads it back. Outside years 0000–9999 the year is
// written as an integer, which ParseTime rejects.
func FormatTime(ms int64) string {
	var buf [32]byte
	return string(AppendTime(buf[:0], ms))
}

// AppendTime appends FormatTime(ms) to b, without allocating.
func AppendTime(b []byte, ms int64) []byte {
	secs, millis := floorDiv(ms, 1000), floorMod(ms, 1000)
	days := floorDiv(secs, secondsPerDay)
	tod := int(secs - days*secondsPerDay)
	y, m, d := civilFromDays(days)
	b = appendYear(b, y)
	b = append(b, '-')
	b = append2(b, m)
	b = append(b, '-')
	b = append2(b, d)
	b = append(b, 'T')
	b = append2(b, tod/3600)
	b = append(b, ':')
	b = append2(b, tod/60%60)
	b = append(b, ':')
	b = append2(b, tod%60)
	b = append(b, '.', byte('0'+millis/100), byte('0'+millis/10%10), byte('0'+millis%10), 'Z')
	return b
}
