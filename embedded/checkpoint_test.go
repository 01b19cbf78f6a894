package embedded_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestReplayAfterCrash: the aggregates of open periods and all are written behind the events
// (checkpoint.go), so after a crash the store replays its log. The power fails after every
// commit in turn (the file system as it was synced then) of a random history: submits with and
// without ids, retractions, deletions of members and of a board, hidden members, a window
// added, periods closing as the clock runs, checkpoints every few events. Each recovered store must hold, in every open
// period, bucket and all, exactly the aggregate of the member's surviving events. With -short
// (CI's race detector, which makes each open some ten times slower) one round of three, its
// store opened after every third commit, from one chosen at random.
func TestReplayAfterCrash(t *testing.T) {
	s := seed(t)
	rounds, stride := 3, 1
	if testing.Short() {
		rounds, stride = 1, 3
	}
	for round := range rounds {
		replayRound(t, rand.New(rand.NewPCG(s, uint64(round))), stride)
	}
}

func replayRound(t *testing.T, rng *rand.Rand, stride int) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	var (
		mu     sync.Mutex
		clones []*vfs.MemFS
	)
	clock := laureltest.NewClock("2026-10-24T22:00:00Z")
	lag := 1 + rng.IntN(30)
	seal := 1 + rng.IntN(60) // seals, and deletions that seal, among the commits
	// The checkpoint file is written whole again each time it doubles from a few KiB.
	rewriteMin := int64(256 + rng.IntN(4096))
	opts := embedded.Options{FS: cloneSafeFS{fs}, Now: clock.Now, CheckpointLag: lag, SealEvents: seal, CheckpointFileMin: rewriteMin, OnCommit: func(int, int, time.Duration) {
		mu.Lock()
		clones = append(clones, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
		mu.Unlock()
	}}
	e, err := embedded.Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "sum", laurel.BoardSpec{Windows: []string{"all", "hour", "day", "last3h"}, Timezone: ptr("Europe/Paris"), LateLimit: ptr("10m")})
	putBoard(t, e, "best", laurel.BoardSpec{Mode: ptr("best"), Windows: []string{"all", "hour"}})
	// A board with a subscore, its mode and orders drawn: its events carry subscores.
	subMode, subOrder := []string{"best", "last", "sum"}[rng.IntN(3)], []string{"asc", "desc"}[rng.IntN(2)]
	putBoard(t, e, "sub", laurel.BoardSpec{Mode: ptr(subMode), Subscore: ptr(subOrder), Windows: []string{"all", "hour", "last3h"}, LateLimit: ptr("10m")})
	t.Logf("board sub: mode %s, subscore %s", subMode, subOrder)
	members := []string{"ada", "bob", "cy", "dee", "eve", "fox", "gus"}
	var ids []string
	for i := range 150 {
		switch r := rng.IntN(100); {
		case r < 70:
			evs := make([]laurel.Event, 1+rng.IntN(4))
			for j := range evs {
				evs[j] = laurel.Event{Board: []string{"sum", "best", "sub"}[rng.IntN(3)], Member: members[rng.IntN(len(members))], Value: int64(rng.IntN(21) - 5)}
				if evs[j].Board == "sub" {
					evs[j].Value %= 3 // pairs that tie on score, for the subscore to decide
					evs[j].Sub, evs[j].HasSub = int64(rng.IntN(7)-3), true
				}
				if rng.IntN(2) == 0 {
					evs[j].ID = fmt.Sprintf("e%d-%d", i, j)
					ids = append(ids, evs[j].Board+"/"+evs[j].ID)
				}
				if rng.IntN(5) == 0 {
					evs[j].TS, evs[j].HasTS = clock.Now()-int64(rng.IntN(8))*60_000, true
				}
			}
			if _, err := e.Submit(ctx, evs, laurel.SubmitOptions{}); err != nil && laurel.ErrorCode(err) != laurel.ETooLate {
				t.Fatal(err)
			}
		case r < 80 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			board, id, _ := cut(id)
			if err := e.Retract(ctx, board, id); err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
				t.Fatal(err)
			}
		case r < 83:
			if err := e.DeleteMember(ctx, members[rng.IntN(len(members))]); err != nil {
				t.Fatal(err)
			}
		case r < 87:
			m := members[rng.IntN(len(members))]
			var err error
			if rng.IntN(2) == 0 {
				err = e.Hide(ctx, m)
			} else {
				err = e.Unhide(ctx, m)
			}
			if err != nil {
				t.Fatal(err)
			}
		case r < 88:
			putBoard(t, e, "best", laurel.BoardSpec{Windows: []string{"all", "hour", "day"}})
		case r < 90:
			// Deleted and made again: nothing of the old board may come back.
			if err := e.DeleteBoard(ctx, "best"); err != nil {
				t.Fatal(err)
			}
			putBoard(t, e, "best", laurel.BoardSpec{Mode: ptr("best"), Windows: []string{"all", "hour"}})
		default:
			clock.Advance(time.Duration(rng.IntN(20)) * time.Minute)
			if _, err := e.Page(ctx, laurel.Query{Board: "sum", Window: "hour"}, 0, 1, laurel.ScoreRange{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("lag %d, checkpoint file rewritten from %d bytes, %d commits", lag, rewriteMin, len(clones))
	first := rng.IntN(stride)
	fromFile := 0 // rolling windows opened from the checkpoint file's buckets
	defer func() {
		if fromFile == 0 {
			t.Errorf("no open made a rolling window from the checkpoint file's buckets")
		}
	}()
	for i, clone := range clones {
		if i%stride != first {
			continue
		}
		// Every other crash also finds the checkpoint file as the next commit left it
		// before its own durable write: with a frame that no durable commit names, whole or
		// cut short, or written whole again. Nothing of that frame may count, then or after
		// the commits that follow take its number.
		torn := ""
		if i/stride%2 == 1 && i+1 < len(clones) {
			torn = tearCheckpointFile(t, clone, clones[i+1], rng)
		}
		opts.FS, opts.OnCommit = clone, nil
		r, err := embedded.Open("/db", opts)
		if err != nil {
			t.Fatalf("crash after commit %d%s: %v", i+1, torn, err)
		}
		check := func(when string) {
			t.Helper()
			if err := aggsAgreeWithEvents(r, clock.Now()); err != nil {
				t.Fatalf("crash after commit %d%s (lag %d)%s: %v", i+1, torn, lag, when, err)
			}
			if err := r.Check(); err != nil {
				t.Fatalf("crash after commit %d%s%s: %v", i+1, torn, when, err)
			}
		}
		check("")
		fromFile += r.BucketsFromFile()
		if err := checkpointFileEnds(clone); err != nil {
			t.Fatalf("crash after commit %d%s: the checkpoint file after Open: %v", i+1, torn, err)
		}
		if torn != "" {
			for j := range 3 {
				ev := laurel.Event{Board: "sum", Member: members[rng.IntN(len(members))], Value: int64(1 + j)}
				if _, err := r.Submit(ctx, []laurel.Event{ev}, laurel.SubmitOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r.Close()
			if r, err = embedded.Open("/db", opts); err != nil {
				t.Fatalf("crash after commit %d%s, three commits and a restart: %v", i+1, torn, err)
			}
			check(", three commits and a restart")
		}
		r.Close()
	}
}

// checkpointFileEnds reports an error unless the checkpoint file in fs is frames, numbered in
// order, then nothing or zeros alone: Open leaves no bytes of frames that no durable commit
// named where later frames go, or a crash after them would find them their successors.
func checkpointFileEnds(fs *vfs.MemFS) error {
	f, err := fs.Open("/db/checkpoints")
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	at, prev := 0, uint64(0)
	for at+16 <= len(b) {
		n, length := binary.BigEndian.Uint64(b[at:]), int(binary.BigEndian.Uint32(b[at+8:]))
		if n < prev || at+16+length > len(b) || crc32.Checksum(b[at+16:at+16+length], crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(b[at+12:]) {
			break
		}
		at, prev = at+16+length, n
	}
	if i := bytes.IndexFunc(b[at:], func(r rune) bool { return r != 0 }); i >= 0 {
		return fmt.Errorf("%d bytes, frames through %d (number %d), then a byte not zero at %d", len(b), at, prev, at+i)
	}
	return nil
}

// tearCheckpointFile puts into crashed the checkpoint file of next, a crash one commit later:
// whole, or, when next's extends crashed's, cut at a random length past it. It says which.
func tearCheckpointFile(t *testing.T, crashed, next *vfs.MemFS, rng *rand.Rand) string {
	t.Helper()
	read := func(fs *vfs.MemFS) []byte {
		f, err := fs.Open("/db/checkpoints")
		if err != nil {
			return nil
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	was, b := read(crashed), read(next)
	what := ", with the next commit's checkpoint file"
	if len(b) > len(was) && bytes.Equal(b[:len(was)], was) {
		b = b[:len(was)+rng.IntN(len(b)-len(was)+1)]
		what = fmt.Sprintf(", with the next commit's checkpoint file cut at %d of its %d new bytes", len(b)-len(was), len(read(next))-len(was))
	}
	f, err := crashed.Create("/db/checkpoints", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return what
}

func cut(s string) (string, string, bool) {
	i := bytes.IndexByte([]byte(s), '/')
	return s[:i], s[i+1:], true
}

// aggsAgreeWithEvents exports s and checks that every aggregate in it is the one its member's
// events make, and that every event not retracted is counted in an aggregate of each of its
// board's windows, unless its period closed or its bucket left the rolling window's span at
// now.
func aggsAgreeWithEvents(s *embedded.Store, now int64) error {
	var buf bytes.Buffer
	if err := laureltest.Export(s, &buf); err != nil {
		return err
	}
	d, err := laurel.NewDumpReader(&buf)
	if err != nil {
		return err
	}
	boards := make(map[string]laurel.Board)
	events := make(map[[2]string][]laurel.Counted) // board, member
	aggs := make(map[[4]string]laurel.DumpAgg)     // board, window, start, member
	closed := make(map[[3]string]bool)             // board, window, start
	for {
		rec, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch {
		case rec.Board != nil:
			boards[rec.Board.ID] = *d.Board()
		case rec.Event != nil && !rec.Event.Retracted:
			ev := rec.Event
			k := [2]string{ev.Board, ev.Member}
			events[k] = append(events[k], laurel.Counted{Value: ev.Value, Sub: ev.Sub, TS: ev.TS, Seq: ev.Seq})
		case rec.Agg != nil:
			a := rec.Agg
			aggs[[4]string{a.Board, a.Window, fmt.Sprint(a.Start), a.Member}] = *a
		case rec.Closed != nil:
			c := rec.Closed
			closed[[3]string{c.Board, c.Window, fmt.Sprint(c.Start)}] = true
		}
	}
	for k, evs := range events {
		b := boards[k[0]]
		cal := b.Calendar()
		for _, w := range b.Windows {
			if w.IsRolling() {
				// Buckets that left the window's span may be dropped; those in it are kept.
				cs, ce := cal.Span(w, time.UnixMilli(now))
				for _, ev := range evs {
					bs, be := cal.Bucket(w, time.UnixMilli(ev.TS))
					if bs.Before(cs) || be.After(ce) {
						continue
					}
					sp := laurel.Span{Start: bs.UnixMilli(), End: be.UnixMilli()}
					want, err := laurel.AggOf(b.Mode, b.Ordering(), evs, sp)
					if err != nil {
						return err
					}
					got, ok := aggs[[4]string{k[0], w.String(), fmt.Sprint(sp.Start), k[1]}]
					if !ok || got.Score != want.Score || got.Sub != want.Sub || got.At != want.At {
						return fmt.Errorf("board %s window %s bucket %d member %s: stored %+v (present %v), events make %+v", k[0], w, sp.Start, k[1], got, ok, want)
					}
				}
				continue
			}
			seen := make(map[int64]bool)
			for _, ev := range evs {
				start, end := cal.SpanOf(w, ev.TS)
				if seen[start] || closed[[3]string{k[0], w.String(), fmt.Sprint(start)}] {
					continue
				}
				seen[start] = true
				sp := laurel.Span{Start: start, End: end}
				if w.Kind == laurel.WindowAll {
					sp = laurel.Span{}
				}
				want, err := laurel.AggOf(b.Mode, b.Ordering(), evs, sp)
				if err != nil {
					return err
				}
				got, ok := aggs[[4]string{k[0], w.String(), fmt.Sprint(start), k[1]}]
				if !ok || got.Score != want.Score || got.Sub != want.Sub || got.At != want.At {
					return fmt.Errorf("board %s window %s span %d member %s: stored %+v (present %v), events make %+v", k[0], w, start, k[1], got, ok, want)
				}
			}
		}
	}
	for k, a := range aggs {
		b := boards[k[0]]
		w, err := laurel.ParseWindow(k[1])
		if err != nil {
			return err
		}
		if w.IsCalendar() || w.Kind == laurel.WindowAll {
			continue // checked above, from the events
		}
		_, end := b.Calendar().Bucket(w, time.UnixMilli(a.Start))
		want, err := laurel.AggOf(b.Mode, b.Ordering(), events[[2]string{a.Board, a.Member}], laurel.Span{Start: a.Start, End: end.UnixMilli()})
		if err != nil {
			return err
		}
		if !want.Present() || a.Score != want.Score || a.Sub != want.Sub || a.At != want.At {
			return fmt.Errorf("board %s window %s bucket %d member %s: stored %+v, events make %+v", a.Board, a.Window, a.Start, a.Member, a, want)
		}
	}
	return nil
}

// TestBucketRetiredWithinASubmit: a submit's change to a rolling window's newest bucket is
// written behind; when one submit changes that bucket and then, with an event of the next
// hour, makes a new bucket the newest, the older one's change must still reach the store with
// the submit, and survive a crash right after it.
func TestBucketRetiredWithinASubmit(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	var clones []*vfs.MemFS
	clock := laureltest.NewClock("2026-10-24T21:50:00Z")
	opts := embedded.Options{FS: cloneSafeFS{fs}, Now: clock.Now, CheckpointLag: 1000, OnCommit: func(int, int, time.Duration) {
		clones = append(clones, fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
	}}
	e, err := embedded.Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"last3h"}})
	submit := func(evs ...laurel.Event) {
		t.Helper()
		if _, err := e.Submit(ctx, evs, laurel.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	submit(laurel.Event{Board: "b", Member: "ada", Value: 5}) // the 21:00 bucket, the newest
	clock.Advance(20 * time.Minute)                           // 22:10
	early := clock.Now() - 15*60_000                          // 21:55
	submit(
		laurel.Event{Board: "b", Member: "ada", Value: 7, TS: early, HasTS: true}, // the 21:00 bucket, still the newest
		laurel.Event{Board: "b", Member: "bob", Value: 1},                         // the 22:00 bucket: now the newest
	)
	crashed := clones[len(clones)-1] // right after that submit's commit
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for i, fs := range []vfs.FS{crashed, clones[len(clones)-1]} { // a crash, and a clean close
		opts.FS, opts.OnCommit = fs, nil
		r, err := embedded.Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := aggsAgreeWithEvents(r, clock.Now()); err != nil {
			t.Errorf("crash %d: %v", i, err)
		}
		if err := r.Check(); err != nil {
			t.Errorf("crash %d: %v", i, err)
		}
		p, err := r.Page(ctx, laurel.Query{Board: "b", Window: "last3h"}, 0, 10, laurel.ScoreRange{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) != 2 || p.Entries[0].Member != "ada" || p.Entries[0].Score != 12 {
			t.Errorf("crash %d: page %+v, want ada 12 first of 2", i, p.Entries)
		}
		r.Close()
	}
}

// TestCrashDuringRewrite: a crash while the checkpoint file is being written whole again
// (kill -9 at any write of the new file, or just before it is renamed over the old) leaves the
// old file, which Open reads: every rolling window's span from its copy of the buckets, equal
// to the store's (Check), every aggregate what the events make, after the clock moved past a
// bucket's end too; and the store goes on from there.
func TestCrashDuringRewrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 4))
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	fs := &rewriteCrashFS{FS: cloneSafeFS{mem}, mem: mem}
	clock := laureltest.NewClock("2026-12-07T21:30:00Z")
	opts := embedded.Options{FS: fs, Now: clock.Now, CheckpointLag: 1 + rng.IntN(100), CheckpointFileMin: 8 << 10}
	e, err := embedded.Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "r", laurel.BoardSpec{Windows: []string{"all", "last3h"}})
	putBoard(t, e, "l", laurel.BoardSpec{Mode: ptr("best"), Windows: []string{"last2d"}})
	var ids []string
	for i := 0; len(fs.taken()) < 16 && i < 400; i++ {
		evs := make([]laurel.Event, 1+rng.IntN(100))
		for j := range evs {
			evs[j] = laurel.Event{Board: []string{"r", "l"}[rng.IntN(2)], Member: fmt.Sprintf("m%d", rng.IntN(500)), Value: int64(rng.IntN(100) - 20)}
			if rng.IntN(3) == 0 {
				evs[j].TS, evs[j].HasTS = clock.Now()-rng.Int64N(4*3600_000), true
			}
			if rng.IntN(4) == 0 {
				evs[j].ID = fmt.Sprintf("e%d-%d", i, j)
				ids = append(ids, evs[j].Board+"/"+evs[j].ID)
			}
		}
		if _, err := e.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true}); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(4) == 0 && len(ids) > 0 {
			k := rng.IntN(len(ids))
			board, id, _ := cut(ids[k])
			if err := e.Retract(ctx, board, id); err != nil {
				t.Fatal(err)
			}
			ids = slices.Delete(ids, k, k+1) // retracted again, it would be not_found
		}
		clock.Advance(time.Duration(rng.IntN(90)) * time.Second)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	clones := fs.taken()
	if len(clones) == 0 {
		t.Fatal("no rewrite was under way at a crash: the test does not test what it says")
	}
	t.Logf("%d crashes during rewrites", len(clones))
	for i, c := range clones {
		now := clock.Now()
		if i%2 == 1 {
			now += 3600_000 // down for an hour: a bucket left the span
		}
		at := laureltest.NewClock(time.UnixMilli(now).UTC().Format(time.RFC3339Nano))
		o := embedded.Options{FS: c.fs, Now: at.Now, CheckpointFileMin: opts.CheckpointFileMin}
		for round := range 2 { // after the crash, and after writes and a restart
			r, err := embedded.Open("/db", o)
			if err != nil {
				t.Fatalf("crash %d (%s), open %d: %v", i, c.when, round, err)
			}
			if err := r.Check(); err != nil {
				t.Fatalf("crash %d (%s), open %d: %v", i, c.when, round, err)
			}
			if err := aggsAgreeWithEvents(r, at.Now()); err != nil {
				t.Fatalf("crash %d (%s), open %d: %v", i, c.when, round, err)
			}
			if n := r.BucketsFromFile(); n != 2 {
				t.Fatalf("crash %d (%s), open %d: %d rolling windows from the checkpoint file, want 2", i, c.when, round, n)
			}
			for j := range 20 {
				ev := laurel.Event{Board: []string{"r", "l"}[j%2], Member: fmt.Sprintf("m%d", rng.IntN(600)), Value: int64(j)}
				if _, err := r.Submit(ctx, []laurel.Event{ev}, laurel.SubmitOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// rewriteCrashFS takes a crash clone of mem at writes of a rewrite's new checkpoint file (one
// with what was not synced yet, one without) and just before it is renamed over the old one.
type rewriteCrashFS struct {
	vfs.FS
	mem    *vfs.MemFS
	mu     sync.Mutex
	clones []rewriteCrash
}

type rewriteCrash struct {
	fs   *vfs.MemFS
	when string
}

func (fs *rewriteCrashFS) take(when string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	cfg := vfs.CrashCloneCfg{}
	if len(fs.clones)%2 == 1 {
		cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))}
	}
	if len(fs.clones) < 16 {
		fs.clones = append(fs.clones, rewriteCrash{fs.mem.CrashClone(cfg), fmt.Sprintf("%s, unsynced %d%%", when, cfg.UnsyncedDataPercent)})
	}
}

func (fs *rewriteCrashFS) taken() []rewriteCrash {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.clones
}

func (fs *rewriteCrashFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, "checkpoints.new") {
		return f, err
	}
	return &rewriteCrashFile{File: f, fs: fs}, nil
}

func (fs *rewriteCrashFS) Rename(oldname, newname string) error {
	if strings.HasSuffix(oldname, "checkpoints.new") {
		fs.take("before the rename")
	}
	return fs.FS.Rename(oldname, newname)
}

type rewriteCrashFile struct {
	vfs.File
	fs *rewriteCrashFS
}

func (f *rewriteCrashFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.fs.take(fmt.Sprintf("after writing %d bytes at %d of the new file", len(p), off))
	return n, err
}
