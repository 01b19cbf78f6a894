package wire

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

var decodeSeed = flag.Uint64("decode-seed", 0, "seed of TestDecodeEventsMatchesReference (0: from the clock)")

// diffDecode returns "" when DecodeEvents and the reference decoder agree on body: the same
// events, the same single and the same error, code, message and field; otherwise what differs.
func diffDecode(body []byte, board string) string {
	events, single, err := DecodeEvents(body, board)
	wantEvents, wantSingle, wantErr := refDecodeEvents(body, board)
	var e, we *laurel.Error
	switch {
	case (err == nil) != (wantErr == nil):
		return fmt.Sprintf("error %v, reference error %v", err, wantErr)
	case err != nil && (!errors.As(err, &e) || !errors.As(wantErr, &we)):
		return fmt.Sprintf("error %v (%T), reference error %v (%T)", err, err, wantErr, wantErr)
	case err != nil && *e != *we:
		return fmt.Sprintf("error %#v, reference error %#v", *e, *we)
	case single != wantSingle:
		return fmt.Sprintf("single %v, reference %v (error %v)", single, wantSingle, err)
	case !reflect.DeepEqual(events, wantEvents):
		return fmt.Sprintf("events\n%s\nreference events\n%s", showEvents(events), showEvents(wantEvents))
	}
	return ""
}

func showEvents(evs []laurel.Event) string {
	if evs == nil {
		return "nil"
	}
	var b strings.Builder
	for i, ev := range evs {
		name := "<nil>"
		if ev.Name != nil {
			name = strconv.Quote(*ev.Name)
		}
		fmt.Fprintf(&b, "%d: %q %q %d subscore %v/%d ts %v/%d id %q name %s tag %s\n", i, ev.Board, ev.Member, ev.Value, ev.HasSub, ev.Sub, ev.HasTS, ev.TS, ev.ID, name, ev.Tag)
	}
	return b.String()
}

// decodeBoards are the boards of the path the decoders are compared with: none (POST
// /v1/events) and one.
var decodeBoards = []string{"", "b"}

