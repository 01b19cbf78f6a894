package rank_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/laurel/laurel/rank"
)

var (
	seedFlag = flag.Uint64("seed", 0, "seed for the randomized tests (0: from the clock)")
	opsFlag  = flag.Int("ops", 200_000, "operations per randomized test run")
)

// newTree returns an empty tree whose invariants are checked when the test ends.
func newTree(tb testing.TB, opts rank.Options) *rank.Tree {
	tb.Helper()
	tr := rank.New(opts)
	checkOnCleanup(tb, tr)
	return tr
}

func checkOnCleanup(tb testing.TB, tr *rank.Tree) {
	tb.Cleanup(func() {
		if err := tr.Check(); err != nil {
			tb.Errorf("invariant broken at the end of the test: %v", err)
		}
	})
}

// oracle is the reference: a slice kept in rank order by a comparison written from the
// definition, independently of the tree's code.
type oracle struct {
	opts rank.Options
	keys []rank.Key
}

func (o *oracle) cmp(a, b rank.Key) int {
	if a.Score != b.Score {
		if (a.Score < b.Score) != o.opts.Desc {
			return -1
		}
		return 1
	}
	if o.opts.Sub && a.Sub != b.Sub {
		if (a.Sub < b.Sub) != o.opts.SubDesc {
			return -1
		}
		return 1
	}
	if a.At != b.At {
		if a.At < b.At {
			return -1
		}
		return 1
	}
	if a.Member == b.Member {
		return 0
	}
	if o.opts.Tie != nil {
		return o.opts.Tie(a.Member, b.Member)
	}
	if a.Member < b.Member {
		return -1
	}
	return 1
}

func (o *oracle) find(k rank.Key) (int, bool) { return slices.BinarySearchFunc(o.keys, k, o.cmp) }

func (o *oracle) insert(k rank.Key) bool {
	i, found := o.find(k)
	if !found {
		o.keys = slices.Insert(o.keys, i, k)
	}
	return !found
}

func (o *oracle) delete(k rank.Key) bool {
	i, found := o.find(k)
	if found {
		o.keys = slices.Delete(o.keys, i, i+1)
	}
	return found
}

// search is Tree.Search by its definition: the first key whose (score, sub, at) does not
// rank before q's, members aside.
func (o *oracle) search(q rank.Key) int {
	for i, k := range o.keys {
		better := k.Score != q.Score && (k.Score > q.Score) == o.opts.Desc
		subBetter := o.opts.Sub && k.Score == q.Score && k.Sub != q.Sub && (k.Sub > q.Sub) == o.opts.SubDesc
		tied := k.Score == q.Score && (!o.opts.Sub || k.Sub == q.Sub)
		if !better && !subBetter && !(tied && k.At < q.At) {
			return i
		}
	}
	return len(o.keys)
}

// reverseTie orders handles from high to low, unlike their numeric order, as member bytes
// need not follow handles.
func reverseTie(a, b uint32) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

var configs = []struct {
	name   string
	opts   rank.Options
	timeOf bool // one key per member, whose time (and subscore) the test keeps and the tree asks for
}{
	{"asc", rank.Options{}, false},
	{"desc", rank.Options{Desc: true}, false},
	{"desc-tie", rank.Options{Desc: true, Tie: reverseTie}, false},
	{"asc-tie", rank.Options{Tie: reverseTie}, false},
	{"desc-timeof", rank.Options{Desc: true}, true},
	{"asc-tie-timeof", rank.Options{Tie: reverseTie}, true},
	{"desc-subasc", rank.Options{Desc: true, Sub: true}, false},
	{"asc-subdesc-tie", rank.Options{Sub: true, SubDesc: true, Tie: reverseTie}, false},
	{"desc-subdesc-timeof", rank.Options{Desc: true, Sub: true, SubDesc: true}, true},
	{"asc-subasc-tie-timeof", rank.Options{Sub: true, Tie: reverseTie}, true},
}

