package redis_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/redis"
	"github.com/laurel/laurel/shardindex"
)

// The model: per shard of a board, a map per set of member → (score, subscore, at), sorted
// on every read.

type point struct{ score, sub, at int64 }

func (p point) key() laurel.Key { return laurel.Key{Score: p.score, Sub: p.sub, At: p.at} }

// sameEntries is laureltest.SameEntries with the subscores compared too.
func sameEntries(a, b []laurel.Entry) bool {
	return laureltest.SameEntries(a, b) && slices.EqualFunc(a, b, func(x, y laurel.Entry) bool { return x.Sub == y.Sub })
}

type modelBoard struct {
	board    string
	shard    shardindex.Shard
	order    laurel.Ordering
	version  int64
	state    []byte
	hasState bool // a state, or in a shard other than 0 a stamp, was recorded
	stamp    int64
	sets     map[shardindex.Set]map[string]point
}

// apply makes the step, or reports false and changes nothing when the board is not at
// u.After.
func (b *modelBoard) apply(u shardindex.Update) (shardindex.Applied, bool) {
	if u.After != b.version {
		return shardindex.Applied{}, false
	}
	for _, s := range u.Drops {
		delete(b.sets, s)
	}
	for _, c := range u.Changes {
		m := b.sets[c.Set]
		if c.Remove {
			delete(m, c.Member)
			continue
		}
		if m == nil {
			m = make(map[string]point)
			b.sets[c.Set] = m
		}
		m[c.Member] = point{c.Score, c.Sub, c.At}
	}
	b.version = u.Version
	if u.State != nil {
		b.state, b.hasState, b.stamp = slices.Clone(u.State), true, u.Version
		if u.Stamp != 0 {
			b.stamp = u.Stamp
		}
	} else if u.Stamp != 0 {
		b.hasState, b.stamp = true, u.Stamp
	}
	out := shardindex.Applied{Read: make([]shardindex.Entry, len(u.Read)), Before: make([]int, len(u.Count))}
	for i, r := range u.Read {
		for _, e := range b.sorted(r.Set) {
			if e.Member == r.Member {
				out.Read[i] = shardindex.Entry{Rank: e.Rank, Score: e.Score, Sub: e.Sub, At: e.ReachedAt}
			}
		}
	}
	for i, k := range u.Count {
		for _, e := range b.sorted(k.Set) {
			if laurel.CompareEntries(b.order, e, laurel.Entry{Member: k.Member, Score: k.Score, Sub: k.Sub, ReachedAt: k.At}) < 0 {
				out.Before[i]++
			}
		}
	}
	return out, true
}

func (b *modelBoard) sorted(s shardindex.Set) []laurel.Entry {
	var es []laurel.Entry
	for m, p := range b.sets[s] {
		es = append(es, laurel.Entry{Member: m, Score: p.score, Sub: p.sub, ReachedAt: p.at})
	}
	slices.SortFunc(es, func(x, y laurel.Entry) int { return laurel.CompareEntries(b.order, x, y) })
	for i := range es {
		es[i].Rank = i + 1
	}
	return es
}

func modelPage(es []laurel.Entry, from, n int) []laurel.Entry {
	if from < 1 || n <= 0 || from > len(es) {
		return nil
	}
	return es[from-1 : from-1+min(n, len(es)-from+1)]
}

func modelSearch(o laurel.Ordering, es []laurel.Entry, k laurel.Key) int {
	n := 0
	for _, e := range es {
		if laurel.RanksBefore(o, e.Key(), k) {
			n++
		}
	}
	return n + 1
}

// gen draws values biased towards the extremes and ties.
type gen struct {
	r       *rand.Rand
	members []string
	sets    []shardindex.Set
}

func newGen(seed uint64) *gen {
	g := &gen{
		r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		members: []string{
			"a", "ab", "abc", "abd", "b", "a b", "A", "0", "z", "zz", "~",
			"é", "e\u0301", "日本", "日本語", "\U0010FFFF", "a\u00e9", "ü-1", "ü-2",
			strings.Repeat("x", 127), strings.Repeat("x", 128), strings.Repeat("é", 64),
		},
		sets: []shardindex.Set{
			{Window: "all"}, {Window: "day", Start: 1700000000000}, {Window: "day", Start: 1700086400000},
			{Window: "week", Start: -604800000}, {Window: "r1h"},
		},
	}
	for i := range 30 {
		g.members = append(g.members, fmt.Sprintf("m%02d", i))
	}
	return g
}

