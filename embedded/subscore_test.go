package embedded_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestSubscoreBoard: a board with a subscore ranks by the pair in every mode and either
// subscore order, as the domain's rules make its entries from the events (laurel.AggOf): in
// a day, all and a rolling window, under retraction, with the standings a write answers
// (previous and after), its history, a retried id with another subscore a conflict, and
// across the days that close (a closed day keeps its entries' subscores). Then the store is
// restarted and reads the same; a crash is TestReplayAfterCrash's (its board "sub"). Then
// its version-5 dump is imported into a fresh store, which reads the same and dumps the same
// bytes.
func TestSubscoreBoard(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 51))
	for _, mode := range []string{"best", "last", "sum"} {
		for _, order := range []string{"asc", "desc"} {
			t.Run(mode+"-"+order, func(t *testing.T) {
				subscoreRun(t, rand.New(rand.NewPCG(rng.Uint64(), 0)), mode, order)
			})
		}
	}
}

// subEvent is an event as the test keeps it.
type subEvent struct {
	member         string
	value, sub, ts int64
	seq            uint64 // arrival order
	id             string
	retracted      bool
}

type subModel struct {
	b      *laurel.Board
	events []*subEvent
}

// entries returns the entries the events make in sp (zero: all), ranked.
func (m *subModel) entries(t *testing.T, sp laurel.Span) []laurel.Entry {
	t.Helper()
	byMember := map[string][]laurel.Counted{}
	for _, ev := range m.events {
		if !ev.retracted {
			byMember[ev.member] = append(byMember[ev.member], laurel.Counted{Value: ev.value, Sub: ev.sub, TS: ev.ts, Seq: ev.seq})
		}
	}
	var out []laurel.Entry
	for member, evs := range byMember {
		a, err := laurel.AggOf(m.b.Mode, m.b.Ordering(), evs, sp)
		if err != nil {
			t.Fatal(err)
		}
		if a.Present() {
			out = append(out, laurel.Entry{Member: member, Score: a.Score, Sub: a.Sub, ReachedAt: a.At})
		}
	}
	r := laurel.NewSortedRanking(m.b.Ordering(), out)
	all, err := r.Page(context.Background(), 1, len(out))
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// current returns the span of w a read at now sees.
func (m *subModel) current(w laurel.Window, now int64) laurel.Span {
	cal := m.b.Calendar()
	switch {
	case w.Kind == laurel.WindowAll:
		return laurel.Span{}
	case w.IsRolling():
		s, e := cal.Span(w, time.UnixMilli(now))
		return laurel.Span{Start: s.UnixMilli(), End: e.UnixMilli()}
	}
	s, e := cal.SpanOf(w, now)
	return laurel.Span{Start: s, End: e}
}

func fmtSubEntries(es []laurel.Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "  #%d %s %d/%d at %d\n", e.Rank, e.Member, e.Score, e.Sub, e.ReachedAt)
	}
	return b.String()
}

func sameSubEntries(a, b []laurel.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Rank != y.Rank || x.Member != y.Member || x.Score != y.Score || x.Sub != y.Sub || x.ReachedAt != y.ReachedAt {
			return false
		}
	}
	return true
}

func readAll(t *testing.T, e *embedded.Store, q laurel.Query) laurel.Page {
	t.Helper()
	p, err := e.Page(context.Background(), q, 0, laurel.MaxPageLimit, laurel.ScoreRange{})
	if err != nil {
		t.Fatalf("Page %+v: %v", q, err)
	}
	if !p.HasSub {
		t.Fatalf("Page %+v: HasSub is false on a board with a subscore", q)
	}
	return p
}

