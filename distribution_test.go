package laurel_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

func TestPercentile(t *testing.T) {
	for _, c := range []struct {
		rank, total int
		want        float64
	}{
		{1, 1, 100}, // alone: first, beating everyone else
		{1, 2, 100}, {2, 2, 0},
		{1, 10, 100}, {2, 10, 88.88}, {10, 10, 0},
		{5, 9, 50},
		{2, 1_000_000, 99.99}, // rounded down: never 100 unless first
		{999_999, 1_000_000, 0},
		{3, 7, 66.66},
	} {
		if got := laurel.Percentile(c.rank, c.total); got != c.want {
			t.Errorf("Percentile(%d, %d) = %v, want %v", c.rank, c.total, got, c.want)
		}
	}
}

func TestValidateHistogram(t *testing.T) {
	for _, c := range []struct {
		h     laurel.Histogram
		field string
	}{
		{laurel.Histogram{}, ""},
		{laurel.Histogram{Buckets: 1}, ""},
		{laurel.Histogram{Buckets: laurel.MaxBuckets}, ""},
		{laurel.Histogram{Buckets: -1}, "buckets"},
		{laurel.Histogram{Buckets: laurel.MaxBuckets + 1}, "buckets"},
		{laurel.Histogram{Edges: []int64{0, 100, 500}}, ""},
		{laurel.Histogram{Edges: []int64{0}}, "edges"},
		{laurel.Histogram{Edges: []int64{0, 0}}, "edges"},
		{laurel.Histogram{Edges: []int64{5, 1}}, "edges"},
		{laurel.Histogram{Edges: []int64{0, 1}, Buckets: 3}, "edges"},
		{laurel.Histogram{Edges: make([]int64, laurel.MaxBuckets+2)}, "edges"},
	} {
		got, err := laurel.ValidateHistogram(c.h)
		var e *laurel.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("ValidateHistogram(%+v): %v", c.h, err)
		case c.field == "" && len(c.h.Edges) == 0 && got.Buckets < 1:
			t.Errorf("ValidateHistogram(%+v) = %+v: no buckets", c.h, got)
		case c.field != "" && (!asError(err, &e) || e.Code != laurel.EInvalid || e.Field != c.field):
			t.Errorf("ValidateHistogram(%+v): %v, want invalid_argument on %s", c.h, err, c.field)
		}
	}
	if got, _ := laurel.ValidateHistogram(laurel.Histogram{}); got.Buckets != laurel.DefaultBuckets {
		t.Errorf("the default is %d buckets, want %d", got.Buckets, laurel.DefaultBuckets)
	}
}

func TestParseEdges(t *testing.T) {
	got, err := laurel.ParseEdges("-5,0,100,9223372036854775807")
	if err != nil || len(got) != 4 || got[0] != -5 || got[3] != math.MaxInt64 {
		t.Fatalf("ParseEdges: %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,", ",1", "1,,2", "1.5,2", "a", "9223372036854775808"} {
		if _, err := laurel.ParseEdges(bad); laurel.ErrorCode(err) != laurel.EInvalid {
			t.Errorf("ParseEdges(%q): %v, want invalid_argument", bad, err)
		}
	}
}

// TestDistributionOfScan checks the histogram searched in a ranking against a count of its
// entries, on random scores of both orders, equal-width and given edges, scores at the ends of
// the int64 range included.
func TestDistributionOfScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 7))
	ctx := context.Background()
	for round := range 400 {
		o := laurel.Ordering{Score: laurel.Desc}
		if rng.IntN(2) == 0 {
			o.Score = laurel.Asc
		}
		if rng.IntN(2) == 0 { // a subscore orders equal scores, never across buckets
			o.Sub, o.HasSub = laurel.Order(rng.IntN(2)), true
		}
		var entries []laurel.Entry
		spread := []int64{3, 50, 1 << 40, math.MaxInt64}[rng.IntN(4)]
		for i := range rng.IntN(60) {
			s := rng.Int64N(spread) - spread/2
			if rng.IntN(10) == 0 {
				s = []int64{math.MinInt64, math.MaxInt64, 0}[rng.IntN(3)]
			}
			en := laurel.Entry{Member: string(rune('a' + i)), Score: s, ReachedAt: rng.Int64N(5)}
			if o.HasSub {
				en.Sub = rng.Int64N(5) - 2
			}
			entries = append(entries, en)
		}
		scores := make([]int64, len(entries))
		for i, en := range entries {
			scores[i] = en.Score
		}
		r := laurel.NewSortedRanking(o, entries)
		var h laurel.Histogram
		if rng.IntN(2) == 0 {
			h.Buckets = 1 + rng.IntN(20)
		} else {
			e := rng.Int64N(spread) - spread/2
			for range 2 + rng.IntN(6) {
				h.Edges = append(h.Edges, e)
				step := 1 + rng.Int64N(max(1, spread/4))
				if e > math.MaxInt64-step {
					break
				}
				e += step
			}
			if len(h.Edges) < 2 {
				h.Edges = []int64{math.MaxInt64 - 1, math.MaxInt64}
			}
		}
		h, err := laurel.ValidateHistogram(h)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		buckets, total, err := laurel.DistributionOf(ctx, r, o, h)
		if err != nil || total != len(scores) {
			t.Fatalf("round %d: total %d, %v; want %d", round, total, err, len(scores))
		}
		checkBuckets(t, round, h, scores, buckets)
	}
}

