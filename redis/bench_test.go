package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

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
		u := shardindex.Update{After: v, Version: v + 1, Changes: changes}
		a := shardindex.Asks{Read: []shardindex.Read{{Set: all, Member: changes[0].Member}}}
		if _, err := applyOne(ctx, idx, "bench", s0, laurel.Ordering{}, u, a); err != nil {
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
		if _, err := applyOne(ctx, idx, "bench", s0, laurel.Ordering{}, u); err != nil {
			b.Fatal(err)
		}
	}
	rk := idx.Ranking("bench", 1, laurel.Ordering{}, all, members/chunk)
	for b.Loop() {
		es, err := rk.Page(ctx, 1, 100)
		if err != nil || len(es) != 100 {
			b.Fatal(len(es), err)
		}
	}
}

// BenchmarkDistribution reads histograms of a board of 1M members in 4 shards (scores skewed
// toward 0, as most players score little), each against the top-100 read of the same board timed
// in the same run: ×top100 is the ratio of their times.
//
//	go test ./redis -run '^$' -bench Distribution -benchtime 200x
func BenchmarkDistribution(b *testing.B) {
	idx, _, _ := newIndex(b)
	ctx := context.Background()
	const members, shards, chunk = 1_000_000, 4, 10_000
	rng := rand.New(rand.NewPCG(5, 6))
	parts := make([][]shardindex.Change, shards)
	for n := range members {
		m := fmt.Sprintf("member-%07d", n)
		u := rng.Float64()
		parts[shardindex.ShardOf(m, shards)] = append(parts[shardindex.ShardOf(m, shards)], put(all, m, int64(u*u*u*1_000_000), int64(n)))
	}
	for i, changes := range parts {
		sh := shardindex.Shard{Number: i, Count: shards}
		var v int64
		for ; len(changes) > 0; v++ {
			n := min(chunk, len(changes))
			u := shardindex.Update{After: v, Version: v + 1, Stamp: 1, Changes: changes[:n]}
			if i == 0 {
				u.State = []byte{}
			}
			if _, err := applyOne(ctx, idx, "bench", sh, laurel.Ordering{}, u); err != nil {
				b.Fatal(err)
			}
			changes = changes[n:]
		}
	}
	board := idx.Ranking("bench", shards, laurel.Ordering{}, all, 1)
	top100 := func() {
		if es, _, err := laurel.PageOf(ctx, board, laurel.Ordering{}, 0, 100, laurel.ScoreRange{}); err != nil || len(es) != 100 {
			b.Fatal(len(es), err)
		}
	}
	reads := []struct {
		name string
		h    laurel.Histogram
	}{
		{"buckets=10", laurel.Histogram{Buckets: 10}},
		{"buckets=100", laurel.Histogram{Buckets: 100}},
		{"buckets=1000", laurel.Histogram{Buckets: 1000}},
		{"edges=0,100,1000,10000,100000,1000000", laurel.Histogram{Edges: []int64{0, 100, 1000, 10_000, 100_000, 1_000_000}}},
	}
	b.Run("top100", func(b *testing.B) {
		for b.Loop() {
			top100()
		}
	})
	for _, r := range reads {
		b.Run(r.name, func(b *testing.B) {
			var read, ref time.Duration
			for b.Loop() {
				t := time.Now()
				buckets, total, err := laurel.DistributionOf(ctx, board, laurel.Ordering{}, r.h)
				read += time.Since(t)
				if err != nil || total != members || len(buckets) == 0 {
					b.Fatal(total, err)
				}
				t = time.Now()
				top100()
				ref += time.Since(t)
			}
			b.ReportMetric(float64(read.Microseconds())/float64(b.N), "µs/read")
			b.ReportMetric(float64(read)/float64(ref), "×top100")
		})
	}
}

// BenchmarkApplySteps measures the steps a lone node sends one shard of a board of 100k
// members in 4 shards, four windows (docs/benchmarks.md, "A lone node against the embedded
// store"): each step changes m members of the shard in every window and reads each back, in
// the board's whole sets. A tenth of the members are new to the sets. Beside the time a step,
// it reports Redis's CPU a step and a change (INFO cpu, before and after), which counts other
// clients' commands too: run it on a Redis of its own.
//
//	LAUREL_TEST_REDIS=127.0.0.1:6393 go test ./redis -run '^$' -bench ApplySteps -benchtime 3000x
func BenchmarkApplySteps(b *testing.B) {
	idx, c, _ := newIndex(b)
	ctx := context.Background()
	sets := []shardindex.Set{all, {Window: "week", Start: 1}, {Window: "day", Start: 1}, {Window: "last7d"}}
	const shards, members, chunk = 4, 100_000, 1_000
	// Every shard's members, and the shard the steps go to, and its new members.
	rng := rand.New(rand.NewPCG(3, 4))
	const stepped = 1
	mine := make([][]string, shards)
	var fresh []string
	for n := range 2 * members {
		m := fmt.Sprintf("member-%06d", n)
		switch i := shardindex.ShardOf(m, shards); {
		case n < members:
			mine[i] = append(mine[i], m)
		case i == stepped:
			fresh = append(fresh, m)
		}
	}
	var v int64
	for i := range shards {
		sh := shardindex.Shard{Number: i, Count: shards}
		var after int64
		list := mine[i]
		for len(list) > 0 {
			u := shardindex.Update{After: after, Version: after + 1, Stamp: 1}
			if i == 0 {
				u.State = []byte{}
			}
			for _, m := range list[:min(chunk, len(list))] {
				for _, s := range sets {
					u.Changes = append(u.Changes, put(s, m, rng.Int64N(members), 1))
				}
			}
			list = list[min(chunk, len(list)):]
			if _, err := applyOne(ctx, idx, "bench", sh, laurel.Ordering{}, u); err != nil {
				b.Fatal(err)
			}
			after++
		}
		if i == stepped {
			v = after
		}
	}
	sh := shardindex.Shard{Number: stepped, Count: shards}
	cpu := func() float64 {
		s, err := c.Do(ctx, c.B().Info().Section("cpu").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		t := 0.0
		for _, line := range strings.Split(s, "\n") {
			k, val, _ := strings.Cut(strings.TrimSpace(line), ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				f, err := strconv.ParseFloat(val, 64)
				if err != nil {
					b.Fatal(err)
				}
				t += f
			}
		}
		return t
	}
	for _, m := range []int{1, 2, 11} {
		b.Run(fmt.Sprintf("members=%d", m), func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, uint64(m)))
			member := func() string {
				if r.IntN(10) == 0 {
					return fresh[r.IntN(len(fresh))] // new to the sets
				}
				return mine[stepped][r.IntN(len(mine[stepped]))]
			}
			steps := 0
			cpu0 := cpu()
			for b.Loop() {
				u := shardindex.Update{After: v, Version: v + 1, Quiet: true}
				var a shardindex.Asks
				for range m {
					mb := member()
					for _, s := range sets {
						u.Changes = append(u.Changes, put(s, mb, r.Int64N(members), v))
						a.Read = append(a.Read, shardindex.Read{Set: s, Member: mb})
					}
				}
				got, err := applyOne(ctx, idx, "bench", sh, laurel.Ordering{}, u, a)
				if err != nil || !got.Ranked {
					b.Fatal(got, err)
				}
				v++
				steps++
			}
			used := (cpu() - cpu0) * 1e6
			b.ReportMetric(used/float64(steps), "redis-µs/step")
			b.ReportMetric(used/float64(steps*4*m), "redis-µs/change")
		})
	}
}
