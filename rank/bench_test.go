package rank_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/laurel/laurel/rank"
	"github.com/tidwall/btree"
)

// The benchmarks compare the counted B+tree with github.com/tidwall/btree, the reference, on
// the same keys in the same run: its Get is the plain lookup that Rank and At must beat, its
// GetAt the at-rank, and a binary search over GetAt its best rank-of. Run them with
//
//	go test -run='^$' -bench=. -benchtime=200000x ./rank
//
// Fixtures are built once per size by random inserts, as a long-running board would be.

var sizes = []int{1_000_000, 10_000_000}

type fixture struct {
	keys  []rank.Key // every key in the trees, in random order
	tree  *rank.Tree
	timed *rank.Tree // the same keys, the times in times (rank.Options.TimeOf), as laurel's store runs it
	times []int64    // by member: the fixture's members, then room for fresh ones
	ref   *btree.BTreeG[rank.Key]
	rng   *rand.Rand
}

// benchRound is how many writes the benchmarks make before they undo them.
const benchRound = 10_000

var fixtures = map[int]*fixture{}

// refLess is the same order as a descending rank.Tree without a tie function.
func refLess(a, b rank.Key) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.At != b.At {
		return a.At < b.At
	}
	return a.Member < b.Member
}

// randomKeys returns n keys with distinct members, scores spread over a million values (so
// ties on score happen, as on real boards) and times within a week.
func randomKeys(rng *rand.Rand, n int) []rank.Key {
	keys := make([]rank.Key, n)
	for i := range keys {
		keys[i] = rank.Key{Score: rng.Int64N(1_000_000), At: 1_700_000_000_000 + rng.Int64N(7*24*3600*1000), Member: uint32(i)}
	}
	return keys
}

func getFixture(b *testing.B, n int) *fixture {
	if f := fixtures[n]; f != nil {
		return f
	}
	b.StopTimer()
	defer b.StartTimer()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	f := &fixture{keys: randomKeys(rng, n), tree: rank.New(rank.Options{Desc: true}),
		ref: btree.NewBTreeGOptions(refLess, btree.Options{NoLocks: true}), rng: rng, times: make([]int64, n+benchRound)}
	f.timed = rank.New(rank.Options{Desc: true, TimeOf: func(m uint32) int64 { return f.times[m] }})
	for _, k := range f.keys {
		f.tree.Insert(k)
		f.ref.Set(k)
		f.times[k.Member] = k.At
		f.timed.Insert(k)
	}
	fixtures[n] = f
	return f
}

// fresh returns count keys that are not in the fixture: their members are beyond its own.
func (f *fixture) fresh(count int) []rank.Key {
	keys := randomKeys(f.rng, count)
	for i := range keys {
		keys[i].Member += uint32(len(f.keys))
	}
	return keys
}

// index is what the benchmarks do to either tree.
type index interface {
	insert(rank.Key)
	delete(rank.Key)
	replace(old, new rank.Key) // a score change: Replace, then Insert when it did not place new
	rank(rank.Key) int
	at(r int) rank.Key
	iterate(from, count int) int
}

type ours struct{ t *rank.Tree }

func (o ours) insert(k rank.Key) { o.t.Insert(k) }
func (o ours) delete(k rank.Key) { o.t.Delete(k) }
func (o ours) replace(old, k rank.Key) {
	if placed, _ := o.t.Replace(old, k); !placed {
		o.t.Insert(k)
	}
}
func (o ours) rank(k rank.Key) int {
	r, _ := o.t.Rank(k)
	return r
}
func (o ours) at(r int) rank.Key {
	k, _ := o.t.At(r)
	return k
}
func (o ours) iterate(from, count int) int {
	sum := 0
	for r := range o.t.CursorAt(from).Forward() {
		if sum += r; r >= from+count-1 {
			break
		}
	}
	return sum
}

// timed is ours with TimeOf: an insert sets the member's time first, as the store's span
// sets its aggregate between the Delete of the old key and the Insert of the new.
type timed struct {
	ours
	times []int64
}

func (o timed) insert(k rank.Key) {
	o.times[k.Member] = k.At
	o.t.Insert(k)
}

func (o timed) replace(old, k rank.Key) {
	placed, _ := o.t.Replace(old, k)
	o.times[k.Member] = k.At
	if !placed {
		o.t.Insert(k)
	}
}

type ref struct{ t *btree.BTreeG[rank.Key] }

func (o ref) insert(k rank.Key) { o.t.Set(k) }
func (o ref) delete(k rank.Key) { o.t.Delete(k) }
func (o ref) replace(old, k rank.Key) {
	o.t.Delete(old)
	o.t.Set(k)
}

