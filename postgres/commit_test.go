package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// TestCommitCutOff: a write whose connection is lost right after it sent COMMIT (a proxy
// forwards the commit, then cuts the client off) asks PostgreSQL again and is answered for
// what happened: 200 with its ranks, as it landed. It was answered 503 unavailable, though
// stored.
func TestCommitCutOff(t *testing.T) {
	e, proxy := openBehindProxy(t)
	cut := make(chan struct{})
	proxy.CutAfterCommit(func() { close(cut) })
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := e.Submit(sctx, []laurel.Event{{Board: "b", Member: "bob", Value: 5, ID: "b1"}}, laurel.SubmitOptions{})
	select {
	case <-cut:
	default:
		t.Fatal("no commit was cut off")
	}
	if err != nil {
		t.Fatalf("a write whose commit landed, its connection lost: %v; want it applied", err)
	}
	if res[0].Status != laurel.StatusApplied || res[0].Entries["all"].Rank != 1 {
		t.Fatalf("a write whose commit landed, its connection lost: %+v; want applied, rank 1", res[0])
	}
	if res := submit(t, e, laurel.Event{Board: "b", Member: "bob", Value: 5, ID: "b1"}); res[0].Status != laurel.StatusDuplicate {
		t.Fatalf("sent again: %s; want duplicate", res[0].Status)
	}
}

// TestCommitOutcomeUnknown: a write whose connection is lost right after it sent COMMIT,
// PostgreSQL then out of reach until past its deadline, is answered by its deadline with
// outcome_unknown — never unavailable, which says that nothing was stored. Sent again with
// the same id once PostgreSQL is back, it is counted once.
func TestCommitOutcomeUnknown(t *testing.T) {
	e, proxy := openBehindProxy(t)
	proxy.CutAfterCommit(proxy.Cut)
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	_, err := e.Submit(sctx, []laurel.Event{{Board: "b", Member: "bob", Value: 5, ID: "b1"}}, laurel.SubmitOptions{})
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("answered after %v, with a deadline of 1 s", took)
	}
	if laurel.ErrorCode(err) != laurel.EOutcomeUnknown {
		t.Fatalf("a write whose commit was cut off, PostgreSQL out of reach: %v; want %s", err, laurel.EOutcomeUnknown)
	}
	proxy.Restore()
	var res []laurel.EventResult
	for range 100 { // the store's connections come back
		if res, err = e.Submit(ctx, []laurel.Event{{Board: "b", Member: "bob", Value: 5, ID: "b1"}}, laurel.SubmitOptions{}); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent again: %s", res[0].Status)
	if en := res[0].Entries["all"]; en.Score != 5 {
		t.Fatalf("sent again: %+v; want a score of 5, counted once", res[0])
	}
}
