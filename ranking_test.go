package laurel_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestFrozenRanks: with some frozen ranks excluded, FrozenRank and VisibleRank map the ranks
// shown (1…total−excluded) onto the frozen ranks left in, in order, and back.
func TestFrozenRanks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		total := 1 + rng.IntN(40)
		var excluded, kept []uint32
		for r := uint32(1); r <= uint32(total); r++ {
			if rng.IntN(3) == 0 {
				excluded = append(excluded, r)
			} else {
				kept = append(kept, r)
			}
		}
		for i, raw := range kept {
			if got := laurel.FrozenRank(excluded, i+1); got != raw {
				t.Fatalf("excluded %v: FrozenRank(%d) = %d, want %d", excluded, i+1, got, raw)
			}
			if got := laurel.VisibleRank(excluded, raw); got != i+1 {
				t.Fatalf("excluded %v: VisibleRank(%d) = %d, want %d", excluded, raw, got, i+1)
			}
		}
	}
}

// TestSortedRanking checks the reads of docs/api.md over a ranking sorted in memory against
// brute force: pages with score ranges, lookups, around-me and hypothetical ranks, on boards
// with a subscore of either order and without one.
func TestSortedRanking(t *testing.T) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(3, 4))
	var orderings []laurel.Ordering
	for _, o := range []laurel.Order{laurel.Desc, laurel.Asc} {
		orderings = append(orderings, laurel.Ordering{Score: o},
			laurel.Ordering{Score: o, Sub: laurel.Desc, HasSub: true}, laurel.Ordering{Score: o, Sub: laurel.Asc, HasSub: true})
	}
	for _, o := range orderings {
		for range 200 {
			var entries []laurel.Entry
			for i := range rng.IntN(30) {
				en := laurel.Entry{Member: string(rune('a' + i)), Score: rng.Int64N(6), ReachedAt: rng.Int64N(4)}
				if o.HasSub {
					en.Sub = rng.Int64N(3) - 1
				}
				entries = append(entries, en)
			}
			want := slices.Clone(entries)
			slices.SortFunc(want, func(a, b laurel.Entry) int {
				if a.Score != b.Score {
					if o.Score.Better(a.Score, b.Score) {
						return -1
					}
					return 1
				}
				if a.Sub != b.Sub {
					if o.Sub.Better(a.Sub, b.Sub) {
						return -1
					}
					return 1
				}
				if a.ReachedAt != b.ReachedAt {
					return int(a.ReachedAt - b.ReachedAt)
				}
				return map[bool]int{true: -1, false: 1}[a.Member < b.Member]
			})
			for i := range want {
				want[i].Rank = i + 1
			}
			r := laurel.NewSortedRanking(o, entries)
			lo, hi := rng.Int64N(7)-1, rng.Int64N(7)-1
			sr := laurel.ScoreRange{Min: min(lo, hi), Max: max(lo, hi), HasMin: rng.IntN(2) == 0, HasMax: rng.IntN(2) == 0}
			offset, limit := rng.IntN(5), 1+rng.IntN(8)
			var inRange []laurel.Entry
			for _, e := range want {
				if (!sr.HasMin || e.Score >= sr.Min) && (!sr.HasMax || e.Score <= sr.Max) {
					inRange = append(inRange, e)
				}
			}
			wantPage := inRange[min(offset, len(inRange)):min(offset+limit, len(inRange))]
			got, total, err := laurel.PageOf(ctx, r, o, offset, limit, sr)
			if err != nil || !laureltest.SameEntries(got, wantPage) || total != len(want) {
				t.Fatalf("%+v %v: PageOf(%d, %d, %+v) = %v, %v; want %v", o, want, offset, limit, sr, got, err, wantPage)
			}
			k := laurel.Key{Score: rng.Int64N(7) - 1, At: rng.Int64N(5)}
			if o.HasSub {
				k.Sub = rng.Int64N(5) - 2
			}
			wantRank := 1
			for _, e := range want {
				if o.Better(e.Score, e.Sub, k.Score, k.Sub) || e.Score == k.Score && e.Sub == k.Sub && e.ReachedAt <= k.At {
					wantRank++
				}
			}
			if rank, total, err := laurel.RankOfScore(ctx, r, k); err != nil || rank != wantRank || total != len(want) {
				t.Fatalf("%+v %v: RankOfScore(%+v) = %d, %d, %v; want %d, %d", o, want, k, rank, total, err, wantRank, len(want))
			}
			after := k
			after.At++
			if rank, err := laurel.SearchByPage(ctx, r, o, after); err != nil || rank != wantRank {
				t.Fatalf("%+v %v: SearchByPage(%+v) = %d, %v; want %d", o, want, after, rank, err, wantRank)
			}
			if len(want) == 0 {
				continue
			}
			members := []string{"zz", want[rng.IntN(len(want))].Member, want[0].Member, want[0].Member}
			got, total, err = laurel.LookupOf(ctx, r, members)
			wantLookup := []laurel.Entry{want[0]}
			if m := members[1]; m != want[0].Member {
				wantLookup = nil
				for _, e := range want {
					if e.Member == m || e.Member == want[0].Member {
						wantLookup = append(wantLookup, e)
					}
				}
			}
			if err != nil || !laureltest.SameEntries(got, wantLookup) || total != len(want) {
				t.Fatalf("%+v %v: LookupOf(%v) = %v, %v; want %v", o, want, members, got, err, wantLookup)
			}
			en := want[rng.IntN(len(want))]
			radius := rng.IntN(4)
			around, total, err := laurel.AroundOf(ctx, r, "b", "all", en.Member, radius)
			size := min(len(want), 2*radius+1)
			if err != nil || total != len(want) || len(around) != size || !slices.ContainsFunc(around, func(e laurel.Entry) bool { return laureltest.SameEntries([]laurel.Entry{e}, []laurel.Entry{en}) }) || around[0].Rank < 1 || around[len(around)-1].Rank > len(want) {
				t.Fatalf("%+v %v: AroundOf(%v, %d) = %v, %v", o, want, en, radius, around, err)
			}
		}
	}
}
