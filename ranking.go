package laurel

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Ranking is one ranking a read is answered from: a window's span in a store's index, a
// closed period as frozen, or a rolling window evaluated at a past instant. Ranks are 1-based
// and leave hidden members out. The reads of docs/api.md (PageOf, AroundOf, LookupOf, RankOfScore)
// are written once over it, so every store answers them alike.
type Ranking interface {
	Total(ctx context.Context) (int, error)
	// Page returns up to n entries from rank from on, without profiles. They may be shared
	// with other reads (a published top): a caller reads them and leaves them as they are,
	// but for the Reading's own Fill.
	Page(ctx context.Context, from, n int) ([]Entry, error)
	// Entries returns the entries of the members that are ranked, in any order, each once.
	Entries(ctx context.Context, members []string) ([]Entry, error)
	// Search returns the rank of the first entry whose key does not rank before k:
	// Total()+1 when there is none.
	Search(ctx context.Context, k Key) (int, error)
}

// Key is where an entry stands in its ranking, members aside: its score, subscore and
// reached_at, the first three of the board's Ordering.
type Key struct{ Score, Sub, At int64 }

// Key returns the entry's key.
func (e Entry) Key() Key { return Key{e.Score, e.Sub, e.ReachedAt} }

// ValidatePage checks a page's arguments and returns the limit to use (0: the default).
func ValidatePage(offset, limit int, sr ScoreRange) (int, error) {
	if limit == 0 {
		limit = DefaultPageLimit
	}
	if limit < 0 || limit > MaxPageLimit {
		return 0, FieldErrorf(EInvalid, "limit", "must be 1 to %d", MaxPageLimit)
	}
	if offset < 0 {
		return 0, FieldErrorf(EInvalid, "offset", "must not be negative")
	}
	if sr.HasMin && sr.HasMax && sr.Min > sr.Max {
		return 0, FieldErrorf(EInvalid, "min_score", "must not exceed max_score")
	}
	return limit, nil
}

// RankingReads is a Ranking that answers each read of docs/api.md in one step: an index across
// the network implements it so that a read costs one round trip and sees one instant. The
// read functions below use it when a ranking has it, and compose Ranking's methods
// otherwise. Each returns the ranking's total with its answer.
type RankingReads interface {
	// ReadPage answers PageOf.
	ReadPage(ctx context.Context, o Ordering, offset, limit int, sr ScoreRange) ([]Entry, int, error)
	// ReadEntries answers Entries.
	ReadEntries(ctx context.Context, members []string) ([]Entry, int, error)
	// ReadAround answers AroundOf; found is false when the member is not ranked.
	ReadAround(ctx context.Context, member string, radius int) (entries []Entry, found bool, total int, err error)
	// ReadRank answers Search.
	ReadRank(ctx context.Context, k Key) (rank, total int, err error)
}

// PageOf returns consecutive ranks of r from offset, limit of them; with a score range, only
// the entries whose score lies in it, offset and limit applying within them. The arguments
// are those ValidatePage accepted. It returns r's total too.
func PageOf(ctx context.Context, r Ranking, o Ordering, offset, limit int, sr ScoreRange) ([]Entry, int, error) {
	if rr, ok := r.(RankingReads); ok {
		return rr.ReadPage(ctx, o, offset, limit, sr)
	}
	total, err := r.Total(ctx)
	if err != nil {
		return nil, 0, err
	}
	first, end, err := PageBounds(ctx, o, sr, total, r.Search)
	if err != nil {
		return nil, 0, err
	}
	var entries []Entry
	if from := first + offset; offset < end-first && from < end {
		entries, err = r.Page(ctx, from, min(limit, end-from))
	}
	return entries, total, err
}

// PageBounds returns the ranks [first, end) of the entries whose score lies in sr, given the
// total and a search (Ranking.Search).
func PageBounds(ctx context.Context, o Ordering, sr ScoreRange, total int, search func(ctx context.Context, k Key) (int, error)) (first, end int, err error) {
	first, end = 1, total+1
	best, worst, hasBest, hasWorst := sr.Bounds(o.Score)
	if hasBest {
		if first, err = search(ctx, o.Bound(best, false)); err != nil {
			return 0, 0, err
		}
	}
	if hasWorst {
		if end, err = search(ctx, o.Bound(worst, true)); err != nil {
			return 0, 0, err
		}
	}
	return first, end, nil
}

// Bound returns the key that ranks just before every entry with that score (after false) or
// just after them all (after true): the key a search by score alone looks for.
func (o Ordering) Bound(score int64, after bool) Key {
	if after {
		return Key{score, o.Sub.extreme(false), math.MaxInt64}
	}
	return Key{score, o.Sub.extreme(true), math.MinInt64}
}

