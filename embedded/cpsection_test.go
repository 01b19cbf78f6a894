package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// sectionBoards is what TestCheckpointSections and TestKeyedCheckpointFile write: a board
// without a subscore and one with, on windows of every kind the file holds.
var sectionBoards = map[string]laurel.BoardSpec{
	"b": {Windows: []string{"all", "day", "hour", "last3h"}},
	"s": {Windows: []string{"all", "week"}, Subscore: ptr("desc")},
}

// writeMembers submits one or more events to each of n members of every sectionBoards board,
// in batches, values and subscores drawn from rng (some members twice, some with negative
// scores, so that every varint's sign is written).
func writeMembers(t *testing.T, e *embedded.Store, rng *rand.Rand, n int) {
	t.Helper()
	ctx := context.Background()
	for board, spec := range sectionBoards {
		batch := make([]laurel.Event, 0, laurel.MaxBatch)
		for i := range n + n/4 {
			m := i
			if i >= n {
				m = rng.IntN(n)
			}
			ev := laurel.Event{Board: board, Member: fmt.Sprintf("member-%d", m), Value: rng.Int64N(2_000_000) - 1_000_000}
			if spec.Subscore != nil {
				ev.Sub, ev.HasSub = rng.Int64N(1000)-500, true
			}
			batch = append(batch, ev)
			if len(batch) == cap(batch) || i == n+n/4-1 {
				if _, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true}); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
}

// standings is what a store ranks: each window's total and first 1000 entries.
func standings(t *testing.T, e *embedded.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	got := make(map[string]string)
	for board, spec := range sectionBoards {
		info, err := e.Board(ctx, board)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range spec.Windows {
			p, err := e.Page(ctx, laurel.Query{Board: board, Window: w}, 0, 1000, laurel.ScoreRange{})
			if err != nil {
				t.Fatal(err)
			}
			s := fmt.Sprintf("total %d:", info.Current[w].Total)
			for _, en := range p.Entries {
				s += fmt.Sprintf(" %s=%d/%d@%d", en.Member, en.Score, en.Sub, en.ReachedAt)
			}
			got[board+"/"+w] = s
		}
	}
	return got
}

func sameStandings(t *testing.T, when string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("%s: %s differs:\n got %.300s\nwant %.300s", when, k, got[k], w)
		}
	}
}

