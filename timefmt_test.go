package laurel_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

func TestParseDuration(t *testing.T) {
	valid := []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"1h", time.Hour},
		{"24h", 24 * time.Hour},
		{"7d", 7 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"12h1d", 36 * time.Hour},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"0.5d", 12 * time.Hour},
		{".5s", 500 * time.Millisecond},
		{"1.s", time.Second}, // as time.ParseDuration reads it
		{"500ms", 500 * time.Millisecond},
		{"1ns", 1},
		{"1us", time.Microsecond},
		{"1\u00b5s", time.Microsecond},
		{"1\u03bcs", time.Microsecond},
		{"1h0m0s", time.Hour},
		{"0s1ns", 1},
		{"00001m", time.Minute},
		{"1.000000000000000000000000001h", time.Hour},
		{"9223372036854775807ns", math.MaxInt64},
		{"2562047h47m16.854775807s", math.MaxInt64},
		{"106751d", 106751 * 24 * time.Hour},
	}
	for _, tc := range valid {
		got, err := laurel.ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}

	invalid := []string{
		"", " ", "0", "0s", "0d", "0h0m", "0.0000000001s", "-1h", "+1h", "-0s", "1", "h", "d",
		"1x", "1 h", " 1h", "1h ", "1H", "1D", "1S", "1hour", "1days", "1e3s", ".s", "..5s", "1..5s",
		"1d-1h", "1h-", "1h+1m", "1,5h", "\u0661h", "1h\x00",
		"9223372036854775808ns", "2562048h", "106752d", "99999999999999999999s",
		"9223372036854775807ns1ns", "106751d106751d",
	}
	for _, s := range invalid {
		d, err := laurel.ParseDuration(s)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", s, d)
			continue
		}
		if code := laurel.ErrorCode(err); code != laurel.EInvalid {
			t.Errorf("ParseDuration(%q): code %q", s, code)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{90 * time.Second, "90s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "90m"},
		{24 * time.Hour, "24h"},
		{36 * time.Hour, "36h"},
		{48 * time.Hour, "2d"},
		{7 * 24 * time.Hour, "7d"},
		{1500 * time.Millisecond, "1500ms"},
		{time.Microsecond, "1us"},
		{1, "1ns"},
		{time.Second + 1, "1000000001ns"},
		{math.MaxInt64, "9223372036854775807ns"},
		{0, "0s"},
		{-5 * time.Minute, "-5m"},
		{-48 * time.Hour, "-2d"},
		{-24 * time.Hour, "-24h"},
	} {
		if got := laurel.FormatDuration(tc.in); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every positive duration survives FormatDuration and ParseDuration; and where
// time.ParseDuration and ParseDuration share the syntax, they agree.
func TestDurationRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 1))
	units := []time.Duration{1, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour}
	for range 20000 {
		var d time.Duration
		switch rng.IntN(3) {
		case 0:
			d = time.Duration(rng.Int64N(math.MaxInt64)) + 1
		case 1:
			u := units[rng.IntN(len(units))]
			d = u * time.Duration(rng.Int64N(int64(math.MaxInt64/u))+1)
		default:
			d = time.Duration(rng.Int64N(1000)+1) * units[rng.IntN(len(units))]
		}
		s := laurel.FormatDuration(d)
		got, err := laurel.ParseDuration(s)
		if err != nil || got != d {
			t.Fatalf("ParseDuration(FormatDuration(%d) = %q) = %v, %v", d, s, got, err)
		}
		// Go's own spelling of d is read the same way.
		if got, err := laurel.ParseDuration(d.String()); err != nil || got != d {
			t.Fatalf("ParseDuration(%q) = %v, %v; want %d", d.String(), got, err, d)
		}
	}
}

func TestDurationAgreesWithTimeParseDuration(t *testing.T) {
	for _, s := range []string{
		"1h", "1.5h", "1h30m", ".5s", "1.s", "1.1h", "0.3333333333333333333h", "1.000000001s",
		"123456789.123456789ms", "3m0.5s", "1h1h", "2562047h47m16.854775807s", "2562047h47m16.854775808s",
		"9223372036854775807ns", "18446744073709551616ns", "1x", "", "0", "-1s", "+1s", "1", "0.1ns",
	} {
		assertDurationAgrees(t, s)
	}
}

