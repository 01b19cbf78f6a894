package laurel_test

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/laurel/laurel"
)

func str(s string) *string { return &s }

func TestBoardDefaults(t *testing.T) {
	var spec laurel.BoardSpec
	b, err := spec.Apply("solvers", nil, 1234)
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != "solvers" || b.Order != laurel.Desc || b.Mode != laurel.Sum || len(b.Windows) != 1 ||
		b.Windows[0].String() != "all" || b.Timezone != "UTC" || b.WeekStart != time.Monday ||
		b.LateLimit != 24*time.Hour || b.Keep != 12 || b.MinValue != nil || b.MaxValue != nil ||
		string(b.Metadata) != "{}" || b.CreatedAt != 1234 {
		t.Fatalf("defaults differ from docs/design.md: %+v", b)
	}
}

func TestBoardSpecValidation(t *testing.T) {
	for _, tc := range []struct {
		name, id, body, code, field string
	}{
		{"bad id", "Solvers", `{}`, laurel.EInvalid, "board"},
		{"id too long", strings.Repeat("a", 65), `{}`, laurel.EInvalid, "board"},
		{"id starts with dash", "-a", `{}`, laurel.EInvalid, "board"},
		{"order", "b", `{"order":"up"}`, laurel.EInvalid, "order"},
		{"mode", "b", `{"mode":"max"}`, laurel.EInvalid, "mode"},
		{"no windows", "b", `{"windows":[]}`, laurel.EInvalid, "windows"},
		{"nine windows", "b", `{"windows":["all","hour","day","week","month","year","last7d","last1h","last2d"]}`, laurel.EInvalid, "windows"},
		{"unknown window", "b", `{"windows":["all","fortnight"]}`, laurel.EInvalid, "windows[1]"},
		{"window twice", "b", `{"windows":["week","week"]}`, laurel.EInvalid, "windows[1]"},
		{"timezone", "b", `{"timezone":"Mars/Olympus"}`, laurel.EInvalid, "timezone"},
		{"local timezone", "b", `{"timezone":"Local"}`, laurel.EInvalid, "timezone"},
		{"week start", "b", `{"week_start":"funday"}`, laurel.EInvalid, "week_start"},
		{"late limit", "b", `{"late_limit":"soon"}`, laurel.EInvalid, "late_limit"},
		{"late limit too long", "b", `{"late_limit":"400d"}`, laurel.EInvalid, "late_limit"},
		{"keep", "b", `{"keep":-1}`, laurel.EInvalid, "keep"},
		{"bounds", "b", `{"min_value":5,"max_value":4}`, laurel.EInvalid, "min_value"},
		{"metadata array", "b", `{"metadata":[1]}`, laurel.EInvalid, "metadata"},
		{"metadata too big", "b", `{"metadata":{"x":"` + strings.Repeat("a", 4096) + `"}}`, laurel.EInvalid, "metadata"},
		{"title control", "b", `{"title":"a\u0007b"}`, laurel.EInvalid, "title"},
		{"reward on all", "b", `{"rewards":[{"window":"all","ranks":[1,1],"reward":{}}]}`, laurel.EInvalid, "rewards[0].window"},
		{"reward on a missing window", "b", `{"rewards":[{"window":"week","ranks":[1,1],"reward":{}}]}`, laurel.EInvalid, "rewards[0].window"},
		{"reward ranks reversed", "b", `{"windows":["week"],"rewards":[{"window":"week","ranks":[3,2],"reward":{}}]}`, laurel.EInvalid, "rewards[0].ranks"},
		{"reward rank zero", "b", `{"windows":["week"],"rewards":[{"window":"week","ranks":[0,2],"reward":{}}]}`, laurel.EInvalid, "rewards[0].ranks"},
		{"reward ranks and percent", "b", `{"windows":["week"],"rewards":[{"window":"week","ranks":[1,2],"percent":5,"reward":{}}]}`, laurel.EInvalid, "rewards[0].ranks"},
		{"reward neither", "b", `{"windows":["week"],"rewards":[{"window":"week","reward":{}}]}`, laurel.EInvalid, "rewards[0].percent"},
		{"reward percent over 100", "b", `{"windows":["week"],"rewards":[{"window":"week","percent":101,"reward":{}}]}`, laurel.EInvalid, "rewards[0].percent"},
		{"reward not an object", "b", `{"windows":["day"],"rewards":[{"window":"day","percent":10,"reward":5}]}`, laurel.EInvalid, "rewards[0].reward"},
		{"reward missing", "b", `{"windows":["day"],"rewards":[{"window":"day","percent":10}]}`, laurel.EInvalid, "rewards[0].reward"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec laurel.BoardSpec
			if err := json.Unmarshal([]byte(tc.body), &spec); err != nil {
				t.Fatal(err)
			}
			_, err := spec.Apply(tc.id, nil, 0)
			var e *laurel.Error
			if !asError(err, &e) || e.Code != tc.code || e.Field != tc.field {
				t.Fatalf("Apply(%s) = %v; want code %s on field %s", tc.body, err, tc.code, tc.field)
			}
		})
	}
}