// extreme returns the best value of an order (best) or its worst.
func (o Order) extreme(best bool) int64 {
	if (o == Desc) == best {
		return math.MaxInt64
	}
	return math.MinInt64
}

// Bounds returns the range's bounds in rank order on a board of order o: the best score
// (the first ranks) and the worst, and whether the range has them.
func (sr ScoreRange) Bounds(o Order) (best, worst int64, hasBest, hasWorst bool) {
	if o == Asc {
		return sr.Min, sr.Max, sr.HasMin, sr.HasMax
	}
	return sr.Max, sr.Min, sr.HasMax, sr.HasMin
}

// ValidateAround checks the arguments of an around-me read.
func ValidateAround(member string, radius int) error {
	if err := ValidateMember("member", member); err != nil {
		return err
	}
	if radius < 0 || radius > MaxRadius {
		return FieldErrorf(EInvalid, "radius", "must be 0 to %d", MaxRadius)
	}
	return nil
}

// notRanked is the error of a read about a member that is not in the ranking.
func notRanked(board, window, member string) error {
	return FieldErrorf(ENotFound, "member", "%q is not on board %q in window %s", member, board, window)
}

// MemberOf returns a member's entry in r and r's total; ENotFound when it is not ranked
// there.
func MemberOf(ctx context.Context, r Ranking, board, window, member string) (Entry, int, error) {
	es, total, err := entries(ctx, r, []string{member})
	if err != nil {
		return Entry{}, 0, err
	}
	if len(es) == 0 {
		return Entry{}, 0, notRanked(board, window, member)
	}
	return es[0], total, nil
}

func entries(ctx context.Context, r Ranking, members []string) ([]Entry, int, error) {
	if rr, ok := r.(RankingReads); ok {
		return rr.ReadEntries(ctx, members)
	}
	es, err := r.Entries(ctx, members)
	if err != nil {
		return nil, 0, err
	}
	total, err := r.Total(ctx)
	return es, total, err
}

// AroundOf returns up to 2·radius+1 consecutive entries of r centred on the member's entry,
// shifted to stay within 1…total, and r's total; ENotFound when the member is not ranked.
func AroundOf(ctx context.Context, r Ranking, board, window, member string, radius int) ([]Entry, int, error) {
	if rr, ok := r.(RankingReads); ok {
		es, found, total, err := rr.ReadAround(ctx, member, radius)
		if err == nil && !found {
			err = notRanked(board, window, member)
		}
		return es, total, err
	}
	en, total, err := MemberOf(ctx, r, board, window, member)
	if err != nil {
		return nil, 0, err
	}
	lo, n := AroundBounds(en.Rank, radius, total)
	es, err := r.Page(ctx, lo, n)
	return slices.Clone(es), total, err // a page may be shared (Ranking.Page); Around sets percentiles
}

// AroundBounds returns where the page around rank begins and how long it is: 2·radius+1
// ranks centred on rank, shifted to stay within 1…total.
func AroundBounds(rank, radius, total int) (from, n int) {
	lo := max(1, rank-radius)
	hi := min(total, lo+2*radius)
	lo = max(1, hi-2*radius)
	return lo, hi - lo + 1
}

// ValidateLookup checks the members of a lookup.
func ValidateLookup(members []string) error {
	if len(members) > MaxLookup {
		return FieldErrorf(ETooLarge, "members", "must list at most %d members", MaxLookup)
	}
	for i, m := range members {
		if err := ValidateMember("members["+strconv.Itoa(i)+"]", m); err != nil {
			return err
		}
	}
	return nil
}

// LookupOf returns the entries of the members ranked in r, in rank order, each once, and r's
// total.
func LookupOf(ctx context.Context, r Ranking, members []string) ([]Entry, int, error) {
	seen := make(map[string]bool, len(members))
	unique := make([]string, 0, len(members))
	for _, m := range members {
		if !seen[m] {
			seen[m] = true
			unique = append(unique, m)
		}
	}
	es, total, err := entries(ctx, r, unique)
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(es, func(a, b Entry) int { return a.Rank - b.Rank })
	return es, total, nil
}

// RankOfScore returns the rank a member reaching k's score and subscore at the instant k.At
// would get in r (after the members already there with the same score and subscore), and r's
// total.
func RankOfScore(ctx context.Context, r Ranking, k Key) (rank, total int, err error) {
	if k.At < math.MaxInt64 {
		k.At++
	}
	if rr, ok := r.(RankingReads); ok {
		return rr.ReadRank(ctx, k)
	}
	if rank, err = r.Search(ctx, k); err != nil {
		return 0, 0, err
	}
	total, err = r.Total(ctx)
	return rank, total, err
}