func (g *gen) score() int64 {
	switch g.r.IntN(12) {
	case 0:
		return math.MinInt64
	case 1:
		return math.MaxInt64
	case 2:
		return math.MinInt64 + 1
	case 3:
		return math.MaxInt64 - 1
	case 4, 5, 6:
		return int64(g.r.IntN(7)) - 3
	case 7:
		return int64(g.r.IntN(2000)) - 1000
	default:
		return int64(g.r.Uint64())
	}
}

func (g *gen) at() int64 {
	switch g.r.IntN(8) {
	case 0:
		return math.MinInt64
	case 1:
		return math.MaxInt64
	case 2:
		return 0
	case 3:
		return -1
	case 4, 5:
		return 1700000000000 + int64(g.r.IntN(3))
	default:
		return int64(g.r.Uint64())
	}
}

// sub draws a subscore for a board ordered by o: 0 on a board without one.
func (g *gen) sub(o laurel.Ordering) int64 {
	if !o.HasSub {
		return 0
	}
	if g.r.IntN(3) == 0 {
		return g.score()
	}
	return int64(g.r.IntN(3)) - 1 // ties of score and subscore both
}

func (g *gen) member() string { return g.members[g.r.IntN(len(g.members))] }
func (g *gen) set() shardindex.Set {
	return g.sets[g.r.IntN(len(g.sets))]
}

// step draws a random step of board b, which is at version b.version.
func (g *gen) step(b *modelBoard) shardindex.Update {
	r := g.r
	u := shardindex.Update{After: b.version, Version: b.version + int64(r.IntN(3))}
	if r.IntN(20) == 0 { // a step after a lost one, or a late one
		u.After += []int64{-1, 1, 2}[r.IntN(3)]
	}
	switch n := r.IntN(10); {
	case b.shard.Number != 0 && n < 4: // the stamp of a state kept by shard 0
		u.Stamp = 1 + r.Int64N(3)
	case n == 0:
		u.State, u.Stamp = []byte("rebuilt"), 1+r.Int64N(3) // a rebuild's: stamped before its version
	case n == 1:
		u.State = []byte{} // recorded, but empty
	case n < 4:
		u.State = make([]byte, r.IntN(40))
		for i := range u.State {
			u.State[i] = byte(r.IntN(256))
		}
	}
	if r.IntN(12) == 0 {
		u.Drops = append(u.Drops, g.set())
	}
	n := r.IntN(30)
	if r.IntN(30) == 0 { // a big step, such as a batch across many windows
		n = 1000 + r.IntN(2000)
	}
	for range n {
		c := shardindex.Change{Set: g.set(), Member: g.member()}
		if n > 100 {
			c.Member = fmt.Sprintf("bulk%04d", r.IntN(3000))
		}
		if r.IntN(4) == 0 {
			c.Remove = true
		} else {
			c.Score, c.Sub, c.At = g.score(), g.sub(b.order), g.at()
		}
		u.Changes = append(u.Changes, c)
	}
	for range r.IntN(6) {
		rd := shardindex.Read{Set: g.set(), Member: g.member()}
		if len(u.Changes) > 0 && r.IntN(2) == 0 {
			c := u.Changes[r.IntN(len(u.Changes))]
			rd = shardindex.Read{Set: c.Set, Member: c.Member}
		}
		u.Read = append(u.Read, rd)
	}
	for range r.IntN(4) { // entries of other shards, ranked in the whole board
		u.Count = append(u.Count, shardindex.Key{Set: g.set(), Score: g.score(), Sub: g.sub(b.order), At: g.at(), Member: g.member()})
	}
	return u
}