func TestBoardUpdate(t *testing.T) {
	create := laurel.BoardSpec{Order: str("asc"), Mode: str("best"), Windows: []string{"all", "week"},
		Timezone: str("Europe/Berlin"), WeekStart: str("sunday"), LateLimit: str("1h")}
	b, err := create.Apply("race", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Restating the immutable fields with their values is fine; changing one is a conflict.
	for _, tc := range []struct {
		spec  laurel.BoardSpec
		field string
	}{
		{laurel.BoardSpec{Order: str("desc")}, "order"},
		{laurel.BoardSpec{Mode: str("sum")}, "mode"},
		{laurel.BoardSpec{Timezone: str("UTC")}, "timezone"},
		{laurel.BoardSpec{WeekStart: str("monday")}, "week_start"},
		{laurel.BoardSpec{Windows: []string{"all"}}, "windows"},
	} {
		_, err := tc.spec.Apply("race", &b, 0)
		var e *laurel.Error
		if !asError(err, &e) || e.Code != laurel.EConflict || e.Field != tc.field {
			t.Errorf("changing %s: %v, want a conflict", tc.field, err)
		}
	}
	same := create
	if _, err := same.Apply("race", &b, 0); err != nil {
		t.Fatalf("restating the board: %v", err)
	}
	// Mutable fields change; missing fields keep their values; windows may be added.
	upd := laurel.BoardSpec{LateLimit: str("7d"), Keep: ptr(3), Windows: []string{"week", "all", "last7d"}, Title: str("Race")}
	nb, err := upd.Apply("race", &b, 99)
	if err != nil {
		t.Fatal(err)
	}
	if nb.LateLimit != 7*24*time.Hour || nb.Keep != 3 || len(nb.Windows) != 3 || nb.Title != "Race" ||
		nb.Order != laurel.Asc || nb.Timezone != "Europe/Berlin" || nb.CreatedAt != 0 {
		t.Fatalf("updated board: %+v", nb)
	}
	if len(b.Windows) != 2 {
		t.Fatal("Apply modified the current board's windows")
	}
}

func ptr[T any](v T) *T { return &v }

// A board's Spec, applied to no board, gives the board back: the store and the API rely on it.
func TestBoardSpecRoundTrip(t *testing.T) {
	spec := laurel.BoardSpec{Order: ptr("asc"), Mode: ptr("best"), Windows: []string{"week", "all", "last3h"},
		Timezone: ptr("America/New_York"), WeekStart: ptr("sunday"), LateLimit: ptr("90s"), Keep: ptr(0),
		MinValue: ptr(int64(-5)), Title: ptr("Fastest"), Metadata: json.RawMessage(`{"a": 1}`)}
	b, err := spec.Apply("laps", nil, 1234)
	if err != nil {
		t.Fatal(err)
	}
	back := b.Spec()
	again, err := back.Apply("laps", nil, 1234)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, again) {
		t.Fatalf("round trip:\n%+v\n%+v", b, again)
	}
	if got, _ := json.Marshal(b.Spec()); string(got) != `{"order":"asc","mode":"best","windows":["week","all","last3h"],"timezone":"America/New_York","week_start":"sunday","late_limit":"90s","keep":0,"min_value":-5,"title":"Fastest","metadata":{"a":1}}` {
		t.Fatalf("Spec as JSON: %s", got)
	}
}