// withTimes returns opts with TimeOf (and, with Sub, SubOf) answering from owned, a member's
// key in the tree, when timeOf is set; and owned (nil otherwise).
func withTimes(opts rank.Options, timeOf bool) (rank.Options, map[uint32]rank.Key) {
	if !timeOf {
		return opts, nil
	}
	owned := map[uint32]rank.Key{}
	of := func(m uint32) rank.Key {
		k, ok := owned[m]
		if !ok {
			panic(fmt.Sprintf("TimeOf(%d): the member has no key in the tree", m))
		}
		return k
	}
	opts.TimeOf = func(m uint32) int64 { return of(m).At }
	if opts.Sub {
		opts.SubOf = func(m uint32) int64 { return of(m).Sub }
	}
	return opts, owned
}

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed=%d)", s, s)
	return s
}

// TestRandomAgainstOracle runs long random sequences of every operation against the oracle.
// Scores, times and members come from small ranges so that ties at every level are common.
func TestRandomAgainstOracle(t *testing.T) {
	base := seed(t)
	for ci, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(base, uint64(ci)))
			opts, times := withTimes(cfg.opts, cfg.timeOf)
			tr := newTree(t, opts)
			o := &oracle{opts: cfg.opts}
			h := harness{t: t, rng: rng, tr: tr, o: o, times: times}
			// Grow to a few thousand keys, shrink to empty, and grow again, so that splits,
			// merges, borrows and root changes all happen many times.
			phases := []struct{ ops, insertPct int }{
				{*opsFlag / 4, 80}, {*opsFlag / 4, 50}, {*opsFlag / 4, 15}, {*opsFlag / 4, 70},
			}
			for _, ph := range phases {
				for range ph.ops {
					h.step(ph.insertPct)
				}
				if err := tr.Check(); err != nil {
					t.Fatalf("after a phase with %d keys: %v", tr.Len(), err)
				}
			}
			if h.times != nil && (h.placed == 0 || h.notPlaced == 0) {
				t.Fatalf("Replace placed %d keys within their leaf and left %d to Insert: want both ways tried", h.placed, h.notPlaced)
			}
			// Load the final contents in bulk and compare the two trees in full.
			loaded, err := rank.Load(opts, o.keys)
			if err != nil {
				t.Fatal(err)
			}
			checkOnCleanup(t, loaded)
			h.tr = loaded
			h.compareAll()
		})
	}
}

type harness struct {
	t     *testing.T
	rng   *rand.Rand
	tr    *rank.Tree
	o     *oracle
	ops   int
	times map[uint32]rank.Key // with TimeOf: each member's key, the tree holding one per member
	// Replace's answers: placed within a leaf, or deleted for the caller to insert.
	placed, notPlaced int
}

func (h *harness) randomKey() rank.Key {
	score := int64(h.rng.IntN(200) - 100)
	if h.rng.IntN(50) == 0 {
		score = []int64{math.MinInt64, math.MaxInt64, 0}[h.rng.IntN(3)]
	}
	k := rank.Key{Score: score, At: int64(h.rng.IntN(4)), Member: uint32(h.rng.IntN(5000))}
	if h.o.opts.Sub {
		k.Sub = int64(h.rng.IntN(3) - 1)
		if h.rng.IntN(50) == 0 {
			k.Sub = []int64{math.MinInt64, math.MaxInt64}[h.rng.IntN(2)]
		}
	}
	return k
}

// nearKey returns old's member with a score a step or two from old's, as an active member's
// score moves, and any time.
func (h *harness) nearKey(old rank.Key) rank.Key {
	k := old
	if d := int64(h.rng.IntN(5) - 2); k.Score > math.MinInt64+2 && k.Score < math.MaxInt64-2 {
		k.Score += d
	}
	k.At = int64(h.rng.IntN(4))
	if h.o.opts.Sub && h.rng.IntN(2) == 0 {
		k.Sub = int64(h.rng.IntN(3) - 1)
	}
	return k
}

// countPlaced counts Replace's answers, which the test asserts that it saw both of.
func (h *harness) countPlaced(placed bool) {
	if placed {
		h.placed++
	} else {
		h.notPlaced++
	}
}