// decodeCorpus are event submits that a decoder could get wrong.
var decodeCorpus = func() []string {
	c := []string{
		// Empty, whitespace, not an object.
		``, ` `, "\t\n\r ", "\v\f", "\u00a0", "\u00a0{\"member\":\"a\",\"value\":1}\u2003", "\v{\"member\":\"a\",\"value\":1}\f",
		"{\"member\":\"a\",\"value\":1}\v ", "{\"member\":\"a\",\v\"value\":1}", "{\"member\":\"a\",\"value\":1}\u0085",
		`null`, `[]`, `[{"member":"a","value":1}]`, `"x"`, `1`, `true`, "\ufeff{\"member\":\"a\",\"value\":1}",
		`{`, `}`, `{}`, ` { } `, `{} `, `{}{}`, `{} {}`, `{}x`, `{},`, `{"member":"a","value":1}}`,
		// One event.
		`{"member": "alice", "value": 5, "ts": "2026-11-22T10:00:00Z", "id": "solve-123", "name": "Alice"}`,
		`{"member":"a","value":1,"board":"b"}`, `{"board":"b","member":"a","value":1}`, `{"board":"B","member":"a","value":1}`,
		`{"board":null,"member":"a","value":1}`, `{"board":1,"member":"a","value":1}`, `{"board":"","member":"a","value":1}`,
		`{"member":"a"}`, `{"value":1}`, `{"member":"a","value":null}`, `{"member":null,"value":1}`, `{"member":1,"value":1}`,
		`{"member":"","value":1}`, `{"member":"a/b","value":1}`, `{"member":"a\u0000","value":1}`, `{"member":"a\u007f","value":1}`,
		`{"member":"a\u0085","value":1}`, `{"member":"a\u00a0","value":1}`, "{\"member\":\"a\x7f\",\"value\":1}",
		"{\"member\":\"a\x01\",\"value\":1}", "{\"member\":\"a\xff\",\"value\":1}", "{\"member\":\"\xed\xa0\x80\",\"value\":1}",
		`{"member":"` + strings.Repeat("m", 128) + `","value":1}`, `{"member":"` + strings.Repeat("m", 129) + `","value":1}`,
		`{"member":"` + strings.Repeat("é", 64) + `","value":1}`, `{"member":"` + strings.Repeat("é", 64) + `a","value":1}`,
		`{"member":"` + strings.Repeat(`\u00e9`, 64) + `","value":1}`, `{"member":"` + strings.Repeat(`\u00e9`, 65) + `","value":1}`,
		`{"member":"a","value":1,"id":"` + strings.Repeat("i", 129) + `"}`, `{"member":"a","value":1,"name":"` + strings.Repeat("n", 129) + `"}`,
		`{"member":"a","value":1,"ts":null,"id":null,"name":null}`, `{"member":"a","value":1,"ts":1,"id":2,"name":3}`,
		`{"member":"a","value":1,"ts":true}`, `{"member":"a","value":1,"id":false}`, `{"member":"a","value":1,"name":{}}`,
		`{"member":"a","value":1,"name":[]}`, `{"member":"a","value":1,"name":""}`, `{"member":"a","value":1,"id":""}`,
		`{"member":"a","value":1,"name":"\n"}`, `{"member":"a","value":1,"id":"a\tb"}`,
		// Tags: any JSON value, compacted, at most laurel.MaxTag bytes so.
		`{"member":"a","value":1,"tag":{"car": "kart", "lap": [1, 2]}}`, `{"member":"a","value":1,"tag":"x"}`, `{"member":"a","value":1,"tag":7}`,
		`{"member":"a","value":1,"tag":null}`, `{"member":"a","value":1,"tag":"` + strings.Repeat("t", 254) + `"}`,
		`{"member":"a","value":1,"tag":"` + strings.Repeat("t", 255) + `"}`, `{"member":"a","value":1,"tag":[` + strings.Repeat(" 1,", 127) + ` 1]}`,
		`{"member":"a","value":1,"tag":"x","tag":null}`, `{"member":"a","value":1,"tag":{"a":}}`, `{"tag":1,"ts":"bad"}`,
		`{"events":[{"member":"a","value":1,"tag":{"x":true}},{"member":"b","value":1,"tag":"` + strings.Repeat("t", 300) + `"}]}`,
		// Subscores: an integer as value is, null as none.
		`{"member":"a","value":1,"subscore":7}`, `{"member":"a","value":1,"subscore":-7}`, `{"member":"a","value":1,"subscore":0}`,
		`{"member":"a","value":1,"subscore":null}`, `{"member":"a","value":1,"subscore":1.5}`, `{"member":"a","value":1,"subscore":1e3}`,
		`{"member":"a","value":1,"subscore":"7"}`, `{"member":"a","value":1,"subscore":true}`, `{"member":"a","value":1,"subscore":[7]}`,
		`{"member":"a","value":1,"subscore":9223372036854775807}`, `{"member":"a","value":1,"subscore":-9223372036854775808}`,
		`{"member":"a","value":1,"subscore":9223372036854775808}`, `{"member":"a","value":1,"subscore":-9223372036854775809}`,
		`{"member":"a","value":1,"subscore":01}`, `{"member":"a","value":1,"subscore":-}`, `{"member":"a","value":1,"subscore":nul}`,
		`{"member":"a","value":1,"subscore":3,"subscore":null}`, `{"member":"a","value":1,"subscore":"x","subscore":4}`,
		`{"member":"a","value":1,"subscore":4,"subscore":"x"}`, `{"subscore":"x","tag":{"a":}}`, `{"subscore":"x","name":1}`,
		`{"subscore":"x","ts":"bad"}`, `{"member":"a","subscore":2}`, `{"member":"a","value":"x","subscore":1.5}`,
		`{"events":[{"member":"a","value":1,"subscore":2},{"member":"b","value":1},{"member":"c","value":1,"subscore":null}]}`,
		`{"events":[{"member":"a","value":1,"subscore":2},{"member":"b","value":1,"subscore":2.5}]}`,
		// Escapes.
		`{"member":"\"\\\/\b\f\n\r\t","value":1}`, `{"member":"\"\\\/","value":1}`, `{"member":"\u0041\u00e9\u20ac","value":1}`,
		`{"member":"\ud83d\ude00","value":1}`, `{"member":"\uD83D\uDE00","value":1}`, `{"member":"\ud83d","value":1}`,
		`{"member":"\ude00","value":1}`, `{"member":"\ude00\ud83d","value":1}`, `{"member":"\ud83d\u0041","value":1}`,
		`{"member":"\ud83dx","value":1}`, `{"member":"\ud83d\ud83d\ude00","value":1}`, `{"member":"\ud83d\\","value":1}`,
		`{"member":"\ud83d\n","value":1}`, `{"member":"\ud83d\u","value":1}`, `{"member":"\u00","value":1}`, `{"member":"\u00zz","value":1}`,
		`{"member":"\x41","value":1}`, `{"member":"\'","value":1}`, `{"member":"\a","value":1}`, `{"member":"\","value":1}`,
		`{"member":"\uFFFD","value":1}`, `{"member":"\ufffe","value":1}`, `{"member":"\u2028","value":1}`,
		`{"m\u0065mber":"a","value":1}`, `{"\u006d\u0065\u006d\u0062\u0065\u0072":"a","\u0076alue":1}`, `{"ev\u0065nts":[{"member":"a","value":1}]}`,
		`{"b\u006fard":"x","member":"a","value":1}`, "{\"m\xffmber\":\"a\",\"value\":1}", `{"m\ud800ember":"a","value":1}`,
		// Numbers.
		`{"member":"a","value":0}`, `{"member":"a","value":-0}`, `{"member":"a","value":-1}`, `{"member":"a","value":1.5}`,
		`{"member":"a","value":1.0}`, `{"member":"a","value":1e3}`, `{"member":"a","value":1E3}`, `{"member":"a","value":-1e-3}`,
		`{"member":"a","value":1e+3}`, `{"member":"a","value":9223372036854775807}`, `{"member":"a","value":9223372036854775808}`,
		`{"member":"a","value":-9223372036854775808}`, `{"member":"a","value":-9223372036854775809}`,
		`{"member":"a","value":18446744073709551615}`, `{"member":"a","value":18446744073709551616}`,
		`{"member":"a","value":99999999999999999999999999999999}`, `{"member":"a","value":-99999999999999999999999999999}`,
		`{"member":"a","value":01}`, `{"member":"a","value":-01}`, `{"member":"a","value":00}`, `{"member":"a","value":-}`,
		`{"member":"a","value":1.}`, `{"member":"a","value":.5}`, `{"member":"a","value":1e}`, `{"member":"a","value":1e+}`,
		`{"member":"a","value":+1}`, `{"member":"a","value":0x10}`, `{"member":"a","value":"1"}`, `{"member":"a","value":true}`,
		`{"member":"a","value":[1]}`, `{"member":"a","value":{"n":1}}`, `{"member":"a","value":1 }`, `{"member":"a","value":1-}`,
		`{"member":"a","value":NaN}`, `{"member":"a","value":Infinity}`, `{"member":"a","value":-Infinity}`,
		// Times.
		`{"member":"a","value":1,"ts":"2026-11-22T12:00:00.5+02:00"}`, `{"member":"a","value":1,"ts":"2026-11-22t10:00:00z"}`,
		`{"member":"a","value":1,"ts":"2026-11-22T10:00:00"}`, `{"member":"a","value":1,"ts":"2026-02-30T10:00:00Z"}`,
		`{"member":"a","value":1,"ts":"2026-11-22T10:00:00+24:00"}`, `{"member":"a","value":1,"ts":"10000-01-01T00:00:00Z"}`,
		`{"member":"a","value":1,"ts":"0000-01-01T00:00:00Z"}`, `{"member":"a","value":1,"ts":"0000-01-01T00:00:00+00:01"}`,
		`{"member":"a","value":1,"ts":"9999-12-31T23:59:59.999999Z"}`, `{"member":"a","value":1,"ts":""}`,
		`{"member":"a","value":1,"ts":"2026-11-22T10:00:00\u005a"}`, `{"member":"a","value":1,"ts":"2026-11-22T10:00:60Z"}`,
		// Duplicate keys: the last value counts.
		`{"member":"a","member":"b","value":1}`, `{"member":1,"member":"b","value":1}`, `{"member":"b","member":1,"value":1}`,
		`{"member":"a","value":"x","value":2}`, `{"member":"a","value":2,"value":"x"}`, `{"member":"a","value":1,"ts":"x","ts":null}`,
		`{"member":"a","value":1,"ts":"2026-11-22T10:00:00Z","ts":null}`, `{"member":"a","value":1,"name":"n","name":null}`,
		`{"member":"a","value":1,"id":"x","id":null}`, `{"member":"a","value":1,"id":null,"id":"y"}`,
		`{"member":"a","value":1,"board":"x","board":"y"}`, `{"member":"a","value":1,"board":1,"board":"y"}`,
		`{"member":"a","value":1,"board":null,"board":null}`, `{"member":"a","m\u0065mber":"b","value":1}`,
		// Faults at several keys: the smallest key's is reported.
		`{"value":"x","member":1}`, `{"zz":1,"value":"x"}`, `{"aa":1,"board":1}`, `{"x":1,"y":2,"member":"a","value":1}`,
		`{"member":"a","value":1,"Member":"b"}`, `{"member":"a","value":1,"":1}`, `{"member":"a","value":1,"idx":1}`,
		`{"member":"a","value":1,"i":1}`, `{"member":"a","value":1,"values":1}`, `{"member":"a","value":1,"~":1}`,
		`{"member":"a","value":1,"é":1}`, "{\"member\":\"a\",\"value\":1,\"\xff\":1}", "{\"member\":\"a\",\"value\":1,\"\xff\":1,\"\ufffd\":2}",
		`{"ts":"bad","id":1,"name":2,"member":3,"value":"4","board":5}`, `{"name":"\u0001","ts":"bad"}`,
		// Batches.
		`{"events": [{"member": "alice", "value": 5}, {"member": "bob", "value": 2, "id": "x-9"}]}`,
		`{"events":[{"board":"b","member":"a","value":-9223372036854775808}]}`, `{"events":[{"board":"b","member":"a","value":1},{"board":"c","member":"a","value":1}]}`,
		`{"events":null}`, `{"events":[null]}`, `{"events":[]}`, `{"events":[ ]}`, `{"events":{}}`, `{"events":"x"}`, `{"events":1}`,
		`{"events":[1]}`, `{"events":[[]]}`, `{"events":["x"]}`, `{"events":[{}]}`, `{"events":[{},]}`, `{"events":[,{}]}`,
		`{"events":[{"member":"a","value":1},null]}`, `{"events":[{"member":"a","value":1},{"member":"b"}]}`,
		`{"events":[{"member":"a","value":1.5},{"member":"b"}]}`, `{"events":[{"member":"a","value":1}],"x":1}`,
		`{"a":1,"events":[{"member":"a","value":1}]}`, `{"member":"a","events":[{"member":"a","value":1}]}`,
		`{"events":[{"member":"a","value":1}],"events":null}`, `{"events":null,"events":[{"member":"a","value":1}]}`,
		`{"events":[{"member":"a","value":"x"}],"events":[{"member":"b","value":2}]}`,
		`{"events":[{"member":"a","value":1}],"events":[{"member":"b","value":2},{"member":"c","value":3}]}`,
		`{"events":[{"member":"a","value":1}]`, `{"events":[{"member":"a","value":1}}`, `{"events":[{"member":"a","value":1}]}}`,
		`{"events":[{"member":"a","value":1} {"member":"b","value":1}]}`, `{"events":[{"member":"a","value":1}]} x`,
		`{"events":[{"member":"a","value":1,}]}`, `{"events":[{"member":"a" "value":1}]}`, `{"events":[{"member":"a","value":"x"}]} ]`,
		`{"events":[{"member":"a","value":1,"events":[]}]}`, `{"events":[{"events":[{"member":"a","value":1}]}]}`,
		"{\"events\" : [ {\"member\" :\t\"a\" ,\n\"value\"\r: 1 } ,\n{ \"member\":\"b\", \"value\":2 } ] }",
		`{"events":[{"x":{"y":[1,2,{"z":[true,false,null,"s",-1.5e3]}]},"member":"a","value":1}]}`,
		`{"events":[{"x":{"y":[1,2,{"z":[true,false,nul]}]},"member":"a","value":1}]}`,
		`{"events":[{"x":{"y":[1,2,{"z":[tru]}]}}]}`, `{"events":[{"x":{"y":[1,2,{"z" [1]}]}}]}`, `{"events":[{"x":{"y":[1,2,{"z":[1}]}}]}`,
		`{"events":[{"x":{1:2}}]}`, `{"events":[{"x":[1,]}]}`, `{"events":[{"x":{"a":1,}}]}`, `{"events":[{"x":{,}}]}`,
		`{"events":[{"x":{"a" : 1 , "b" : [ ] , "c" : { } }},{"member":"a","value":1}]}`,
		`{"events":[{"member":"a","value":1}],"events":[{"member":"a","value":1}],"x":{}}`,
	}
	// Around the batch limit, with a fault after it and a syntax error after that.
	ev := `{"member":"a","value":1,"id":"x"}`
	for _, n := range []int{999, 1000, 1001, 1500} {
		events := strings.TrimSuffix(strings.Repeat(ev+",", n), ",")
		c = append(c, `{"events":[`+events+`]}`, `{"events":[`+events+`,{"value":"x"}]}`, `{"events":[`+events+`,{"value":"x"}],}`,
			`{"events":[{"value":"x"},`+events+`]}`, `{"events":[1,`+events+`]}`)
	}
	// Around encoding/json's limit of 10000 nested arrays and objects, at each depth a value
	// can be skipped from.
	for _, n := range []int{9996, 9997, 9998, 9999, 10000} {
		arr := strings.Repeat("[", n) + strings.Repeat("]", n)
		obj := strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
		for _, v := range []string{arr, obj} {
			c = append(c, `{"x":`+v+`}`, `{"events":`+v+`}`, `{"events":[`+v+`]}`, `{"events":[{"x":`+v+`}]}`,
				`{"events":[{"member":`+v+`}]}`, `{"events":[{"value":`+v+`}]}`, `{"events":[{"board":`+v+`}]}`)
		}
	}
	return c
}()