func subscoreRun(t *testing.T, rng *rand.Rand, mode, order string) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-16T10:00:00Z")
	dir := t.TempDir()
	open := func(dir string) *embedded.Store {
		e, err := embedded.Open(dir, embedded.Options{Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	closeStore := func(e *embedded.Store) {
		if err := e.Check(); err != nil {
			t.Fatalf("Check: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	e := open(dir)
	windows := []string{"day", "all", "last2d"}
	putBoard(t, e, "s", laurel.BoardSpec{Mode: ptr(mode), Subscore: ptr(order), Windows: windows, LateLimit: ptr("1h"), Keep: ptr(20)})
	info, err := e.Board(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	m := &subModel{b: &info.Board}
	var ws []laurel.Window
	for _, name := range windows {
		w, _ := laurel.ParseWindow(name)
		ws = append(ws, w)
	}
	members := []string{"ada", "bob", "cy", "dee", "eve", "fox"}
	byID := map[string]*subEvent{}
	var seq uint64

	check := func(step int) {
		t.Helper()
		now := c.Now()
		for _, w := range ws {
			q := laurel.Query{Board: "s", Window: w.String()}
			want := m.entries(t, m.current(w, now))
			got := readAll(t, e, q)
			if !sameSubEntries(got.Entries, want) || got.Total != len(want) {
				t.Fatalf("step %d, %s: got (total %d)\n%swant\n%s", step, w, got.Total, fmtSubEntries(got.Entries), fmtSubEntries(want))
			}
			for _, en := range want {
				me, err := e.Member(ctx, q, en.Member)
				if err != nil || !me.HasSub || me.Entry.Sub != en.Sub || me.Entry.Rank != en.Rank {
					t.Fatalf("step %d, %s: Member(%s) = %+v, %v; want %+v", step, w, en.Member, me, err, en)
				}
			}
			// A new member reaching a pair now ranks after those already there with it.
			score, sub := rng.Int64N(4), rng.Int64N(5)-2
			r, _, err := e.RankOf(ctx, q, score, sub)
			wantRank := 1
			for _, en := range want {
				if m.b.Ordering().Better(en.Score, en.Sub, score, sub) || en.Score == score && en.Sub == sub {
					wantRank++
				}
			}
			if err != nil || r != wantRank {
				t.Fatalf("step %d, %s: RankOf(%d, %d) = %d, %v; want %d", step, w, score, sub, r, err, wantRank)
			}
		}
	}
	standing := func(es []laurel.Entry, member string) (laurel.Standing, bool) {
		for _, en := range es {
			if en.Member == member {
				return laurel.Standing{Rank: en.Rank, Score: en.Score, Sub: en.Sub}, true
			}
		}
		return laurel.Standing{}, false
	}
	lastPoint := map[string]laurel.Standing{} // a member's standing in all after its last event

	for step := range 250 {
		now := c.Now()
		switch r := rng.IntN(100); {
		case r < 60:
			ev := &subEvent{member: members[rng.IntN(len(members))], value: rng.Int64N(4), sub: rng.Int64N(5) - 2, ts: now}
			if rng.IntN(2) == 0 {
				ev.id = fmt.Sprintf("e%d", step)
			}
			before := map[string][]laurel.Entry{}
			for _, w := range ws {
				before[w.String()] = m.entries(t, m.current(w, now))
			}
			res := submit(t, e, laurel.Event{Board: "s", Member: ev.member, Value: ev.value, Sub: ev.sub, HasSub: true, ID: ev.id})
			seq++
			ev.seq = seq
			m.events = append(m.events, ev)
			if ev.id != "" {
				byID[ev.id] = ev
			}
			for _, w := range ws {
				name := w.String()
				if want, ok := standing(before[name], ev.member); res[0].Previous[name] != want || ok != (res[0].Previous != nil && hasKey(res[0].Previous, name)) {
					t.Fatalf("step %d, %s: previous %+v, want %+v", step, name, res[0].Previous[name], want)
				}
				want, _ := standing(m.entries(t, m.current(w, now)), ev.member)
				if got := res[0].Entries[name]; got != want {
					t.Fatalf("step %d, %s: standing after %+v, want %+v", step, name, got, want)
				}
			}
			lastPoint[ev.member] = res[0].Entries["all"]
		case r < 70:
			// Retract an event of today: no closed period holds it.
			var today []*subEvent
			day := m.current(ws[0], now)
			for _, ev := range m.events {
				if ev.id != "" && !ev.retracted && ev.ts >= day.Start {
					today = append(today, ev)
				}
			}
			if len(today) == 0 {
				continue
			}
			ev := today[rng.IntN(len(today))]
			if err := e.Retract(ctx, "s", ev.id); err != nil {
				t.Fatalf("step %d: Retract %s: %v", step, ev.id, err)
			}
			ev.retracted = true
			delete(byID, ev.id)
			delete(lastPoint, ev.member)
		case r < 78 && len(byID) > 0:
			// A retry of an id: the same subscore is a duplicate, another a conflict.
			var ev *subEvent
			for _, x := range byID {
				ev = x
				break
			}
			in := laurel.Event{Board: "s", Member: ev.member, Value: ev.value, Sub: ev.sub, HasSub: true, ID: ev.id}
			if res := submit(t, e, in); res[0].Status != laurel.StatusDuplicate {
				t.Fatalf("step %d: a retry of %s: %+v", step, ev.id, res[0])
			}
			in.Sub++
			if _, err := e.Submit(ctx, []laurel.Event{in}, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EConflict {
				t.Fatalf("step %d: a retry of %s with another subscore: %v, want a conflict", step, ev.id, err)
			}
		default:
			c.Advance(time.Duration(rng.IntN(300)) * time.Minute)
		}
		if step%5 == 0 {
			check(step)
		}
	}
	check(-1)
	for member, want := range lastPoint {
		pts := history(t, e, "s", "all", member, 1)
		if len(pts) != 1 || pts[0].Score != want.Score || pts[0].Sub != want.Sub || pts[0].Rank != want.Rank {
			t.Fatalf("history of %s: %+v, want %+v", member, pts, want)
		}
	}

	// The days closed keep their entries' subscores, ranked by the pair.
	cal := m.b.Calendar()
	closed := map[string][]laurel.Entry{}
	for d := at("2026-11-16T00:00:00Z"); d+day+hour <= c.Now(); d += day {
		p := cal.PeriodAt(ws[0], time.UnixMilli(d))
		want := m.entries(t, laurel.Span{Start: d, End: d + day})
		got := readAll(t, e, laurel.Query{Board: "s", Window: "day", Period: p.ID})
		if !sameSubEntries(got.Entries, want) {
			t.Fatalf("closed day %s: got\n%swant\n%s", p.ID, fmtSubEntries(got.Entries), fmtSubEntries(want))
		}
		closed[p.ID] = want
	}
	if len(closed) < 2 {
		t.Fatalf("only %d days closed", len(closed))
	}

	// reads returns every read compared across a restart and an import.
	reads := func(e *embedded.Store) string {
		var b strings.Builder
		for _, w := range windows {
			fmt.Fprintf(&b, "%s:\n%s", w, fmtSubEntries(readAll(t, e, laurel.Query{Board: "s", Window: w}).Entries))
		}
		for _, id := range slices.Sorted(maps.Keys(closed)) {
			fmt.Fprintf(&b, "day %s:\n%s", id, fmtSubEntries(readAll(t, e, laurel.Query{Board: "s", Window: "day", Period: id}).Entries))
		}
		for _, member := range members {
			fmt.Fprintf(&b, "history %s: %+v\n", member, history(t, e, "s", "all", member, 100))
		}
		return b.String()
	}
	was := reads(e)
	closeStore(e)
	e = open(dir)
	if now := reads(e); now != was {
		t.Fatalf("after a restart:\n%s\nbefore:\n%s", now, was)
	}
	check(-2)

	dump := export(t, e)
	if !strings.HasPrefix(string(dump), `{"laurel_dump":5}`) || !strings.Contains(string(dump), `"subscore"`) {
		t.Fatalf("the dump holds no subscore:\n%s", dump)
	}
	closeStore(e)
	dir2 := t.TempDir()
	if err := importDump(dir2, dump, embedded.Options{Now: c.Now}); err != nil {
		t.Fatalf("Import: %v", err)
	}
	e2 := open(dir2)
	defer closeStore(e2)
	if now := reads(e2); now != was {
		t.Fatalf("after an import:\n%s\nbefore:\n%s", now, was)
	}
	if again := export(t, e2); !bytes.Equal(again, dump) {
		t.Fatalf("the imported store dumps otherwise:\n%s\nthen:\n%s", dump, again)
	}
	e = e2
	check(-3)
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// TestSubscoreRefused: a board without a subscore refuses an event that carries one, and
// the board's entries and files carry none.
func TestSubscoreRefused(t *testing.T) {
	c := laureltest.NewClock("2026-11-16T10:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "plain", laurel.BoardSpec{Windows: []string{"all"}})
	_, err := e.Submit(context.Background(), []laurel.Event{{Board: "plain", Member: "ada", Value: 1, Sub: 2, HasSub: true}}, laurel.SubmitOptions{})
	if laurel.ErrorCode(err) != laurel.EInvalid || !strings.Contains(err.Error(), "subscore") {
		t.Fatalf("an event with a subscore on a board without one: %v", err)
	}
	submit(t, e, laurel.Event{Board: "plain", Member: "ada", Value: 1})
	p, err := e.Page(context.Background(), laurel.Query{Board: "plain", Window: "all"}, 0, 10, laurel.ScoreRange{})
	if err != nil || p.HasSub || len(p.Entries) != 1 {
		t.Fatalf("page %+v, %v", p, err)
	}
}
