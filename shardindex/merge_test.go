package shardindex_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/shardindex"
)

// TestMergeShards: a ranking split over shards by ShardOf and merged answers every read of
// docs/api.md as the same entries ranked whole do — pages with score ranges at every depth
// (beyond mergeDepth included), around-me, lookups, hypothetical ranks — with ties on score and
// reached_at, extremes, and shards left empty.
func TestMergeShards(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 5))
	for round := range 300 {
		o := laurel.Ordering{Score: laurel.Order(rng.IntN(2))}
		if rng.IntN(2) == 0 {
			o.Sub, o.HasSub = laurel.Order(rng.IntN(2)), true
		}
		shards := 1 + rng.IntN(7)
		size := rng.IntN(40)
		if round%25 == 0 {
			size = 1500 + rng.IntN(2500) // deep pages
		}
		var entries []laurel.Entry
		for i := range size {
			en := laurel.Entry{Member: fmt.Sprintf("m%d", i), Score: rng.Int64N(8), ReachedAt: rng.Int64N(3)}
			if o.HasSub {
				en.Sub = rng.Int64N(3) - 1
			}
			switch rng.IntN(20) {
			case 0:
				en.Score = math.MaxInt64
			case 1:
				en.Score = math.MinInt64
			case 2:
				en.ReachedAt = math.MaxInt64
			}
			entries = append(entries, en)
		}
		parts := make([][]laurel.Entry, shards)
		for _, en := range entries {
			i := shardindex.ShardOf(en.Member, shards)
			parts[i] = append(parts[i], en)
		}
		var rankings []shardindex.Ranking
		for _, p := range parts {
			rankings = append(rankings, shardindex.NewSorted(o, p))
		}
		whole := laurel.NewSortedRanking(o, slices.Clone(entries))
		merged := shardindex.Merge(o, rankings)
		what := fmt.Sprintf("round %d: %d entries in %d shards, %+v", round, size, shards, o)
		compareRankings(t, what, rng, o, merged, whole, size)
	}
}

func compareRankings(t *testing.T, what string, rng *rand.Rand, o laurel.Ordering, got, want laurel.Ranking, size int) {
	ctx := t.Context()
	t.Helper()
	if n, err := got.Total(ctx); err != nil || n != size {
		t.Fatalf("%s: Total %d, %v; want %d", what, n, err, size)
	}
	score := func() int64 {
		switch rng.IntN(10) {
		case 0:
			return math.MaxInt64
		case 1:
			return math.MinInt64
		}
		return rng.Int64N(10) - 1
	}
	for range 12 {
		lo, hi := score(), score()
		sr := laurel.ScoreRange{Min: min(lo, hi), Max: max(lo, hi), HasMin: rng.IntN(2) == 0, HasMax: rng.IntN(2) == 0}
		offset := rng.IntN(size + 3)
		if rng.IntN(3) == 0 {
			offset = rng.IntN(20)
		}
		limit := 1 + rng.IntN(120)
		gp, gt, gerr := laurel.PageOf(ctx, got, o, offset, limit, sr)
		wp, wt, _ := laurel.PageOf(ctx, want, o, offset, limit, sr)
		if gerr != nil || gt != wt || !laureltest.SameEntries(gp, wp) {
			t.Fatalf("%s: PageOf(%d, %d, %+v) = %v, %d, %v\nwant %v, %d", what, offset, limit, sr, gp, gt, gerr, wp, wt)
		}
	}
	for _, p := range [][2]int{{1, size}, {size, 5}, {size + 1, 1}, {1, math.MaxInt}, {2, math.MaxInt}} {
		gp, err := got.Page(ctx, p[0], p[1])
		wp, _ := want.Page(ctx, p[0], p[1])
		if err != nil || !laureltest.SameEntries(gp, wp) {
			t.Fatalf("%s: Page(%d, %d) = %v, %v\nwant %v", what, p[0], p[1], gp, err, wp)
		}
	}
	for range 6 {
		m := fmt.Sprintf("m%d", rng.IntN(size+2))
		radius := rng.IntN(8)
		gp, gt, gerr := laurel.AroundOf(ctx, got, "b", "w", m, radius)
		wp, wt, werr := laurel.AroundOf(ctx, want, "b", "w", m, radius)
		if laurel.ErrorCode(gerr) != laurel.ErrorCode(werr) || werr == nil && (gt != wt || !laureltest.SameEntries(gp, wp)) {
			t.Fatalf("%s: AroundOf(%s, %d) = %v, %d, %v\nwant %v, %d, %v", what, m, radius, gp, gt, gerr, wp, wt, werr)
		}
	}
	var ask []string
	for range rng.IntN(10) {
		ask = append(ask, fmt.Sprintf("m%d", rng.IntN(size+3)))
	}
	gp, gt, gerr := laurel.LookupOf(ctx, got, ask)
	wp, wt, _ := laurel.LookupOf(ctx, want, ask)
	if gerr != nil || gt != wt || !laureltest.SameEntries(gp, wp) {
		t.Fatalf("%s: LookupOf(%q) = %v, %d, %v\nwant %v, %d", what, ask, gp, gt, gerr, wp, wt)
	}
	for range 3 {
		h := laurel.Histogram{Buckets: 1 + rng.IntN(12)}
		if rng.IntN(2) == 0 {
			lo := score()
			h = laurel.Histogram{Edges: []int64{lo, lo + 1 + rng.Int64N(4)}}
			if lo > math.MaxInt64-5 {
				h.Edges = []int64{math.MaxInt64 - 1, math.MaxInt64}
			}
		}
		gb, gt, gerr := laurel.DistributionOf(ctx, got, o, h)
		wb, wt, _ := laurel.DistributionOf(ctx, want, o, h)
		if gerr != nil || gt != wt || !slices.Equal(gb, wb) {
			t.Fatalf("%s: DistributionOf(%+v) = %v, %d, %v\nwant %v, %d", what, h, gb, gt, gerr, wb, wt)
		}
	}
	for range 6 {
		k := laurel.Key{Score: score(), At: rng.Int64N(4) - 1}
		if o.HasSub {
			k.Sub = rng.Int64N(3) - 1
		}
		gr, gt, gerr := laurel.RankOfScore(ctx, got, k)
		wr, wt, _ := laurel.RankOfScore(ctx, want, k)
		if gerr != nil || gr != wr || gt != wt {
			t.Fatalf("%s: RankOfScore(%+v) = %d, %d, %v; want %d, %d", what, k, gr, gt, gerr, wr, wt)
		}
	}
}

// TestShardOf: members spread over the shards, and a member's shard depends on nothing else.
func TestShardOf(t *testing.T) {
	counts := make([]int, 8)
	for i := range 8000 {
		counts[shardindex.ShardOf(fmt.Sprintf("player-%d", i), 8)]++
	}
	for i, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("shard %d of 8 holds %d of 8000 members: %v", i, n, counts)
		}
	}
	// A member's shard is part of what the store keeps (its rows and index keys are the
	// shard's): it must not move from one version of laurel to the next.
	for _, c := range []struct {
		member string
		n      int
		shard  int
	}{{"alice", 1, 0}, {"alice", 5, 4}, {"alice", 8, 7}, {"alice", 64, 39}, {"bob", 5, 4}, {"bob", 64, 20},
		{"player-42", 8, 1}, {"player-42", 64, 49}, {"é", 5, 2}, {"é", 64, 1}} {
		if got := shardindex.ShardOf(c.member, c.n); got != c.shard {
			t.Errorf("ShardOf(%q, %d) = %d, want %d: a member's shard moved", c.member, c.n, got, c.shard)
		}
	}
}
