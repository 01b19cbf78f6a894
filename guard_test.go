package laurel_test

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/laurel/laurel"
)

// TestGuardRules: each rule refuses exactly the events that break it, judged on the member's
// aggregate in the rule's window with the refused events left out (a refused write stores
// nothing).
func TestGuardRules(t *testing.T) {
	const max = math.MaxInt64
	for _, tc := range []struct {
		name, board string
		values      []int64
		want        []bool
	}{
		{"gain on a rolling window", `{"windows": ["last1h"], "guard": {"gain": {"window": "last1h", "max": 5}}}`,
			[]int64{5, 1}, []bool{false, true}},
		{"gain up to max", `{"guard": {"gain": {"window": "all", "max": 10}}}`,
			[]int64{6, 4, 1, -3, 3, 1}, []bool{false, false, true, false, false, true}},
		{"gain on asc is a fall", `{"order": "asc", "guard": {"gain": {"window": "all", "max": 10}}}`,
			[]int64{-10, -1, 5, -5}, []bool{false, true, false, false}},
		{"gain: a loss never breaks it", `{"guard": {"gain": {"window": "all", "max": 1}}}`,
			[]int64{1, -5, -5}, []bool{false, false, false}},
		{"gain near the int64 range", `{"order": "asc", "guard": {"gain": {"window": "all", "max": 9223372036854775807}}}`,
			[]int64{-max, -1}, []bool{false, true}},
		{"jump by amount", `{"mode": "best", "guard": {"jump": {"window": "all", "amount": 10}}}`,
			[]int64{100, 110, 121, 5, 120}, []bool{false, false, true, false, false}},
		{"jump by percent", `{"mode": "best", "guard": {"jump": {"window": "all", "percent": 25}}}`,
			[]int64{100, 125, 157, 156}, []bool{false, false, true, false}},
		{"jump on asc: a 45 s lap after 60 s ones", `{"mode": "best", "order": "asc", "guard": {"jump": {"window": "all", "percent": 10}}}`,
			[]int64{60_000, 61_000, 55_000, 45_000, 54_500}, []bool{false, false, false, true, false}},
		{"jump: the amount with a percent", `{"mode": "best", "guard": {"jump": {"window": "all", "amount": 50, "percent": 10}}}`,
			[]int64{1000, 1060, 1040}, []bool{false, true, false}},
		{"jump: the percent with an amount", `{"mode": "best", "guard": {"jump": {"window": "all", "amount": 50, "percent": 10}}}`,
			[]int64{100, 140, 110}, []bool{false, true, false}},
		{"jump: the first score is free", `{"mode": "best", "guard": {"jump": {"window": "all", "amount": 0}}}`,
			[]int64{max, -max, max}, []bool{false, false, false}},
		{"jump exact at the int64 range", `{"mode": "best", "guard": {"jump": {"window": "all", "percent": 199}}}`,
			[]int64{-max, max, -max + 1}, []bool{false, true, false}},
		{"jump of exactly the percent", `{"mode": "best", "guard": {"jump": {"window": "all", "percent": 200}}}`,
			[]int64{-max, max}, []bool{false, false}},
		{"jump from a negative best", `{"mode": "best", "guard": {"jump": {"window": "all", "percent": 100}}}`,
			[]int64{-10, 10, 0, 10}, []bool{false, true, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec laurel.BoardSpec
			if err := json.Unmarshal([]byte(tc.board), &spec); err != nil {
				t.Fatal(err)
			}
			const now = 1_795_000_000_000
			b, err := spec.Apply("b", nil, now)
			if err != nil {
				t.Fatal(err)
			}
			aggs := newMemAggs(&b, now)
			got := make([]bool, len(tc.values))
			for i, v := range tc.values {
				before := len(aggs.m)
				snapshot := map[string]laurel.Agg{}
				for k, a := range aggs.m {
					snapshot[k] = a
				}
				_, err := laurel.StageEvent(context.Background(), &b, aggs, "ann", v, now-int64(len(tc.values)-i), uint64(i+1), now)
				switch laurel.ErrorCode(err) {
				case "":
				case laurel.EGuardRefused:
					got[i] = true
					if rule := laurel.GuardRuleOf(laurel.InEvent(3, err)); rule == "" || !strings.Contains(tc.board, `"`+rule+`"`) {
						t.Errorf("refused by rule %q: %v", rule, err)
					}
					// A store abandons the refused write; the test does as it does.
					aggs.m = snapshot
					if len(aggs.m) != before {
						t.Fatal("lost aggregates")
					}
				default:
					t.Fatalf("event %d: %v", i, err)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("refused %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGuardHold: a rule whose action is hold stages the event that breaks it all the same and
// names itself, and the held event counts when the next ones are judged.
func TestGuardHold(t *testing.T) {
	for _, tc := range []struct {
		name, board string
		values      []int64
		want        []string
	}{
		{"jump", `{"mode": "best", "guard": {"jump": {"window": "all", "amount": 10, "action": "hold"}}}`,
			[]int64{100, 110, 121, 5, 131, 142}, []string{"", "", "jump", "", "", "jump"}},
		{"gain", `{"guard": {"gain": {"window": "all", "max": 10, "action": "hold"}}}`,
			[]int64{6, 4, 1, -3, 3, -1}, []string{"", "", "gain", "", "gain", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec laurel.BoardSpec
			if err := json.Unmarshal([]byte(tc.board), &spec); err != nil {
				t.Fatal(err)
			}
			const now = 1_795_000_000_000
			b, err := spec.Apply("b", nil, now)
			if err != nil {
				t.Fatal(err)
			}
			if !b.Guard.HoldsEvents() || b.Spec().Guard.Jump != nil && *b.Spec().Guard.Jump.Action != "hold" {
				t.Fatalf("the guard %+v does not hold", b.Spec().Guard)
			}
			aggs := newMemAggs(&b, now)
			got := make([]string, len(tc.values))
			var sum, best int64
			for i, v := range tc.values {
				if got[i], err = laurel.StageEvent(context.Background(), &b, aggs, "ann", v, now-int64(len(tc.values)-i), uint64(i+1), now); err != nil {
					t.Fatalf("event %d: %v; a hold rule refuses nothing", i, err)
				}
				sum, best = sum+v, max(best, v)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("held by %q, want %q", got, tc.want)
			}
			want := map[laurel.Mode]int64{laurel.Sum: sum, laurel.Best: best}[b.Mode]
			for _, a := range aggs.m {
				if a.Score != want {
					t.Errorf("the member's score is %d, want %d: every event counts", a.Score, want)
				}
			}
		})
	}
}

// TestGuardRate: an event breaks the rate rule when its member has max counted events at times
// in the interval that ends at its own (the start excluded), whatever their order of arrival;
// a refused event does not count, a held one does.
func TestGuardRate(t *testing.T) {
	const now = 1_795_000_000_000
	for _, tc := range []struct {
		name   string
		action string
		times  []int64 // after now−10 s, in ms
		want   []string
	}{
		{"three a second", "refuse", []int64{0, 100, 200, 300, 1000, 1050, 1100},
			[]string{"", "", "", "rate", "", "rate", ""}},
		{"the interval's start is out", "refuse", []int64{0, 1, 2, 1000, 1001, 1002},
			[]string{"", "", "", "", "", ""}},
		{"at one instant", "refuse", []int64{5, 5, 5, 5}, []string{"", "", "", "rate"}},
		{"late events count where they fall", "refuse", []int64{2000, 1500, 1200, 500, 2100, 2600},
			[]string{"", "", "", "", "rate", ""}},
		{"held ones count", "hold", []int64{0, 100, 200, 300, 900, 1150, 1350},
			[]string{"", "", "", "rate", "rate", "rate", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := laurel.BoardSpec{Guard: &laurel.GuardSpec{Rate: &laurel.RateSpec{Max: ptr(int64(3)), Interval: "1s", Action: ptr(tc.action)}}}
			b, err := spec.Apply("b", nil, now)
			if err != nil {
				t.Fatal(err)
			}
			aggs := newMemAggs(&b, now)
			aggs.times = map[string][]int64{}
			got := make([]string, len(tc.times))
			for i, at := range tc.times {
				ts := now - 10_000 + at
				snapshot := maps.Clone(aggs.m)
				held, err := laurel.StageEvent(context.Background(), &b, aggs, "ann", 1, ts, uint64(i+1), now)
				switch {
				case laurel.ErrorCode(err) == laurel.EGuardRefused && tc.action == "refuse":
					got[i] = laurel.GuardRuleOf(err)
					aggs.m = snapshot // a store abandons the refused write: it does not count
					continue
				case err != nil:
					t.Fatalf("event %d: %v", i, err)
				}
				got[i] = held
				aggs.times["ann"] = append(aggs.times["ann"], ts)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("broken %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGuardSpec(t *testing.T) {
	for _, tc := range []struct{ name, body, field string }{
		{"gain window not the board's", `{"guard": {"gain": {"window": "day", "max": 5}}}`, "guard.gain.window"},
		{"gain without max", `{"guard": {"gain": {"window": "all"}}}`, "guard.gain.max"},
		{"gain with percent", `{"guard": {"gain": {"window": "all", "max": 3, "percent": 5}}}`, "guard.gain.max"},
		{"gain on a best board", `{"mode": "best", "guard": {"gain": {"window": "all", "max": 5}}}`, "guard.gain"},
		{"gain of 0", `{"guard": {"gain": {"window": "all", "max": 0}}}`, "guard.gain.max"},
		{"jump on a sum board", `{"guard": {"jump": {"window": "all", "amount": 5}}}`, "guard.jump"},
		{"jump without limits", `{"mode": "best", "guard": {"jump": {"window": "all"}}}`, "guard.jump"},
		{"jump with max", `{"mode": "best", "guard": {"jump": {"window": "all", "max": 5}}}`, "guard.jump.max"},
		{"jump of a negative amount", `{"mode": "best", "guard": {"jump": {"window": "all", "amount": -1}}}`, "guard.jump.amount"},
		{"jump of 0%", `{"mode": "best", "guard": {"jump": {"window": "all", "percent": 0}}}`, "guard.jump.percent"},
		{"an unknown action", `{"guard": {"gain": {"window": "all", "max": 5, "action": "ban"}}}`, "guard.gain.action"},
		{"rate without max", `{"guard": {"rate": {"interval": "1m"}}}`, "guard.rate.max"},
		{"rate of 0", `{"guard": {"rate": {"max": 0, "interval": "1m"}}}`, "guard.rate.max"},
		{"rate over the bound", `{"guard": {"rate": {"max": 100001, "interval": "1m"}}}`, "guard.rate.max"},
		{"rate without interval", `{"guard": {"rate": {"max": 20}}}`, "guard.rate.interval"},
		{"rate in microseconds", `{"guard": {"rate": {"max": 20, "interval": "1500us"}}}`, "guard.rate.interval"},
		{"rate over a week", `{"guard": {"rate": {"max": 20, "interval": "8d"}}}`, "guard.rate.interval"},
		{"rate's unknown action", `{"guard": {"rate": {"max": 20, "interval": "1m", "action": "ban"}}}`, "guard.rate.action"},
	} {
		var spec laurel.BoardSpec
		if err := json.Unmarshal([]byte(tc.body), &spec); err != nil {
			t.Fatal(err)
		}
		_, err := spec.Apply("b", nil, 0)
		var le *laurel.Error
		if !asError(err, &le) || le.Code != laurel.EInvalid || le.Field != tc.field {
			t.Errorf("%s: %v, want invalid_argument at %s", tc.name, err, tc.field)
		}
	}
}

// TestGuardSpecRoundTrip: a board with a guard is kept and shown as it was put, and an empty
// guard removes it.
func TestGuardSpecRoundTrip(t *testing.T) {
	body := `{"mode": "best", "windows": ["all", "hour"], "guard": {"trusted": true,
		"rate": {"max": 20, "interval": "60s", "action": "hold"},
		"jump": {"window": "all", "amount": 15000, "percent": 20}}}`
	var spec laurel.BoardSpec
	if err := json.Unmarshal([]byte(body), &spec); err != nil {
		t.Fatal(err)
	}
	b, err := spec.Apply("b", nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Record().Board("b")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Guard, b.Guard) || !b.Guard.Trusted || b.Guard.Jump.Max != 15000 || b.Guard.Jump.Percent != 20 {
		t.Errorf("kept %+v, read back %+v", b.Guard, again.Guard)
	}
	js, _ := json.Marshal(b.Spec().Guard)
	if want := `{"trusted":true,"rate":{"max":20,"interval":"1m","action":"hold"},"jump":{"window":"all","amount":15000,"percent":20,"action":"refuse"}}`; string(js) != want {
		t.Errorf("shown as %s, want %s", js, want)
	}
	off, err := (&laurel.BoardSpec{Guard: &laurel.GuardSpec{}}).Apply("b", &b, 8)
	if err != nil || off.Guard != nil || off.Spec().Guard != nil {
		t.Errorf("an empty guard: %+v, %v; want none", off.Guard, err)
	}
}

// TestTrustedBoard: a trusted board refuses a member token's events, and takes a key's.
func TestTrustedBoard(t *testing.T) {
	b, err := (&laurel.BoardSpec{Guard: &laurel.GuardSpec{Trusted: ptr(true)}}).Apply("b", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AdmitWriter(&laurel.Event{}, laurel.SubmitOptions{MemberToken: true}); laurel.ErrorCode(err) != laurel.EPermissionDenied || laurel.GuardRuleOf(err) != "trusted" {
		t.Errorf("a token's events: %v, want permission_denied by the trusted rule", err)
	}
	if err := b.AdmitWriter(&laurel.Event{}, laurel.SubmitOptions{}); err != nil {
		t.Errorf("a key's events: %v", err)
	}
	open, _ := (&laurel.BoardSpec{}).Apply("c", nil, 0)
	if err := open.AdmitWriter(&laurel.Event{}, laurel.SubmitOptions{MemberToken: true}); err != nil {
		t.Errorf("a token's events on a board without a guard: %v", err)
	}
}
