package postgres_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
)

// subEvent is an event of TestSubscores' model.
type subEvent struct {
	member     string
	value, sub int64
	ts         int64
	seq        uint64
	id         string
	retracted  bool
}

// subModel is one board of TestSubscores: its events, and the entries of its first day as
// they froze.
type subModel struct {
	id     string
	mode   laurel.Mode
	order  laurel.Ordering
	events []*subEvent
	frozen []laurel.Entry // the first day's, once closed
}

// ranking is what the model's counted events within [from, to) rank as (to 0: no end).
func (m *subModel) ranking(from, to int64) []laurel.Entry {
	by := make(map[string][]laurel.Counted)
	for _, ev := range m.events {
		if !ev.retracted && ev.ts >= from && (to == 0 || ev.ts < to) {
			by[ev.member] = append(by[ev.member], laurel.Counted{Value: ev.value, Sub: ev.sub, TS: ev.ts, Seq: ev.seq})
		}
	}
	var es []laurel.Entry
	for member, evs := range by {
		a, err := laurel.AggOf(m.mode, m.order, evs, laurel.Span{})
		if err != nil || !a.Present() {
			continue
		}
		es = append(es, laurel.Entry{Member: member, Score: a.Score, Sub: a.Sub, ReachedAt: a.At})
	}
	r := laurel.NewSortedRanking(m.order, es)
	out, _ := r.Page(ctx, 1, len(es))
	return out
}

// sameSubEntries compares entries by rank, member, score, subscore and reached_at.
func sameSubEntries(a, b []laurel.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y laurel.Entry) bool {
		return x.Rank == y.Rank && x.Member == y.Member && x.Score == y.Score && x.Sub == y.Sub && x.ReachedAt == y.ReachedAt
	})
}