func TestDifferential(t *testing.T) {
	idx, _, _ := newIndex(t)
	ctx := context.Background()
	seed := testSeed(t)
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	g := newGen(seed)

	// Two shards of one board, and a board of one shard: what one shard does never shows in
	// another. Boards with a subscore, of either order against the score's, beside them.
	boards := map[string]*modelBoard{
		"desc/0":   {board: "desc", shard: shardindex.Shard{Number: 0, Count: 2}, order: laurel.Ordering{Score: laurel.Desc}},
		"desc/1":   {board: "desc", shard: shardindex.Shard{Number: 1, Count: 2}, order: laurel.Ordering{Score: laurel.Desc}},
		"asc.0_-z": {board: "asc.0_-z", shard: shardindex.Shard{Number: 0, Count: 1}, order: laurel.Ordering{Score: laurel.Asc}},
		"sub/0":    {board: "sub", shard: shardindex.Shard{Number: 0, Count: 2}, order: laurel.Ordering{Score: laurel.Desc, Sub: laurel.Asc, HasSub: true}},
		"sub/1":    {board: "sub", shard: shardindex.Shard{Number: 1, Count: 2}, order: laurel.Ordering{Score: laurel.Desc, Sub: laurel.Asc, HasSub: true}},
		"ascsub":   {board: "ascsub", shard: shardindex.Shard{Number: 0, Count: 1}, order: laurel.Ordering{Score: laurel.Asc, Sub: laurel.Desc, HasSub: true}},
		"ascsub2":  {board: "ascsub2", shard: shardindex.Shard{Number: 0, Count: 1}, order: laurel.Ordering{Score: laurel.Asc, Sub: laurel.Asc, HasSub: true}},
	}
	names := []string{"desc/0", "desc/1", "asc.0_-z", "sub/0", "sub/1", "ascsub", "ascsub2"}
	for _, b := range boards {
		b.sets = map[shardindex.Set]map[string]point{}
	}
	type oldRanking struct {
		r     laurel.Ranking
		stamp int64
		set   shardindex.Set
	}
	old := map[string][]oldRanking{}

	steps := 300
	if testing.Short() {
		steps = 70
	}
	for i := range steps {
		name := names[g.r.IntN(len(names))]
		b := boards[name]
		u := g.step(b)
		got, err := idx.Apply(ctx, b.board, b.shard, b.order, u)
		want, ok := b.apply(u)
		switch {
		case !ok:
			if !errors.Is(err, shardindex.ErrStale) {
				t.Fatalf("step %d on %s: Apply after %d at version %d: %v, want ErrIndexStale", i, name, u.After, b.version, err)
			}
		case err != nil:
			t.Fatalf("step %d on %s: Apply: %v", i, name, err)
		case !slices.Equal(got.Read, want.Read) || !slices.Equal(got.Before, want.Before):
			t.Fatalf("step %d on %s: Apply read %v, want %v", i, name, got, want)
		}

		// Rankings made before keep working until a step sets another state.
		for _, o := range old[name] {
			n, err := o.r.Total(ctx)
			if o.stamp != b.stamp || !b.hasState {
				if !errors.Is(err, shardindex.ErrStale) {
					t.Fatalf("step %d on %s: a ranking stamped %d read %d, %v after the state stamped %d: want ErrIndexStale", i, name, o.stamp, n, err, b.stamp)
				}
			} else if err != nil || n != len(b.sets[o.set]) {
				t.Fatalf("step %d on %s: a ranking of the current state counts %d, %v; want %d", i, name, n, err, len(b.sets[o.set]))
			}
		}
		if b.hasState {
			s := g.set()
			old[name] = append(old[name], oldRanking{idx.Ranking(b.board, b.shard, b.order, s, b.stamp), b.stamp, s})
			if len(old[name]) > 4 {
				old[name] = old[name][1:]
			}
		}

		verify(t, fmt.Sprintf("step %d on %s", i, name), idx, b, g)
	}
}

