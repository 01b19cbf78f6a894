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

// The model: per board, a map per set of member → (score, subscore, at), sorted on every
// read, and each shard's version and stamp.

type point struct{ score, sub, at int64 }

func (p point) key() laurel.Key { return laurel.Key{Score: p.score, Sub: p.sub, At: p.at} }

// sameEntries is laureltest.SameEntries with the subscores compared too.
func sameEntries(a, b []laurel.Entry) bool {
	return laureltest.SameEntries(a, b) && slices.EqualFunc(a, b, func(x, y laurel.Entry) bool { return x.Sub == y.Sub })
}

type modelBoard struct {
	board    string
	count    int // shards
	order    laurel.Ordering
	versions []int64
	stamps   []int64
	stamped  []bool // a stamp was recorded (a step of version 0 may record 0)
	state    []byte
	hasState bool
	sets     map[shardindex.Set]map[string]point
}

func newModelBoard(board string, count int, o laurel.Ordering) *modelBoard {
	return &modelBoard{board: board, count: count, order: o, versions: make([]int64, count), stamps: make([]int64, count), stamped: make([]bool, count),
		sets: map[shardindex.Set]map[string]point{}}
}

// follows reports whether every shard follows the stamp t.
func (b *modelBoard) follows(t int64) bool {
	for i, s := range b.stamps {
		if !b.stamped[i] || s != t {
			return false
		}
	}
	return true
}

// apply makes the steps of Index.Apply in order, each refused alone when its shard is not at
// its After, a step that records the state also when one before it was refused; then answers
// a when no step was refused and every shard follows one stamp.
func (b *modelBoard) apply(steps []shardindex.Step, a shardindex.Asks) shardindex.Applied {
	var refused []int
	for _, st := range steps {
		if st.After != b.versions[st.Shard] || st.State != nil && refused != nil {
			refused = append(refused, st.Shard)
			continue
		}
		b.step(st.Shard, st.Update)
	}
	if refused != nil || len(a.Read)+len(a.Count) == 0 || !b.follows(b.stamps[0]) {
		return shardindex.Applied{Refused: refused}
	}
	return b.rank(a)
}