// TestSubscores writes boards with a subscore of either order, in every mode, over boards of
// four shards, and reads every window — all, a day open and closed, a rolling window — against
// the entries their events make (laurel.AggOf), under retraction, id retries, a restart of the
// index from the store, and a dump taken to another store. A board without a subscore beside
// them stays at 0 and refuses one.
func TestSubscores(t *testing.T) {
	seed := laureltest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 51))
	store := laureltest.NewScaleOutStore(t)
	clock := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := store.Open(t, clock.Now)

	var models []*subModel
	for _, mode := range []string{"best", "last", "sum"} {
		for _, c := range []struct{ order, sub string }{{"desc", "asc"}, {"asc", "desc"}, {"desc", "desc"}} {
			m := &subModel{id: fmt.Sprintf("%s-%s-%s", mode, c.order, c.sub)}
			putBoard(t, e, m.id, laurel.BoardSpec{Order: ptr(c.order), Subscore: ptr(c.sub), Mode: ptr(mode),
				Windows: []string{"all", "day", "last7d"}, LateLimit: ptr("1h")})
			info, err := e.Board(ctx, m.id)
			if err != nil {
				t.Fatal(err)
			}
			m.mode, m.order = info.Mode, info.Ordering()
			if !m.order.HasSub {
				t.Fatalf("board %s: no subscore after creation", m.id)
			}
			models = append(models, m)
		}
	}
	putBoard(t, e, "plain", laurel.BoardSpec{Windows: []string{"all"}})
	if _, err := e.Submit(ctx, []laurel.Event{{Board: "plain", Member: "a", Value: 1, Sub: 2, HasSub: true}}, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EInvalid {
		t.Fatalf("a subscore on a board without one: %v, want invalid", err)
	}
	submit(t, e, laurel.Event{Board: "plain", Member: "a", Value: 1})

	members := []string{"ada", "bo", "cy", "dee", "eve", "fay", "gus", "hal"}
	seqs := uint64(0)
	write := func(m *subModel) {
		ev := &subEvent{member: members[rng.IntN(len(members))], value: int64(rng.IntN(4)), sub: int64(rng.IntN(5)) - 2, ts: clock.Now()}
		if rng.IntN(3) > 0 {
			ev.id = fmt.Sprintf("%s-%d", m.id, len(m.events))
		}
		in := laurel.Event{Board: m.id, Member: ev.member, Value: ev.value, Sub: ev.sub, HasSub: ev.sub != 0 || rng.IntN(2) == 0, ID: ev.id}
		res := submit(t, e, in)
		if res[0].Status != laurel.StatusApplied {
			t.Fatalf("%s: %+v: %s", m.id, in, res[0].Status)
		}
		seqs++
		ev.seq = seqs
		m.events = append(m.events, ev)
		// The standing it answers with is the member's entry, subscore included.
		want := m.ranking(0, 0)
		i := slices.IndexFunc(want, func(en laurel.Entry) bool { return en.Member == ev.member })
		if got := res[0].Entries["all"]; got.Rank != want[i].Rank || got.Score != want[i].Score || got.Sub != want[i].Sub {
			t.Fatalf("%s: %+v answered %+v in all, want %+v", m.id, in, got, want[i])
		}
		if ev.id != "" && rng.IntN(4) == 0 {
			// The same event again is a duplicate; with another subscore, a conflict.
			again := submit(t, e, in)
			if again[0].Status != laurel.StatusDuplicate {
				t.Fatalf("%s: %+v again: %s", m.id, in, again[0].Status)
			}
			in.Sub, in.HasSub = in.Sub+1, true
			if _, err := e.Submit(ctx, []laurel.Event{in}, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EConflict {
				t.Fatalf("%s: %+v with another subscore: %v, want a conflict", m.id, in, err)
			}
		}
	}
	retract := func(m *subModel) {
		var ids []*subEvent
		for _, ev := range m.events {
			if ev.id != "" && !ev.retracted {
				ids = append(ids, ev)
			}
		}
		if len(ids) == 0 {
			return
		}
		ev := ids[rng.IntN(len(ids))]
		if err := e.Retract(ctx, m.id, ev.id); err != nil {
			t.Fatal(err)
		}
		ev.retracted = true
	}
	day1 := clock.Now()
	dayStart := time.UnixMilli(day1).UTC().Truncate(24 * time.Hour).UnixMilli()
	dayEnd := dayStart + 24*time.Hour.Milliseconds()
	verify := func(when string, e *postgres.Store, closed bool) {
		t.Helper()
		for _, m := range models {
			for _, w := range []struct {
				q    laurel.Query
				want []laurel.Entry
			}{
				{laurel.Query{Board: m.id, Window: "all"}, m.ranking(0, 0)},
				{laurel.Query{Board: m.id, Window: "last7d"}, m.ranking(clock.Now()-7*24*time.Hour.Milliseconds(), 0)},
				{laurel.Query{Board: m.id, Window: "day"}, m.ranking(max(dayStart, time.UnixMilli(clock.Now()).UTC().Truncate(24*time.Hour).UnixMilli()), 0)},
				{laurel.Query{Board: m.id, Window: "day", Period: time.UnixMilli(dayStart).UTC().Format(time.DateOnly)}, func() []laurel.Entry {
					if closed {
						return m.frozen
					}
					return m.ranking(dayStart, dayEnd)
				}()},
			} {
				what := fmt.Sprintf("%s: %s %s %s", when, m.id, w.q.Window, w.q.Period)
				page, err := e.Page(ctx, w.q, 0, 100, laurel.ScoreRange{})
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !page.HasSub || page.Total != len(w.want) || !sameSubEntries(page.Entries, w.want) {
					t.Fatalf("%s: page of %d (subscores: %v)\n%v\nwant %d\n%v", what, page.Total, page.HasSub, page.Entries, len(w.want), w.want)
				}
				for _, en := range w.want[:min(3, len(w.want))] {
					me, err := e.Member(ctx, w.q, en.Member)
					if err != nil || !me.HasSub || !sameSubEntries([]laurel.Entry{me.Entry}, []laurel.Entry{en}) {
						t.Fatalf("%s: member %s: %+v, %v; want %+v", what, en.Member, me.Entry, err, en)
					}
					// The rank a member would get with the entry's score and subscore, reached now:
					// after every entry with them both.
					rank, total, err := e.RankOf(ctx, w.q, en.Score, en.Sub)
					n := 0
					for _, o := range w.want {
						if !m.order.Better(en.Score, en.Sub, o.Score, o.Sub) {
							n++
						}
					}
					if err != nil || rank != n+1 || total != len(w.want) {
						t.Fatalf("%s: rank of (%d, %d): %d of %d, %v; want %d of %d", what, en.Score, en.Sub, rank, total, err, n+1, len(w.want))
					}
				}
				// A score range holds every subscore of its scores.
				if len(w.want) > 0 {
					s := w.want[len(w.want)/2].Score
					sr := laurel.ScoreRange{Min: s, Max: s, HasMin: true, HasMax: true}
					got, err := e.Page(ctx, w.q, 0, 100, sr)
					var in []laurel.Entry
					for _, en := range w.want {
						if en.Score == s {
							in = append(in, en)
						}
					}
					if err != nil || !sameSubEntries(got.Entries, in) {
						t.Fatalf("%s: page of score %d: %v, %v\nwant %v", what, s, got.Entries, err, in)
					}
				}
			}
		}
	}

	// churn writes n times to boards at random, retracting instead one time in retractOneIn,
	// the clock running up to 10 minutes between.
	churn := func(n, retractOneIn int) {
		for range n {
			m := models[rng.IntN(len(models))]
			if rng.IntN(retractOneIn) == 0 {
				retract(m)
			} else {
				write(m)
			}
			clock.Advance(time.Duration(rng.IntN(10)) * time.Minute)
		}
	}
	churn(120, 6)
	verify("day 1", e, false)
	check(t, e)

	// History points carry their subscores: a member's last is its entry, when none of its
	// events was retracted since.
	points := 0
	for _, m := range models {
		for _, member := range members {
			if slices.ContainsFunc(m.events, func(ev *subEvent) bool { return ev.member == member && ev.retracted }) {
				continue
			}
			ps, err := e.History(ctx, m.id, "all", member, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) == 0 {
				continue
			}
			en, err := e.Member(ctx, laurel.Query{Board: m.id, Window: "all"}, member)
			if err != nil || ps[0].Score != en.Entry.Score || ps[0].Sub != en.Entry.Sub {
				t.Fatalf("%s: %s: the last point %+v, the entry %+v, %v", m.id, member, ps[0], en.Entry, err)
			}
			if ps[0].Sub != 0 {
				points++
			}
		}
	}
	if points == 0 {
		t.Fatal("no history point has a subscore")
	}

	// The first day closes: its entries freeze with their subscores.
	clock.Set(time.UnixMilli(dayEnd).Add(90 * time.Minute).UTC().Format(time.RFC3339))
	for _, m := range models {
		m.frozen = m.ranking(dayStart, dayEnd)
		write(m) // the write closes the day
	}
	churn(60, 5)
	verify("day 2", e, true)
	check(t, e)

	// The index rebuilt from the store holds the same.
	for _, k := range store.Keys(t) {
		store.Client.Do(ctx, store.Client.B().Del().Key(k).Build())
	}
	fresh := store.Open(t, clock.Now)
	verify("index rebuilt", fresh, true)
	if _, err := fresh.Page(ctx, laurel.Query{Board: "plain"}, 0, 10, laurel.ScoreRange{}); err != nil {
		t.Fatal(err) // rebuilds its index too, which Check asks of every board
	}
	check(t, fresh)

	// A dump of the store, imported into another, reads the same (version 5: subscores).
	var dump bytes.Buffer
	if err := laureltest.Export(e, &dump); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(dump.Bytes(), []byte(`"subscore":`)) {
		t.Fatal("the dump carries no subscore")
	}
	other := laureltest.NewScaleOutStore(t)
	if err := other.Target().Import(t, clock.Now, bytes.NewReader(dump.Bytes())); err != nil {
		t.Fatal(err)
	}
	imported := other.Open(t, clock.Now)
	verify("imported", imported, true)
	check(t, imported)
	var again bytes.Buffer
	if err := laureltest.Export(imported, &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump.Bytes(), again.Bytes()) {
		t.Fatalf("the imported store's dump differs from the dump it imported: %s", firstDiff(dump.Bytes(), again.Bytes()))
	}
	// A board without a subscore holds none in its rows, imported or written (they cost it no
	// byte); every row of a board with one holds its subscore.
	for _, s := range []*laureltest.ScaleOutStore{store, other} {
		conn, err := pgx.Connect(ctx, s.DSN)
		if err != nil {
			t.Fatal(err)
		}
		var plain, subs int
		err = conn.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM laurel_events WHERE board = 'plain' AND sub IS NOT NULL) +
			(SELECT count(*) FROM laurel_aggs WHERE board = 'plain' AND sub IS NOT NULL) +
			(SELECT count(*) FROM laurel_members WHERE board = 'plain' AND get_byte(aggs, 0) <> 32),
			(SELECT count(*) FROM laurel_events WHERE board <> 'plain' AND sub IS NULL) +
			(SELECT count(*) FROM laurel_aggs WHERE board <> 'plain' AND sub IS NULL) +
			(SELECT count(*) FROM laurel_members WHERE board <> 'plain' AND get_byte(aggs, 0) <> 40) +
			(SELECT count(*) FROM laurel_frozen WHERE board <> 'plain' AND sub IS NULL)`).Scan(&plain, &subs)
		conn.Close(ctx)
		if err != nil || plain != 0 || subs != 0 {
			t.Fatalf("%d subscores on the board without one, %d rows without one on boards with one, %v", plain, subs, err)
		}
	}
	page, err := imported.Page(ctx, laurel.Query{Board: "plain"}, 0, 10, laurel.ScoreRange{})
	if err != nil || page.HasSub || len(page.Entries) != 1 || page.Entries[0].Sub != 0 || page.Entries[0].Score != 1 {
		t.Fatalf("the board without a subscore: %+v, %v", page, err)
	}
}

// firstDiff returns the first line where a and b differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d:\n%s\n%s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}