func TestRewards(t *testing.T) {
	var spec laurel.BoardSpec
	body := `{"windows":["all","week","day"],"rewards":[
		{"window":"week","ranks":[1,1],"reward":{"gems": 500}},
		{"window":"week","ranks":[2,3],"reward":{"gems":100}},
		{"window":"week","percent":50,"reward":{"badge":"top half"}},
		{"window":"day","ranks":[5,6],"reward":{"xp":1}}]}`
	if err := json.Unmarshal([]byte(body), &spec); err != nil {
		t.Fatal(err)
	}
	b, err := spec.Apply("b", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		window      string
		rank, total int
		want        string // "" when no reward
	}{
		{"week", 1, 10, `{"gems":500}`}, // compacted as stored
		{"week", 2, 10, `{"gems":100}`},
		{"week", 3, 10, `{"gems":100}`},
		{"week", 4, 10, `{"badge":"top half"}`},
		{"week", 5, 10, `{"badge":"top half"}`},
		{"week", 6, 10, ""},
		{"week", 6, 11, `{"badge":"top half"}`}, // ⌈11·0.5⌉ = 6
		{"week", 1, 1, `{"gems":500}`},
		{"day", 4, 10, ""},
		{"day", 6, 10, `{"xp":1}`},
		{"all", 1, 10, ""},
	} {
		got, ok := b.Rewards.For(tc.window, tc.rank, tc.total)
		if ok != (tc.want != "") || string(got) != tc.want {
			t.Errorf("%s rank %d of %d: reward %s, %v; want %q", tc.window, tc.rank, tc.total, got, ok, tc.want)
		}
	}
	if got := b.Rewards.LastRank("week", 11); got != 6 {
		t.Errorf("last rewarded rank of 11 in week = %d, want 6", got)
	}
	if got := b.Rewards.LastRank("day", 5); got != 5 {
		t.Errorf("last rewarded rank of 5 in day = %d, want 5 (no more than the total)", got)
	}
	if got := b.Rewards.LastRank("all", 5); got != 0 {
		t.Errorf("last rewarded rank in all = %d, want 0", got)
	}
	// The rules survive the stored form, and an update may replace or clear them.
	rec, _ := json.Marshal(b.Record())
	var back laurel.BoardRecord
	if err := json.Unmarshal(rec, &back); err != nil {
		t.Fatal(err)
	}
	b2, err := back.Board("b")
	if err != nil || len(b2.Rewards) != 4 || string(b2.Rewards[3].Reward) != `{"xp":1}` {
		t.Fatalf("stored rewards came back as %+v, %v", b2.Rewards, err)
	}
	b3, err := (&laurel.BoardSpec{Title: str("x")}).Apply("b", &b2, 0)
	if err != nil || len(b3.Rewards) != 4 {
		t.Fatalf("an update without rewards kept %d rules, %v", len(b3.Rewards), err)
	}
	b4, err := (&laurel.BoardSpec{Rewards: laurel.Rewards{}}).Apply("b", &b3, 0)
	if err != nil || b4.Rewards != nil {
		t.Fatalf("an empty list left %+v, %v", b4.Rewards, err)
	}
	if s, _ := json.Marshal(b4.Spec()); strings.Contains(string(s), "rewards") {
		t.Errorf("a board without rewards shows %s", s)
	}
}

// decodeSpec decodes a PUT /v1/boards body as the server does (http/decode.go): valid UTF-8,
// one JSON object, no unknown field, nothing after it.
func decodeSpec(body []byte) (laurel.BoardSpec, bool) {
	var spec laurel.BoardSpec
	if !utf8.Valid(body) {
		return spec, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&spec) != nil {
		return spec, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return spec, false
	}
	return spec, true
}

