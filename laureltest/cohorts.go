package laureltest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
)

// CohortRules drives competition.Service over a store with random submits (late events
// included), profile changes and clock moves, and checks cohorts against a model of their
// placement: first come, first served, at most size members a cohort, by a profile's metadata
// field where the board says so, anew each period. Every read of a cohort — page, member,
// around, lookup, rank of a score, in the current period and in past ones — must equal the
// whole board's ranking of the cohort's members, ranked among themselves. Then each of moves
// in turn changes the store (a dump into another, an index rebuilt) and every cohort of every
// period is read again.
func CohortRules(t *testing.T, store HookStore, clock *Clock, seed uint64, ops int, moves ...func(HookStore) HookStore) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 11))
	clock.Set("2026-10-24T12:00:00Z") // Berlin leaves summer time on the 25th
	svc := competition.New(store, store, clock.Now)
	put := func(id string, spec laurel.BoardSpec) *laurel.Board { return mustPutBoard(t, store, id, spec) }
	boards := []*laurel.Board{
		put("league", laurel.BoardSpec{Windows: []string{"week", "all"}, LateLimit: ptr("2d"), Timezone: ptr("Europe/Berlin"),
			Cohorts: &laurel.CohortsSpec{Window: ptr("week"), Size: ptr(3)}}),
		put("skill", laurel.BoardSpec{Windows: []string{"day"}, Order: ptr("asc"), Mode: ptr("best"), LateLimit: ptr("6h"), Keep: ptr(100),
			Cohorts: &laurel.CohortsSpec{Window: ptr("day"), Size: ptr(2), By: ptr("metadata.bracket")}}),
	}
	members := []string{"ann", "ben", "cy", "dee", "eve", "fay", "gus", "hal", "ivy", "jo"}
	type fill struct{ n, count int }
	fills := map[string]*fill{}      // board:period:key
	placed := map[string]string{}    // board:period:member → cohort id
	cohorts := map[string][]string{} // board:period:cohort → members
	bracket := map[string]string{}   // the members' profiles
	periodOf := func(b *laurel.Board, ts int64) string {
		w, _ := b.Window(b.Cohorts.Window)
		return b.Calendar().PeriodAt(w, time.UnixMilli(ts)).ID
	}
	place := func(b *laurel.Board, m string, ts int64) {
		base := b.ID + ":" + periodOf(b, ts) + ":"
		if placed[base+m] != "" {
			return
		}
		key := "all"
		if b.Cohorts.By != "" {
			key = "none"
			if v := bracket[m]; v != "" {
				key = v
			}
		}
		f := fills[base+key]
		if f == nil {
			f = &fill{n: 1}
			fills[base+key] = f
		}
		if f.count == b.Cohorts.Size {
			f.n, f.count = f.n+1, 0
		}
		f.count++
		id := fmt.Sprintf("%s/%d", key, f.n)
		placed[base+m] = id
		cohorts[base+id] = append(cohorts[base+id], m)
	}
	var periodsSeen []struct {
		b      *laurel.Board
		period string
	}
	check := func(op int, b *laurel.Board, q laurel.Query, period string) {
		t.Helper()
		base := b.ID + ":" + period + ":"
		for _, m := range members {
			q := q
			q.Cohort = m
			id := placed[base+m]
			c, err := svc.Cohort(ctx, q, m)
			if id == "" {
				if laurel.ErrorCode(err) != laurel.ENotFound {
					t.Fatalf("op %d: Cohort(%s %s, %s) of a member never placed: %+v, %v", op, b.ID, period, m, c, err)
				}
				if _, err := svc.Page(ctx, q, 0, 10, laurel.ScoreRange{}); laurel.ErrorCode(err) != laurel.ENotFound {
					t.Fatalf("op %d: a page of %s's cohort, never placed: %v", op, m, err)
				}
				continue
			}
			if err != nil || c.ID != id || !slices.Equal(c.Members, cohorts[base+id]) {
				t.Fatalf("op %d: Cohort(%s %s, %s) = %+v, %v; want %s with %q", op, b.ID, period, m, c, err, id, cohorts[base+id])
			}
			// The whole board's ranks of the cohort's members, ranked among themselves.
			whole := q
			whole.Cohort = ""
			all, err := store.Lookup(ctx, whole, c.Members)
			if err != nil {
				t.Fatal(err)
			}
			want := all.Entries
			for i := range want {
				want[i].Rank = i + 1
			}
			page, err := svc.Page(ctx, q, 0, 100, laurel.ScoreRange{})
			if err != nil || page.Total != len(want) || diffEntries(page.Entries, want) != "" || page.Period.ID != period {
				t.Fatalf("op %d: page of %s's cohort %s in %s %s: total %d, %v\n%s", op, m, id, b.ID, period, page.Total, err, diffEntries(page.Entries, want))
			}
			if len(want) == 0 {
				continue
			}
			pick := want[rng.IntN(len(want))]
			me, err := svc.Member(ctx, q, pick.Member)
			if err != nil || me.Entry.Rank != pick.Rank || me.Total != len(want) {
				t.Fatalf("op %d: Member(%s in %s's cohort) = %+v, %v; want rank %d of %d", op, pick.Member, m, me, err, pick.Rank, len(want))
			}
			around, err := svc.Around(ctx, q, pick.Member, 1)
			lo := max(0, min(pick.Rank-2, len(want)-3))
			if err != nil || diffEntries(around.Entries, want[lo:min(len(want), lo+3)]) != "" {
				t.Fatalf("op %d: Around(%s, 1) in %s's cohort: %v %v", op, pick.Member, m, around.Entries, err)
			}
			lk, err := svc.Lookup(ctx, q, []string{pick.Member, "nobody"})
			if err != nil || len(lk.Entries) != 1 || lk.Entries[0].Rank != pick.Rank {
				t.Fatalf("op %d: Lookup(%s) in %s's cohort: %v %v", op, pick.Member, m, lk.Entries, err)
			}
			// Percentiles and the distribution are the cohort's too.
			if p := me.Entry.Percentile; p == nil || *p != laurel.Percentile(pick.Rank, len(want)) {
				t.Fatalf("op %d: Member(%s in %s's cohort): percentile %v, want that of rank %d of %d", op, pick.Member, m, p, pick.Rank, len(want))
			}
			edges := []int64{pick.Score - 1, pick.Score + 1}
			d, err := svc.Distribution(ctx, q, laurel.Histogram{Edges: edges})
			near := 0
			for _, e := range want {
				if e.Score >= edges[0] && e.Score <= edges[1] {
					near++
				}
			}
			if err != nil || d.Total != len(want) || len(d.Buckets) != 1 || d.Buckets[0].Count != near {
				t.Fatalf("op %d: Distribution(%v) of %s's cohort: %+v, %v; want %d of %d", op, edges, m, d, err, near, len(want))
			}
			if period == periodOf(b, clock.Now()) && q.Period == "" {
				score := pick.Score
				rank, total, err := svc.RankOf(ctx, q, score, 0)
				wantRank := 1
				for _, e := range want { // after everyone there with that score
					if e.Score == score || b.Order.Better(e.Score, score) {
						wantRank++
					}
				}
				if err != nil || rank != wantRank || total != len(want) {
					t.Fatalf("op %d: RankOf(%d) in %s's cohort = %d of %d, %v; want %d", op, score, m, rank, total, err, wantRank)
				}
			}
		}
	}
	for op := range ops {
		switch r := rng.IntN(100); {
		case r < 15:
			clock.Advance(time.Duration(rng.Int64N(int64(20 * time.Hour))))
		case r < 25:
			m := members[rng.IntN(len(members))]
			v := []string{"", "a", "b"}[rng.IntN(3)]
			md := "{}"
			if v != "" {
				md = `{"bracket":"` + v + `"}`
			}
			if _, err := store.PutProfile(ctx, m, laurel.ProfileSpec{Metadata: json.RawMessage(md)}); err != nil {
				t.Fatal(err)
			}
			bracket[m] = v
		default:
			b := boards[rng.IntN(len(boards))]
			var evs []laurel.Event
			for range 1 + rng.IntN(3) {
				ev := laurel.Event{Board: b.ID, Member: members[rng.IntN(len(members))], Value: int64(1 + rng.IntN(20))}
				if rng.IntN(3) == 0 {
					ev.TS, ev.HasTS = clock.Now()-rng.Int64N(b.LateLimit.Milliseconds()), true
				}
				evs = append(evs, ev)
			}
			if _, err := svc.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true}); err != nil {
				t.Fatalf("op %d: Submit %v: %v", op, evs, err)
			}
			latest := map[string]int64{} // member → its latest event's time, when all are today's
			for _, ev := range evs {
				ts := clock.Now()
				if ev.HasTS {
					ts = ev.TS
				}
				switch {
				case latest[ev.Member] < 0:
				case periodOf(b, ts) == periodOf(b, clock.Now()):
					latest[ev.Member] = max(latest[ev.Member], ts)
				default:
					latest[ev.Member] = -1 // a point in another period too: not checked here
				}
				place(b, ev.Member, ts)
				p := periodOf(b, ts)
				if !slices.ContainsFunc(periodsSeen, func(s struct {
					b      *laurel.Board
					period string
				}) bool {
					return s.b == b && s.period == p
				}) {
					periodsSeen = append(periodsSeen, struct {
						b      *laurel.Board
						period string
					}{b, p})
				}
			}
			check(op, b, laurel.Query{Board: b.ID}, periodOf(b, clock.Now()))
			// Each member's newest point in its cohort: its score and rank there right after
			// this write, from the whole board's ranks of its cohort's members.
			base := b.ID + ":" + periodOf(b, clock.Now()) + ":"
			for m, at := range latest {
				if at < 0 {
					continue
				}
				all, err := store.Lookup(ctx, laurel.Query{Board: b.ID, Window: b.Cohorts.Window}, cohorts[base+placed[base+m]])
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(all.Entries, func(e laurel.Entry) bool { return e.Member == m })
				hist, err := svc.CohortHistory(ctx, b.ID, "", m, 1)
				if err != nil || len(hist) != 1 || i < 0 || !samePoint(hist[0], laurel.HistoryPoint{At: at, Score: all.Entries[i].Score, Rank: i + 1}) {
					t.Fatalf("op %d: %s's newest point in its cohort: %+v, %v; want at %s score and rank of %d in %v", op, m, hist, err, laurel.FormatTime(at), i, all.Entries)
				}
			}
		}
	}
	// Every period met, past ones included, read by its id; and again where a dump took them.
	for _, s := range periodsSeen {
		check(ops, s.b, laurel.Query{Board: s.b.ID, Period: s.period}, s.period)
	}
	for _, move := range moves {
		store = move(store)
		svc = competition.New(store, store, clock.Now)
		for _, s := range periodsSeen {
			check(ops, s.b, laurel.Query{Board: s.b.ID, Period: s.period}, s.period)
		}
	}
	// The results of closed weeks reward each cohort's first: cohort by cohort, ranked within.
	spec := laurel.BoardSpec{Rewards: laurel.Rewards{{Window: "week", Ranks: []int{1, 1}, Reward: json.RawMessage(`{"w":1}`)}}}
	if _, _, err := store.PutBoard(ctx, "league", spec); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * 24 * time.Hour)
	checkResults := func() {
		t.Helper()
		for _, s := range periodsSeen {
			if s.b.ID != "league" {
				continue
			}
			res, err := svc.Results(ctx, "league", "week", s.period, 0, 0)
			if err != nil {
				t.Fatalf("results of %s: %v", s.period, err)
			}
			var want []string
			for n := 1; cohorts["league:"+s.period+":all/"+fmt.Sprint(n)] != nil; n++ {
				id := "all/" + fmt.Sprint(n)
				page, err := store.Lookup(ctx, laurel.Query{Board: "league", Window: "week", Period: s.period}, cohorts["league:"+s.period+":"+id])
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Entries) > 0 {
					want = append(want, id+" "+page.Entries[0].Member)
				}
			}
			var got []string
			for _, r := range res.Results {
				if r.Rank != 1 || string(r.Reward) != `{"w":1}` {
					t.Fatalf("results of %s: %+v", s.period, r)
				}
				got = append(got, r.Cohort+" "+r.Member)
			}
			if !slices.Equal(got, want) || res.Rewarded != len(want) {
				t.Fatalf("results of %s: %q, want %q", s.period, got, want)
			}
		}
	}
	checkResults()
	// Cohorts removed ({}): the placements made stay readable, cohort by cohort, and their
	// periods' results with them; no one is placed any more.
	for _, b := range boards {
		if _, _, err := svc.PutBoard(ctx, b.ID, laurel.BoardSpec{Cohorts: &laurel.CohortsSpec{}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range periodsSeen {
		check(ops, s.b, laurel.Query{Board: s.b.ID, Period: s.period}, s.period)
	}
	checkResults()
	if _, err := svc.Submit(ctx, []laurel.Event{{Board: "league", Member: "ann", Value: 1}}, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	if c, err := svc.Cohort(ctx, laurel.Query{Board: "league"}, "ann"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("placed after the cohorts were removed: %+v, %v", c, err)
	}
	// A store alone refuses a cohort read rather than answer for the whole board.
	if _, err := store.Page(ctx, laurel.Query{Board: "league", Cohort: "ann"}, 0, 10, laurel.ScoreRange{}); laurel.ErrorCode(err) != laurel.EInvalid {
		t.Fatalf("a store alone read a cohort: %v", err)
	}
}
