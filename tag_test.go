package laurel_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/laurel/laurel"
)

// TestNormalizeTag: any JSON value up to 256 bytes once compacted, compacted; null and nothing
// are no tag; anything else is invalid_argument naming the field.
func TestNormalizeTag(t *testing.T) {
	for _, tc := range []struct{ in, want, code string }{
		{in: ` {"car": "kart-3", "lap": [1, 2]} `, want: `{"car":"kart-3","lap":[1,2]}`},
		{in: `"x"`, want: `"x"`},
		{in: `7`, want: `7`},
		{in: `null`},
		{in: ``},
		{in: `"` + strings.Repeat("t", 254) + `"`, want: `"` + strings.Repeat("t", 254) + `"`},
		{in: `"` + strings.Repeat("t", 255) + `"`, code: laurel.EInvalid},
		{in: `[` + strings.Repeat("1, ", 126) + `11]`, want: `[` + strings.Repeat("1,", 126) + `11]`}, // 256 once compacted
		{in: `[` + strings.Repeat("1, ", 127) + `1]`, code: laurel.EInvalid},                          // 257
		{in: `{"a":}`, code: laurel.EInvalid},
		{in: "\"w\xa8t\"", code: laurel.EInvalid}, // not UTF-8
		{in: `"\ud800é"`, want: `"\ud800é"`},      // an escape as it came
	} {
		got, err := laurel.NormalizeTag("tag", json.RawMessage(tc.in))
		if laurel.ErrorCode(err) != tc.code || string(got) != tc.want {
			t.Errorf("NormalizeTag(%.40s) = %s, %v; want %s, code %q", tc.in, got, err, tc.want, tc.code)
		}
		var le *laurel.Error
		if err != nil && (!errors.As(err, &le) || le.Field != "tag") {
			t.Errorf("NormalizeTag(%.40s): the error %v does not name the tag", tc.in, err)
		}
	}
}

// TestTagOf: the tag of the event that made the score, by mode, ties broken by arrival.
func TestTagOf(t *testing.T) {
	ev := func(value, ts int64, seq uint64, tag string) laurel.Counted {
		c := laurel.Counted{Value: value, TS: ts, Seq: seq}
		if tag != "" {
			c.Tag = json.RawMessage(tag)
		}
		return c
	}
	events := []laurel.Counted{ev(5, 10, 1, `"a"`), ev(9, 20, 2, `"b"`), ev(9, 20, 3, `"c"`), ev(9, 30, 4, `"d"`), ev(2, 30, 5, "")}
	for _, tc := range []struct {
		mode      laurel.Mode
		score, at int64
		want      string
	}{
		{laurel.Best, 9, 20, `"b"`}, // the first to arrive with the best value at its instant
		{laurel.Last, 2, 30, ""},    // the last to arrive at the latest instant, untagged
		{laurel.Sum, 27, 30, ""},    // the latest counted event
		{laurel.Sum, 5, 10, `"a"`},  // alone at its instant
		{laurel.Best, 5, 20, ""},    // no event with that value then
	} {
		if got := laurel.TagOf(tc.mode, laurel.Key{Score: tc.score, At: tc.at}, events); string(got) != tc.want {
			t.Errorf("TagOf(%s, %d at %d) = %s, want %s", tc.mode, tc.score, tc.at, got, tc.want)
		}
	}
}
