package http

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/laurel/laurel/http/internal/wire"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

var encodeSeed = flag.Uint64("encode-seed", 0, "seed of TestEncodeMatchesEncodingJSON (0: from the clock)")

// trickyStrings are what a JSON string encoder gets wrong: escapes, HTML, line separators,
// controls, DEL, and invalid or truncated UTF-8.
var trickyStrings = []string{
	"", "a", "player-1", "Ann", `"`, `\`, `\"`, "</script>", "a&b", "<>&", "\u2028", "\u2029",
	"x\u2028y\u2029z", "\u2027\u202a", "\x00", "\x01\x1f", "\b\f\n\r\t", "\x7f", "é", "日本語", "😀",
	"\xff", "\x80", "a\xffb", "\xe2\x80", "\xe2\x80\xa8\xe2", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
	"\xef\xbf\xbd", "line\nbreak", "tab\there", "\u00a0", "\U0010ffff", "all", "week",
	strings.Repeat("x", 300),
}

// trickyMetadata are raw JSON values (and non-values) to encode as metadata.
var trickyMetadata = []string{
	"", "{}", "{ }", ` { "a" : 1 , "b" : [ 1 , 2 ] } `, "\t{\n\"x\":\r\"y\"\n}\n", `{"h":"<b>&amp;</b>"}`,
	"{\"s\":\"\u2028\u2029\"}", `{"s":"\u2028 \u003c"}`, `{"k":"a\"b\\"}`, `{"k":"\\"}`, "{\"k\":\"\xff\"}",
	"{\"k\":\"\xe2\x80\xa8\"}", `{"n":-0.5e+10,"t":true,"f":false,"z":null}`, `[1, "x y", {}]`, `"s"`, `1`,
	`null`, ` 1 `, "{", "}", `{"a":}`, `{"a":1}x`, "{\"a\":\"\x01\"}", " ", `{"a":1,}`, `[<]`, `nul`,
	`{"a":"\u00"}`, "{\"k\":\"\xe2\x80\"}", `{"deep":[[[[{"x":[" < > & "]}]]]]}`,
}

func jsonOf(t testing.TB, v any) ([]byte, error) {
	t.Helper()
	return json.Marshal(v)
}

// same fails unless the appender wrote what encoding/json writes, errors included.
func same(t testing.TB, what string, got []byte, gotErr error, v any) {
	t.Helper()
	want, wantErr := jsonOf(t, v)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%s: appender error %v, encoding/json error %v\nvalue: %#v", what, gotErr, wantErr, v)
	}
	if wantErr == nil && !bytes.Equal(got, want) {
		t.Fatalf("%s: appender wrote\n%q\nencoding/json wrote\n%q\nvalue: %#v", what, got, want, v)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range trickyStrings {
		same(t, "string", wire.AppendString(nil, s), nil, s)
	}
	// Every byte alone and after a valid prefix.
	for c := range 256 {
		s := string([]byte{byte(c)})
		same(t, "byte", wire.AppendString(nil, s), nil, s)
		same(t, "byte", wire.AppendString([]byte("prefix"), "é"+s)[6:], nil, "é"+s)
	}
}

func TestAppendCompact(t *testing.T) {
	for _, m := range trickyMetadata {
		got, err := wire.AppendCompact([]byte("keep"), []byte(m))
		if !bytes.HasPrefix(got, []byte("keep")) {
			t.Fatalf("%q: dst not kept: %q", m, got)
		}
		if len(m) == 0 {
			continue // omitted by omitempty; encoding/json writes null for an empty RawMessage
		}
		same(t, fmt.Sprintf("metadata %q", m), got[4:], err, json.RawMessage(m))
	}
}

// gen makes random values of every answer the appenders write.
type gen struct{ r *rand.Rand }