func checkBuckets(t *testing.T, round int, h laurel.Histogram, scores []int64, buckets []laurel.Bucket) {
	t.Helper()
	if len(h.Edges) == 0 && len(scores) == 0 {
		if len(buckets) != 0 {
			t.Fatalf("round %d: an empty ranking has buckets %+v", round, buckets)
		}
		return
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	if len(h.Edges) > 0 {
		lo, hi = h.Edges[0], h.Edges[len(h.Edges)-1]
		if len(buckets) != len(h.Edges)-1 {
			t.Fatalf("round %d: %d buckets for edges %v", round, len(buckets), h.Edges)
		}
	} else if want := min(uint64(h.Buckets), uint64(hi)-uint64(lo)+1); uint64(len(buckets)) != want && want != 0 {
		t.Fatalf("round %d: %d buckets, want %d (%d asked, scores %d…%d)", round, len(buckets), want, h.Buckets, lo, hi)
	}
	inside := 0
	for i, b := range buckets {
		if b.Min > b.Max || i == 0 && b.Min != lo || i > 0 && b.Min != buckets[i-1].Max+1 || i == len(buckets)-1 && b.Max != hi {
			t.Fatalf("round %d: bucket %d of %+v does not tile %d…%d", round, i, buckets, lo, hi)
		}
		if len(h.Edges) == 0 && i > 0 {
			w, w0 := uint64(b.Max)-uint64(b.Min), uint64(buckets[0].Max)-uint64(buckets[0].Min)
			if w-w0 > 1 {
				t.Fatalf("round %d: widths differ by more than one: %+v", round, buckets)
			}
		}
		n := 0
		for _, s := range scores {
			if s >= b.Min && s <= b.Max {
				n++
			}
		}
		if b.Count != n {
			t.Fatalf("round %d: bucket %d [%d, %d] counts %d, a scan %d (scores %v)", round, i, b.Min, b.Max, b.Count, n, scores)
		}
		inside += n
	}
	if len(h.Edges) == 0 && inside != len(scores) {
		t.Fatalf("round %d: the buckets hold %d of %d", round, inside, len(scores))
	}
}

// staleEnds is a ranking whose first ReadEnds answers ends from before a write: a score
// written between a distribution's two steps lies beyond them.
type staleEnds struct {
	*laurel.SortedRanking
	reads int
}

func (s *staleEnds) ReadEnds(ctx context.Context) (laurel.Entry, laurel.Entry, int, error) {
	s.reads++
	total, _ := s.Total(ctx)
	es, _ := s.Page(ctx, 1, total)
	if s.reads == 1 {
		es = es[1:] // the first entry had not been written yet
	}
	return es[0], es[len(es)-1], len(es), nil
}

// TestDistributionReadsEndsAgain: buckets that leave out a member written between the ends
// and the counts are read again.
func TestDistributionReadsEndsAgain(t *testing.T) {
	r := &staleEnds{SortedRanking: laurel.NewSortedRanking(laurel.Ordering{}, []laurel.Entry{
		{Member: "a", Score: 500}, {Member: "b", Score: 40}, {Member: "c", Score: 10}})}
	buckets, total, err := laurel.DistributionOf(context.Background(), r, laurel.Ordering{}, laurel.Histogram{Buckets: 2})
	if err != nil || total != 3 || r.reads != 2 || len(buckets) != 2 || buckets[1].Max != 500 || buckets[0].Count+buckets[1].Count != 3 {
		t.Fatalf("DistributionOf = %+v, %d, %v after %d reads of the ends", buckets, total, err, r.reads)
	}
}
