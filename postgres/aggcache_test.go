package postgres_test

import (
	"fmt"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/shardindex"
)

// TestCachedAggregates: a node that keeps the aggregates of its submits (aggcache.go) reads
// them again from the store whenever another node, or another kind of write, has changed
// their shard since: every answer counts every event, whoever wrote it.
func TestCachedAggregates(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	now := laureltest.NewClock("2026-11-22T10:00:00Z").Now
	open := func(cached int, older bool) *postgres.Store {
		opts := postgres.Options{Now: now, Maintenance: -1, Shards: 2, CachedAggregates: cached}
		if older {
			opts = postgres.WithoutStamps(opts)
		}
		return store.OpenWith(t, opts)
	}
	// old writes as a version before stamps did: it leaves the shards' stamps as they are.
	a, b, small, old := open(0, false), open(0, false), open(3, false), open(0, true)
	putBoard(t, a, "b", laurel.BoardSpec{Windows: []string{"all", "day"}})
	// score sends an event and returns the member's score in "all" right after it.
	n := 0
	score := func(e *postgres.Store, member string, value int64) int64 {
		t.Helper()
		n++
		res := submit(t, e, laurel.Event{Board: "b", Member: member, Value: value, ID: fmt.Sprintf("e%d", n)})
		en, ok := res[0].Entries["all"]
		if !ok {
			t.Fatalf("no standing in all: %+v", res[0])
		}
		return en.Score
	}
	steps := []struct {
		node  *postgres.Store
		value int64
		want  int64
	}{
		{a, 1, 1}, // a keeps m's aggregates
		{a, 2, 3}, // from what it kept
		{b, 4, 7}, // b changed m's shard: a must read it again
		{a, 8, 15},
		{small, 16, 31},
		{a, 32, 63},
		{old, 64, 127}, // a's stamp stays, but not the shard's event number
		{a, 128, 255},
	}
	for i, st := range steps {
		if got := score(st.node, "m", st.value); got != st.want {
			t.Fatalf("step %d: m has %d after adding %d, want %d", i, got, st.value, st.want)
		}
	}
	// What a kept of another member of m's shard is no use once b wrote there, even after a's
	// next submit to the shard, which did not touch that member.
	x := ""
	for i := 0; x == ""; i++ {
		if c := fmt.Sprintf("x%d", i); shardindex.ShardOf(c, 2) == shardindex.ShardOf("m", 2) {
			x = c
		}
	}
	for i, st := range []struct {
		node        *postgres.Store
		member      string
		value, want int64
	}{{a, x, 1, 1}, {b, x, 2, 3}, {a, "m", 1, 256}, {a, x, 4, 7}} {
		if got := score(st.node, st.member, st.value); got != st.want {
			t.Fatalf("step %d: %s has %d after adding %d, want %d", i, st.member, got, st.value, st.want)
		}
	}
	if postgres.CachedAggregates(a) == 0 {
		t.Fatal("a keeps no aggregates of its submits")
	}
	// A retraction by the node itself, then its submit: the retraction is not a submit, so
	// what a kept is read again.
	if err := a.Retract(ctx, "b", "e6"); err != nil { // m's 32
		t.Fatal(err)
	}
	if got := score(a, "m", 64); got != 288 {
		t.Fatalf("after the retraction of 32 and 64 more, m has %d, want 288", got)
	}
	// A member deleted by another node.
	if err := b.DeleteMember(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if got := score(a, "m", 1); got != 1 {
		t.Fatalf("m deleted, then 1 more: m has %d, want 1", got)
	}
	// A cache smaller than what a step touches keeps at most its size, and answers right.
	for r := 1; r <= 3; r++ {
		var events []laurel.Event
		for i := range 10 {
			n++
			events = append(events, laurel.Event{Board: "b", Member: fmt.Sprintf("s%d", i), Value: int64(i), ID: fmt.Sprintf("e%d", n)})
		}
		for i, res := range submit(t, small, events...) {
			if got, want := res.Entries["all"].Score, int64(r*i); got != want {
				t.Fatalf("round %d: s%d has %d, want %d", r, i, got, want)
			}
		}
		if got := postgres.CachedAggregates(small); got > 3 {
			t.Fatalf("a cache of 3 holds %d aggregates", got)
		}
	}
	check(t, a)
}