// FuzzBoardSpec applies the board configurations the fuzzer makes up, as PUT /v1/boards
// bodies: create reads as a new board's, update (when it decodes) as a change to that board a
// day later. An error is invalid_argument (or conflict, for a change); a board that either
// makes is stored as its Record in JSON and read back (BoardRecord.Board) to the same board,
// whose Record is the same JSON: the stores keep boards so, and the API shows them so.
func FuzzBoardSpec(f *testing.F) {
	for _, seed := range [][2]string{
		{`{}`, ``},
		{`{"order": "asc", "mode": "best", "windows": ["week", "all", "last3h"], "timezone": "America/New_York", "week_start": "sunday",
			"late_limit": "90s", "keep": 0, "min_value": -5, "title": "Fastest", "metadata": {"a": 1}}`, `{"windows": ["week", "all", "last3h", "day"], "late_limit": "1d12h"}`},
		{`{"windows": ["day", "all"], "late_limit": "1h", "cohorts": {"window": "day", "size": 2, "tiers": ["bronze", "silver"], "promote": 1, "demote": 1},
			"rewards": [{"window": "day", "tier": "silver", "ranks": [1, 1], "reward": {"chest": "silver"}}, {"window": "day", "tier": "bronze", "ranks": [1, 2], "reward": {}}]}`,
			`{"cohorts": {}}`},
		{`{"windows": ["day", "all"], "tournament": {"start": "2026-11-22T12:00:00+02:00", "window": "day", "duration": "20h", "join_required": true, "max_members": 2, "max_attempts": 2}}`,
			`{"tournament": {"start": "2026-11-22T12:00:00.5Z", "window": "day", "duration": "1.5h"}}`},
		{`{"windows": ["week", "month", "last7d"], "cohorts": {"window": "week", "size": 50}, "rewards": [{"window": "week", "ranks": [1, 10], "reward": {"gems": 5}}]}`, `{"order": "asc"}`},
		{`{"late_limit": "366d", "keep": 1000, "min_value": 5, "max_value": 5, "timezone": "Asia/Kolkata", "week_start": "saturday"}`, `{"max_value": 4}`},
		{`{"windows": []}`, `null`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	const now = 1795341600000 // 2026-11-22T10:00:00Z
	roundTrip := func(t *testing.T, b laurel.Board, how string) {
		t.Helper()
		raw, err := json.Marshal(b.Record())
		if err != nil {
			t.Fatalf("%s: Record does not encode: %v", how, err)
		}
		var rec laurel.BoardRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("%s: Record %s does not decode: %v", how, raw, err)
		}
		back, err := rec.Board(b.ID)
		if err != nil {
			t.Fatalf("%s: Record %s does not read back: %v", how, raw, err)
		}
		if !reflect.DeepEqual(b, back) {
			t.Fatalf("%s: Record %s reads back as another board:\n%+v\n%+v", how, raw, b, back)
		}
		if again, _ := json.Marshal(back.Record()); !bytes.Equal(again, raw) {
			t.Fatalf("%s: Record %s reads back to Record %s", how, raw, again)
		}
	}
	f.Fuzz(func(t *testing.T, create, update []byte) {
		spec, ok := decodeSpec(create)
		if !ok {
			return
		}
		b, err := spec.Apply("b", nil, now)
		if err != nil {
			if code := laurel.ErrorCode(err); code != laurel.EInvalid {
				t.Fatalf("creating %s: %v (code %q)", create, err, code)
			}
			return
		}
		roundTrip(t, b, "created by "+string(create))
		upd, ok := decodeSpec(update)
		if !ok {
			return
		}
		nb, err := upd.Apply("b", &b, now+24*3600*1000)
		if err != nil {
			if code := laurel.ErrorCode(err); code != laurel.EInvalid && code != laurel.EConflict {
				t.Fatalf("updating %s with %s: %v (code %q)", create, update, err, code)
			}
			return
		}
		roundTrip(t, nb, "created by "+string(create)+", updated by "+string(update))
	})
}