func (g gen) str() string {
	switch g.r.IntN(4) {
	case 0:
		return trickyStrings[g.r.IntN(len(trickyStrings))]
	case 1:
		return fmt.Sprintf("player-%d", g.r.IntN(1000000))
	}
	// Runs of random bytes and runes, tricky ones often.
	var b []byte
	for range g.r.IntN(12) {
		switch g.r.IntN(6) {
		case 0:
			b = append(b, byte(g.r.IntN(256)))
		case 1:
			const tricky = "<>&\"\\\u2028\u2029\x00\x7f"
			b = append(b, tricky[g.r.IntN(len(tricky))])
		case 2:
			b = append(b, string(rune(g.r.IntN(0x110000)))...)
		case 3:
			b = append(b, trickyStrings[g.r.IntN(len(trickyStrings))]...)
		default:
			b = append(b, byte('a'+g.r.IntN(26)))
		}
	}
	return string(b)
}

func (g gen) int64() int64 {
	switch g.r.IntN(5) {
	case 0:
		return []int64{0, -1, 1, math.MaxInt64, math.MinInt64}[g.r.IntN(5)]
	case 1:
		return int64(g.r.Uint64())
	}
	return g.r.Int64N(2000000) - 1000000
}

func (g gen) time() int64 {
	if g.r.IntN(10) == 0 {
		return g.int64()
	}
	return 1795000000000 + g.r.Int64N(1e10) - 5e9
}

// value is a random JSON value, with random whitespace between tokens.
func (g gen) value(b []byte, depth int) []byte {
	ws := func() {
		for g.r.IntN(3) == 0 {
			b = append(b, " \t\n\r"[g.r.IntN(4)])
		}
	}
	ws()
	k := g.r.IntN(8)
	if depth > 3 {
		k = 2 + g.r.IntN(6)
	}
	switch k {
	case 0:
		b = append(b, '{')
		for i := range g.r.IntN(4) {
			if i > 0 {
				b = append(b, ',')
			}
			ws()
			b = g.jsonString(b)
			ws()
			b = append(b, ':')
			b = g.value(b, depth+1)
		}
		ws()
		b = append(b, '}')
	case 1:
		b = append(b, '[')
		for i := range g.r.IntN(4) {
			if i > 0 {
				b = append(b, ',')
			}
			b = g.value(b, depth+1)
		}
		ws()
		b = append(b, ']')
	case 2, 3, 4:
		b = g.jsonString(b)
	case 5:
		b = append(b, []string{"true", "false", "null"}[g.r.IntN(3)]...)
	default:
		b = append(b, []string{"0", "-1", "12.5", "1e9", "-0.0E-3", "123456789012345678901234567890"}[g.r.IntN(6)]...)
	}
	ws()
	return b
}

// jsonString is a JSON string literal holding raw tricky bytes (not controls) and escapes.
func (g gen) jsonString(b []byte) []byte {
	b = append(b, '"')
	for range g.r.IntN(8) {
		switch g.r.IntN(6) {
		case 0:
			b = append(b, []string{`\"`, `\\`, `\/`, `\n`, `\u003c`, `\u2028`, `\ud800`}[g.r.IntN(7)]...)
		case 1:
			const tricky = "<>& \u2028\u2029\x7f\xff\xe2\x80"
			b = append(b, tricky[g.r.IntN(len(tricky))])
		case 2:
			b = append(b, string(rune(0x20+g.r.IntN(0x10ffff-0x20)))...)
		default:
			b = append(b, byte('a'+g.r.IntN(26)))
		}
	}
	return append(b, '"')
}

func (g gen) metadata() json.RawMessage {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return json.RawMessage(trickyMetadata[g.r.IntN(len(trickyMetadata))])
	case 2:
		return json.RawMessage{}
	}
	m := g.value(nil, 0)
	if g.r.IntN(20) == 0 { // now and then not JSON
		m = m[:g.r.IntN(len(m)+1)]
	}
	return m
}

func (g gen) period() laurel.PeriodInfo {
	p := laurel.PeriodInfo{Start: g.time(), End: g.time(), Closed: g.r.IntN(2) == 0, Total: int(g.int64())}
	switch g.r.IntN(4) {
	case 0:
		p.ID = "all"
	case 1:
		p.ID = ""
	case 2:
		p.ID = "2026-W47"
	default:
		p.ID = g.str()
	}
	return p
}

