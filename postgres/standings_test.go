package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestStandingsAcrossShards: the standings a submit answers with, after the write (entries)
// and before it (previous), are the embedded store's, event for event, on a board of four
// shards, for random batches in which a few members write often (several events of one
// member in a batch, members passing each other within and across shards, ties broken by
// reached_at), with and without ranks. Run with -seed to repeat a run.
func TestStandingsAcrossShards(t *testing.T) {
	ctx := context.Background()
	seed := laureltest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	clock := laureltest.NewClock("2026-12-07T10:00:00Z")
	target := laureltest.EmbeddedTarget(t)
	emb, err := target.Open(t, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close(emb)
	sharded := laureltest.NewScaleOutStore(t).Open(t, clock.Now)
	stores := []laurel.Service{emb, sharded}

	boards := map[string]laurel.BoardSpec{
		"sum":  {Windows: []string{"all", "day", "last1h"}},
		"best": {Windows: []string{"all", "day"}, Mode: ptr("best")},
	}
	for id, spec := range boards {
		for _, s := range stores {
			putBoard(t, s, id, spec)
		}
	}
	members := make([]string, 40)
	for i := range members {
		members[i] = fmt.Sprintf("m%02d", i)
	}
	for round := range 80 {
		evs := make([]laurel.Event, 1+rng.IntN(24))
		for i := range evs {
			// Half the events go to the first six members: repeats within a batch.
			m := members[rng.IntN(len(members))]
			if rng.IntN(2) == 0 {
				m = members[rng.IntN(6)]
			}
			board := "sum"
			if rng.IntN(3) == 0 {
				board = "best"
			}
			evs[i] = laurel.Event{Board: board, Member: m, Value: int64(1 + rng.IntN(5))}
		}
		opts := laurel.SubmitOptions{NoRanks: rng.IntN(6) == 0}
		var res [2][]laurel.EventResult
		for k, s := range stores {
			if res[k], err = s.Submit(ctx, evs, opts); err != nil {
				t.Fatalf("round %d: %T: %v", round, s, err)
			}
		}
		for i, want := range res[0] {
			got := res[1][i]
			if got.Status != want.Status || !maps.Equal(got.Entries, want.Entries) || !maps.Equal(got.Previous, want.Previous) {
				t.Fatalf("round %d, event %d (%s on %s, %d events, ranks %v):\nscale-out: %s entries %v previous %v\nembedded:  %s entries %v previous %v",
					round, i, evs[i].Member, evs[i].Board, len(evs), !opts.NoRanks, got.Status, got.Entries, got.Previous, want.Status, want.Entries, want.Previous)
			}
		}
		// Equal scores tie on reached_at; now and then an hour passes and last1h empties.
		clock.Advance(time.Duration(rng.IntN(3)) * time.Second)
		if rng.IntN(20) == 0 {
			clock.Advance(time.Hour)
		}
	}
}
