package laureltest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/laurel/laurel"
)

// Review is the model test of the review queue (docs/design.md, "Guards"): members held by
// hold rules and reported by the game, their flags listed, cleared and confirmed, on the
// nodes nodes opens (each step through another node), with every board's ranking and every
// flag checked after each step.
func Review(t *testing.T, nodes Nodes) {
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(1_795_000_000_000)
	ns := nodes(t, clock.Load)
	step := 0
	node := func() laurel.Service { step++; return ns[step%len(ns)] }
	store := func() interface {
		laurel.Service
		laurel.Records
		laurel.FlagStore
	} {
		return node().(interface {
			laurel.Service
			laurel.Records
			laurel.FlagStore
		})
	}
	put := func(id string, spec laurel.BoardSpec) {
		if _, _, err := node().PutBoard(ctx, id, spec); err != nil {
			t.Fatalf("put %s: %v", id, err)
		}
	}
	put("laps", laurel.BoardSpec{Order: ptr("asc"), Mode: ptr("best"), Windows: []string{"all"},
		Guard: &laurel.GuardSpec{Jump: &laurel.GuardRuleSpec{Window: "all", Percent: ptr(int64(10)), Action: ptr("hold")}}})
	put("pts", laurel.BoardSpec{Windows: []string{"all"},
		Guard: &laurel.GuardSpec{Gain: &laurel.GuardRuleSpec{Window: "all", Max: ptr(int64(100)), Action: ptr("hold")}}})
	submit := func(board, member, id string, value int64) laurel.EventResult {
		t.Helper()
		clock.Add(1000)
		res, err := node().Submit(ctx, []laurel.Event{{Board: board, Member: member, ID: id, Value: value}}, laurel.SubmitOptions{})
		if err != nil {
			t.Fatalf("submit %s %s %d: %v", board, member, value, err)
		}
		return res[0]
	}
	board := func(id string, want string) {
		t.Helper()
		p, err := node().Page(ctx, laurel.Query{Board: id, Window: "all"}, 0, 100, laurel.ScoreRange{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range p.Entries {
			got = append(got, fmt.Sprintf("%s:%d", e.Member, e.Score))
		}
		if g := fmt.Sprint(got); g != want {
			t.Fatalf("board %s: %s, want %s", id, g, want)
		}
	}
	flags := func(f laurel.FlagFilter, want string) []*laurel.Flag {
		t.Helper()
		got, err := laurel.ListFlags(ctx, store(), f, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, fl := range got {
			var evs []string
			for _, ev := range fl.Events {
				evs = append(evs, ev.Rule+"/"+ev.ID)
			}
			s = append(s, fmt.Sprintf("%s/%s/%s%s:%s%v", fl.Board, fl.Member, fl.Rule, fl.Reason, fl.State, evs))
		}
		if g := fmt.Sprint(s); g != want {
			t.Fatalf("flags %+v: %s, want %s", f, g, want)
		}
		return got
	}
	resolve := func(id, action string, erase bool) (*laurel.Flag, error) {
		clock.Add(1000)
		s := store()
		f, resolved, err := laurel.ResolveFlag(ctx, s, s, id, laurel.Resolution{Action: action, Erase: erase})
		if err == nil && resolved != (f.Resolved == clock.Load()) {
			t.Fatalf("resolve %s %s: resolved %v, the flag resolved at %s", id, action, resolved, laurel.FormatTime(f.Resolved))
		}
		return f, err
	}
	hidden := func(member string, want bool) {
		t.Helper()
		p, err := node().Profile(ctx, member)
		if got := err == nil && p.Hidden; got != want {
			t.Fatalf("%s hidden: %v (%v), want %v", member, got, err, want)
		}
	}

	// A 45-second lap after 60-second ones is held: stored, its member hidden, a flag opened.
	submit("laps", "ada", "a1", 60_000)
	submit("laps", "ada", "a2", 59_000)
	submit("laps", "bob", "b1", 58_000)
	if r := submit("laps", "ada", "a3", 45_000); r.Flag == "" || r.Status != laurel.StatusApplied {
		t.Fatalf("a 45 s lap: %+v; want applied and held", r)
	}
	board("laps", "[bob:58000]")
	hidden("ada", true)
	// A lap within the rule of the held best is taken, not held; a further jump joins the flag.
	if r := submit("laps", "ada", "a4", 44_000); r.Flag != "" {
		t.Fatalf("a 44 s lap after a held 45: %+v; not a jump", r)
	}
	held := submit("laps", "ada", "a5", 30_000)
	open := flags(laurel.FlagFilter{State: laurel.FlagOpen}, "[laps/ada/jump:open[jump/a3 jump/a5]]")
	if held.Flag != open[0].ID {
		t.Fatalf("the second held lap's flag %s, want the open one, %s", held.Flag, open[0].ID)
	}
	// Confirmed: the held laps retracted exactly, the member kept hidden; again: the same.
	f, err := resolve(open[0].ID, "confirm", false)
	if err != nil || f.State != laurel.FlagConfirmed {
		t.Fatalf("confirm: %+v, %v", f, err)
	}
	if again, err := resolve(open[0].ID, "confirm", false); err != nil || again.ID != f.ID {
		t.Fatalf("confirm again: %+v, %v; want the same flag", again, err)
	}
	if _, err := resolve(open[0].ID, "clear", false); laurel.ErrorCode(err) != laurel.EConflict {
		t.Fatalf("clear a confirmed flag: %v; want conflict", err)
	}
	hidden("ada", true)
	board("laps", "[bob:58000]")
	if err := node().Unhide(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	board("laps", "[ada:44000 bob:58000]") // a3 and a5 retracted, a4 stands
	flags(laurel.FlagFilter{State: laurel.FlagOpen}, "[]")

	// A gain beyond the rule is held; cleared, the member is back with it.
	submit("pts", "carl", "c1", 60)
	submit("pts", "carl", "c2", 50)
	board("pts", "[]")
	open = flags(laurel.FlagFilter{Board: "pts"}, "[pts/carl/gain:open[gain/c2]]")
	if f, err := resolve(open[0].ID, "clear", false); err != nil || f.State != laurel.FlagCleared {
		t.Fatalf("clear: %+v, %v", f, err)
	}
	board("pts", "[carl:110]")
	hidden("carl", false)

	// The game reports a member: held, with its reason; a second report finds the same flag.
	s := store()
	rf, err := laurel.ReportFlag(ctx, s, "laps", "bob", "speed hack")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := laurel.ReportFlag(ctx, store(), "laps", "bob", "again"); err != nil || again.ID != rf.ID {
		t.Fatalf("a second report: %+v, %v; want flag %s", again, err, rf.ID)
	}
	board("laps", "[ada:44000]")
	flags(laurel.FlagFilter{Member: "bob"}, "[laps/bob/speed hack:open[]]")

	// Held on two boards: clearing one keeps the member hidden until the other is cleared.
	submit("pts", "bob", "p1", 500)
	open = flags(laurel.FlagFilter{Member: "bob", State: laurel.FlagOpen}, "[laps/bob/speed hack:open[] pts/bob/gain:open[gain/p1]]")
	if next, err := laurel.ListFlags(ctx, store(), laurel.FlagFilter{State: laurel.FlagOpen}, open[0].ID, 10); err != nil || len(next) != 1 || next[0].ID != open[1].ID {
		t.Fatalf("the open flags after %s: %+v, %v; want %s", open[0].ID, next, err, open[1].ID)
	}
	if _, err := resolve(open[0].ID, "clear", false); err != nil {
		t.Fatal(err)
	}
	hidden("bob", true)
	board("laps", "[ada:44000]")
	if _, err := resolve(open[1].ID, "clear", false); err != nil {
		t.Fatal(err)
	}
	board("laps", "[ada:44000 bob:58000]")
	board("pts", "[bob:500 carl:110]")

	// Confirmed with erase: the member is gone.
	submit("pts", "dan", "d1", 1000)
	open = flags(laurel.FlagFilter{Member: "dan"}, "[pts/dan/gain:open[gain/d1]]")
	if f, err := resolve(open[0].ID, "confirm", true); err != nil || !f.Erased {
		t.Fatalf("confirm and erase: %+v, %v", f, err)
	}
	if err := node().Unhide(ctx, "dan"); err != nil {
		t.Fatal(err)
	}
	board("pts", "[bob:500 carl:110]")
	if _, err := node().Profile(ctx, "dan"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("an erased member's profile: %v", err)
	}

	// A confirmation cut off after its first retraction: a clear cannot undo it, a second
	// confirmation finishes it, and the game hears of the flag opened, held and resolved only.
	submit("laps", "eve", "e1", 60_000)
	submit("laps", "eve", "e2", 40_000)
	submit("laps", "eve", "e3", 30_000)
	cutOff := flags(laurel.FlagFilter{Member: "eve"}, "[laps/eve/jump:open[jump/e2 jump/e3]]")[0]
	s = store()
	if _, _, err := laurel.ResolveFlag(ctx, &retractCut{Service: s, left: 1}, s, cutOff.ID, laurel.Resolution{Action: "confirm"}); err == nil {
		t.Fatal("a confirmation cut off after its first retraction: no error")
	}
	if _, err := resolve(cutOff.ID, "clear", false); laurel.ErrorCode(err) != laurel.EConflict {
		t.Fatalf("clear a flag being confirmed: %v; want conflict", err)
	}
	hidden("eve", true)
	if f, err := resolve(cutOff.ID, "confirm", false); err != nil || f.State != laurel.FlagConfirmed || f.Confirming {
		t.Fatalf("confirm again: %+v, %v", f, err)
	}
	if err := node().Unhide(ctx, "eve"); err != nil {
		t.Fatal(err)
	}
	board("laps", "[ada:44000 bob:58000 eve:60000]")
	var told []string
	if err := laurel.EachRecord(ctx, store(), laurel.FlagNoticeKind, "", "", func(r laurel.Record) (bool, error) {
		var n laurel.FlagNotice
		err := json.Unmarshal(r.Value, &n)
		if err == nil && n.Flag.ID == cutOff.ID {
			told = append(told, n.Type)
		}
		return true, err
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(told) != "[flag.opened flag.held flag.resolved]" {
		t.Fatalf("the game was told %v of the flag", told)
	}

	// Bad requests change nothing.
	for _, tc := range []struct {
		id, action string
		erase      bool
		code       string
	}{
		{"0000000000000000ffff", "clear", false, laurel.ENotFound},
		{open[0].ID, "ban", false, laurel.EInvalid},
		{open[0].ID, "clear", true, laurel.EInvalid},
	} {
		if _, err := resolve(tc.id, tc.action, tc.erase); laurel.ErrorCode(err) != tc.code {
			t.Errorf("resolve %s %s erase %v: %v; want %s", tc.id, tc.action, tc.erase, err, tc.code)
		}
	}
	if _, err := laurel.ReportFlag(ctx, store(), "laps", "eve", ""); laurel.ErrorCode(err) != laurel.EInvalid {
		t.Errorf("a report without a reason: %v", err)
	}
	if _, err := laurel.ListFlags(ctx, store(), laurel.FlagFilter{State: "shut"}, "", 10); laurel.ErrorCode(err) != laurel.EInvalid {
		t.Errorf("a bad state: %v", err)
	}
	// Pages of one, in the order the flags were opened.
	all := flags(laurel.FlagFilter{}, fmt.Sprint([]string{"laps/ada/jump:confirmed[jump/a3 jump/a5]", "pts/carl/gain:cleared[gain/c2]",
		"laps/bob/speed hack:cleared[]", "pts/bob/gain:cleared[gain/p1]", "pts/dan/gain:confirmed[gain/d1]", "laps/eve/jump:confirmed[jump/e2 jump/e3]"}))
	after := ""
	for i := range all {
		page, err := laurel.ListFlags(ctx, store(), laurel.FlagFilter{}, after, 1)
		if err != nil || len(page) != 1 || page[0].ID != all[i].ID {
			t.Fatalf("page %d: %+v, %v", i, page, err)
		}
		after = page[0].ID
	}
	if !slices.IsSortedFunc(all, func(a, b *laurel.Flag) int { return cmp.Compare(a.Opened, b.Opened) }) {
		t.Fatal("flags not in the order they were opened")
	}
	checkStore(t, ns[0])
}

// retractCut is a service whose retractions fail once left of them are done: a confirmation
// cut off midway, as by a crash.
type retractCut struct {
	laurel.Service
	left int
}

func (c *retractCut) Retract(ctx context.Context, board, id string) error {
	if c.left == 0 {
		return laurel.Errorf(laurel.EUnavailable, "cut off")
	}
	c.left--
	return c.Service.Retract(ctx, board, id)
}
