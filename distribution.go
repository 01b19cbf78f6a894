package laurel

import (
	"context"
	"math/bits"
	"strconv"
	"strings"
)

// Percentiles and score distributions: where an entry stands among the members ranked with
// it, and how a span's scores spread, both read from the ranked index (docs/design.md,
// "Percentiles and distributions").

// Percentile is the share of the other members ranked with it that the entry ranked rank of
// total beats, in percent, rounded down to hundredths so that it never claims more than
// the truth: (total−rank)/(total−1)·100. The first beats everyone else (100, a member alone
// too), the last no one (0).
func Percentile(rank, total int) float64 {
	if rank <= 1 || total <= 1 {
		return 100
	}
	return float64(int64(total-rank)*10000/int64(total-1)) / 100
}

// withPercentiles sets the percentile of each of entries, ranked in a ranking of total.
func withPercentiles(entries []Entry, total int) {
	for i := range entries {
		p := Percentile(entries[i].Rank, total)
		entries[i].Percentile = &p
	}
}

// Histogram says how a distribution splits a span's scores: into Buckets buckets of equal
// width between the lowest score and the highest, or, with Edges e0 < e1 < … < ek, into the
// k buckets [e0, e1), [e1, e2), …, [ek−1, ek] (the last one closed, as NumPy's histogram).
type Histogram struct {
	Buckets int // 0: DefaultBuckets, unless Edges are given
	Edges   []int64
}

// Distribution limits (docs/api.md).
const (
	DefaultBuckets = 10
	MaxBuckets     = 1000
)

// Bucket is one bar of a distribution: how many members have a score from Min to Max, both
// included.
type Bucket struct {
	Min, Max int64
	Count    int
}

// Distribution is the score histogram of one span, its buckets in ascending score whatever
// the board's order. Total counts every member ranked in the span, those outside the given
// edges included.
type Distribution struct {
	Board   string
	Window  string
	Period  PeriodInfo
	Total   int
	Buckets []Bucket
}

// ValidateHistogram checks a distribution's arguments and returns them with the default
// filled in.
func ValidateHistogram(h Histogram) (Histogram, error) {
	if len(h.Edges) > 0 {
		if h.Buckets != 0 {
			return Histogram{}, FieldErrorf(EInvalid, "edges", "give either buckets or edges, not both")
		}
		if len(h.Edges) < 2 || len(h.Edges) > MaxBuckets+1 {
			return Histogram{}, FieldErrorf(EInvalid, "edges", "must list 2 to %d scores", MaxBuckets+1)
		}
		for i := 1; i < len(h.Edges); i++ {
			if h.Edges[i] <= h.Edges[i-1] {
				return Histogram{}, FieldErrorf(EInvalid, "edges", "must ascend strictly: edges[%d] = %d follows %d", i, h.Edges[i], h.Edges[i-1])
			}
		}
		return h, nil
	}
	if h.Buckets == 0 {
		h.Buckets = DefaultBuckets
	}
	if h.Buckets < 1 || h.Buckets > MaxBuckets {
		return Histogram{}, FieldErrorf(EInvalid, "buckets", "must be 1 to %d", MaxBuckets)
	}
	return h, nil
}

// ParseEdges reads edges as the API writes them: scores separated by commas.
func ParseEdges(s string) ([]int64, error) {
	parts := strings.Split(s, ",")
	if len(parts) > MaxBuckets+1 {
		return nil, FieldErrorf(EInvalid, "edges", "must list 2 to %d scores", MaxBuckets+1)
	}
	out := make([]int64, len(parts))
	for i, part := range parts {
		v, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return nil, FieldErrorf(EInvalid, "edges", "edges[%d] %q is not an integer in the int64 range", i, part)
		}
		out[i] = v
	}
	return out, nil
}

// RankingSearches is a Ranking that answers several searches at one instant in one step: an
// index across the network implements it, so that a distribution costs one round trip for
// all its edges.
type RankingSearches interface {
	// ReadSearches returns Search of each key's Key(), and the total.
	ReadSearches(ctx context.Context, keys []Entry) (ranks []int, total int, err error)
}

// RankingEnds is a Ranking that reads its first and last entries and its total in one step.
type RankingEnds interface {
	// ReadEnds returns the first and last entries and the total; with total 0 the entries
	// are zero.
	ReadEnds(ctx context.Context) (first, last Entry, total int, err error)
}