func (g gen) entry(rank int, metadata bool) laurel.Entry {
	e := laurel.Entry{Rank: rank, Member: g.str(), Score: g.int64(), ReachedAt: g.time()}
	if g.r.IntN(2) == 0 {
		e.Sub = g.int64()
	}
	if g.r.IntN(2) == 0 {
		p := laurel.Percentile(rank, rank+g.r.IntN(3_000_000))
		e.Percentile = &p
	}
	if g.r.IntN(4) != 0 {
		e.Name = g.str()
	}
	if g.r.IntN(3) == 0 { // a tag, as laurel.NormalizeTag lets it in
		if tag, err := laurel.NormalizeTag("tag", g.value(nil, 0)); err == nil {
			e.Tag = tag
		}
	}
	if metadata {
		e.Metadata = g.metadata()
	}
	return e
}

func (g gen) page() laurel.Page {
	p := laurel.Page{Board: g.str(), Window: g.str(), Period: g.period(), Total: int(g.int64()), HasSub: g.r.IntN(2) == 0}
	n := g.r.IntN(5)
	if g.r.IntN(4) == 0 {
		n = g.r.IntN(150)
	}
	metadata := g.r.IntN(2) == 0
	if g.r.IntN(5) != 0 {
		p.Entries = make([]laurel.Entry, n)
	}
	for i := range n {
		p.Entries = append(p.Entries[:i], g.entry(i+1, metadata))
	}
	return p
}

// results returns a submit's results, whether ranks were asked for, and the boards with a
// subscore among theirs.
func (g gen) results() ([]laurel.EventResult, bool, map[string]bool) {
	var subs map[string]bool
	out := make([]laurel.EventResult, g.r.IntN(6))
	for i := range out {
		res := laurel.EventResult{Board: g.str(), Member: g.str(), Status: laurel.StatusApplied}
		if g.r.IntN(3) == 0 {
			if subs == nil {
				subs = map[string]bool{}
			}
			subs[res.Board] = g.r.IntN(4) != 0
		}
		if g.r.IntN(2) == 0 {
			res.ID = g.str()
		}
		if g.r.IntN(3) == 0 {
			res.Status = g.str()
		}
		if g.r.IntN(4) == 0 {
			res.Flag = g.str()
		}
		if g.r.IntN(4) != 0 {
			res.Entries = map[string]laurel.Standing{}
			for range g.r.IntN(10) {
				name := g.str()
				res.Entries[name] = laurel.Standing{Rank: int(g.int64()), Score: g.int64(), Sub: g.int64()}
				if g.r.IntN(2) == 0 {
					if res.Previous == nil {
						res.Previous = map[string]laurel.Standing{}
					}
					res.Previous[name] = laurel.Standing{Rank: int(g.int64()), Score: g.int64(), Sub: g.int64()}
				}
			}
		}
		out[i] = res
	}
	return out, g.r.IntN(3) != 0, subs
}

// checkAll checks every appender on values built from p against encoding/json.
func checkAll(t testing.TB, p laurel.Page, results []laurel.EventResult, ranks bool, subs map[string]bool) {
	t.Helper()
	got, err := wire.EncodePage(nil, p)
	same(t, "page", got, err, pageOf(p))
	if err == nil && !bytes.Equal(wire.AppendPage([]byte("x"), p)[1:], got) {
		t.Fatalf("appendPage differs from encodePage")
	}
	for _, closed := range []bool{false, true} {
		for _, total := range []bool{false, true} {
			same(t, "period", wire.AppendPeriod(nil, p.Period, closed, total), nil, periodOf(p.Period, closed, total))
		}
	}
	for _, e := range p.Entries {
		me := laurel.MemberEntry{Board: p.Board, Window: p.Window, Period: p.Period, Total: p.Total, Entry: e, HasSub: p.HasSub}
		got, err := wire.EncodeMemberEntry(nil, me)
		same(t, "member entry", got, err, memberEntryOf(me))
	}
	same(t, "results", wire.AppendResults(nil, results, ranks, subs), nil, resultsOf(results, ranks, subs))
}

// TestEncodeMatchesEncodingJSON checks the appenders against encoding/json on random
// values; rerun a failure with -encode-seed.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	seed := *encodeSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -encode-seed=%d)", seed, seed)
	g := gen{rand.New(rand.NewPCG(seed, seed))}
	n := 5000
	if testing.Short() {
		n = 500
	}
	for i := range n {
		p := g.page()
		results, ranks, subs := g.results()
		if i%100 == 0 && len(p.Entries) > 0 { // appending after content must not matter
			got, err := wire.EncodePage([]byte("prefix"), p)
			same(t, "page after a prefix", got[6:], err, pageOf(p))
		}
		checkAll(t, p, results, ranks, subs)
	}
}

