package shardindex

import (
	"context"
	"hash/fnv"
	"math"
	"slices"
	"sync"

	"github.com/laurel/laurel"
)

// A board of the scale-out store splits its members into shards, so that writes to one board
// proceed in parallel, each shard under its own lock and in its own part of the index
// (docs/design.md, "The scale-out store"). A ranking of the board is then the shards'
// rankings merged: a member's rank is its rank within its shard plus the count of entries
// that rank before it in the other shards; a page is a merge of the shards' pages; the total
// is the sum of theirs. This file decides which shard holds a member and how shards' rankings
// answer the reads of docs/api.md together.

// ShardOf returns the shard, from 0 to n-1, that holds member on a board of n shards: a hash
// of the member's bytes. Every store and index serving a board must agree on it, so it never
// changes.
func ShardOf(member string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(member))
	return int(h.Sum32() % uint32(n))
}

// Shard names one shard of a board: shard Number of Count.
type Shard struct {
	Number, Count int
}

// Ranking is one shard's part of a ranking: the entries of the members ShardOf puts in
// the shard, ranked among themselves. Besides laurel.Ranking's reads, it answers the two that a
// merge needs, each in one step.
type Ranking interface {
	laurel.Ranking
	// ReadEnds returns the shard's first and last entries and its total, in one step.
	laurel.RankingEnds
	// Slice returns the shard's total, how many of its entries rank before the score range
	// sr (in the shard's order) and how many lie in it, and up to n of those in it from the
	// skip-th on (0-based), with their ranks in the shard.
	Slice(ctx context.Context, sr laurel.ScoreRange, skip, n int) (Slice, error)
	// Before returns, for each entry, how many of the shard's entries rank before it by
	// score, subscore, reached_at and member, and the shard's total. The entry's own member
	// is not counted, wherever its entry now ranks: a member whose score changed since it
	// was read does not rank before itself. An entry with an empty member ranks before every
	// entry with its score, subscore and reached_at, so its count is that of Search minus one.
	Before(ctx context.Context, entries []laurel.Entry) (counts []int, total int, err error)
	// Near returns, in one step, the shard's total, how many of its entries rank before the
	// entry at (by score, subscore, reached_at and member; at itself does not count), and up to n of
	// its entries on either side of it: the n before it and the n from it on, with their
	// ranks in the shard.
	Near(ctx context.Context, at laurel.Entry, n int) (Slice, error)
}

// Slice is what Ranking.Slice and Near answer (Near leaves In at 0).
type Slice struct {
	Total, Before, In int
	Entries           []laurel.Entry
}

// Merge returns the ranking of shards together, shard i holding the members ShardOf
// puts in shard i of len(shards). Each of its reads asks every shard at once, in one to three
// rounds (a page at an offset beyond mergeDepth takes a search of about twice the rounds of
// log2 of a shard's size); with one shard it is that shard. Reads of several shards are not
// one instant: a write to another shard between two rounds can show in one and not in the
// other, as if it happened in between.
func Merge(o laurel.Ordering, shards []Ranking) laurel.Ranking {
	if len(shards) == 1 {
		return shards[0]
	}
	return &mergedRanking{order: o, shards: shards}
}

// mergeDepth is how deep a page may begin and still be read by asking every shard for the
// entries down to its end; deeper pages are located by a search first, so that no read
// transfers a whole board.
const mergeDepth = 1000

type mergedRanking struct {
	order  laurel.Ordering
	shards []Ranking
}

var (
	_ laurel.RankingReads    = (*mergedRanking)(nil)
	_ laurel.RankingSearches = (*mergedRanking)(nil)
	_ laurel.RankingEnds     = (*mergedRanking)(nil)
)