// DistributionOf returns the histogram h (as ValidateHistogram accepted it) of r's scores on a
// board of order o, and r's total: a search of the ranked index for each edge, never a scan,
// so O(buckets · log n) over a counted tree. Equal-width buckets first read r's first and last
// entries; there are no more of them than distinct scores fit between those two.
func DistributionOf(ctx context.Context, r Ranking, o Ordering, h Histogram) ([]Bucket, int, error) {
	if len(h.Edges) > 0 {
		buckets := make([]Bucket, 0, len(h.Edges)-1)
		for i := 1; i < len(h.Edges); i++ {
			buckets = append(buckets, Bucket{Min: h.Edges[i-1], Max: h.Edges[i] - 1})
		}
		buckets[len(buckets)-1].Max = h.Edges[len(h.Edges)-1]
		total, err := count(ctx, r, o, buckets)
		return buckets, total, err
	}
	// A ranking read in several steps (RankingEnds, then RankingSearches) may change between
	// them: when a score written meanwhile lies beyond the ends, read again, so that every
	// member ranked falls in a bucket.
	for try := 1; ; try++ {
		first, last, total, err := ends(ctx, r)
		if err != nil || total == 0 {
			return nil, total, err
		}
		lo, hi := first.Score, last.Score
		if lo > hi {
			lo, hi = hi, lo
		}
		buckets := equalWidth(lo, hi, h.Buckets)
		if total, err = count(ctx, r, o, buckets); err != nil {
			return nil, 0, err
		}
		in := 0
		for _, b := range buckets {
			in += b.Count
		}
		if in == total || try == endsTries {
			return buckets, total, nil
		}
	}
}

// endsTries bounds how often DistributionOf reads a ranking's ends again.
const endsTries = 3

// count sets the count of each of buckets, which follow one another, and returns r's total.
// Each counts the members with a score below its successor's min less those below its own:
// below(s) is what ranks before (s, −∞) on an ascending board, and the total less what ranks
// before (s, +∞) on a descending one. The last bucket's max is counted as "at most", since its
// successor may not be an int64.
func count(ctx context.Context, r Ranking, o Ordering, buckets []Bucket) (int, error) {
	keys := make([]Entry, 0, len(buckets)+1)
	for _, b := range buckets {
		keys = append(keys, cut(o, b.Min, false))
	}
	keys = append(keys, cut(o, buckets[len(buckets)-1].Max, true))
	ranks, total, err := searches(ctx, r, keys)
	if err != nil {
		return 0, err
	}
	counts := make([]int, len(ranks))
	for i, rank := range ranks {
		counts[i] = rank - 1
		if o.Score != Asc {
			counts[i] = total - counts[i]
		}
	}
	for i := range buckets {
		buckets[i].Count = counts[i+1] - counts[i]
	}
	return total, nil
}

// cut is the search key that ranks after the entries with a score below s (atMost: up to s
// included) on a board ordered by o.
func cut(o Ordering, s int64, atMost bool) Entry {
	k := o.Bound(s, atMost == (o.Score == Asc))
	return Entry{Score: k.Score, Sub: k.Sub, ReachedAt: k.At}
}

// equalWidth splits the scores lo…hi into n buckets whose widths differ by at most one (the
// wider ones last), or into one bucket a score when fewer than n scores lie between them.
func equalWidth(lo, hi int64, n int) []Bucket {
	d := uint64(hi) - uint64(lo) // the width less one: up to 2⁶⁴−1
	if d < uint64(n) {
		n = int(d) + 1
	}
	out := make([]Bucket, n)
	start := lo
	for i := range n {
		out[i].Min = start
		if i == n-1 {
			out[i].Max = hi
			break
		}
		// The next bucket starts at lo + ⌊(i+1)·(d+1)/n⌋, which is below hi + 1.
		k := uint64(i + 1)
		h, l := bits.Mul64(k, d)
		l, c := bits.Add64(l, k, 0)
		q, _ := bits.Div64(h+c, l, uint64(n))
		start = int64(uint64(lo) + q)
		out[i].Max = start - 1
	}
	return out
}

func ends(ctx context.Context, r Ranking) (first, last Entry, total int, err error) {
	if re, ok := r.(RankingEnds); ok {
		return re.ReadEnds(ctx)
	}
	if total, err = r.Total(ctx); err != nil || total == 0 {
		return Entry{}, Entry{}, total, err
	}
	a, err := r.Page(ctx, 1, 1)
	if err != nil {
		return Entry{}, Entry{}, 0, err
	}
	b, err := r.Page(ctx, total, 1)
	if err != nil {
		return Entry{}, Entry{}, 0, err
	}
	if len(a) != 1 || len(b) != 1 {
		return Entry{}, Entry{}, 0, Errorf(EUnavailable, "the ranking changed while it was read; try again")
	}
	return a[0], b[0], total, nil
}

func searches(ctx context.Context, r Ranking, keys []Entry) ([]int, int, error) {
	if rs, ok := r.(RankingSearches); ok {
		return rs.ReadSearches(ctx, keys)
	}
	ranks := make([]int, len(keys))
	for i, k := range keys {
		var err error
		if ranks[i], err = r.Search(ctx, k.Key()); err != nil {
			return nil, 0, err
		}
	}
	total, err := r.Total(ctx)
	return ranks, total, err
}
