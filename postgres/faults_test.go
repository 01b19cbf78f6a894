package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestSubmitWhileBackendsDie: while PostgreSQL's backends of the store are terminated again
// and again, every submit is answered either with a full result — every event applied, with
// its ranks — that is stored, or with unavailable, having stored nothing; never with a result
// that stored nothing, nor unavailable for what was stored (a commit whose connection was
// terminated is asked about again: 6–18% of the errors were stored), nor without ranks while
// Redis answers. Afterwards every acknowledged event is there, with its history point, and
// every refused one is not: sending it again is a duplicate, or applied.
func TestSubmitWhileBackendsDie(t *testing.T) {
	s := laureltest.NewScaleOutStore(t)
	var b [4]byte
	rand.Read(b[:])
	app := "laurel_faults_" + hex.EncodeToString(b[:])
	s.DSN += "&application_name=" + app // so that only this store's sessions are terminated
	clock := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := s.Open(t, clock.Now)
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "day", "last7d"}})

	killer, err := pgx.Connect(ctx, laureltest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	// The killer terminates the store's sessions in storms (every 15 ms for 150 ms), each
	// followed by a lull that lasts until a submit was acknowledged (at most 5 s): on a loaded
	// machine, where a submit takes longer than 15 ms, unbroken kills would refuse every one.
	stop := make(chan struct{})
	var ackedSince atomic.Int64
	var killed sync.WaitGroup
	killed.Go(func() {
		for {
			storm := time.Now().Add(150 * time.Millisecond)
			for time.Now().Before(storm) {
				select {
				case <-stop:
					return
				case <-time.After(15 * time.Millisecond):
				}
				if _, err := killer.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app); err != nil {
					t.Errorf("terminate: %v", err)
					return
				}
			}
			ackedSince.Store(0)
			lull := time.Now().Add(5 * time.Second)
			for ackedSince.Load() == 0 && time.Now().Before(lull) {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
	})

	const writers, batches, batch = 4, 60, 5
	var mu sync.Mutex
	var acked, refused [][]laurel.Event
	failures := map[string]int{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for w := range writers {
		wg.Go(func() {
			for n := range batches {
				if time.Now().After(deadline) {
					return
				}
				events := make([]laurel.Event, batch)
				for i := range events {
					events[i] = laurel.Event{Board: "b", Member: fmt.Sprintf("m%d", (w*7+n+i)%23), Value: 1, ID: fmt.Sprintf("%d-%d-%d", w, n, i)}
				}
				start := time.Now()
				results, err := e.Submit(ctx, events, laurel.SubmitOptions{})
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("a submit took %v", took)
				}
				mu.Lock()
				switch {
				case err != nil:
					failures[laurel.ErrorCode(err)]++
					refused = append(refused, events)
				case len(results) != len(events):
					t.Errorf("%d results for %d events", len(results), len(events))
				default:
					for i, r := range results {
						if r.Status != laurel.StatusApplied {
							t.Errorf("acknowledged event %s: status %q, want applied", events[i].ID, r.Status)
						}
						if len(r.Entries) != 3 {
							t.Errorf("acknowledged event %s: entries %v, want its ranks in 3 windows", events[i].ID, r.Entries)
						}
					}
					acked = append(acked, events)
					ackedSince.Add(1)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	killed.Wait()
	t.Logf("%d batches acknowledged, failures by code %v", len(acked), failures)
	for code, n := range failures {
		if code != laurel.EUnavailable {
			t.Errorf("%d submits failed with %s, want unavailable", n, code)
		}
	}
	if len(acked) == 0 || failures[laurel.EUnavailable] == 0 {
		t.Fatalf("the test did not exercise both outcomes: %d acknowledged, %v failed", len(acked), failures)
	}
	// Every acknowledged event is stored, with its history point.
	points := map[string]int{}
	for _, events := range acked {
		for i, r := range submitAgain(t, e, events) {
			if r.Status != laurel.StatusDuplicate {
				t.Errorf("acknowledged event %s sent again: %q, want duplicate: it was not stored", events[i].ID, r.Status)
			}
			points[events[i].Member]++
		}
	}
	for m, want := range points {
		h, err := e.History(ctx, "b", "all", m, laurel.MaxHistoryLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) < want {
			t.Errorf("member %s: %d history points, want at least %d: one per acknowledged event", m, len(h), want)
		}
	}
	// Every refused event is not: sent again, it is applied.
	for _, events := range refused {
		for i, r := range submitAgain(t, e, events) {
			if r.Status != laurel.StatusApplied {
				t.Errorf("refused event %s sent again: %q, want applied: it was stored though refused", events[i].ID, r.Status)
			}
		}
	}
}

// submitAgain sends events again once the terminations are over: a session may still be
// terminated by the last round.
func submitAgain(t *testing.T, e laurel.Service, events []laurel.Event) []laurel.EventResult {
	t.Helper()
	var results []laurel.EventResult
	var err error
	for range 20 {
		if results, err = e.Submit(ctx, events, laurel.SubmitOptions{NoRanks: true}); laurel.ErrorCode(err) != laurel.EUnavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// TestSubmitWhileHistoryLocked: a submit whose history points wait on a lock (another
// session holds laurel_history) is answered by its deadline, stored; its points are given
// up. It was answered only once the lock was released, past any deadline (a minute, seen).
func TestSubmitWhileHistoryLocked(t *testing.T) {
	s := laureltest.NewScaleOutStore(t)
	e := s.Open(t, laureltest.NewClock("2026-11-22T10:00:00Z").Now)
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	locker, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE laurel_history IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(10*time.Second, func() { tx.Rollback(ctx) }) // bounds the test without the fix
	defer release.Stop()
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	res, err := e.Submit(sctx, []laurel.Event{{Board: "b", Member: "alice", Value: 1, ID: "a1"}}, laurel.SubmitOptions{})
	took := time.Since(start)
	if err != nil || res[0].Status != laurel.StatusApplied {
		t.Fatalf("submit while history is locked: %+v, %v; want applied", res, err)
	}
	if took > 5*time.Second {
		t.Fatalf("submit with a 1 s deadline answered after %v", took)
	}
	if release.Stop() {
		tx.Rollback(ctx)
	}
	if res := submit(t, e, laurel.Event{Board: "b", Member: "alice", Value: 1, ID: "a1"}); res[0].Status != laurel.StatusDuplicate {
		t.Fatalf("the event sent again: %s; want duplicate (it was stored)", res[0].Status)
	}
}