// existing returns a key in the tree, or a random one when it is empty.
func (h *harness) existing() rank.Key {
	if len(h.o.keys) == 0 {
		return h.randomKey()
	}
	return h.o.keys[h.rng.IntN(len(h.o.keys))]
}

func (h *harness) step(insertPct int) {
	t := h.t
	h.ops++
	n := len(h.o.keys)
	switch op := h.rng.IntN(100); {
	case op < insertPct/2:
		k := h.randomKey()
		if h.times != nil {
			if _, ok := h.times[k.Member]; ok {
				return // one key per member
			}
			h.times[k.Member] = k
		}
		if got, want := h.tr.Insert(k), h.o.insert(k); got != want {
			t.Fatalf("op %d: Insert(%+v) = %v, want %v", h.ops, k, got, want)
		}
	case op < insertPct && h.times != nil:
		// A member's score and time change: Delete with the old time, Insert with the new;
		// or Replace, then the new time, then Insert unless Replace placed it.
		old, k := h.existing(), h.randomKey()
		k.Member = old.Member
		if h.rng.IntN(2) == 0 {
			k = h.nearKey(old)
		}
		want := h.o.delete(old)
		placed := false
		if h.rng.IntN(3) == 0 {
			if got := h.tr.Delete(old); got != want {
				t.Fatalf("op %d: Delete(%+v) = %v, want %v", h.ops, old, got, want)
			}
		} else {
			var found bool
			placed, found = h.tr.Replace(old, k)
			if found != want {
				t.Fatalf("op %d: Replace(%+v, %+v) found %v, want %v", h.ops, old, k, found, want)
			}
			h.countPlaced(placed)
		}
		if want {
			h.times[k.Member] = k
			h.o.insert(k)
			if !placed && !h.tr.Insert(k) {
				t.Fatalf("op %d: Insert(%+v) of a member just deleted = false", h.ops, k)
			}
		}
	case op < insertPct:
		// Update an existing key to a new one, as a score change does: often a small step,
		// which Replace makes within a leaf.
		old, k := h.existing(), h.randomKey()
		if h.rng.IntN(2) == 0 {
			k = h.nearKey(old)
		}
		_, clash := h.o.find(k)
		if clash && k != old {
			return
		}
		want := h.o.delete(old)
		if want {
			h.o.insert(k)
		}
		if got := h.tr.Update(old, k); got != want {
			t.Fatalf("op %d: Update(%+v, %+v) = %v, want %v", h.ops, old, k, got, want)
		}
	case op < 85:
		k := h.existing()
		if h.rng.IntN(4) == 0 {
			k = h.randomKey()
		}
		got, want := h.tr.Delete(k), h.o.delete(k)
		if got != want {
			t.Fatalf("op %d: Delete(%+v) = %v, want %v", h.ops, k, got, want)
		}
		if want && h.times != nil {
			delete(h.times, k.Member)
		}
	case op < 90:
		k := h.existing()
		if h.rng.IntN(3) == 0 {
			k = h.randomKey()
		}
		i, found := h.o.find(k)
		r, ok := h.tr.Rank(k)
		if ok != found || (found && r != i+1) || h.tr.Has(k) != found {
			t.Fatalf("op %d: Rank(%+v) = %d, %v; want %d, %v", h.ops, k, r, ok, i+1, found)
		}
	case op < 94:
		r := h.rng.IntN(n+2) - 1 + 1
		k, ok := h.tr.At(r)
		if want := r >= 1 && r <= n; ok != want || (ok && k != h.o.keys[r-1]) {
			t.Fatalf("op %d: At(%d) = %+v, %v with %d keys", h.ops, r, k, ok, n)
		}
	case op < 97:
		h.checkWalk(h.tr.CursorAt(h.rng.IntN(n+2)), "CursorAt")
	case op < 99:
		k := h.randomKey()
		c := h.tr.Search(k)
		if want := h.o.search(k) + 1; c.Rank() != want {
			t.Fatalf("op %d: Search(%+v).Rank() = %d, want %d", h.ops, k, c.Rank(), want)
		}
		h.checkWalk(c, "Search")
	default:
		k := h.randomKey()
		c := h.tr.Seek(k)
		if i, _ := h.o.find(k); c.Rank() != i+1 {
			t.Fatalf("op %d: Seek(%+v).Rank() = %d, want %d", h.ops, k, c.Rank(), i+1)
		}
		h.checkWalk(c, "Seek")
	}
	if h.tr.Len() != len(h.o.keys) {
		t.Fatalf("op %d: Len() = %d, want %d", h.ops, h.tr.Len(), len(h.o.keys))
	}
}

