package embedded_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestIDRuns: the ids of sealed events stay exact while their runs are merged tier after
// tier (idruns.go) and after a restart: each id stored is a duplicate when sent again and a
// conflict when sent with another value; a retracted id, or one of a deleted member, is gone
// from its run, merged or not, and may be used again. Check, at cleanup, verifies that each
// sealed event has its one id record.
func TestIDRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	const fanout = 3
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	dir := t.TempDir()
	open := func() *embedded.Store {
		// An id filter that starts small, so that it is rebuilt again and again (idfilter.go).
		return testStoreWith(t, dir, embedded.WithIDFilterFirst(embedded.Options{Now: c.Now, SealEvents: 10, IDRunFanout: fanout}, 64))
	}
	e := open()
	ctx := context.Background()
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "day"}})
	// Until a merge of the third tier: a seal takes 10 events or more (what the log holds
	// once the seal before is done), a merge 3 runs.
	const most = 20_000
	events := make(map[string]laurel.Event) // by id: those stored
	gone := map[string]bool{}               // retracted, or of a deleted member
	var sent []string                       // the ids, in the order sent
	var tiers []int
	for i, next := 0, 500; !slices.Contains(tiers, 3); {
		if i >= next {
			if i >= most {
				t.Fatalf("no run of tier 3 after %d events in seals of 10 or more: %v", i, tiers)
			}
			var err error
			if tiers, err = e.IDRunTiers(ctx); err != nil {
				t.Fatal(err)
			}
			next += 500
			continue
		}
		batch := make([]laurel.Event, 1+rng.IntN(50))
		for j := range batch {
			batch[j] = laurel.Event{Board: "b", Member: fmt.Sprintf("m%d", rng.IntN(40)), Value: int64(1 + rng.IntN(9)), ID: fmt.Sprintf("e%d", i)}
			events[batch[j].ID] = batch[j]
			sent = append(sent, batch[j].ID)
			i++
		}
		submit(t, e, batch...)
		if rng.IntN(4) == 0 && len(sent) > 0 { // some sent again, maybe while the id filter is rebuilt
			var again []laurel.Event
			for range 10 {
				if id := sent[rng.IntN(len(sent))]; !gone[id] && !slices.ContainsFunc(again, func(ev laurel.Event) bool { return ev.ID == id }) {
					again = append(again, events[id])
				}
			}
			if len(again) == 0 {
				continue
			}
			for k, res := range submit(t, e, again...) {
				if res.Status != laurel.StatusDuplicate {
					t.Fatalf("event %s sent again after %d events: %s, want a duplicate", again[k].ID, i, res.Status)
				}
			}
		}
		if rng.IntN(8) == 0 { // a retraction, of an event sealed long ago or not
			id := fmt.Sprintf("e%d", rng.IntN(i))
			if !gone[id] {
				if err := e.Retract(ctx, "b", id); err != nil {
					t.Fatalf("retracting %s: %v", id, err)
				}
				gone[id] = true
			}
		}
		if i > 500 && !gone["member:m7"] { // a deleted member's ids go with its events
			if err := e.DeleteMember(ctx, "m7"); err != nil {
				t.Fatal(err)
			}
			gone["member:m7"] = true
			for id, ev := range events {
				if ev.Member == "m7" {
					gone[id] = true
				}
			}
		}
	}
	t.Logf("%d events; runs by tier, oldest first: %v", len(events), tiers)
	perTier := map[int]int{}
	for i, tier := range tiers {
		perTier[tier]++
		if i > 0 && tier > tiers[i-1] {
			t.Errorf("run %d is of tier %d, above the run before it (%d): %v", i, tier, tiers[i-1], tiers)
		}
	}
	for tier, k := range perTier {
		if k >= fanout {
			t.Errorf("%d runs of tier %d left unmerged: %v", k, tier, tiers)
		}
	}
	// The sealed events are merged with their runs' ids: a table a run, and a few more that
	// the deleted member's tombstones reach, rather than one a seal.
	tables, err := e.SealedEventTables()
	if err != nil {
		t.Fatal(err)
	}
	if tables > len(tiers)+4 {
		t.Errorf("the sealed events are in %d tables, for %d runs", tables, len(tiers))
	}
	// Every event is sent again, in batches; then one in ten alone with another value (a
	// conflict fails its whole submit).
	check := func(e *embedded.Store) {
		t.Helper()
		var batch []laurel.Event
		send := func() {
			if len(batch) == 0 {
				return
			}
			res := submit(t, e, batch...)
			for i, ev := range batch {
				want := laurel.StatusDuplicate
				if gone[ev.ID] {
					want = laurel.StatusApplied
				}
				if res[i].Status != want {
					t.Fatalf("event %s sent again: %s, want %s", ev.ID, res[i].Status, want)
				}
			}
			for _, ev := range batch {
				delete(gone, ev.ID) // stored now, if it was not
			}
			batch = batch[:0]
		}
		for _, ev := range events {
			if batch = append(batch, ev); len(batch) == 200 {
				send()
			}
		}
		send()
		for id, ev := range events {
			if rng.IntN(10) == 0 {
				ev.Value += 100
				if _, err := e.Submit(ctx, []laurel.Event{ev}, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EConflict {
					t.Fatalf("event %s sent again with another value: %v, want a conflict", id, err)
				}
			}
		}
	}
	check(e)
	if n := e.IDFilterRebuilds(); n < 3 {
		t.Errorf("the id filter was rebuilt %d times, want 3 or more", n)
	}
	// Rebuilt, it lets few unseen ids through to a lookup: one filter half full at most, and
	// the small stages that take new ids until the next rebuild.
	maybe := 0
	const unseen = 20_000
	for k := range unseen {
		if e.IDFilterMaybe("b", fmt.Sprintf("x%d", k)) {
			maybe++
		}
	}
	t.Logf("the id filter, rebuilt %d times, lets %.2f%% of unseen ids through", e.IDFilterRebuilds(), 100*float64(maybe)/unseen)
	if maybe > unseen/50 {
		t.Errorf("the id filter lets %d of %d unseen ids through, want at most 2%%", maybe, unseen)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open()
	deadline := time.Now().Add(10 * time.Second)
	for !e.IDFilterReady() {
		if time.Now().After(deadline) {
			t.Fatal("the id filter did not finish its scan in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	for id := range events { // retract some again, after the restart
		if rng.IntN(20) == 0 {
			if err := e.Retract(ctx, "b", id); err != nil {
				t.Fatalf("retracting %s after the restart: %v", id, err)
			}
			gone[id] = true
		}
	}
	check(e)
	if e.IDFilterRebuilds() == 0 {
		t.Error("the id filter, loaded in stages at Open, was not rebuilt into one")
	}
}

// TestCloseWhileMerging: Close finishes the merge of id runs under way and starts no other,
// so nothing reads the store once it is closed; the runs are sound when it opens again.
func TestCloseWhileMerging(t *testing.T) {
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	dir := t.TempDir()
	for round := range 6 {
		e := testStoreWith(t, dir, embedded.Options{Now: c.Now, SealEvents: 5, IDRunFanout: 2})
		if round == 0 {
			putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
		}
		for i := range 60 {
			var batch []laurel.Event
			for j := range 10 {
				batch = append(batch, laurel.Event{Board: "b", Member: fmt.Sprintf("m%d", j), Value: 1, ID: fmt.Sprintf("r%d-%d-%d", round, i, j)})
			}
			submit(t, e, batch...)
		}
		if err := e.Close(); err != nil { // with seals and merges under way
			t.Fatal(err)
		}
	}
}

// TestExportWhileMerging: an export reads every sealed event of its snapshot while seals and
// merges go on (a merge's events excise their seals' files, which a snapshot taken before
// would no longer find: it waits for the export to end); reads right after a merge find
// every event; and the sealed events stay in a table a run.
func TestExportWhileMerging(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := testStoreWith(t, t.TempDir(), embedded.Options{Now: c.Now, SealEvents: 5, IDRunFanout: 2})
	boards := []string{"a", "b"}
	for _, b := range boards {
		putBoard(t, e, b, laurel.BoardSpec{Windows: []string{"all"}})
	}
	n := 0
	written := map[string]int{} // events by board and member
	write := func(events int) {
		for range events / 10 {
			var batch []laurel.Event
			for _, b := range boards {
				for range 5 {
					batch = append(batch, laurel.Event{Board: b, Member: fmt.Sprintf("m%d", n%300), Value: 1, ID: fmt.Sprintf("e%d", n), Name: ptr(fmt.Sprintf("player %d", n%300))})
					written[b+"/"+fmt.Sprintf("m%d", n%300)]++
					n++
				}
			}
			submit(t, e, batch...)
		}
	}
	write(2000)
	before := n / len(boards) // each board's events when the export begins
	w := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	exported := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		d, err := laurel.NewDumpWriter(io.MultiWriter(&buf, w))
		if err == nil {
			err = e.Export(ctx, d)
		}
		if err == nil {
			err = d.Close()
		}
		if err != nil {
			t.Error(err)
		}
		exported <- buf.Bytes()
	}()
	<-w.entered // the export holds its snapshot, part of its first board written
	write(3000) // seals, and merges of their runs
	close(w.release)
	dump := <-exported
	r, err := laurel.NewDumpReader(bytes.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]int{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Event != nil {
			events[rec.Event.Board]++
		}
	}
	for _, b := range boards {
		if events[b] != before {
			t.Errorf("board %s: the dump holds %d events, want the %d written before it began", b, events[b], before)
		}
	}
	// With no export running, a merge's events replace their seals' files, and reads right
	// after find every event in the snapshot it leaves them (history points are read there).
	for try := 0; ; try++ {
		if try == 100 {
			t.Fatal("no merge was under way in 100 tries")
		}
		write(20)
		if _, err := e.History(ctx, "a", "all", "m1", 1); err != nil { // every point stored
			t.Fatal(err)
		}
		if _, finished, err := e.FinishMerges(ctx); err != nil || finished == 0 {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, member := range []string{"m1", "m150", "m299"} {
			points, err := e.History(ctx, "a", "all", member, laurel.MaxHistoryLimit)
			if err != nil {
				t.Fatal(err)
			}
			if want := written["a/"+member]; len(points) != want {
				t.Errorf("%s's history on a right after a merge: %d points, want %d", member, len(points), want)
			}
		}
		break
	}
	tables, err := e.SealedEventTables()
	if err != nil {
		t.Fatal(err)
	}
	if tiers, err := e.IDRunTiers(ctx); err != nil || tables > len(tiers)+4 {
		t.Errorf("the sealed events are in %d tables, for runs of tiers %v (%v)", tables, tiers, err)
	}
}