// RanksBefore reports whether an entry with key a ranks before one with key b on a board
// ordered by o, ignoring members: the order Search uses.
func RanksBefore(o Ordering, a, b Key) bool {
	if a.Score != b.Score || a.Sub != b.Sub {
		return o.Better(a.Score, a.Sub, b.Score, b.Sub)
	}
	return a.At < b.At
}

// CompareEntries orders two entries as a board ordered by o ranks them: score, subscore,
// reached_at, then member bytes (the model's order and ties).
func CompareEntries(o Ordering, a, b Entry) int {
	return CompareRanked(o, a.Key(), a.Member, b.Key(), b.Member)
}

// CompareRanked is CompareEntries over the fields that order entries.
func CompareRanked(o Ordering, a Key, member string, b Key, member2 string) int {
	switch {
	case a.Score != b.Score || a.Sub != b.Sub:
		if o.Better(a.Score, a.Sub, b.Score, b.Sub) {
			return -1
		}
		return 1
	case a.At != b.At:
		return cmp.Compare(a.At, b.At)
	}
	return strings.Compare(member, member2)
}

// SortedRanking is a ranking computed for one read: entries sorted by CompareEntries, hidden
// members already left out, ranks not yet set.
type SortedRanking struct {
	entries []Entry
	order   Ordering
	rank    map[string]int // member → rank, built on the first Entries
}

// NewSortedRanking sorts entries (which it takes over) into a ranking.
func NewSortedRanking(o Ordering, entries []Entry) *SortedRanking {
	slices.SortFunc(entries, func(a, b Entry) int { return CompareEntries(o, a, b) })
	for i := range entries {
		entries[i].Rank = i + 1
	}
	return &SortedRanking{entries: entries, order: o}
}

func (v *SortedRanking) Total(context.Context) (int, error) { return len(v.entries), nil }

func (v *SortedRanking) Page(_ context.Context, from, n int) ([]Entry, error) {
	from = max(from, 1)
	if from > len(v.entries) || n <= 0 {
		return nil, nil
	}
	n = min(n, len(v.entries)-from+1) // from-1+n may overflow
	return slices.Clone(v.entries[from-1 : from-1+n]), nil
}

func (v *SortedRanking) Entries(_ context.Context, members []string) ([]Entry, error) {
	if v.rank == nil {
		v.rank = make(map[string]int, len(v.entries))
		for i, en := range v.entries {
			v.rank[en.Member] = i + 1
		}
	}
	var out []Entry
	for _, m := range members {
		if r, ok := v.rank[m]; ok {
			out = append(out, v.entries[r-1])
		}
	}
	return out, nil
}

func (v *SortedRanking) Search(_ context.Context, k Key) (int, error) {
	i, _ := slices.BinarySearchFunc(v.entries, struct{}{}, func(e Entry, _ struct{}) int {
		if RanksBefore(v.order, e.Key(), k) {
			return -1
		}
		return 1
	})
	return i + 1, nil
}

// SearchByPage answers Ranking.Search for a ranking that can only be read by rank: a binary
// search over ranks, one Page of one entry per probe.
func SearchByPage(ctx context.Context, r Ranking, o Ordering, k Key) (int, error) {
	total, err := r.Total(ctx)
	if err != nil {
		return 0, err
	}
	lo, hi := 1, total+1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		es, err := r.Page(ctx, mid, 1)
		if err != nil {
			return 0, err
		}
		if len(es) == 1 && RanksBefore(o, es[0].Key(), k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// A closed period keeps the ranks it was frozen with. Members hidden or deleted since are
// left out of it and the ranks after theirs close up: FrozenRank and VisibleRank map between
// the two, given the sorted frozen ranks left out.

// FrozenRank returns the frozen rank shown as rank r.
func FrozenRank(excluded []uint32, r int) uint32 {
	raw := uint32(r)
	for {
		n, _ := slices.BinarySearch(excluded, raw+1) // excluded ranks ≤ raw
		next := uint32(r) + uint32(n)
		if next == raw {
			return raw
		}
		raw = next
	}
}

// VisibleRank returns the rank shown for the frozen rank raw, which is not excluded.
func VisibleRank(excluded []uint32, raw uint32) int {
	n, _ := slices.BinarySearch(excluded, raw)
	return int(raw) - n
}