// checkWalk walks a few steps from c in a random direction and compares every position.
func (h *harness) checkWalk(c rank.Cursor, from string) {
	t := h.t
	n := len(h.o.keys)
	start := c.Rank()
	if valid := start >= 1 && start <= n; c.Valid() != valid {
		t.Fatalf("op %d: %s: cursor at rank %d is Valid()=%v with %d keys", h.ops, from, start, c.Valid(), n)
	}
	steps := h.rng.IntN(150)
	if h.rng.IntN(2) == 0 {
		want := start
		for r, k := range c.Forward() {
			if r != want || k != h.o.keys[r-1] {
				t.Fatalf("op %d: %s(%d).Forward yielded rank %d %+v, want rank %d", h.ops, from, start, r, k, want)
			}
			if want++; want-start > steps {
				break
			}
		}
		if c.Valid() && want-start <= steps && want != n+1 {
			t.Fatalf("op %d: %s(%d).Forward stopped at rank %d of %d", h.ops, from, start, want, n)
		}
		return
	}
	if !c.Valid() && start == n+1 {
		c.Prev() // from past the end, backward walks start at the last key
	}
	want := c.Rank()
	for r, k := range c.Backward() {
		if r != want || k != h.o.keys[r-1] {
			t.Fatalf("op %d: %s(%d).Backward yielded rank %d %+v, want rank %d", h.ops, from, start, r, k, want)
		}
		if want--; start-want > steps {
			break
		}
	}
	if start-want <= steps && want != 0 && c.Valid() {
		t.Fatalf("op %d: %s(%d).Backward stopped at rank %d", h.ops, from, start, want)
	}
}

