package http_test

import (
	"testing"
)

// TestPercentiles: member, around and lookup reads give each entry the share of the others
// it beats, rounded down; a page of the top does not.
func TestPercentiles(t *testing.T) {
	e := start(t, options{})
	seed(t, e) // all: dave 9, alice 9, bob 7, carol 3, erin 1

	if p := e.do("GET", "/v1/boards/solvers/members/alice", nil).must(t, 200).get("entry", "percentile"); p != 75.0 {
		t.Fatalf("alice, second of five, beats %v%%, want 75", p)
	}
	r := e.do("GET", "/v1/boards/solvers/members/carol/around?radius=2", nil).must(t, 200)
	for i, want := range []float64{100, 75, 50, 25, 0} {
		if p := r.get("entries", i, "percentile"); p != want {
			t.Fatalf("around: entries[%d].percentile = %v, want %v: %s", i, p, want, r.raw)
		}
	}
	r = e.do("POST", "/v1/boards/solvers/lookup", `{"members": ["erin", "bob"], "window": "week"}`).must(t, 200)
	if r.get("entries", 0, "percentile") != 66.66 || r.get("entries", 1, "percentile") != 0.0 {
		t.Fatalf("lookup in week (bob 2nd of 4, erin 4th): %s", r.raw)
	}
	// Dave alone in the week before.
	if p := e.do("GET", "/v1/boards/solvers/members/dave?window=week&period=2026-11-09", nil).must(t, 200).get("entry", "percentile"); p != 100.0 {
		t.Fatalf("a member alone beats %v%%, want 100", p)
	}
	if p := e.do("GET", "/v1/boards/solvers/entries", nil).must(t, 200).get("entries", 0, "percentile"); p != nil {
		t.Fatalf("a page of the top has percentiles: %v", p)
	}
}

// TestDistribution: the histogram of a window's scores, its buckets and edges, and bad input.
func TestDistribution(t *testing.T) {
	e := start(t, options{})
	seed(t, e) // all: dave 9, alice 9, bob 7, carol 3, erin 1

	e.do("GET", "/v1/boards/solvers/distribution?buckets=3", nil).must(t, 200).is(t, `
	{"board": "solvers", "window": "all", "period": {"id": "all"}, "total": 5, "buckets": [
	 {"min": 1, "max": 3, "count": 2}, {"min": 4, "max": 6, "count": 0}, {"min": 7, "max": 9, "count": 3}]}`)
	e.do("GET", "/v1/boards/solvers/distribution?edges=0,5,9&window=week", nil).must(t, 200).is(t, `
	{"board": "solvers", "window": "week",
	 "period": {"id": "2026-11-16", "start": "2026-11-16T00:00:00.000Z", "end": "2026-11-23T00:00:00.000Z", "closed": false},
	 "total": 4, "buckets": [{"min": 0, "max": 4, "count": 2}, {"min": 5, "max": 9, "count": 2}]}`)
	// Fewer distinct scores than buckets: a bucket a score. The default is ten buckets.
	r := e.do("GET", "/v1/boards/solvers/distribution?window=week&period=2026-11-09", nil).must(t, 200)
	if r.get("total") != 1.0 || r.get("buckets", 0, "min") != 9.0 || r.get("buckets", 0, "count") != 1.0 {
		t.Fatalf("the week before, dave alone: %s", r.raw)
	}
	r = e.do("GET", "/v1/boards/solvers/distribution", nil).must(t, 200)
	if bs, _ := r.get("buckets").([]any); len(bs) != 9 {
		t.Fatalf("scores 1…9 in ten buckets: %d of them: %s", len(bs), r.raw)
	}
	// Nobody: no buckets between no scores, and zero counts between given edges.
	if r := e.do("GET", "/v1/boards/solvers/distribution?window=week&period=2026-11-30", nil).must(t, 200); r.get("buckets") == nil || len(r.get("buckets").([]any)) != 0 {
		t.Fatalf("an empty period: %s", r.raw)
	}

	for _, c := range []struct{ query, field string }{
		{"buckets=0", "buckets"}, {"buckets=1001", "buckets"}, {"buckets=x", "buckets"},
		{"edges=5", "edges"}, {"edges=5,5", "edges"}, {"edges=9,1", "edges"}, {"edges=1,,2", "edges"}, {"edges=", "edges"},
		{"edges=1,2&buckets=3", "edges"}, {"window=day", "window"}, {"window=week&period=soon", "period"},
		{"window=last7d&period=2026-11-16", "period"},
	} {
		e.do("GET", "/v1/boards/solvers/distribution?"+c.query, nil).isError(t, 400, "invalid_argument", c.field)
	}
	e.do("GET", "/v1/boards/nope/distribution", nil).isError(t, 404, "not_found", "board")
}