// verify compares everything the index answers of a shard with the model.
func verify(t *testing.T, where string, idx *redis.Index, b *modelBoard, g *gen) {
	t.Helper()
	ctx := context.Background()
	r := g.r
	board := b.board
	if b.shard.Number == 0 {
		st, ok, err := idx.State(ctx, board)
		if err != nil {
			t.Fatalf("%s: State: %v", where, err)
		}
		if ok != b.hasState || st.Version != b.version || ok && (st.Stamp != b.stamp || !bytes.Equal(st.State, b.state)) {
			t.Fatalf("%s: State %+v, %v; want version %d, state %q stamped %d, %v", where, st, ok, b.version, b.state, b.stamp, b.hasState)
		}
	}
	vs, err := idx.Versions(ctx, board, b.shard.Count)
	if v := vs[b.shard.Number]; err != nil || v.Version != b.version || b.hasState && v.Stamp != b.stamp {
		t.Fatalf("%s: Versions %+v, %v; want version %d stamped %d", where, vs, err, b.version, b.stamp)
	}
	if !b.hasState {
		if _, err := idx.Ranking(board, b.shard, b.order, g.set(), b.stamp).Total(ctx); !errors.Is(err, shardindex.ErrStale) {
			t.Fatalf("%s: a ranking of a shard without a state: %v, want ErrIndexStale", where, err)
		}
		return
	}

	totals, err := idx.Totals(ctx, board, b.shard, g.sets, b.stamp)
	if err != nil {
		t.Fatalf("%s: Totals: %v", where, err)
	}
	for i, s := range g.sets {
		if totals[i] != len(b.sets[s]) {
			t.Fatalf("%s: Totals %v: %v has %d, want %d", where, totals, s, totals[i], len(b.sets[s]))
		}
	}

	for _, s := range g.sets {
		want := b.sorted(s)
		rk := idx.Ranking(board, b.shard, b.order, s, b.stamp)
		what := fmt.Sprintf("%s, set %v", where, s)
		if n, err := rk.Total(ctx); err != nil || n != len(want) {
			t.Fatalf("%s: Total %d, %v; want %d", what, n, err, len(want))
		}

		// Every page, in pages of random sizes, and pages off either end.
		maxn := max(10, len(want)/20)
		for from := 1; from <= len(want)+1; {
			n := 1 + r.IntN(maxn)
			checkPage(t, what, rk, want, from, n)
			from += n
		}
		for _, p := range [][2]int{{0, 3}, {-5, 10}, {1, 0}, {1, -1}, {len(want) + 1, 5}, {len(want) + 2, 1}, {2, math.MaxInt}, {math.MaxInt, math.MaxInt}} {
			checkPage(t, what, rk, want, p[0], p[1])
		}

		// Entries of random members, present and absent, some twice.
		var ask []string
		for range r.IntN(12) {
			ask = append(ask, g.member())
		}
		for range r.IntN(5) {
			if len(want) > 0 {
				ask = append(ask, want[r.IntN(len(want))].Member)
			}
		}
		if len(ask) > 0 && r.IntN(3) == 0 {
			ask = append(ask, ask[0])
		}
		ask = append(ask, "absent member")
		got, err := rk.Entries(ctx, ask)
		if err != nil {
			t.Fatalf("%s: Entries: %v", what, err)
		}
		slices.SortFunc(got, func(x, y laurel.Entry) int { return x.Rank - y.Rank })
		var wantEs []laurel.Entry
		for _, e := range want {
			if slices.Contains(ask, e.Member) {
				wantEs = append(wantEs, e)
			}
		}
		if !sameEntries(got, wantEs) {
			t.Fatalf("%s: Entries(%q)\n got %v\nwant %v", what, ask, got, wantEs)
		}

		// Search at random points, at the entries' own points and next to them, and at the ends.
		probes := []point{
			{math.MinInt64, 0, math.MinInt64}, {math.MaxInt64, 0, math.MaxInt64},
			{math.MinInt64, 0, math.MaxInt64}, {math.MaxInt64, 0, math.MinInt64},
			{-math.MaxInt64, 0, 0}, {math.MaxInt64, 0, 0}, {0, 0, 0},
		}
		for range 4 {
			probes = append(probes, point{g.score(), g.sub(b.order), g.at()})
		}
		for range min(len(want), 4) {
			e := want[r.IntN(len(want))]
			probes = append(probes, point{e.Score, e.Sub, e.ReachedAt}, point{e.Score, e.Sub, e.ReachedAt + 1},
				point{e.Score, e.Sub, e.ReachedAt - 1}, point{e.Score + 1, e.Sub, e.ReachedAt}, point{e.Score - 1, e.Sub, e.ReachedAt})
			if b.order.HasSub {
				probes = append(probes, point{e.Score, e.Sub + 1, e.ReachedAt}, point{e.Score, e.Sub - 1, e.ReachedAt},
					point{e.Score, math.MinInt64, e.ReachedAt}, point{e.Score, math.MaxInt64, e.ReachedAt})
			}
		}
		// The keys before and after every entry of a score (Ordering.Bound).
		for _, sc := range []int64{g.score(), 0} {
			for _, after := range []bool{false, true} {
				k := b.order.Bound(sc, after)
				if b.order.HasSub {
					probes = append(probes, point{k.Score, k.Sub, k.At})
				} else {
					probes = append(probes, point{k.Score, 0, k.At})
				}
			}
		}
		for _, p := range probes {
			n, err := rk.Search(ctx, p.key())
			if w := modelSearch(b.order, want, p.key()); err != nil || n != w {
				t.Fatalf("%s: Search(%+v) = %d, %v; want %d", what, p, n, err, w)
			}
		}
		verifyReads(t, what, rk, b.order, want, ask, probes, g)

		// What a merge asks of a shard: slices, and counts of what ranks before entries,
		// through the ranking and through the index (the writes' standings).
		model := shardindex.NewSorted(b.order, slices.Clone(want))
		keys := []laurel.Entry{{Score: math.MinInt64, ReachedAt: math.MinInt64}, {Score: math.MaxInt64, ReachedAt: math.MaxInt64, Member: "~"}}
		for _, p := range probes {
			keys = append(keys, laurel.Entry{Score: p.score, Sub: p.sub, ReachedAt: p.at, Member: g.member()})
		}
		for _, e := range want {
			// Its entry, its place without a member, and it as read before its score changed
			// either way: a member never counts before itself.
			keys = append(keys, e, laurel.Entry{Score: e.Score, Sub: e.Sub, ReachedAt: e.ReachedAt},
				laurel.Entry{Score: e.Score + 1, Sub: e.Sub, ReachedAt: e.ReachedAt, Member: e.Member},
				laurel.Entry{Score: e.Score - 1, Sub: e.Sub, ReachedAt: e.ReachedAt, Member: e.Member})
			if b.order.HasSub {
				keys = append(keys, laurel.Entry{Score: e.Score, Sub: e.Sub + 1, ReachedAt: e.ReachedAt, Member: e.Member},
					laurel.Entry{Score: e.Score, Sub: e.Sub - 1, ReachedAt: e.ReachedAt, Member: e.Member})
			}
		}
		gotCounts, gotTotal, err := rk.Before(ctx, keys)
		wantCounts, _, _ := model.Before(ctx, keys)
		if err != nil || gotTotal != len(want) || !slices.Equal(gotCounts, wantCounts) {
			t.Fatalf("%s: Before(%v) = %v, %d, %v; want %v, %d", what, keys, gotCounts, gotTotal, err, wantCounts, len(want))
		}
		for _, k := range keys[:min(len(keys), 8)] {
			n := 1 + r.IntN(4)
			got, err := rk.Near(ctx, k, n)
			w, _ := model.Near(ctx, k, n)
			if err != nil || got.Total != w.Total || got.Before != w.Before || !sameEntries(got.Entries, w.Entries) {
				t.Fatalf("%s: Near(%v, %d) = %+v, %v\nwant %+v", what, k, n, got, err, w)
			}
		}
		ikeys := make([]shardindex.Key, len(keys))
		for i, k := range keys {
			ikeys[i] = shardindex.Key{Set: s, Score: k.Score, Sub: k.Sub, At: k.ReachedAt, Member: k.Member}
		}
		// The index counts keys only: a step asks a shard about other shards' members.
		wantKeys := make([]int, len(keys))
		for i, k := range keys {
			near, _ := model.Near(ctx, k, 0)
			wantKeys[i] = near.Before
		}
		if got, err := idx.Before(ctx, board, b.shard, b.order, b.stamp, ikeys); err != nil || !slices.Equal(got, wantKeys) {
			t.Fatalf("%s: Index.Before = %v, %v; want %v", what, got, err, wantKeys)
		}
		for range 6 {
			lo, hi := g.score(), g.score()
			if len(want) > 0 && r.IntN(2) == 0 {
				lo, hi = want[r.IntN(len(want))].Score, want[r.IntN(len(want))].Score
			}
			sr := laurel.ScoreRange{Min: min(lo, hi), Max: max(lo, hi), HasMin: r.IntN(2) == 0, HasMax: r.IntN(2) == 0}
			skip, n := r.IntN(len(want)+2), r.IntN(20)
			got, err := rk.Slice(ctx, sr, skip, n)
			w, _ := model.Slice(ctx, sr, skip, n)
			if err != nil || got.Total != w.Total || got.Before != w.Before || got.In != w.In || !sameEntries(got.Entries, w.Entries) {
				t.Fatalf("%s: Slice(%+v, %d, %d) = %+v, %v\nwant %+v", what, sr, skip, n, got, err, w)
			}
		}
	}
}

