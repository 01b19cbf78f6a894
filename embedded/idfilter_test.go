package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestIDFilter: the filter never calls a key it was given absent, across its growth while
// Open's scan fills it and after, and calls few of the others absent-not (each such miss
// costs a read of the store). The store's rebuild of it into one filter: TestIDRuns.
func TestIDFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 1))
	f := embedded.NewIDFilter()
	key := func(i int) []byte { return fmt.Appendf(nil, "I\x00board-%d\x00id-%d-%x", i%7, i, rng.Uint32()%16) }
	const scanned, n = 600_000, 700_000 // past the first two Bloom filters (128k and 512k keys)
	added := make([][]byte, n)
	for i := range added {
		if i == scanned {
			f.Ready()
		}
		added[i] = key(i)
		f.Add(added[i])
		if i >= scanned && i%97 == 0 { // a key is absent-not as soon as it is added, not only at the end
			if f.Absent(added[i]) {
				t.Fatalf("key %d called absent right after it was added", i)
			}
		}
	}
	for i, k := range added {
		if f.Absent(k) {
			t.Fatalf("key %d (%q) called absent", i, k)
		}
	}
	maybe := 0
	const others = 200_000
	for i := range others {
		if !f.Absent(key(n + i)) {
			maybe++
		}
	}
	// 12 bits a key gives about 0.6% in each filter; three filters, the last partly full.
	if rate := float64(maybe) / others; rate > 0.03 {
		t.Errorf("%.2f%% of unseen keys reported as maybe seen, want under 3%%", 100*rate)
	}
	t.Logf("false maybes: %.3f%%, %d bytes for %d keys", 100*float64(maybe)/others, f.Bytes(), n)
}

// TestIDsAfterRestart: ids stored before a restart stay duplicates and conflicts once the
// filter has scanned them, a retracted one may be used again, and new ones apply.
func TestIDsAfterRestart(t *testing.T) {
	for _, seal := range []int{0, 2000} { // 2000: a third of the events are still in the log at the restart
		t.Run(fmt.Sprintf("seal=%d", seal), func(t *testing.T) { idsAfterRestart(t, seal, false) })
	}
	// A store whose sealed ids an earlier version wrote, each with its event whole.
	t.Run("whole-records", func(t *testing.T) { idsAfterRestart(t, 2000, true) })
}

func idsAfterRestart(t *testing.T, seal int, whole bool) {
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	dir := t.TempDir()
	open := func() *embedded.Store {
		return testStoreWith(t, dir, embedded.Options{Now: c.Now, SealEvents: seal})
	}
	e := open()
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "day"}})
	const n = 3000
	var evs []laurel.Event
	for i := range n {
		evs = append(evs, laurel.Event{Board: "b", Member: fmt.Sprintf("m%d", i%50), Value: int64(i%9 + 1), ID: fmt.Sprintf("e%d", i)})
		if len(evs) == 500 {
			submit(t, e, evs...)
			evs = evs[:0]
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if whole {
		if n, err := embedded.WholeIDRecords(dir); err != nil || n < 1000 {
			t.Fatalf("rewriting the id records: %d, %v", n, err)
		}
	}
	e = open()
	deadline := time.Now().Add(10 * time.Second)
	for !e.IDFilterReady() {
		if time.Now().After(deadline) {
			t.Fatal("the id filter did not finish scanning 3000 ids in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	if err := e.Retract(ctx, "b", "e7"); err != nil {
		t.Fatal(err)
	}
	// Enough new events for a seal, which moves the ids the log held to the store.
	for i := range 1200 {
		submit(t, e, laurel.Event{Board: "b", Member: "x", Value: 1, ID: fmt.Sprintf("x%d", i)})
	}
	for i := range n {
		ev := laurel.Event{Board: "b", Member: fmt.Sprintf("m%d", i%50), Value: int64(i%9 + 1), ID: fmt.Sprintf("e%d", i)}
		want := laurel.StatusDuplicate
		if i == 7 {
			want = laurel.StatusApplied
		}
		if res := submit(t, e, ev); res[0].Status != want {
			t.Fatalf("event %s after a restart: %s, want %s", ev.ID, res[0].Status, want)
		}
		ev.Value += 100
		if _, err := e.Submit(ctx, []laurel.Event{ev}, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EConflict {
			t.Fatalf("event %s with another value after a restart: %v, want conflict", ev.ID, err)
		}
	}
	if res := submit(t, e, laurel.Event{Board: "b", Member: "new", Value: 1, ID: "e-new"}); res[0].Status != laurel.StatusApplied {
		t.Fatalf("a new id: %s", res[0].Status)
	}
}
