package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// BenchmarkApply measures a step of 100 changes to a set of up to 100k members, with one
// read: one script call.
func BenchmarkApply(b *testing.B) {
	idx, _, _ := newIndex(b)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	v := int64(0)
	changes := make([]shardindex.Change, 100)
	for b.Loop() {
		for i := range changes {
			changes[i] = put(all, fmt.Sprintf("member-%06d", r.IntN(100_000)), r.Int64N(1_000_000), v)
		}
		u := shardindex.Update{After: v, Version: v + 1, Changes: changes,
			Read: []shardindex.Read{{Set: all, Member: changes[0].Member}}}
		if _, err := idx.Apply(ctx, "bench", s0, laurel.Desc, u); err != nil {
			b.Fatal(err)
		}
		v++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/change")
}

// BenchmarkRankingPage reads the top 100 of a set of 100k members.
func BenchmarkRankingPage(b *testing.B) {
	idx, _, _ := newIndex(b)
	ctx := context.Background()
	const members, chunk = 100_000, 10_000
	for v := range int64(members / chunk) {
		u := shardindex.Update{After: v, Version: v + 1, State: []byte{}}
		for i := range chunk {
			n := int(v)*chunk + i
			u.Changes = append(u.Changes, put(all, fmt.Sprintf("member-%06d", n), int64(n*7919%members), int64(n)))
		}
		if _, err := idx.Apply(ctx, "bench", s0, laurel.Desc, u); err != nil {
			b.Fatal(err)
		}
	}
	rk := idx.Ranking("bench", s0, laurel.Desc, all, members/chunk)
	for b.Loop() {
		es, err := rk.Page(ctx, 1, 100)
		if err != nil || len(es) != 100 {
			b.Fatal(len(es), err)
		}
	}
}
