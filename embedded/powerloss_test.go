package embedded_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestPowerLoss simulates losing power while writers run: the store lives on Pebble's
// crashable in-memory file system, whose CrashClone keeps what was synced and a random part of
// what was not. The crash happens either at a durability boundary (inside the store's
// OnCommit hook, after an fsync and before anyone is answered) or at a random moment from
// outside. Meanwhile the clock runs at 30 s a millisecond through the night Paris leaves
// summer time (2026-10-25, 03:00 CEST becomes 02:00 CET), so that hours and the day of the
// board (in Europe/Paris) close during the campaign and across the change. Every event
// acknowledged before the crash must be in the recovered store, the scores must count
// exactly the events that are, each of them must have its history point, and the store's
// invariants must hold. Aggregates are checkpointed every few hundred events at most, so
// recovery replays a part of the log.
func TestPowerLoss(t *testing.T) {
	s := seed(t)
	for round := range 6 {
		rng := rand.New(rand.NewPCG(s, uint64(round)))
		powerLossRound(t, rng, round)
	}
}

func powerLossRound(t *testing.T, rng *rand.Rand, round int) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	var (
		mu       sync.Mutex
		acked    = make(map[string]string) // id → member, acknowledged before the crash
		sent     = make(map[string]string) // id → member
		crashed  *vfs.MemFS
		crashRNG = rand.New(rand.NewPCG(rng.Uint64(), 1))
		commits  atomic.Int64
	)
	crash := func() {
		mu.Lock()
		defer mu.Unlock()
		if crashed == nil {
			crashed = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: crashRNG.IntN(101), RNG: crashRNG})
		}
	}
	atBoundary := rng.IntN(2) == 0
	crashAt := int64(5 + rng.IntN(60))
	clock := laureltest.NewClock("2026-10-25T00:30:00Z") // 02:30 CEST
	clock.Advance(time.Duration(rng.IntN(40)) * time.Minute)
	defer clock.Run(30 * time.Second)()
	began := clock.Now()
	lag := 1 + rng.IntN(500)  // aggregates are written behind the events: replay covers the rest
	seal := 1 + rng.IntN(400) // the events since a seal are in the log: recovery reads them back
	e, err := embedded.Open("/db", embedded.Options{FS: cloneSafeFS{fs}, Now: clock.Now, CheckpointLag: lag, SealEvents: seal, OnCommit: func(ops, bytes int, took time.Duration) {
		if atBoundary && commits.Add(1) == crashAt {
			crash()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "pl", laurel.BoardSpec{Windows: []string{"all", "hour", "day", "last7d"}, Timezone: ptr("Europe/Paris")})
	members := 20
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var batch []laurel.Event
				mu.Lock()
				for j := range 1 + i%5 {
					id := fmt.Sprintf("r%d-g%d-%d-%d", round, g, i, j)
					m := "m" + strconv.Itoa((g*7+i+j)%members)
					sent[id] = m
					batch = append(batch, laurel.Event{Board: "pl", Member: m, Value: 1, ID: id})
				}
				mu.Unlock()
				if _, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if crashed == nil {
					for _, ev := range batch {
						acked[ev.ID] = ev.Member
					}
				}
				mu.Unlock()
			}
		}()
	}
	if !atBoundary {
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		crash()
	}
	for {
		mu.Lock()
		done := crashed != nil
		mu.Unlock()
		if done {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	e.Close()

	e, err = embedded.Open("/db", embedded.Options{FS: crashed, Now: clock.Now})
	if err != nil {
		t.Fatalf("round %d: open after the crash: %v", round, err)
	}
	defer e.Close()
	// Which of the sent events survived: resubmitting one says duplicate if it did. Read
	// the scores first, as the resubmits change them.
	scores := make(map[string]int64)
	for m := range members {
		me, err := e.Member(ctx, laurel.Query{Board: "pl"}, "m"+strconv.Itoa(m))
		if err == nil {
			scores[me.Entry.Member] = me.Entry.Score
		} else if laurel.ErrorCode(err) != laurel.ENotFound {
			t.Fatal(err)
		}
	}
	// Every event that survived has its history point, the last ones included.
	for m, sc := range scores {
		pts, err := e.History(ctx, "pl", "all", m, laurel.MaxHistoryLimit)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(sc, laurel.MaxHistoryLimit); int64(len(pts)) != want {
			t.Errorf("round %d: %s scores %d with %d history points, want %d", round, m, sc, len(pts), want)
		}
	}
	survived := make(map[string]int64)
	lost := 0
	for id, m := range sent {
		res, err := e.Submit(ctx, []laurel.Event{{Board: "pl", Member: m, Value: 1, ID: id}}, laurel.SubmitOptions{NoRanks: true})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Status == laurel.StatusDuplicate {
			survived[m]++
		} else if _, ok := acked[id]; ok {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("round %d (crash %s): %d of %d acknowledged events lost", round, map[bool]string{true: "at a commit", false: "at a random moment"}[atBoundary], lost, len(acked))
	}
	for m := range members {
		name := "m" + strconv.Itoa(m)
		if scores[name] != survived[name] {
			t.Errorf("round %d: %s scores %d after the crash, but %d of its events survived", round, name, scores[name], survived[name])
		}
	}
	if err := e.Check(); err != nil {
		t.Error(err)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	t.Logf("round %d: crash %s after %d acknowledged of %d sent, %s to %s", round, map[bool]string{true: "at a commit", false: "at a random moment"}[atBoundary], len(acked), len(sent),
		time.UnixMilli(began).In(paris).Format("15:04 MST"), time.UnixMilli(clock.Now()).In(paris).Format("15:04 MST"))
}

// flagInt returns the value of the flag name (-seed, registered by package laureltest), or 0.
func flagInt(name string) uint64 {
	f := flag.Lookup(name)
	if f == nil {
		return 0
	}
	v, err := strconv.ParseUint(f.Value.String(), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// seed returns the -seed flag, or a fresh seed, and logs it so that a failure can be replayed.
func seed(t *testing.T) uint64 {
	s := flagInt("seed")
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed=%d)", s, s)
	return s
}

// cloneSafeFS is a crashable vfs.MemFS that a CrashClone can copy while the store runs.
// Two of MemFS's operations read-lock its clone lock twice, so that a CrashClone waiting
// between the two locks deadlocks both (a bug of the test file system alone: the operating
// system's has no such lock): Link, which Pebble uses to ingest a seal's file, and
// ReuseForWrite, by which it recycles an old WAL file. Here links fail, so Pebble copies the
// file instead, and a WAL file is made anew rather than recycled.
type cloneSafeFS struct{ vfs.FS }

func (cloneSafeFS) Link(oldname, newname string) error {
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.ErrUnsupported}
}

func (fs cloneSafeFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.Remove(oldname); err != nil {
		return nil, err
	}
	return fs.Create(newname, category)
}

// TestCloneSafeFS: Pebble recycling WAL files while crash clones are taken, as the crash
// tests do, never deadlocks (one run of TestReplayAfterCrash hung so on MemFS itself).
func TestCloneSafeFS(t *testing.T) {
	mem := vfs.NewCrashableMem()
	fs := cloneSafeFS{mem}
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("/d/0", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	const reuses = 50_000
	reused := make(chan error, 1)
	go func() {
		for i := range reuses {
			f, err := fs.ReuseForWrite(fmt.Sprintf("/d/%d", i), fmt.Sprintf("/d/%d", i+1), vfs.WriteCategoryUnspecified)
			if err != nil {
				reused <- err
				return
			}
			f.Close()
		}
		reused <- nil
	}()
	var stop atomic.Bool
	cloning := make(chan struct{})
	go func() {
		defer close(cloning)
		for i := 0; i < 5_000 && !stop.Load(); i++ {
			mem.CrashClone(vfs.CrashCloneCfg{})
		}
	}()
	select {
	case err := <-reused:
		stop.Store(true)
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%d WAL files recycled while crash clones were taken: not done after 20 s, deadlocked", reuses)
	}
	<-cloning
	if _, err := fs.Stat(fmt.Sprintf("/d/%d", reuses)); err != nil {
		t.Fatalf("the last recycled file: %v", err)
	}
}