// TestWriteEncoded checks the whole answers against what writeJSON answered before,
// including a failing one.
func TestWriteEncoded(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(3, 4))}
	p := g.page()
	p.Entries = []laurel.Entry{g.entry(1, false), g.entry(2, true)}
	bad := p
	bad.Entries = []laurel.Entry{g.entry(1, false), {Rank: 2, Member: "m", Metadata: json.RawMessage("{")}}
	results, _, subs := g.results()
	me := laurel.MemberEntry{Board: "b", Window: "all", Period: laurel.PeriodInfo{ID: "all"}, Total: 1, Entry: g.entry(1, true)}
	badMe := me
	badMe.Entry = bad.Entries[1]
	for _, c := range []struct {
		name       string
		status     int
		fast, slow func(w http.ResponseWriter)
	}{
		{"page", 200, func(w http.ResponseWriter) { writePage(w, p) }, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, pageOf(p)) }},
		{"bad metadata", 500, func(w http.ResponseWriter) { writePage(w, bad) }, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, pageOf(bad)) }},
		{"member", 200, func(w http.ResponseWriter) { writeMemberEntry(w, me) }, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, memberEntryOf(me)) }},
		{"bad member metadata", 500, func(w http.ResponseWriter) { writeMemberEntry(w, badMe) }, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, memberEntryOf(badMe)) }},
		{"results", 200, func(w http.ResponseWriter) { writeResults(w, results, true, subs) }, func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, resultsOf(results, true, subs)) }},
	} {
		fast, slow := httptest.NewRecorder(), httptest.NewRecorder()
		c.fast(fast)
		c.slow(slow)
		if fast.Code != c.status || fast.Code != slow.Code || fast.Header().Get("Content-Type") != slow.Header().Get("Content-Type") ||
			!bytes.Equal(fast.Body.Bytes(), slow.Body.Bytes()) {
			t.Errorf("%s: answered %d %q %q, writeJSON %d %q %q", c.name, fast.Code, fast.Header().Get("Content-Type"), fast.Body,
				slow.Code, slow.Header().Get("Content-Type"), slow.Body)
		}
	}
}

// FuzzEncodeJSON checks the appenders against encoding/json on what the fuzzer makes of
// strings, metadata and numbers.
func FuzzEncodeJSON(f *testing.F) {
	for i, s := range trickyStrings {
		f.Add(s, trickyStrings[(i+7)%len(trickyStrings)], []byte(trickyMetadata[i%len(trickyMetadata)]), int64(i), uint8(i))
	}
	f.Add("all", "", []byte(`{"a": "<b>"}`), int64(math.MinInt64), uint8(0xff))
	f.Fuzz(func(t *testing.T, a, b string, metadata []byte, n int64, flags uint8) {
		ids := []string{"", "all", "2026-11-22", a}
		p := laurel.Page{Board: a, Window: b, Total: int(n), Period: laurel.PeriodInfo{ID: ids[flags&3], Start: n, End: n + 1, Closed: flags&4 != 0, Total: int(n)}, HasSub: flags&16 != 0}
		p.Entries = []laurel.Entry{
			{Rank: int(n), Member: a, Score: n, Sub: -n, ReachedAt: n, Name: b, Metadata: metadata},
			{Rank: 2, Member: b, Score: -n, Sub: n / 3, ReachedAt: n / 2, Name: a},
		}
		results := []laurel.EventResult{
			{Board: a, Member: a, ID: b, Status: b, Entries: map[string]laurel.Standing{a: {Rank: int(n), Score: n, Sub: n / 7}, b: {Rank: 1, Score: -n}, "all": {}},
				Previous: map[string]laurel.Standing{a: {Rank: int(n) + 1, Score: n - 1, Sub: -n}}},
			{Board: b, Member: b, Status: laurel.StatusDuplicate},
		}
		checkAll(t, p, results, flags&8 != 0, map[string]bool{a: flags&32 != 0, b: flags&64 != 0})
	})
}