// compareAll checks every rank, key and position of the tree against the oracle.
func (h *harness) compareAll() {
	t := h.t
	if h.tr.Len() != len(h.o.keys) {
		t.Fatalf("Len() = %d, want %d", h.tr.Len(), len(h.o.keys))
	}
	got := slices.Collect(func(yield func(rank.Key) bool) {
		for _, k := range h.tr.CursorAt(1).Forward() {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(got, h.o.keys) {
		t.Fatalf("forward walk differs from the oracle")
	}
	for i, k := range h.o.keys {
		if r, ok := h.tr.Rank(k); !ok || r != i+1 {
			t.Fatalf("Rank(%+v) = %d, %v; want %d", k, r, ok, i+1)
		}
		if at, ok := h.tr.At(i + 1); !ok || at != k {
			t.Fatalf("At(%d) = %+v, want %+v", i+1, at, k)
		}
	}
}

func TestEmpty(t *testing.T) {
	tr := newTree(t, rank.Options{Desc: true})
	k := rank.Key{Score: 1, At: 2, Member: 3}
	if tr.Len() != 0 || tr.Has(k) || tr.Delete(k) || tr.Update(k, k) {
		t.Fatal("an empty tree reports a key")
	}
	if _, ok := tr.Rank(k); ok {
		t.Fatal("Rank found a key in an empty tree")
	}
	for _, r := range []int{-1, 0, 1} {
		if _, ok := tr.At(r); ok {
			t.Fatalf("At(%d) found a key in an empty tree", r)
		}
	}
	c := tr.Search(rank.Key{})
	if c.Valid() || c.Rank() != 1 {
		t.Fatalf("Search on an empty tree: Valid %v, Rank %d; want false, 1", c.Valid(), c.Rank())
	}
	c.Prev()
	if c.Valid() {
		t.Fatal("Prev from past the end of an empty tree found a key")
	}
}

// TestDescendingOrder pins the order laurel relies on, spelled out by hand: higher score
// first, then earlier time, then the tie-break between members.
func TestDescendingOrder(t *testing.T) {
	tr := newTree(t, rank.Options{Desc: true, Tie: reverseTie})
	keys := []rank.Key{
		{Score: math.MaxInt64, At: 5, Member: 1},
		{Score: 18, At: 1, Member: 1},
		{Score: 18, At: 2, Member: 9},
		{Score: 18, At: 2, Member: 4}, // same score and time: reverseTie puts 9 before 4
		{Score: 0, At: 0, Member: 7},
		{Score: -3, At: 0, Member: 7},
		{Score: math.MinInt64, At: 0, Member: 2},
	}
	for _, i := range rand.Perm(len(keys)) {
		tr.Insert(keys[i])
	}
	for i, k := range keys {
		if r, ok := tr.Rank(k); !ok || r != i+1 {
			t.Errorf("Rank(%+v) = %d, want %d", k, r, i+1)
		}
	}
	// A member reaching 18 at time 2 would rank after the two already there at time 2 and
	// before the one at 0 points.
	if c := tr.Search(rank.Key{Score: 18, At: 2}); c.Rank() != 3 || c.Key() != keys[2] {
		t.Errorf("Search(18, 2) at rank %d, want 3", c.Rank())
	}
	if c := tr.Search(rank.Key{Score: 18, At: math.MinInt64}); c.Rank() != 2 {
		t.Errorf("Search(18, MinInt64) at rank %d, want 2", c.Rank())
	}
	if c := tr.Search(rank.Key{Score: 17, At: math.MinInt64}); c.Rank() != 5 {
		t.Errorf("Search(17, MinInt64) at rank %d, want 5", c.Rank())
	}
}

func TestLoadRejectsUnorderedKeys(t *testing.T) {
	for _, keys := range [][]rank.Key{
		{{Score: 1}, {Score: 2}},               // ascending scores on a desc tree
		{{Score: 2, At: 1}, {Score: 2, At: 1}}, // duplicate
		{{Score: 2, At: 2}, {Score: 2, At: 1}}, // later time first
	} {
		if _, err := rank.Load(rank.Options{Desc: true}, keys); err == nil {
			t.Errorf("Load(%v) accepted keys out of rank order", keys)
		}
	}
}

// TestLoadSizes loads every size up to a few nodes, and sizes around two and three levels,
// and checks the result.
func TestLoadSizes(t *testing.T) {
	var sizes []int
	for n := range 400 {
		sizes = append(sizes, n)
	}
	for n := 4000; n < 7000; n += 37 {
		sizes = append(sizes, n)
	}
	for _, n := range append(sizes, 50_000, 430_000) {
		keys := make([]rank.Key, n)
		for i := range keys {
			keys[i] = rank.Key{Score: int64(n - i), At: int64(i), Member: uint32(i)}
		}
		tr, err := rank.Load(rank.Options{Desc: true}, keys)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Check(); err != nil {
			t.Fatalf("Load of %d keys: %v", n, err)
		}
		h := harness{t: t, tr: tr, o: &oracle{opts: rank.Options{Desc: true}, keys: keys}}
		h.compareAll()
		// Deleting every other key then inserting it again exercises merges on loaded nodes.
		for i := 0; i < n; i += 2 {
			tr.Delete(keys[i])
		}
		for i := 0; i < n; i += 2 {
			tr.Insert(keys[i])
		}
		if err := tr.Check(); err != nil {
			t.Fatalf("after deleting and reinserting in a loaded tree of %d: %v", n, err)
		}
		h.compareAll()
	}
}

// TestSubscoreOrder pins the order of a tree with subscores, spelled out by hand: higher
// score first, then lower subscore (ascending), then earlier time, then members; and Search
// by score alone with the subscore that ranks first.
func TestSubscoreOrder(t *testing.T) {
	for _, timeOf := range []bool{false, true} {
		opts, owned := withTimes(rank.Options{Desc: true, Sub: true}, timeOf)
		tr := newTree(t, opts)
		keys := []rank.Key{
			{Score: 18, Sub: math.MinInt64, At: 9, Member: 5},
			{Score: 18, Sub: -1, At: 3, Member: 1},
			{Score: 18, Sub: 4, At: 1, Member: 2},
			{Score: 18, Sub: 4, At: 2, Member: 3},
			{Score: 18, Sub: 4, At: 2, Member: 4},
			{Score: 17, Sub: -9, At: 0, Member: 6},
		}
		for _, i := range rand.Perm(len(keys)) {
			if owned != nil {
				owned[keys[i].Member] = keys[i]
			}
			tr.Insert(keys[i])
		}
		for i, k := range keys {
			if r, ok := tr.Rank(k); !ok || r != i+1 {
				t.Errorf("timeOf %v: Rank(%+v) = %d, want %d", timeOf, k, r, i+1)
			}
			if got, _ := tr.At(i + 1); got != k {
				t.Errorf("timeOf %v: At(%d) = %+v, want %+v", timeOf, i+1, got, k)
			}
		}
		wrong := keys[2]
		wrong.Sub = 5
		if tr.Has(wrong) {
			t.Errorf("timeOf %v: Has(%+v) with another subscore", timeOf, wrong)
		}
		// A member reaching (18, 4) at time 2 ranks after the two already there.
		if c := tr.Search(rank.Key{Score: 18, Sub: 4, At: 2}); c.Rank() != 4 {
			t.Errorf("timeOf %v: Search(18, 4, 2) at rank %d, want 4", timeOf, c.Rank())
		}
		if c := tr.Search(rank.Key{Score: 18, Sub: math.MinInt64, At: math.MinInt64}); c.Rank() != 1 {
			t.Errorf("timeOf %v: Search(18, best) at rank %d, want 1", timeOf, c.Rank())
		}
		if c := tr.Search(rank.Key{Score: 18, Sub: math.MaxInt64, At: math.MaxInt64}); c.Rank() != 6 {
			t.Errorf("timeOf %v: Search(18, worst) at rank %d, want 6", timeOf, c.Rank())
		}
	}
	// A tree without subscores ignores them.
	tr := newTree(t, rank.Options{Desc: true})
	tr.Insert(rank.Key{Score: 1, Sub: 7, At: 1, Member: 1})
	if k, _ := tr.At(1); k.Sub != 0 || !tr.Has(rank.Key{Score: 1, Sub: 3, At: 1, Member: 1}) {
		t.Errorf("a tree without subscores kept one: %+v", k)
	}
}

func TestLoadRejectsUnorderedSubscores(t *testing.T) {
	for _, keys := range [][]rank.Key{
		{{Score: 2, Sub: 2}, {Score: 2, Sub: 1}},               // descending subscores on an asc one
		{{Score: 2, Sub: 1, At: 1}, {Score: 2, Sub: 1, At: 1}}, // duplicate
	} {
		if _, err := rank.Load(rank.Options{Desc: true, Sub: true}, keys); err == nil {
			t.Errorf("Load(%v) accepted keys out of rank order", keys)
		}
	}
}

// TestBytesPerKey: a tree with TimeOf, bulk loaded, takes about 13 bytes a key (a leaf of 82
// keys fills Go's 1024-byte size class, header included), with subscores from SubOf or
// without: a field more in a leaf takes it to the 1152-byte class, 14.6 bytes a key.
func TestBytesPerKey(t *testing.T) {
	const n = 500_000
	keys := make([]rank.Key, n)
	times := make([]int64, n)
	for i := range keys {
		keys[i] = rank.Key{Score: int64(n - i), At: int64(i), Member: uint32(i)}
		times[i] = int64(i)
	}
	timeOf := func(m uint32) int64 { return times[m] }
	for _, opts := range []rank.Options{
		{Desc: true, TimeOf: timeOf},
		{Desc: true, TimeOf: timeOf, Sub: true, SubOf: func(uint32) int64 { return 0 }},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr, err := rank.Load(opts, keys)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perKey := float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(tr)
		if perKey > 13.5 {
			t.Errorf("sub %v: %.2f bytes a key, want at most 13.5", opts.Sub, perKey)
		}
		t.Logf("sub %v: %.2f bytes a key", opts.Sub, perKey)
	}
}