// TestCheckpointSections: a checkpoint file written whole holds each board's members once and
// its spans' and rolling window's buckets' entries by handle, in records cut to fit frames (a
// span of 150 000 entries takes several); the store opens from it to what it held, twice (the
// second time from the file the first open wrote on).
func TestCheckpointSections(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 1))
	dir := t.TempDir()
	clock := laureltest.NewClock("2026-12-07T10:00:00Z")
	opts := embedded.Options{Now: clock.Now, CheckpointFileMin: 1 << 20}
	e, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for board, spec := range sectionBoards {
		putBoard(t, e, board, spec)
	}
	writeMembers(t, e, rng, 150_000)
	want := standings(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	records, err := embedded.CheckpointSections(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	spans := 0
	for _, spec := range sectionBoards {
		spans += len(spec.Windows)
	}
	if records <= spans+len(sectionBoards) {
		t.Fatalf("%d records of sections: the file was not written whole with spans cut into records", records)
	}
	t.Logf("%d records of sections", records)
	for round := range 2 {
		e, err := embedded.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("open %d: %v", round+1, err)
		}
		if n := e.BucketsFromFile(); n != 1 {
			t.Fatalf("open %d: %d rolling windows from the checkpoint file, want 1", round+1, n)
		}
		sameStandings(t, fmt.Sprintf("open %d", round+1), standings(t, e), want)
		writeMembers(t, e, rng, 1000) // appended after the sections, by key
		want = standings(t, e)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyedCheckpointFile: a store whose checkpoint file an earlier build wrote, every entry
// a keyed record and no bucket, opens to what it held (its rolling window from Pebble); its
// first writes after that write it whole again, as sections, from which it opens again.
func TestKeyedCheckpointFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 2))
	dir := t.TempDir()
	clock := laureltest.NewClock("2026-12-07T10:00:00Z")
	opts := embedded.Options{Now: clock.Now, CheckpointLag: 50, CheckpointFileMin: 8 << 10}
	e, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for board, spec := range sectionBoards {
		putBoard(t, e, board, spec)
	}
	writeMembers(t, e, rng, 2000)
	want := standings(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	keyed, err := embedded.KeyCheckpoints(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if records, err := embedded.CheckpointSections(vfs.Default, dir); err != nil || records > 0 || keyed == 0 {
		t.Fatalf("the file keyed: %d entries keyed, %d records of sections left (%v)", keyed, records, err)
	}
	t.Logf("%d entries keyed", keyed)
	if e, err = embedded.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(); err != nil {
		t.Fatalf("the keyed file opened: %v", err)
	}
	if n := e.BucketsFromFile(); n != 0 {
		t.Fatalf("the keyed file opened: %d rolling windows from it, which holds no buckets", n)
	}
	sameStandings(t, "the keyed file opened", standings(t, e), want)
	// Its sections take nothing, so the first commit starts a rewrite, which converts it.
	laureltest.Within(t, 10*time.Second, "the keyed file written whole again, as sections", func() bool {
		writeMembers(t, e, rng, 20)
		records, err := embedded.CheckpointSections(vfs.Default, dir)
		if err != nil {
			t.Fatal(err)
		}
		return records > 0
	})
	want = standings(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = embedded.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Check(); err != nil {
		t.Fatalf("rewritten with sections: %v", err)
	}
	if n := e.BucketsFromFile(); n != 1 {
		t.Fatalf("rewritten with sections: %d rolling windows from the file, want 1", n)
	}
	sameStandings(t, "rewritten with sections", standings(t, e), want)
}

// bucketBoards is what TestBucketsFromCheckpointFile writes: rolling windows of hour and of
// day buckets, in sum, best (with a subscore) and last modes, one board with no other window.
var bucketBoards = map[string]laurel.BoardSpec{
	"r": {Windows: []string{"all", "last3h"}},
	"q": {Mode: ptr("best"), Windows: []string{"day", "last2d"}, Subscore: ptr("desc")},
	"l": {Mode: ptr("last"), Windows: []string{"last3h"}},
}

// TestBucketsFromCheckpointFile: a store restarted from its checkpoint file's copy of the
// rolling windows' buckets (cpsection.go, "Buckets") answers every read as a store that never
// stopped, given the same writes at the same instants: events in the newest bucket and in
// older ones, retractions, deleted members, the file written whole again now and then; each
// restart after the clock moved while the store was down, across bucket boundaries (an hour,
// a day), so that buckets left the span. Once its file is as a build before this one wrote it,
// without buckets, the store opens from Pebble's, then holds them again after its next
// rewrite.
func TestBucketsFromCheckpointFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	ctx := context.Background()
	clock := laureltest.NewClock("2026-12-07T21:10:00Z")
	opts := embedded.Options{Now: clock.Now, CheckpointLag: 1 + rng.IntN(500), CheckpointFileMin: 32 << 10}
	dirs := [2]string{t.TempDir(), t.TempDir()} // the store that never stops, the one restarted
	var stores [2]*embedded.Store
	for i, dir := range dirs {
		e, err := embedded.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = e
		for board, spec := range bucketBoards {
			putBoard(t, e, board, spec)
		}
	}
	defer func() { stores[0].Close(); stores[1].Close() }()
	rolling := 0
	for _, spec := range bucketBoards {
		for _, w := range spec.Windows {
			if strings.HasPrefix(w, "last") {
				rolling++
			}
		}
	}
	// both does the same to each store, and they must answer the same.
	both := func(what string, fn func(e *embedded.Store) error) {
		t.Helper()
		var errs [2]error
		for i, e := range stores {
			errs[i] = fn(e)
		}
		if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
			t.Fatalf("%s: %v, restarted: %v", what, errs[0], errs[1])
		}
	}
	var ids []string
	rounds := 12
	if testing.Short() {
		rounds = 6 // CI's race detector
	}
	for round := range rounds {
		for range 5 + rng.IntN(10) {
			board := []string{"r", "q", "l"}[rng.IntN(3)]
			batch := make([]laurel.Event, 1+rng.IntN(200))
			for j := range batch {
				ev := laurel.Event{Board: board, Member: fmt.Sprintf("m%d", rng.IntN(3000)), Value: rng.Int64N(2000) - 1000}
				if board == "q" {
					ev.Sub, ev.HasSub = rng.Int64N(10)-5, true
				}
				if rng.IntN(3) == 0 { // an older bucket's, up to five hours back
					ev.TS, ev.HasTS = clock.Now()-rng.Int64N(5*3600_000), true
				}
				if rng.IntN(4) == 0 {
					ev.ID = fmt.Sprintf("e%d-%d", round, len(ids))
					ids = append(ids, board+"/"+ev.ID)
				}
				batch[j] = ev
			}
			both("submit", func(e *embedded.Store) error {
				_, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true})
				return err
			})
			clock.Advance(time.Duration(rng.IntN(120)) * time.Second)
		}
		for range rng.IntN(20) {
			board, id, _ := cut(ids[rng.IntN(len(ids))])
			both("retract", func(e *embedded.Store) error { return e.Retract(ctx, board, id) })
		}
		if rng.IntN(3) == 0 {
			m := fmt.Sprintf("m%d", rng.IntN(3000))
			both("delete member", func(e *embedded.Store) error { return e.DeleteMember(ctx, m) })
		}
		stripped := round == rounds*2/3
		if err := stores[1].Close(); err != nil {
			t.Fatal(err)
		}
		if stripped {
			if err := embedded.StripBuckets(vfs.Default, dirs[1]); err != nil {
				t.Fatal(err)
			}
		}
		// Down for minutes, or across a bucket's end, or a day's.
		clock.Advance([]time.Duration{3 * time.Minute, 70 * time.Minute, 26 * time.Hour}[rng.IntN(3)])
		e, err := embedded.Open(dirs[1], opts)
		if err != nil {
			t.Fatal(err)
		}
		stores[1] = e
		want := rolling
		if stripped {
			want = 0
		}
		if got := e.BucketsFromFile(); got != want {
			t.Fatalf("round %d: %d rolling windows opened from the checkpoint file, want %d", round, got, want)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		sameAnswers(t, fmt.Sprintf("round %d", round), stores[0], stores[1], clock.Now())
	}
}