// verifyReads checks the reads of docs/api.md that the index answers in one step each
// (laurel.RankingReads) against the same reads composed of the model's sorted entries.
func verifyReads(t *testing.T, what string, rk laurel.Ranking, o laurel.Ordering, want []laurel.Entry, ask []string, probes []point, g *gen) {
	t.Helper()
	ctx := t.Context()
	r := g.r
	rr, ok := rk.(laurel.RankingReads)
	if !ok {
		t.Fatalf("%s: the ranking does not answer reads in one step", what)
	}
	model := laurel.NewSortedRanking(o, slices.Clone(want))
	for range 6 {
		lo, hi := g.score(), g.score()
		if len(want) > 0 && r.IntN(2) == 0 {
			lo, hi = want[r.IntN(len(want))].Score, want[r.IntN(len(want))].Score
		}
		sr := laurel.ScoreRange{Min: min(lo, hi), Max: max(lo, hi), HasMin: r.IntN(2) == 0, HasMax: r.IntN(2) == 0}
		offset, limit := r.IntN(len(want)+3), 1+r.IntN(20)
		got, total, err := rr.ReadPage(ctx, o, offset, limit, sr)
		wantPage, wantTotal, _ := laurel.PageOf(ctx, model, o, offset, limit, sr)
		if err != nil || total != wantTotal || !sameEntries(got, wantPage) {
			t.Fatalf("%s: ReadPage(%d, %d, %+v) = %v, %d, %v\nwant %v, %d", what, offset, limit, sr, got, total, err, wantPage, wantTotal)
		}
	}
	for _, m := range append(slices.Clone(ask[:min(len(ask), 4)]), "absent member") {
		radius := r.IntN(6)
		got, found, total, err := rr.ReadAround(ctx, m, radius)
		wantPage, wantTotal, wantErr := laurel.AroundOf(ctx, model, "b", "w", m, radius)
		if err != nil || found != (wantErr == nil) || found && (total != wantTotal || !sameEntries(got, wantPage)) {
			t.Fatalf("%s: ReadAround(%q, %d) = %v, %v, %d, %v\nwant %v, %d, %v", what, m, radius, got, found, total, err, wantPage, wantTotal, wantErr)
		}
	}
	got, total, err := rr.ReadEntries(ctx, ask)
	wantEs, wantTotal, _ := laurel.LookupOf(ctx, model, ask)
	slices.SortFunc(got, func(x, y laurel.Entry) int { return x.Rank - y.Rank })
	if err != nil || total != wantTotal || !sameEntries(got, wantEs) {
		t.Fatalf("%s: ReadEntries(%q) = %v, %d, %v\nwant %v, %d", what, ask, got, total, err, wantEs, wantTotal)
	}
	keys := make([]laurel.Entry, len(probes))
	for i, p := range probes {
		rank, total, err := rr.ReadRank(ctx, p.key())
		if w, _ := model.Search(ctx, p.key()); err != nil || rank != w || total != len(want) {
			t.Fatalf("%s: ReadRank(%+v) = %d, %d, %v; want %d, %d", what, p, rank, total, err, w, len(want))
		}
		keys[i] = laurel.Entry{Score: p.score, Sub: p.sub, ReachedAt: p.at}
	}
	// A distribution's two steps: every search at once, and the ranking's ends.
	ranks, total, err := rk.(laurel.RankingSearches).ReadSearches(ctx, keys)
	for i, k := range keys {
		if w, _ := model.Search(ctx, k.Key()); err != nil || total != len(want) || ranks[i] != w {
			t.Fatalf("%s: ReadSearches(%v) = %v, %d, %v; want %d at %d of them", what, keys, ranks, total, err, w, i)
		}
	}
	first, last, total, err := rk.(laurel.RankingEnds).ReadEnds(ctx)
	if err != nil || total != len(want) || len(want) > 0 && (!sameEntries([]laurel.Entry{first, last}, []laurel.Entry{want[0], want[len(want)-1]})) {
		t.Fatalf("%s: ReadEnds = %v, %v, %d, %v", what, first, last, total, err)
	}
}

func checkPage(t *testing.T, what string, rk laurel.Ranking, want []laurel.Entry, from, n int) {
	t.Helper()
	ctx := t.Context()
	got, err := rk.Page(ctx, from, n)
	if err != nil {
		t.Fatalf("%s: Page(%d, %d): %v", what, from, n, err)
	}
	if w := modelPage(want, from, n); !sameEntries(got, w) {
		t.Fatalf("%s: Page(%d, %d)\n got %v\nwant %v", what, from, n, got, w)
	}
}