// step makes shard i's step u.
func (b *modelBoard) step(i int, u shardindex.Update) {
	for _, s := range u.Drops {
		for m := range b.sets[s] {
			if shardindex.ShardOf(m, b.count) == i {
				delete(b.sets[s], m)
			}
		}
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
	b.versions[i] = u.Version
	if u.State != nil {
		b.state, b.hasState, b.stamps[i], b.stamped[i] = slices.Clone(u.State), true, u.Version, true
		if u.Stamp != 0 {
			b.stamps[i] = u.Stamp
		}
	} else if u.Stamp != 0 {
		b.stamps[i], b.stamped[i] = u.Stamp, true
	}
}

// rank answers asks in the whole board.
func (b *modelBoard) rank(a shardindex.Asks) shardindex.Applied {
	var below []int
	for _, f := range a.Floors {
		if b.versions[f.Shard] < f.Version {
			below = append(below, f.Shard)
		}
	}
	if below != nil {
		return shardindex.Applied{Below: below}
	}
	reads, counts := a.Read, a.Count
	out := shardindex.Applied{Ranked: true, Read: make([]shardindex.Entry, len(reads)), Before: make([]int, len(counts))}
	for i, r := range reads {
		for _, e := range b.sorted(r.Set) {
			if e.Member == r.Member {
				out.Read[i] = shardindex.Entry{Rank: e.Rank, Score: e.Score, Sub: e.Sub, At: e.ReachedAt}
			}
		}
	}
	for i, k := range counts {
		for _, e := range b.sorted(k.Set) {
			if laurel.CompareEntries(b.order, e, laurel.Entry{Member: k.Member, Score: k.Score, Sub: k.Sub, ReachedAt: k.At}) < 0 {
				out.Before[i]++
			}
		}
	}
	return out
}

// remove forgets shard i (Index.Delete), or the whole board (i < 0).
func (b *modelBoard) remove(i int) {
	for _, m := range b.sets {
		for member := range m {
			if i < 0 || shardindex.ShardOf(member, b.count) == i {
				delete(m, member)
			}
		}
	}
	for j := range b.count {
		if i < 0 || i == j {
			b.versions[j], b.stamps[j], b.stamped[j] = 0, 0, false
		}
	}
	if i <= 0 {
		b.state, b.hasState = nil, false
	}
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

// memberOf draws a member of shard i of n: a bulk one when none of the few is.
func (g *gen) memberOf(i, n int) string {
	for range 50 {
		if m := g.member(); shardindex.ShardOf(m, n) == i {
			return m
		}
	}
	return g.bulkOf(i, n)
}

func (g *gen) bulkOf(i, n int) string {
	for {
		if m := fmt.Sprintf("bulk%04d", g.r.IntN(3000)); shardindex.ShardOf(m, n) == i {
			return m
		}
	}
}
func (g *gen) set() shardindex.Set {
	return g.sets[g.r.IntN(len(g.sets))]
}

// steps draws the steps of one call of Index.Apply on board b: most often one shard's,
// else those of several of its shards, in any order (as a write of several shards), each
// more often refused.
func (g *gen) steps(b *modelBoard) []shardindex.Step {
	if b.count == 1 || g.r.IntN(2) == 0 {
		i := g.r.IntN(b.count)
		return []shardindex.Step{{Shard: i, Update: g.step(b, i, 20)}}
	}
	var out []shardindex.Step
	for _, i := range g.r.Perm(b.count)[:1+g.r.IntN(b.count)] {
		out = append(out, shardindex.Step{Shard: i, Update: g.step(b, i, 5)})
	}
	return out
}

// step draws a random step of shard i of board b, one in stale of them after a version it
// is not at.
func (g *gen) step(b *modelBoard, i, stale int) shardindex.Update {
	r := g.r
	v := b.versions[i]
	u := shardindex.Update{After: v, Version: v + int64(r.IntN(3))}
	if r.IntN(stale) == 0 { // a step after a lost one, or a late one
		u.After += []int64{-1, 1, 2}[r.IntN(3)]
	}
	switch n := r.IntN(10); {
	case i != 0 && n < 5: // the stamp of a state kept by shard 0
		u.Stamp = g.stamp()
	case i != 0:
	case n == 0:
		u.State, u.Stamp = []byte("rebuilt"), g.stamp() // a rebuild's: stamped before its version
	case n == 1:
		u.State = []byte{} // recorded, but empty
	case n < 4:
		u.State, u.Stamp = make([]byte, r.IntN(40)), g.stamp() // stamped as the other shards
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
		c := shardindex.Change{Set: g.set(), Member: g.memberOf(i, b.count)}
		if n > 100 {
			c.Member = g.bulkOf(i, b.count)
		}
		if r.IntN(4) == 0 {
			c.Remove = true
		} else {
			c.Score, c.Sub, c.At = g.score(), g.sub(b.order), g.at()
		}
		u.Changes = append(u.Changes, c)
	}
	return u
}

// stamp draws a state's stamp: mostly one, so that a board's shards often follow the same.
func (g *gen) stamp() int64 {
	if g.r.IntN(6) == 0 {
		return 2
	}
	return 1
}

// asks draws reads, of members of any shard and of those changes changed, counts, and at
// times floors: a shard's version, or one past it.
func (g *gen) asks(b *modelBoard, changes []shardindex.Change) shardindex.Asks {
	r := g.r
	var a shardindex.Asks
	for range r.IntN(3) / 2 {
		i := r.IntN(b.count)
		a.Floors = append(a.Floors, shardindex.Floor{Shard: i, Version: b.versions[i] + int64(r.IntN(3)) - 1})
	}
	var reads []shardindex.Read
	var counts []shardindex.Key
	for range r.IntN(6) {
		rd := shardindex.Read{Set: g.set(), Member: g.member()}
		if len(changes) > 0 && r.IntN(2) == 0 {
			c := changes[r.IntN(len(changes))]
			rd = shardindex.Read{Set: c.Set, Member: c.Member}
		}
		switch r.IntN(3) { // an entry expected: the member's own, or one it does not have
		case 0:
			if p, ok := b.sets[rd.Set][rd.Member]; ok {
				rd.Expect, rd.Score, rd.Sub, rd.At = true, p.score, p.sub, p.at
			}
		case 1:
			rd.Expect, rd.Score, rd.Sub, rd.At = true, g.score(), g.sub(b.order), g.at()
		}
		reads = append(reads, rd)
	}
	for range r.IntN(4) {
		counts = append(counts, shardindex.Key{Set: g.set(), Score: g.score(), Sub: g.sub(b.order), At: g.at(), Member: g.member()})
	}
	a.Read, a.Count = reads, counts
	return a
}

func TestDifferential(t *testing.T) {
	idx, _, _ := newIndex(t)
	ctx := context.Background()
	seed := testSeed(t)
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	g := newGen(seed)

	// Boards of two and three shards, whose steps each change their own members in the
	// board's sets, and boards of one shard; boards with a subscore, of either order against
	// the score's, beside them. What one board does never shows in another.
	boards := []*modelBoard{
		newModelBoard("desc", 2, laurel.Ordering{Score: laurel.Desc}),
		newModelBoard("asc.0_-z", 1, laurel.Ordering{Score: laurel.Asc}),
		newModelBoard("sub", 3, laurel.Ordering{Score: laurel.Desc, Sub: laurel.Asc, HasSub: true}),
		newModelBoard("ascsub", 1, laurel.Ordering{Score: laurel.Asc, Sub: laurel.Desc, HasSub: true}),
		newModelBoard("ascsub2", 1, laurel.Ordering{Score: laurel.Asc, Sub: laurel.Asc, HasSub: true}),
	}
	type oldRanking struct {
		r     laurel.Ranking
		stamp int64
		set   shardindex.Set
	}
	old := map[string][]oldRanking{}

	whole := 0
	steps := 400
	if testing.Short() {
		steps = 90
	}
	for step := range steps {
		b := boards[g.r.IntN(len(boards))]
		i := g.r.IntN(b.count)
		name := fmt.Sprintf("%s/%d", b.board, i)
		switch g.r.IntN(40) {
		case 0: // a shard lost, or rebuilt: its members leave the board's sets
			if err := idx.Delete(ctx, b.board, shardindex.Shard{Number: i, Count: b.count}); err != nil {
				t.Fatalf("step %d on %s: Delete: %v", step, name, err)
			}
			b.remove(i)
		case 1:
			if err := idx.DeleteBoard(ctx, b.board); err != nil {
				t.Fatalf("step %d on %s: DeleteBoard: %v", step, name, err)
			}
			b.remove(-1)
		default:
			call := g.steps(b)
			var changes []shardindex.Change
			shards := make([]int, len(call))
			for k, st := range call {
				changes, shards[k] = append(changes, st.Changes...), st.Shard
			}
			name = fmt.Sprintf("%s/%v", b.board, shards)
			asks := g.asks(b, changes)
			versions := slices.Clone(b.versions)
			got, err := idx.Apply(ctx, b.board, b.count, b.order, call, asks)
			want := b.apply(call, asks)
			switch {
			case err != nil:
				t.Fatalf("step %d on %s: Apply: %v", step, name, err)
			case !slices.Equal(got.Refused, want.Refused):
				t.Fatalf("step %d on %s: Apply at versions %v refused %v, want %v", step, name, versions, got.Refused, want.Refused)
			case got.Ranked != want.Ranked || !slices.Equal(got.Below, want.Below) || !slices.Equal(got.Read, want.Read) || !slices.Equal(got.Before, want.Before):
				t.Fatalf("step %d on %s: Apply read %+v, want %+v", step, name, got, want)
			}
		}

		// Rankings made before keep working until a step sets another state.
		for _, o := range old[b.board] {
			n, err := o.r.Total(ctx)
			if !b.follows(o.stamp) {
				if !errors.Is(err, shardindex.ErrStale) {
					t.Fatalf("step %d on %s: a ranking stamped %d read %d, %v with the shards at stamps %v: want ErrIndexStale", step, name, o.stamp, n, err, b.stamps)
				}
			} else if err != nil || n != len(b.sets[o.set]) {
				t.Fatalf("step %d on %s: a ranking of the current state counts %d, %v; want %d", step, name, n, err, len(b.sets[o.set]))
			}
		}
		if b.follows(b.stamps[0]) {
			s := g.set()
			old[b.board] = append(old[b.board], oldRanking{idx.Ranking(b.board, b.count, b.order, s, b.stamps[0]), b.stamps[0], s})
			if len(old[b.board]) > 4 {
				old[b.board] = old[b.board][1:]
			}
		}

		if verify(t, fmt.Sprintf("step %d on %s", step, name), idx, b, g) && b.count > 1 {
			whole++
		}
	}
	// The shards of a board follow one stamp often enough that its sets are read whole.
	if whole < steps/40 {
		t.Fatalf("boards of several shards were read whole after %d steps of %d: the test tests little", whole, steps)
	}
	t.Logf("boards of several shards read whole after %d steps of %d", whole, steps)
}

// verify compares everything the index answers of a board with the model, and reports whether
// its shards followed one stamp, so that its sets could be read.
func verify(t *testing.T, where string, idx *redis.Index, b *modelBoard, g *gen) bool {
	t.Helper()
	ctx := context.Background()
	r := g.r
	board := b.board
	st, ok, err := idx.State(ctx, board)
	if err != nil {
		t.Fatalf("%s: State: %v", where, err)
	}
	if ok != b.hasState || st.Version != b.versions[0] || ok && (st.Stamp != b.stamps[0] || !bytes.Equal(st.State, b.state)) {
		t.Fatalf("%s: State %+v, %v; want version %d, state %q stamped %d, %v", where, st, ok, b.versions[0], b.state, b.stamps[0], b.hasState)
	}
	vs, err := idx.Versions(ctx, board, b.count)
	if err != nil {
		t.Fatalf("%s: Versions: %v", where, err)
	}
	for i, v := range vs {
		if v.Version != b.versions[i] || v.Stamp != b.stamps[i] {
			t.Fatalf("%s: Versions %+v; want versions %v stamped %v", where, vs, b.versions, b.stamps)
		}
	}
	asks := g.asks(b, nil)
	asks.Read = append(asks.Read, shardindex.Read{Set: g.set(), Member: g.member()}) // asks something
	got, err := idx.Apply(ctx, board, b.count, b.order, nil, asks)
	stamp := b.stamps[0]
	if err != nil {
		t.Fatalf("%s: Apply of no step: %v", where, err)
	}
	if !b.follows(stamp) {
		if got.Ranked || got.Below != nil {
			t.Fatalf("%s: Apply of no step to a board whose shards are at stamps %v: %+v; want no answer", where, b.stamps, got)
		}
		if _, err := idx.Ranking(board, b.count, b.order, g.set(), stamp).Total(ctx); !errors.Is(err, shardindex.ErrStale) {
			t.Fatalf("%s: a ranking of a board whose shards are at stamps %v: %v, want ErrIndexStale", where, b.stamps, err)
		}
		return false
	}
	if want := b.rank(asks); err != nil || !slices.Equal(got.Below, want.Below) || !slices.Equal(got.Read, want.Read) || !slices.Equal(got.Before, want.Before) {
		t.Fatalf("%s: Apply of no step (%+v) = %+v, %v; want %+v", where, asks, got, err, want)
	}

	totals, err := idx.Totals(ctx, board, b.count, g.sets, stamp)
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
		rk := idx.Ranking(board, b.count, b.order, s, stamp)
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

	}
	return true
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