// sameAnswers fails unless live and restarted answer the same reads of bucketBoards: each
// window's total and entries, now and as of an hour ago.
func sameAnswers(t *testing.T, when string, live, restarted *embedded.Store, now int64) {
	t.Helper()
	ctx := context.Background()
	read := func(e *embedded.Store) map[string]string {
		got := make(map[string]string)
		for board, spec := range bucketBoards {
			info, err := e.Board(ctx, board)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range spec.Windows {
				for _, q := range []laurel.Query{{Board: board, Window: w}, {Board: board, Window: w, At: now - 3600_000, HasAt: true}} {
					s := fmt.Sprintf("total %d:", info.Current[w].Total)
					for from := 0; ; from += 1000 {
						p, err := e.Page(ctx, q, from, 1000, laurel.ScoreRange{})
						if err != nil {
							t.Fatal(err)
						}
						for _, en := range p.Entries {
							s += fmt.Sprintf(" %d %s=%d/%d@%d", en.Rank, en.Member, en.Score, en.Sub, en.ReachedAt)
						}
						if len(p.Entries) < 1000 {
							break
						}
					}
					got[fmt.Sprintf("%s/%s at %v", board, w, q.HasAt)] = s
				}
			}
		}
		return got
	}
	sameStandings(t, when, read(restarted), read(live))
}