// assertDurationAgrees checks that ParseDuration reads s as time.ParseDuration does, for s
// without a sign or the unit d: the same value when that value is positive, an error otherwise.
func assertDurationAgrees(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, "d") || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return
	}
	want, wantErr := time.ParseDuration(s)
	got, err := laurel.ParseDuration(s)
	switch {
	case wantErr != nil || want <= 0:
		if err == nil {
			t.Fatalf("ParseDuration(%q) = %v; time.ParseDuration: %v, %v", s, got, want, wantErr)
		}
	case err != nil || got != want:
		t.Fatalf("ParseDuration(%q) = %v, %v; time.ParseDuration: %v", s, got, err, want)
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "1h", "7d", "1d12h", "1.5h", ".5s", "0", "0s", "-1h", "1", "",
		"2562047h47m16.854775807s", "106752d", "1µs", "1e3s", "1..5s", "1h30m0.5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := laurel.ParseDuration(s)
		assertDurationAgrees(t, s)
		if err != nil {
			if code := laurel.ErrorCode(err); code != laurel.EInvalid {
				t.Fatalf("ParseDuration(%q): code %q", s, code)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("ParseDuration(%q) = %v, not positive", s, d)
		}
		f := laurel.FormatDuration(d)
		again, err := laurel.ParseDuration(f)
		if err != nil || again != d {
			t.Fatalf("ParseDuration(%q) = %v; FormatDuration = %q reads as %v, %v", s, d, f, again, err)
		}
		if laurel.FormatDuration(again) != f {
			t.Fatalf("FormatDuration not stable for %q", s)
		}
	})
}

