package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	"b": {Windows: []string{"all", "day", "hour"}},
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
// its spans' entries by handle, in records cut to fit frames (a span of 150 000 entries takes
// several); the store opens from it to what it held, twice (the second time from the file
// the first open wrote on).
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
		sameStandings(t, fmt.Sprintf("open %d", round+1), standings(t, e), want)
		writeMembers(t, e, rng, 1000) // appended after the sections, by key
		want = standings(t, e)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyedCheckpointFile: a store whose checkpoint file an earlier build wrote, every entry
// a keyed record, opens to what it held; its first writes after that write it whole again,
// as sections, from which it opens again.
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
	sameStandings(t, "rewritten with sections", standings(t, e), want)
}