// rank is the best rank-of the reference offers: a binary search over GetAt.
func (o ref) rank(k rank.Key) int {
	lo, hi := 0, o.t.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at, _ := o.t.GetAt(mid); refLess(at, k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo + 1
}
func (o ref) at(r int) rank.Key {
	k, _ := o.t.GetAt(r - 1)
	return k
}
func (o ref) iterate(from, count int) int {
	first, _ := o.t.GetAt(from - 1)
	sum, r := 0, from
	o.t.Ascend(first, func(rank.Key) bool {
		sum += r
		r++
		return r < from+count
	})
	return sum
}

// get is the reference's plain lookup by key, the budget for Rank and At.
func (o ref) get(k rank.Key) bool {
	_, ok := o.t.Get(k)
	return ok
}

var sink int

func BenchmarkIndex(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%dM", n/1_000_000), func(b *testing.B) {
			for _, impl := range []string{"laurel", "laurel-timeof", "tidwall"} {
				b.Run(impl, func(b *testing.B) { benchOps(b, n, impl) })
			}
		})
	}
}

func benchOps(b *testing.B, n int, impl string) {
	f := getFixture(b, n)
	var ix index = ours{f.tree}
	switch impl {
	case "laurel-timeof":
		ix = timed{ours{f.timed}, f.times}
	case "tidwall":
		ix = ref{f.ref}
	}
	// Writes run in rounds that are undone untimed, so the tree stays at its size.
	const round = benchRound
	rounds := func(b *testing.B, keys func(count int) []rank.Key, do, undo func(rank.Key)) {
		b.StopTimer()
		for done := 0; done < b.N; done += round {
			ks := keys(min(round, b.N-done))
			b.StartTimer()
			for _, k := range ks {
				do(k)
			}
			b.StopTimer()
			for _, k := range ks {
				undo(k)
			}
		}
	}
	b.Run("insert", func(b *testing.B) { rounds(b, f.fresh, ix.insert, ix.delete) })
	b.Run("delete", func(b *testing.B) {
		rounds(b, func(count int) []rank.Key { return pick(f, count) }, ix.delete, ix.insert)
	})
	// A score change in sum mode: a member gains a few points, later. update deletes and
	// inserts; replace tries the move within a leaf first, as the store does.
	change := func(b *testing.B, move func(old, new rank.Key)) {
		b.StopTimer()
		for done := 0; done < b.N; done += round {
			idx := distinct(f, min(round, b.N-done))
			old := make([]rank.Key, len(idx))
			b.StartTimer()
			for j, i := range idx {
				k := f.keys[i]
				old[j] = k
				nk := rank.Key{Score: k.Score + 1 + int64(i%10), At: k.At + 1000, Member: k.Member}
				move(k, nk)
				f.keys[i] = nk
			}
			b.StopTimer()
			for j, i := range idx {
				ix.delete(f.keys[i])
				ix.insert(old[j])
				f.keys[i] = old[j]
			}
		}
	}
	b.Run("update", func(b *testing.B) {
		change(b, func(old, k rank.Key) {
			ix.delete(old)
			ix.insert(k)
		})
	})
	b.Run("replace", func(b *testing.B) { change(b, ix.replace) })
	keys := pick(f, 1<<16)
	ranks := make([]int, 1<<16)
	for i := range ranks {
		ranks[i] = 1 + f.rng.IntN(n)
	}
	b.Run("rank", func(b *testing.B) {
		b.ResetTimer()
		for i := range b.N {
			sink += ix.rank(keys[i&(1<<16-1)])
		}
	})
	b.Run("at", func(b *testing.B) {
		b.ResetTimer()
		for i := range b.N {
			sink += int(ix.at(ranks[i&(1<<16-1)]).Score)
		}
	})
	b.Run("iterate100", func(b *testing.B) {
		b.ResetTimer()
		for i := range b.N {
			sink += ix.iterate(min(ranks[i&(1<<16-1)], n-100), 100)
		}
	})
	if r, ok := ix.(ref); ok {
		b.Run("get", func(b *testing.B) {
			b.ResetTimer()
			for i := range b.N {
				if r.get(keys[i&(1<<16-1)]) {
					sink++
				}
			}
		})
	}
}

// pick returns count distinct keys of the fixture.
func pick(f *fixture, count int) []rank.Key {
	keys := make([]rank.Key, count)
	for i, j := range distinct(f, count) {
		keys[i] = f.keys[j]
	}
	return keys
}

// distinct returns count distinct random indexes into the fixture's keys.
func distinct(f *fixture, count int) []int {
	seen := make(map[int]bool, count)
	idx := make([]int, 0, count)
	for len(idx) < count {
		if i := f.rng.IntN(len(f.keys)); !seen[i] {
			seen[i] = true
			idx = append(idx, i)
		}
	}
	return idx
}

// BenchmarkLoad measures the bulk load of sorted keys, per key.
func BenchmarkLoad(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%dM", n/1_000_000), func(b *testing.B) {
			keys := sortedKeys(n)
			b.ResetTimer()
			for range b.N {
				if _, err := rank.Load(rank.Options{Desc: true}, keys); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
		})
	}
}