func TestDecodeEventsCorpus(t *testing.T) {
	for _, body := range decodeCorpus {
		for _, board := range decodeBoards {
			if diff := diffDecode([]byte(body), board); diff != "" {
				t.Errorf("board %q, body %.300q:\n%s", board, body, diff)
			}
		}
	}
}

// TestDecodeEventsMatchesReference compares the decoders on random submits, most of them
// broken somewhere.
func TestDecodeEventsMatchesReference(t *testing.T) {
	seed := *decodeSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -decode-seed=%d)", seed, seed)
	g := decodeGen{r: rand.New(rand.NewPCG(seed, 0))}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		board := decodeBoards[g.r.IntN(len(decodeBoards))]
		body := g.body(board)
		if diff := diffDecode(body, board); diff != "" {
			t.Fatalf("seed %d: board %q, body %q:\n%s", seed, board, body, diff)
		}
	}
}

// decodeGen writes random event submits.
type decodeGen struct{ r *rand.Rand }

func (g *decodeGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

var (
	genKeys = []string{"member", "value", "ts", "id", "name", "tag", "subscore", "subscor", "subscores", "board", "events", "x", "", "Member", "valu", "values",
		`m\u0065mber`, `\u0076alue`, `\u0062oard`, `ev\u0065nts`, "a", "zz", "é", "\xff", `val\u0000ue`, `\ud800`, "\ufffd"}
	// genStrings are the contents of valid JSON strings, genBadStrings of invalid ones.
	genStrings = []string{"alice", "player-123", "b", "bench", "", "B", "-x", "a/b", "x y", `a\"b`, `\\`, `\/`, `\b\f\n\r\t`,
		`\u0041`, `\u00e9`, `\ud83d\ude00`, `\uD83D\uDE00`, `\ud83d`, `\ude00`, `\ud83d\u0041`, `\ud83dx`, `\u0000`, `\u001f`,
		`\u007f`, `\u0085`, `\u00a0`, `\ufffd`, "é", "😀", "\xff", "\xc3", "\xed\xa0\x80", "\x7f", "\u0085",
		strings.Repeat("m", 128), strings.Repeat("m", 129), strings.Repeat("é", 64), strings.Repeat("b", 64), strings.Repeat("b", 65),
		"2026-11-22T10:00:00Z", "2026-11-22T12:00:00.5+02:00", "2026-11-22t10:00:00z", "2026-02-30T00:00:00Z",
		"9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "2026-11-22T10:00:00", "2026-11-22T10:00:00+99:00",
		`2026-11-22T10:00:00\u005a`, `\"`}
	genBadStrings = []string{"\x01", "\t", "\n", `\`, `\u00`, `\u00g0`, `\x`, `\'`, `\U0041`, `a"b`}
	genNumbers    = []string{"0", "-0", "1", "-1", "42", "1.5", "1.0", "1e3", "1E3", "-1.0e-2", "1e+3", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809", "99999999999999999999999", "2"}
	genBadNumbers = []string{"01", "-", "1.", "1e", "+1", ".5", "0x10", "00", "-01", "1.e3", "1e+", "--1"}
	genOthers     = []string{"null", "true", "false", "{}", "[]", `{"a":1}`, `[1,[2,{"x":null}]]`, `{"events":[]}`,
		`[[[[[[[[[[]]]]]]]]]]`, `{"member":"a","value":1}`, `[{"a":[{}]},"x",-1e-1]`}
	genBadOthers = []string{"nul", "nulll", "tru", "fals", `[1,]`, `{"a":}`, `{"a" 1}`, `{,}`, `[`, `]`, `{`, `"`, "NaN", `{"a":1,}`, `[1 2]`}
	genSpaces    = []string{" ", "\n\t ", "\r\n", "  ", "\t"}
	genBadSpaces = []string{"\v", "\f", "\u00a0", "\u2003", "\x00"}
)

// bad is true once in n calls or so: how rarely a piece of a body is broken.
func (g *decodeGen) bad() bool { return g.r.IntN(300) == 0 }

func (g *decodeGen) space() string {
	switch {
	case g.bad():
		return g.pick(genBadSpaces)
	case g.r.IntN(6) == 0:
		return g.pick(genSpaces)
	}
	return ""
}

func (g *decodeGen) str() string {
	if g.bad() {
		return `"` + g.pick(genBadStrings) + `"`
	}
	return `"` + g.pick(genStrings) + `"`
}

func (g *decodeGen) number() string {
	if g.bad() {
		return g.pick(genBadNumbers)
	}
	return g.pick(genNumbers)
}

func (g *decodeGen) other() string {
	if g.bad() {
		return g.pick(genBadOthers)
	}
	return g.pick(genOthers)
}

func (g *decodeGen) value(key string) string {
	// Mostly the right kind for the key, and mostly valid.
	switch r := g.r.IntN(20); {
	case (key == "value" || key == "subscore") && r < 19:
		if r < 16 {
			return strconv.Itoa(g.r.IntN(2000) - 1000)
		}
		return g.number()
	case key == "member" && r < 19:
		return `"player-` + strconv.Itoa(g.r.IntN(1000)) + `"`
	case key == "board" && r < 18:
		return `"` + g.pick([]string{"b", "c", "bench"}) + `"`
	case key == "id" && r < 16:
		return `"id-` + strconv.Itoa(g.r.IntN(1000)) + `"`
	case key == "ts" && r < 14:
		return `"2026-11-22T10:00:0` + strconv.Itoa(g.r.IntN(10)) + `Z"`
	case (key == "ts" || key == "id" || key == "name" || key == "subscore") && r < 18:
		return "null"
	case r < 16:
		return g.str()
	case r < 18:
		return g.other()
	}
	return g.number()
}

// object writes an event object, or something else in its place.
func (g *decodeGen) object(cross bool) string {
	if g.r.IntN(100) == 0 {
		return g.other()
	}
	keys := []string{"member", "value"}
	if g.r.IntN(40) == 0 {
		keys = keys[:g.r.IntN(2)]
	}
	if cross && g.r.IntN(10) > 0 {
		keys = append(keys, "board")
	}
	for _, k := range []string{"ts", "id", "name", "subscore"} {
		if g.r.IntN(3) == 0 {
			keys = append(keys, k)
		}
	}
	for g.r.IntN(12) == 0 {
		keys = append(keys, g.pick(genKeys)) // unknown, repeated or escaped keys
	}
	g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var b strings.Builder
	b.WriteString("{" + g.space())
	for i, k := range keys {
		if i > 0 {
			b.WriteString("," + g.space())
		}
		b.WriteString(`"` + k + `"` + g.space() + ":" + g.space() + g.value(k) + g.space())
	}
	b.WriteString("}")
	return b.String()
}

// body writes a submit for the board of the path, mostly with the events naming their board
// when it is not in the path.
func (g *decodeGen) body(board string) []byte {
	cross := (board == "") != (g.r.IntN(10) == 0)
	var s string
	switch r := g.r.IntN(20); {
	case r < 6:
		s = g.object(cross)
	case r < 18:
		n := 1 + g.r.IntN(5)
		switch g.r.IntN(40) {
		case 0:
			n = 0
		case 1:
			n = 999 + g.r.IntN(3)
		}
		var b strings.Builder
		b.WriteString("{" + g.space() + `"events"` + g.space() + ":" + g.space() + "[" + g.space())
		for i := range n {
			if i > 0 {
				b.WriteString("," + g.space())
			}
			b.WriteString(g.object(cross) + g.space())
		}
		b.WriteString("]" + g.space())
		for g.r.IntN(15) == 0 {
			k := g.pick(genKeys)
			b.WriteString("," + g.space() + `"` + k + `":` + g.value(k))
		}
		b.WriteString("}")
		s = b.String()
	default:
		s = g.other()
	}
	body := []byte(g.space() + s + g.space())
	// Break some of them.
	for g.r.IntN(8) == 0 && len(body) > 0 {
		i := g.r.IntN(len(body))
		switch g.r.IntN(4) {
		case 0:
			body = body[:i]
		case 1:
			body = append(body[:i:i], body[i+1:]...)
		case 2:
			body = append(body[:i:i], append([]byte{`{}[]",:\ 0-e.nu"`[g.r.IntN(16)]}, body[i:]...)...)
		default:
			body[i] = byte(g.r.IntN(256))
		}
	}
	return body
}

// BenchmarkDecodeEvents decodes a batch of 100 events with ids, as `laurel bench` sends them,
// with the reference decoder and then DecodeEvents, and reports on DecodeEvents's line how
// many times slower the reference was in the same run (ref/new).
func BenchmarkDecodeEvents(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"events":[`)
	for i := range 100 {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"member":"player-%d","value":1,"id":"mhx3k2p9q1-%d-%d-%d"}`, i*7919%1000000, i%16, 1234, i)
	}
	buf.WriteString(`]}`)
	body := buf.Bytes()
	if diff := diffDecode(body, "bench"); diff != "" {
		b.Fatal(diff)
	}
	var refNs float64
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, err := refDecodeEvents(body, "bench"); err != nil {
				b.Fatal(err)
			}
		}
		refNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, err := DecodeEvents(body, "bench"); err != nil {
				b.Fatal(err)
			}
		}
		if ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N); refNs > 0 && ns > 0 {
			b.ReportMetric(refNs/ns, "ref/new")
		}
	})
}