func TestParseTime(t *testing.T) {
	ms := func(s string) int64 {
		tt, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tt.UnixMilli()
	}
	valid := []struct {
		in   string
		want int64
	}{
		{"2026-11-22T10:00:00Z", ms("2026-11-22T10:00:00Z")},
		{"2026-11-22T10:00:00z", ms("2026-11-22T10:00:00Z")},
		{"2026-11-22t10:00:00Z", ms("2026-11-22T10:00:00Z")},
		{"2026-11-22T12:00:00+02:00", ms("2026-11-22T10:00:00Z")},
		{"2026-11-22T04:30:00-05:30", ms("2026-11-22T10:00:00Z")},
		{"2026-11-22T10:00:00-00:00", ms("2026-11-22T10:00:00Z")},
		{"2026-11-22T10:00:00+00:00", ms("2026-11-22T10:00:00Z")},
		{"2026-11-22T10:00:00.5Z", ms("2026-11-22T10:00:00.5Z")},
		{"2026-11-22T10:00:00.12Z", ms("2026-11-22T10:00:00.12Z")},
		{"2026-11-22T10:00:00.123Z", ms("2026-11-22T10:00:00.123Z")},
		{"2026-11-22T10:00:00.1239Z", ms("2026-11-22T10:00:00.123Z")},
		{"2026-11-22T10:00:00.999999999999Z", ms("2026-11-22T10:00:00.999Z")},
		{"2026-11-22T10:00:00.000Z", ms("2026-11-22T10:00:00Z")},
		{"1969-12-31T23:59:59.9999Z", -1},
		{"1970-01-01T00:00:00Z", 0},
		{"2024-02-29T23:59:59+23:59", ms("2024-02-29T00:00:59Z")},
		{"2000-02-29T00:00:00Z", ms("2000-02-29T00:00:00Z")},
		{"0000-01-01T00:00:00Z", -62167219200000},
		{"0000-01-01T00:00:00-00:01", -62167219200000 + 60000},
		{"9999-12-31T23:59:59.999Z", 253402300799999},
		{"9999-12-31T23:59:59.999+00:01", 253402300799999 - 60000},
	}
	for _, tc := range valid {
		got, err := laurel.ParseTime(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}

	invalid := []string{
		"", "2026", "2026-11-22", "2026-11-22T10", "2026-11-22T10:00", "2026-11-22T10:00Z",
		"2026-11-22T10:00:00", "2026-11-22T10:00:00.123", "2026-11-22 10:00:00Z",
		"2026-11-22_10:00:00Z", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00,5Z",
		"2026-11-22T10:00:00+0200", "2026-11-22T10:00:00+02", "2026-11-22T10:00:00+2:00",
		"2026-11-22T10:00:00+02:00:00", "2026-11-22T10:00:00 +02:00", "2026-11-22T10:00:00UTC",
		"2026-11-22T10:00:00ZZ", "2026-11-22T10:00:00Zx", "2026-11-22T10:00:00Z ", " 2026-11-22T10:00:00Z",
		"2026-11-22T24:00:00Z", "2026-11-22T10:60:00Z", "2026-11-22T10:00:60Z", "2026-11-22T10:00:00+24:00",
		"2026-11-22T10:00:00+02:60", "2026-02-29T10:00:00Z", "1900-02-29T10:00:00Z", "2026-13-01T00:00:00Z",
		"2026-00-10T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-31T00:00:00Z", "+2026-11-22T10:00:00Z",
		"20261-11-22T10:00:00Z", "226-11-22T10:00:00Z", "2026-1-22T10:00:00Z", "2026-11-22T1:00:00Z",
		"２026-11-22T10:00:00Z", "2026-11-22T10:00:00.１Z", "2026-11-22T10:00:00.-1Z",
		"0000-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01", "-001-01-01T00:00:00Z",
		"2026-11-22T10:00:00.5+", "2026-11-22T10:00:00-", "2026-11-22T10:00:00+ab:cd",
	}
	for _, s := range invalid {
		got, err := laurel.ParseTime(s)
		if err == nil {
			t.Errorf("ParseTime(%q) = %d, want an error", s, got)
			continue
		}
		if code := laurel.ErrorCode(err); code != laurel.EInvalid {
			t.Errorf("ParseTime(%q): code %q", s, code)
		}
	}
}

func TestFormatTime(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "1970-01-01T00:00:00.000Z"},
		{-1, "1969-12-31T23:59:59.999Z"},
		{1795341600000, "2026-11-22T10:00:00.000Z"},
		{1795341600123, "2026-11-22T10:00:00.123Z"},
		{-62167219200000, "0000-01-01T00:00:00.000Z"},
		{253402300799999, "9999-12-31T23:59:59.999Z"},
	} {
		if got := laurel.FormatTime(tc.in); got != tc.want {
			t.Errorf("FormatTime(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FormatTime agrees with the time package, and ParseTime reads it back, over the whole range.
func TestTimeRoundTripRandom(t *testing.T) {
	const lo, hi = -62167219200000, 253402300799999
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 2))
	for range 50000 {
		ms := lo + rng.Int64N(hi-lo+1)
		if rng.IntN(2) == 0 { // and often near now
			ms = 1795341600000 + rng.Int64N(int64(100*365*24*time.Hour/time.Millisecond))
		}
		s := laurel.FormatTime(ms)
		if want := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"); s != want {
			t.Fatalf("FormatTime(%d) = %q, want %q", ms, s, want)
		}
		got, err := laurel.ParseTime(s)
		if err != nil || got != ms {
			t.Fatalf("ParseTime(FormatTime(%d) = %q) = %d, %v", ms, s, got, err)
		}
		// The same instant written with a random offset and precision reads the same.
		off := time.Duration(rng.IntN(2*24*60-1)-(24*60-1)) * time.Minute
		layout := []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000000000Z07:00", "2006-01-02T15:04:05.999Z07:00"}[rng.IntN(3)]
		other := time.UnixMilli(ms).In(time.FixedZone("", int(off/time.Second))).Format(layout)
		got, err = laurel.ParseTime(other)
		if y := time.UnixMilli(ms).Add(off).UTC().Year(); y < 0 || y > 9999 {
			continue // time.Format writes such years in a form RFC 3339 has no room for
		}
		if err != nil || got != ms {
			t.Fatalf("ParseTime(%q) = %d, %v; want %d", other, got, err, ms)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-22T10:00:00Z", "2026-11-22T12:00:00.5+02:00", "2026-11-22t10:00:00.123456789z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "2026-02-29T10:00:00Z", "2026-11-22T10:00:00", "",
		"2026-11-22T10:00:00+24:00", "1969-12-31T23:59:59.9999-00:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := laurel.ParseTime(s)
		if err != nil {
			if code := laurel.ErrorCode(err); code != laurel.EInvalid {
				t.Fatalf("ParseTime(%q): code %q", s, code)
			}
			return
		}
		// Where the time package reads s too, it finds the same instant.
		if tt, err := time.Parse(time.RFC3339Nano, s); err == nil {
			if got := tt.UnixMilli(); got != ms { // UnixMilli rounds down, as ParseTime does
				t.Fatalf("ParseTime(%q) = %d; time.Parse: %d", s, ms, got)
			}
		} else if !strings.ContainsAny(s, "tz") {
			t.Fatalf("ParseTime(%q) = %d, but time.Parse fails: %v", s, ms, err)
		}
		out := laurel.FormatTime(ms)
		again, err := laurel.ParseTime(out)
		if err != nil || again != ms {
			t.Fatalf("ParseTime(%q) = %d; FormatTime = %q reads as %d, %v", s, ms, out, again, err)
		}
		if laurel.FormatTime(again) != out {
			t.Fatalf("FormatTime not stable for %q", s)
		}
	})
}
