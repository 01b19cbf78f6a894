package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestConcurrentWritersCountOnce: pairs of writers send the same events with ids at about the
// same time, to shared members, on a clock that closes an hour and moves rolling buckets
// meanwhile; a group often holds both copies of an id, or the group just before it the first.
// Every id is applied once, the scores in all and last7d count each applied event once, and a
// restart finds the same scores.
func TestConcurrentWritersCountOnce(t *testing.T) {
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, 0))
	ctx := context.Background()
	clock := laureltest.NewClock("2026-11-22T10:50:00Z") // 20 s a millisecond: 11:00 comes within the run
	dir := t.TempDir()
	e, err := embedded.Open(dir, embedded.Options{Now: clock.Now, CheckpointLag: 1 + rng.IntN(300), SealEvents: 1 + rng.IntN(500)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() }) // when the test stops early; a second Close does nothing
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "hour", "day", "last7d"}})
	const members, writers = 12, 8
	var (
		mu      sync.Mutex
		applied = make(map[string]int64) // member → value of its applied events
		ids     = make(map[string]bool)  // the ids reported applied
		dups    int
		wg      sync.WaitGroup
	)
	stopClock := clock.Run(20 * time.Second)
	for g := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(s, uint64(g+1)))
			for i := range 150 {
				var batch []laurel.Event
				for j := range 1 + r.IntN(4) {
					// Writers 2k and 2k+1 send the same events, at about the same time: often
					// in one group, else in groups one after the other.
					pair, n := g/2, i*4+j
					batch = append(batch, laurel.Event{Board: "b", Member: "m" + strconv.Itoa((pair*5+n)%members), Value: int64(1 + n%3), ID: fmt.Sprintf("p%d-%d", pair, n)})
				}
				res, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for k, r := range res {
					switch r.Status {
					case laurel.StatusApplied:
						if ids[r.ID] {
							t.Errorf("%s applied twice", r.ID)
						}
						ids[r.ID] = true
						applied[batch[k].Member] += batch[k].Value
					case laurel.StatusDuplicate:
						dups++
					default:
						t.Errorf("%s: status %q", batch[k].ID, r.Status)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	stopClock()
	if dups == 0 {
		t.Fatal("no id came twice: the writers did not share ids")
	}
	t.Logf("%d events were duplicates; the clock ran to %s", dups, time.UnixMilli(clock.Now()).UTC().Format("15:04"))
	check := func(e *embedded.Store, when string) {
		t.Helper()
		for m := range members {
			name := "m" + strconv.Itoa(m)
			for _, w := range []string{"all", "last7d"} {
				me, err := e.Member(ctx, laurel.Query{Board: "b", Window: w}, name)
				if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
					t.Fatal(err)
				}
				if me.Entry.Score != applied[name] {
					t.Errorf("%s: %s scores %d in %s, want %d", when, name, me.Entry.Score, w, applied[name])
				}
			}
		}
	}
	check(e, "live")
	if err := e.Check(); err != nil {
		t.Error(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	check(testStoreWith(t, dir, embedded.Options{Now: clock.Now}), "after a restart")
}