func sortedKeys(n int) []rank.Key {
	keys := randomKeys(rand.New(rand.NewPCG(2, uint64(n))), n)
	slices.SortFunc(keys, func(a, b rank.Key) int {
		if refLess(a, b) {
			return -1
		}
		return 1
	})
	return keys
}

// BenchmarkMemory reports the heap bytes per key of each tree after GC, everything included
// (the key is 20 bytes of data, padded to 24): built by random inserts, and by Load.
func BenchmarkMemory(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%dM", n/1_000_000), func(b *testing.B) {
			keys := sortedKeys(n)
			shuffled := slices.Clone(keys)
			rand.New(rand.NewPCG(3, 3)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			measure := func(name string, build func() any) {
				b.Run(name, func(b *testing.B) {
					for range b.N {
						before := heapInUse()
						v := build()
						b.ReportMetric(float64(heapInUse()-before)/float64(n), "bytes/key")
						runtime.KeepAlive(v)
					}
				})
			}
			measure("laurel-inserted", func() any {
				t := rank.New(rank.Options{Desc: true})
				for _, k := range shuffled {
					t.Insert(k)
				}
				return t
			})
			measure("laurel-loaded", func() any {
				t, _ := rank.Load(rank.Options{Desc: true}, keys)
				return t
			})
			// With TimeOf the times stay with the caller (not counted: laurel's store holds
			// them anyway), and leaves hold 12 bytes a key.
			times := make([]int64, n)
			for _, k := range keys {
				times[k.Member] = k.At
			}
			timeOf := func(m uint32) int64 { return times[m] }
			measure("laurel-timeof-inserted", func() any {
				t := rank.New(rank.Options{Desc: true, TimeOf: timeOf})
				for _, k := range shuffled {
					t.Insert(k)
				}
				return t
			})
			measure("laurel-timeof-loaded", func() any {
				t, _ := rank.Load(rank.Options{Desc: true, TimeOf: timeOf}, keys)
				return t
			})
			// With subscores that SubOf gives as TimeOf gives times: inner nodes alone keep
			// copies.
			subs := make([]int64, n)
			for _, k := range keys {
				subs[k.Member] = int64(k.Member % 7)
			}
			subKeys := slices.Clone(shuffled)
			for i := range subKeys {
				subKeys[i].Sub = subs[subKeys[i].Member]
			}
			measure("laurel-timeof-sub-inserted", func() any {
				t := rank.New(rank.Options{Desc: true, Sub: true, TimeOf: timeOf, SubOf: func(m uint32) int64 { return subs[m] }})
				for _, k := range subKeys {
					t.Insert(k)
				}
				return t
			})
			measure("tidwall-inserted", func() any {
				t := btree.NewBTreeGOptions(refLess, btree.Options{NoLocks: true})
				for _, k := range shuffled {
					t.Set(k)
				}
				return t
			})
			measure("tidwall-loaded", func() any {
				t := btree.NewBTreeGOptions(refLess, btree.Options{NoLocks: true})
				for _, k := range keys {
					t.Load(k)
				}
				return t
			})
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkTies is a board of low scores, as a sum board of small values has: a million
// members over 64 scores, so that nearly every comparison of a descent ties on score and, in
// a tree with TimeOf, reads a member's time from its owner's memory. The owner here keeps a
// member's aggregates in five spans side by side, 80 bytes a member, as laurel's store does
// (far beyond the caches), so that a time read costs what it costs there. "score" is a member
// gaining a point now (Delete, a new time, Insert), "rank" a member's rank.
func BenchmarkTies(b *testing.B) {
	const n = 1_000_000
	type agg struct{ score, at int64 }
	rng := rand.New(rand.NewPCG(3, 4))
	aggs := make([][5]agg, n) // this tree's span is aggs[m][2]
	tree := rank.New(rank.Options{Desc: true, TimeOf: func(m uint32) int64 { return aggs[m][2].at }})
	now := int64(1_700_000_000_000)
	for m := range aggs {
		aggs[m][2] = agg{rng.Int64N(64), now - rng.Int64N(7*24*3600*1000)}
		tree.Insert(rank.Key{Score: aggs[m][2].score, At: aggs[m][2].at, Member: uint32(m)})
	}
	members := make([]uint32, 1<<16)
	for i := range members {
		members[i] = uint32(rng.IntN(n))
	}
	b.Run("score", func(b *testing.B) {
		for i := range b.N {
			m := members[i&(1<<16-1)]
			a := &aggs[m][2]
			tree.Delete(rank.Key{Score: a.score, At: a.at, Member: m})
			now++
			a.score, a.at = a.score+1, now
			tree.Insert(rank.Key{Score: a.score, At: a.at, Member: m})
		}
	})
	b.Run("rank", func(b *testing.B) {
		for i := range b.N {
			m := members[i&(1<<16-1)]
			a := aggs[m][2]
			r, _ := tree.Rank(rank.Key{Score: a.score, At: a.at, Member: m})
			sink += r
		}
	})
	if err := tree.Check(); err != nil {
		b.Fatal(err)
	}
}
