package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
)

// TestReadsRacingWrites: reads of a sharded board answer one consistent page while writers
// change every shard: an around page holds its member once, as long as the board allows, its
// ranks consecutive, in order; a member's entry, a lookup and a score-range page are in order
// and within the total. Around pages left out their member, or came back short (8 or 5 of
// 11), in 2% of them under load. Randomized: it prints its seed, and -seed replays it.
func TestReadsRacingWrites(t *testing.T) {
	seed := laureltest.Seed(t)
	s := laureltest.NewScaleOutStore(t)
	e := s.OpenWith(t, postgres.Options{Now: func() int64 { return time.Now().UnixMilli() }, Maintenance: -1, Shards: 4})
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	const members = 60
	member := func(i int) string { return fmt.Sprintf("m%02d", i) }
	var all []laurel.Event
	for i := range members {
		all = append(all, laurel.Event{Board: "b", Member: member(i), Value: int64(i % 7)})
	}
	submit(t, e, all...)
	q := laurel.Query{Board: "b", Window: "all"}
	stop := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)+1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var batch []laurel.Event
				for range 1 + rng.IntN(8) {
					batch = append(batch, laurel.Event{Board: "b", Member: member(rng.IntN(members)), Value: 1 + rng.Int64N(3)})
				}
				if _, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true}); err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		})
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	deadline := time.Now().Add(8 * time.Second)
	reads := 0
	for ; reads < 3000 && time.Now().Before(deadline) && !t.Failed(); reads++ {
		m := member(rng.IntN(members))
		switch rng.IntN(4) {
		case 0:
			radius := rng.IntN(6)
			p, err := e.Around(ctx, q, m, radius)
			if err != nil {
				t.Fatal(err)
			}
			if want := min(2*radius+1, p.Total); len(p.Entries) != want || slices.IndexFunc(p.Entries, func(en laurel.Entry) bool { return en.Member == m }) < 0 {
				t.Errorf("around %s, radius %d, of %d: %d entries %v; want %d with the member", m, radius, p.Total, len(p.Entries), p.Entries, want)
			}
			inOrder(t, "around", p.Entries, p.Total, true)
		case 1:
			me, err := e.Member(ctx, q, m)
			if err != nil {
				t.Fatal(err)
			}
			if me.Entry.Member != m || me.Entry.Rank < 1 || me.Entry.Rank > me.Total {
				t.Errorf("member %s: %+v of %d", m, me.Entry, me.Total)
			}
		case 2:
			ask := []string{m, member(rng.IntN(members)), member(rng.IntN(members))}
			p, err := e.Lookup(ctx, q, ask)
			if err != nil {
				t.Fatal(err)
			}
			inOrder(t, "lookup", p.Entries, p.Total, false)
		case 3:
			lo := rng.Int64N(40)
			sr := laurel.ScoreRange{Min: lo, Max: lo + rng.Int64N(40), HasMin: true, HasMax: rng.IntN(2) == 0}
			p, err := e.Page(ctx, q, rng.IntN(5), 1+rng.IntN(20), sr)
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range p.Entries {
				if en.Score < sr.Min || sr.HasMax && en.Score > sr.Max {
					t.Errorf("a page of %+v holds %+v", sr, en)
				}
			}
			inOrder(t, "score range", p.Entries, p.Total, true)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads racing %d writes", reads, writes.Load())
	if writes.Load() < 10 {
		t.Fatalf("only %d writes raced the reads", writes.Load())
	}
}

// inOrder checks that entries rank in order within 1…total: consecutively when consecutive.
func inOrder(t *testing.T, what string, entries []laurel.Entry, total int, consecutive bool) {
	t.Helper()
	for k, en := range entries {
		if en.Rank < 1 || en.Rank > total {
			t.Errorf("%s: rank %d of %d: %v", what, en.Rank, total, entries)
			return
		}
		if k == 0 {
			continue
		}
		prev := entries[k-1]
		if en.Rank <= prev.Rank || consecutive && en.Rank != prev.Rank+1 || laurel.CompareEntries(laurel.Ordering{}, prev, en) >= 0 {
			t.Errorf("%s: %+v then %+v", what, prev, en)
			return
		}
	}
}