// each runs fn for every shard at once and returns the first error.
func (r *mergedRanking) each(fn func(i int, s Ranking) error) error {
	errs := make([]error, len(r.shards))
	var wg sync.WaitGroup
	for i, s := range r.shards {
		wg.Go(func() { errs[i] = fn(i, s) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *mergedRanking) Total(ctx context.Context) (int, error) {
	_, total, err := r.before(ctx, nil)
	return total, err
}

func (r *mergedRanking) Page(ctx context.Context, from, n int) ([]laurel.Entry, error) {
	if from < 1 || n <= 0 {
		return nil, nil
	}
	es, _, err := r.ReadPage(ctx, r.order, from-1, n, laurel.ScoreRange{})
	return es, err
}

func (r *mergedRanking) Entries(ctx context.Context, members []string) ([]laurel.Entry, error) {
	es, _, err := r.ReadEntries(ctx, members)
	return es, err
}

func (r *mergedRanking) Search(ctx context.Context, k laurel.Key) (int, error) {
	rank, _, err := r.ReadRank(ctx, k)
	return rank, err
}

// ReadRank counts the entries before k in every shard.
func (r *mergedRanking) ReadRank(ctx context.Context, k laurel.Key) (int, int, error) {
	ranks, total, err := Searches(ctx, r.before, []laurel.Entry{{Score: k.Score, Sub: k.Sub, ReachedAt: k.At}})
	if err != nil {
		return 0, 0, err
	}
	return ranks[0], total, nil
}

// ReadSearches counts the entries before every key in every shard, in one round.
func (r *mergedRanking) ReadSearches(ctx context.Context, keys []laurel.Entry) ([]int, int, error) {
	return Searches(ctx, r.before, keys)
}

// Searches answers laurel.RankingSearches with a Before (Ranking.Before, or a merge's) that
// counts, for every key at once, what ranks before it: a key without a member is counted as
// Search's rank less one.
func Searches(ctx context.Context, before func(context.Context, []laurel.Entry) ([]int, int, error), keys []laurel.Entry) ([]int, int, error) {
	bare := make([]laurel.Entry, len(keys))
	for i, k := range keys {
		bare[i] = laurel.Entry{Score: k.Score, Sub: k.Sub, ReachedAt: k.ReachedAt}
	}
	ranks, total, err := before(ctx, bare)
	if err != nil {
		return nil, 0, err
	}
	for i := range ranks {
		ranks[i]++
	}
	return ranks, total, nil
}

// ReadEnds asks every shard for its ends at once: the board's first entry is the first of
// the shards' firsts, its last the last of their lasts.
func (r *mergedRanking) ReadEnds(ctx context.Context) (laurel.Entry, laurel.Entry, int, error) {
	type ends struct {
		first, last laurel.Entry
		total       int
	}
	got := make([]ends, len(r.shards))
	err := r.each(func(i int, s Ranking) error {
		var err error
		got[i].first, got[i].last, got[i].total, err = s.ReadEnds(ctx)
		return err
	})
	if err != nil {
		return laurel.Entry{}, laurel.Entry{}, 0, err
	}
	var first, last laurel.Entry
	total := 0
	for _, e := range got {
		if e.total == 0 {
			continue
		}
		if total == 0 || laurel.CompareEntries(r.order, e.first, first) < 0 {
			first = e.first
		}
		if total == 0 || laurel.CompareEntries(r.order, e.last, last) > 0 {
			last = e.last
		}
		total += e.total
	}
	first.Rank, last.Rank = min(1, total), total
	return first, last, total, nil
}

// before returns, for each entry, how many entries of every shard rank before it, and the
// total of every shard.
func (r *mergedRanking) before(ctx context.Context, entries []laurel.Entry) ([]int, int, error) {
	counts := make([][]int, len(r.shards))
	totals := make([]int, len(r.shards))
	err := r.each(func(i int, s Ranking) error {
		var err error
		counts[i], totals[i], err = s.Before(ctx, entries)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	sum := make([]int, len(entries))
	for i := range r.shards {
		for k, c := range counts[i] {
			sum[k] += c
		}
	}
	total := 0
	for _, t := range totals {
		total += t
	}
	return sum, total, nil
}

// ReadEntries finds each member in its shard, then asks every shard at once how many of its
// entries rank before each of those found: every rank is then one round's. (An entry's rank in
// its own shard came from the first round, the others' counts from the second, and a write
// between them could give two entries one rank.) Entries that changed between the rounds can
// still leave ranks that contradict their order; those are read again.
func (r *mergedRanking) ReadEntries(ctx context.Context, members []string) ([]laurel.Entry, int, error) {
	parts := make([][]string, len(r.shards))
	for _, m := range members {
		if i := ShardOf(m, len(r.shards)); !slices.Contains(parts[i], m) {
			parts[i] = append(parts[i], m)
		}
	}
	for range aroundTries {
		found := make([][]laurel.Entry, len(r.shards))
		err := r.each(func(i int, s Ranking) error {
			if len(parts[i]) == 0 {
				return nil
			}
			var err error
			found[i], err = s.Entries(ctx, parts[i])
			return err
		})
		if err != nil {
			return nil, 0, err
		}
		var all []laurel.Entry
		for _, es := range found {
			all = append(all, es...)
		}
		counts, total, err := r.before(ctx, all)
		if err != nil {
			return nil, 0, err
		}
		for k := range all {
			all[k].Rank = counts[k] + 1
		}
		if r.ranksAgree(all, total) {
			return all, total, nil
		}
	}
	return nil, 0, ErrStale
}

// ranksAgree reports whether entries' ranks follow their order, each within 1…total.
func (r *mergedRanking) ranksAgree(entries []laurel.Entry, total int) bool {
	sorted := slices.Clone(entries)
	r.sort(sorted)
	for k, en := range sorted {
		if en.Rank > total || k > 0 && en.Rank <= sorted[k-1].Rank {
			return false
		}
	}
	return true
}

// ReadAround finds the member's entry in its shard, then asks every shard at once for its
// entries on either side of it, with its count before it and its total, each in one step: the
// member's rank and the page around it are then one round's, the page whole and the member on
// it however the shards change meanwhile. (It read the page by ranks counted a round before,
// and a write in between shifted a shard under it: pages left their member out, or came back
// short.) A member whose entry changed between the two rounds is looked up again.
func (r *mergedRanking) ReadAround(ctx context.Context, member string, radius int) ([]laurel.Entry, bool, int, error) {
	own := ShardOf(member, len(r.shards))
	for range aroundTries {
		es, err := r.shards[own].Entries(ctx, []string{member})
		if err != nil || len(es) == 0 {
			return nil, false, 0, err
		}
		me := es[0]
		near := make([]Slice, len(r.shards))
		err = r.each(func(i int, s Ranking) error {
			var err error
			near[i], err = s.Near(ctx, me, 2*radius+1)
			return err
		})
		if err != nil {
			return nil, false, 0, err
		}
		var merged []laurel.Entry
		rank, total := 1, 0
		for _, sl := range near {
			merged = append(merged, sl.Entries...)
			rank += sl.Before
			total += sl.Total
		}
		r.sort(merged)
		at, found := slices.BinarySearchFunc(merged, me, func(a, b laurel.Entry) int { return laurel.CompareEntries(r.order, a, b) })
		if !found || merged[at].Member != member {
			continue // its entry changed between the rounds
		}
		lo, n := laurel.AroundBounds(rank, radius, total)
		page := merged[at-(rank-lo) : at-(rank-lo)+n]
		for k := range page {
			page[k].Rank = lo + k
		}
		return page, true, total, nil
	}
	return nil, false, 0, ErrStale
}

// aroundTries bounds how often ReadAround looks a member up again whose entry changed between
// its two rounds; past them the store resolves the read again.
const aroundTries = 5

// ReadPage merges the shards' pages. Down to mergeDepth every shard gives its entries from the
// start of the range to the end of the page; deeper, a search finds how many of each shard's
// entries in the range come before the page, and each gives its next limit entries.
func (r *mergedRanking) ReadPage(ctx context.Context, o laurel.Ordering, offset, limit int, sr laurel.ScoreRange) ([]laurel.Entry, int, error) {
	skips := make([]int, len(r.shards))
	n := limit
	if offset <= mergeDepth {
		n = offset + min(limit, math.MaxInt-offset)
	}
	var heads []Slice
	if offset > mergeDepth {
		var err error
		if heads, err = r.slices(ctx, sr, skips, 0); err != nil {
			return nil, 0, err
		}
		in := 0
		for _, h := range heads {
			in += h.In
		}
		if offset >= in {
			return nil, sum(heads, func(h Slice) int { return h.Total }), nil
		}
		if skips, err = r.locate(ctx, sr, heads, offset); err != nil {
			return nil, 0, err
		}
	}
	got, err := r.slices(ctx, sr, skips, n)
	if err != nil {
		return nil, 0, err
	}
	var merged []laurel.Entry
	for _, s := range got {
		merged = append(merged, s.Entries...)
	}
	r.sort(merged)
	first := offset // the in-range rank, 0-based, of merged[0]
	if offset <= mergeDepth {
		merged = merged[min(offset, len(merged)):]
	} else {
		first = 0
		for i := range skips {
			first += skips[i]
		}
	}
	merged = merged[:min(limit, len(merged))]
	base := sum(got, func(s Slice) int { return s.Before }) + first
	for k := range merged {
		merged[k].Rank = base + k + 1
	}
	return merged, sum(got, func(s Slice) int { return s.Total }), nil
}

// slices asks every shard for its slice of sr from skips[i], n entries.
func (r *mergedRanking) slices(ctx context.Context, sr laurel.ScoreRange, skips []int, n int) ([]Slice, error) {
	out := make([]Slice, len(r.shards))
	err := r.each(func(i int, s Ranking) error {
		var err error
		out[i], err = s.Slice(ctx, sr, skips[i], n)
		return err
	})
	return out, err
}

// locate finds, for each shard, how many of its entries in sr come before the in-range rank
// offset (0-based) of the whole: in every shard at once, a binary search over its entries in
// the range, each probe's rank in the whole counted by every shard.
func (r *mergedRanking) locate(ctx context.Context, sr laurel.ScoreRange, heads []Slice, offset int) ([]int, error) {
	lo := make([]int, len(r.shards))
	hi := make([]int, len(r.shards))
	for i, h := range heads {
		hi[i] = h.In
	}
	before := sum(heads, func(h Slice) int { return h.Before })
	for {
		var probing []int
		for i := range r.shards {
			if lo[i] < hi[i] {
				probing = append(probing, i)
			}
		}
		if len(probing) == 0 {
			return lo, nil
		}
		probes := make([]laurel.Entry, len(r.shards))
		present := make([]bool, len(r.shards))
		err := r.each(func(i int, s Ranking) error {
			if lo[i] >= hi[i] {
				return nil
			}
			got, err := s.Slice(ctx, sr, (lo[i]+hi[i])/2, 1)
			if err == nil && len(got.Entries) == 1 {
				probes[i], present[i] = got.Entries[0], true
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		var keys []laurel.Entry
		for _, i := range probing {
			if present[i] {
				keys = append(keys, probes[i])
			}
		}
		counts, _, err := r.before(ctx, keys)
		if err != nil {
			return nil, err
		}
		k := 0
		for _, i := range probing {
			mid := (lo[i] + hi[i]) / 2
			switch {
			case !present[i]: // the shard shrank meanwhile
				hi[i] = mid
			case counts[k]-before < offset:
				lo[i] = mid + 1
				k++
			default:
				hi[i] = mid
				k++
			}
		}
	}
}

func (r *mergedRanking) sort(es []laurel.Entry) {
	slices.SortFunc(es, func(a, b laurel.Entry) int { return laurel.CompareEntries(r.order, a, b) })
}

func sum[T any](xs []T, f func(T) int) int {
	n := 0
	for _, x := range xs {
		n += f(x)
	}
	return n
}

// Sorted is a shard's ranking computed from its entries: a laurel.SortedRanking that also
// answers a merge's reads (in tests, and for any store that computes a shard's ranking for a
// read).
type Sorted struct {
	*laurel.SortedRanking
	order   laurel.Ordering
	entries []laurel.Entry // sorted, ranked
}

// NewSorted sorts entries (which it takes over) into a shard's ranking.
func NewSorted(o laurel.Ordering, entries []laurel.Entry) *Sorted {
	r := laurel.NewSortedRanking(o, entries) // sorts and ranks entries in place
	return &Sorted{SortedRanking: r, order: o, entries: entries}
}

// Slice answers Ranking.Slice.
func (v *Sorted) Slice(ctx context.Context, sr laurel.ScoreRange, skip, n int) (Slice, error) {
	first, end, _ := laurel.PageBounds(ctx, v.order, sr, len(v.entries), v.Search)
	out := Slice{Total: len(v.entries), Before: first - 1, In: max(0, end-first)}
	if from := first + skip; skip < out.In && n > 0 {
		out.Entries, _ = v.Page(ctx, from, min(n, end-from))
	}
	return out, nil
}

// ReadEnds answers Ranking.ReadEnds.
func (v *Sorted) ReadEnds(context.Context) (laurel.Entry, laurel.Entry, int, error) {
	if len(v.entries) == 0 {
		return laurel.Entry{}, laurel.Entry{}, 0, nil
	}
	return v.entries[0], v.entries[len(v.entries)-1], len(v.entries), nil
}

// Near answers Ranking.Near.
func (v *Sorted) Near(ctx context.Context, at laurel.Entry, n int) (Slice, error) {
	before, total := v.keysBefore(at), len(v.entries)
	out := Slice{Total: total, Before: before}
	lo, hi := max(0, before-n), min(total, before+n)
	out.Entries = slices.Clone(v.entries[lo:hi])
	return out, nil
}

// Before answers Ranking.Before.
func (v *Sorted) Before(_ context.Context, entries []laurel.Entry) ([]int, int, error) {
	counts := make([]int, len(entries))
	for k, en := range entries {
		counts[k] = v.keysBefore(en)
		if en.Member != "" && slices.ContainsFunc(v.entries[:counts[k]], func(e laurel.Entry) bool { return e.Member == en.Member }) {
			counts[k]--
		}
	}
	return counts, len(v.entries), nil
}

// keysBefore counts the entries that rank before en by score, subscore, reached_at and
// member.
func (v *Sorted) keysBefore(en laurel.Entry) int {
	n, _ := slices.BinarySearchFunc(v.entries, en, func(e, t laurel.Entry) int {
		if laurel.CompareEntries(v.order, e, t) < 0 {
			return -1
		}
		return 1
	})
	return n
}
