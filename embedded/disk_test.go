package embedded_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestDiskFull fills a small disk with writes: each write is answered promptly, the first
// that does not fit with 503 unavailable that stores nothing; the store says so (Failed),
// reads go on, writes resume by themselves once space is freed, it closes promptly, and
// after a restart holds every write it acknowledged.
func TestDiskFull(t *testing.T) {
	disk := laureltest.SmallDisk(t, 32)
	ballast := filepath.Join(disk, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 12<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(disk, "store")
	clock := laureltest.NewClock("2026-11-22T10:00:00Z")
	// The checkpoint file is written whole again each time it doubles from 256 KiB: its
	// rewrites, which need room for a second copy, take part as the disk fills.
	opts := embedded.Options{Now: clock.Now, MemTableSize: 1 << 20, CacheSize: 1 << 20, MinFreeDisk: 8 << 20, CheckpointFileMin: 256 << 10}
	e, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "day"}})
	pad := strings.Repeat("x", 110)
	batch := func(i int) []laurel.Event {
		evs := make([]laurel.Event, 100)
		for j := range evs {
			evs[j] = laurel.Event{Board: "b", Member: fmt.Sprintf("m%05d-%03d-%s", i, j, pad), Value: int64(j + 1), ID: fmt.Sprintf("e%05d-%03d-%s", i, j, pad)}
		}
		return evs
	}
	acked, refused := 0, -1
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < 5000 && time.Now().Before(deadline); i++ {
		start := time.Now()
		_, err := e.Submit(ctx, batch(i), laurel.SubmitOptions{})
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("batch %d took %v", i, took)
		}
		if err != nil {
			if laurel.ErrorCode(err) != laurel.EUnavailable || !strings.Contains(err.Error(), "disk") {
				t.Fatalf("batch %d: %v; want unavailable, saying the disk is full", i, err)
			}
			refused = i
			t.Logf("after %d events: %v", acked, err)
			break
		}
		acked += 100
	}
	if refused < 0 {
		t.Fatalf("the disk never filled: %d events acknowledged", acked)
	}
	if !e.Failed() {
		t.Error("Failed is false with the disk full")
	}
	total := func(e *embedded.Store) int {
		t.Helper()
		p, err := e.Page(ctx, laurel.Query{Board: "b"}, 0, 1, laurel.ScoreRange{})
		if err != nil {
			t.Fatalf("a read with the disk full: %v", err)
		}
		return p.Total
	}
	if n := total(e); n != acked {
		t.Fatalf("%d members ranked, %d acknowledged: the refused write left a trace", n, acked)
	}

	os.Remove(ballast)
	laureltest.Within(t, 5*time.Second, "writes resume once space is freed", func() bool { return !e.Failed() })
	res, err := e.Submit(ctx, batch(refused), laurel.SubmitOptions{})
	if err != nil || res[0].Status != laurel.StatusApplied {
		t.Fatalf("the refused batch again, with space: %+v, %v; want applied (it was not stored before)", res[:1], err)
	}
	acked += 100

	// Close writes the aggregates still behind the events (checkpoint.go): 0.2 s here, 5 s
	// under the race detector on a loaded machine; the promise is CloseTimeout's 10 s.
	start := time.Now()
	err = e.Close()
	t.Logf("close took %v", time.Since(start))
	if err != nil || time.Since(start) > 10*time.Second {
		t.Fatalf("close: %v after %v", err, time.Since(start))
	}
	e, err = embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := total(e); n != acked {
		t.Fatalf("after a restart %d members, %d acknowledged", n, acked)
	}
}

// faultFS is the operating system's file system, except for the syncs of the write-ahead logs
// (*.log): while stall is set they block until it is cleared (a disk that stopped completing
// writes), and once fail is set they fail with EIO (a disk that lost them). While
// stallStore is set, the writes of the store's own write-ahead log (not its log's) block
// too: Pebble then holds the store's batches, as in a write stall.
type faultFS struct {
	vfs.FS
	mu         sync.Mutex
	cond       *sync.Cond
	stall      bool
	stallStore bool
	fail       atomic.Bool
	waiting    int // syncs blocked now
}

func newFaultFS() *faultFS {
	fs := &faultFS{FS: vfs.Default}
	fs.cond = sync.NewCond(&fs.mu)
	return fs
}

func (fs *faultFS) setStall(stall bool) { fs.set(&fs.stall, stall) }

func (fs *faultFS) setStoreStall(stall bool) { fs.set(&fs.stallStore, stall) }

func (fs *faultFS) set(flag *bool, v bool) {
	fs.mu.Lock()
	*flag = v
	fs.mu.Unlock()
	fs.cond.Broadcast()
}

// write is what each write of the store's own write-ahead log goes through.
func (fs *faultFS) write() {
	fs.mu.Lock()
	for fs.stallStore {
		fs.cond.Wait()
	}
	fs.mu.Unlock()
}

// sync is what each sync of the log goes through.
func (fs *faultFS) sync() error {
	fs.mu.Lock()
	fs.waiting++
	for fs.stall {
		fs.cond.Wait()
	}
	fs.waiting--
	fs.mu.Unlock()
	if fs.fail.Load() {
		return syscall.EIO
	}
	return nil
}

func (fs *faultFS) blocked() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.waiting > 0
}

func (fs *faultFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	own := !strings.Contains(name, string(os.PathSeparator)+"log"+string(os.PathSeparator))
	return faultFile{f, fs, own}, nil
}

func (fs *faultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs *faultFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(old, name, c)
	return fs.wrap(name, f, err)
}

type faultFile struct {
	vfs.File
	fs  *faultFS
	own bool // the store's write-ahead log, not its log's
}

func (f faultFile) Write(p []byte) (int, error) {
	if f.own {
		f.fs.write()
	}
	return f.File.Write(p)
}

func (f faultFile) Sync() error {
	if err := f.fs.sync(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f faultFile) SyncData() error {
	if err := f.fs.sync(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f faultFile) SyncTo(n int64) (bool, error) {
	if err := f.fs.sync(); err != nil {
		return false, err
	}
	return f.File.SyncTo(n)
}

// TestStalledDisk: when a commit does not complete (the disk stopped answering), new writes
// are refused promptly with unavailable rather than queued behind it, the store says so
// (Failed), a write whose caller gave up before the writer took it is never stored, Close
// gives up after CloseTimeout, and the write in the stalled commit completes once the disk
// answers again.
func TestStalledDisk(t *testing.T) {
	e, fs := openFaulty(t)
	ctx := context.Background()

	fs.setStall(true)
	stuck := make(chan error, 1)
	go func() {
		_, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: "bob", Value: 2, ID: "b1"}}, laurel.SubmitOptions{})
		stuck <- err
	}()
	laureltest.Within(t, 5*time.Second, "the commit stalls", fs.blocked)
	// Queued behind the stalled commit, this caller gives up before the writer takes it.
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := e.Submit(wctx, []laurel.Event{{Board: "b", Member: "carol", Value: 3, ID: "c1"}}, laurel.SubmitOptions{})
	cancel()
	if err == nil {
		t.Fatal("a write queued behind a stalled commit succeeded")
	}
	laureltest.Within(t, 10*time.Second, "Failed once the commit stalls", e.Failed)
	start := time.Now()
	_, err = e.Submit(ctx, []laurel.Event{{Board: "b", Member: "dave", Value: 4}}, laurel.SubmitOptions{})
	if laurel.ErrorCode(err) != laurel.EUnavailable || time.Since(start) > time.Second {
		t.Fatalf("a write while the commit stalls: %v after %v; want unavailable at once", err, time.Since(start))
	}
	if p, err := e.Page(ctx, laurel.Query{Board: "b"}, 0, 10, laurel.ScoreRange{}); err != nil || p.Total != 1 {
		t.Fatalf("a read while the commit stalls: %+v, %v; want alice", p, err)
	}
	start = time.Now()
	if err := e.Close(); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("close with a stalled commit: %v after %v; want an error after CloseTimeout", err, time.Since(start))
	}

	fs.setStall(false)
	select {
	case err := <-stuck:
		if err != nil {
			t.Fatalf("the write of the stalled commit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled commit never completed")
	}
	if p, err := e.Page(ctx, laurel.Query{Board: "b"}, 0, 10, laurel.ScoreRange{}); err != nil || p.Total != 2 || p.Entries[0].Member != "bob" {
		t.Fatalf("after the disk answered: %+v, %v; want bob and alice, not carol", p, err)
	}
}

// TestPebbleErrorsShareTheirMessage: Pebble's errors that differ only in their details (a
// flush retried on a full disk names a new file each time, thousands a second) are logged
// under one message, which the server's log summarises, with the details beside it.
func TestPebbleErrorsShareTheirMessage(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	for _, file := range []string{"000123.sst", "000124.sst"} {
		embedded.PebbleErrorf(log, "background error: %s", fmt.Errorf("write /d/%s: no space left on device", file))
	}
	var msgs, details []string
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Msg, Detail string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		msgs, details = append(msgs, rec.Msg), append(details, rec.Detail)
	}
	if len(msgs) != 2 || msgs[0] != "pebble: background error" || msgs[1] != msgs[0] || !strings.Contains(details[1], "000124.sst: no space left") {
		t.Fatalf("messages %q, details %q", msgs, details)
	}
}

// openFaulty opens a store on a faultFS, with board b holding alice's event.
func openFaulty(t *testing.T) (*embedded.Store, *faultFS) {
	t.Helper()
	fs := newFaultFS()
	clock := laureltest.NewClock("2026-11-22T10:00:00Z")
	e, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now, FS: fs, CloseTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "b", laurel.BoardSpec{})
	submit(t, e, laurel.Event{Board: "b", Member: "alice", Value: 1})
	return e, fs
}

// TestStalledApply: a commit whose log record is durable but whose batch Pebble does not take
// (a write stall in the store's own Pebble) counts as a stalled commit: after 5 s the store
// says so (Failed) and refuses new writes at once, rather than letting each wait its whole
// deadline while /readyz says all is well.
func TestStalledApply(t *testing.T) {
	e, fs := openFaulty(t)
	ctx := context.Background()
	fs.setStoreStall(true)
	// Batches with names, each stored in the store's batch, until Pebble's write-ahead buffers
	// fill and a batch's apply waits.
	done := make(chan struct{})
	go func() {
		defer close(done)
		name := strings.Repeat("n", 120)
		for i := range 40 {
			evs := make([]laurel.Event, 500)
			for j := range evs {
				evs[j] = laurel.Event{Board: "b", Member: fmt.Sprintf("m%d-%d", i, j), Value: 1, Name: &name}
			}
			if _, err := e.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true}); err != nil {
				return // refused once the store says it stalled
			}
		}
	}()
	laureltest.Within(t, 20*time.Second, "Failed once the apply stalls", e.Failed)
	start := time.Now()
	_, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: "dave", Value: 4}}, laurel.SubmitOptions{})
	if laurel.ErrorCode(err) != laurel.EUnavailable || time.Since(start) > time.Second {
		t.Fatalf("a write while the apply stalls: %v after %v; want unavailable at once", err, time.Since(start))
	}
	fs.setStoreStall(false)
	<-done
	laureltest.Within(t, 10*time.Second, "no longer Failed once Pebble takes the batch", func() bool { return !e.Failed() })
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenOnAFullDisk: opening a store on a disk with no space left fails at once, saying
// so (Pebble, which writes the memtable it replays into a table before Open returns, retried
// that flush for ever: a server started on a full disk answered "recovering" for ever, and
// an export hung), and loses nothing.
func TestOpenOnAFullDisk(t *testing.T) {
	disk := laureltest.SmallDisk(t, 32)
	dir := filepath.Join(disk, "store")
	opts := embedded.Options{MemTableSize: 1 << 20, CacheSize: 1 << 20, MinFreeDisk: -1}
	e, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, e, laurel.Event{Board: "b", Member: "alice", Value: 5, ID: "s-1"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	laureltest.FillDisk(t, disk)

	opened := make(chan error, 1)
	go func() {
		e, err := embedded.Open(dir, opts)
		if err == nil {
			e.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		var full *embedded.DiskFullError
		if !errors.As(err, &full) || !strings.Contains(err.Error(), "the disk holding "+dir+" is full") {
			t.Fatalf("Open on a full disk: %v; want a DiskFullError", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Open on a full disk did not return in 20 s")
	}

	// The refused open holds the directory until the process exits (or, its flush retried,
	// until there is room): a copy of it, as a restart would find it (taken while the disk is
	// full: nothing is being written), opens with what the store held.
	cp := filepath.Join(t.TempDir(), "store")
	copyStore(t, dir, cp)
	e, err = embedded.Open(cp, opts)
	if err != nil {
		t.Fatalf("the store once space is freed: %v", err)
	}
	defer e.Close()
	if got, err := e.Member(context.Background(), laurel.Query{Board: "b"}, "alice"); err != nil || got.Entry.Score != 5 {
		t.Fatalf("alice after the refused open: %+v, %v; want score 5", got, err)
	}
}

// TestImportOnAFillingDisk: an import that would leave the disk with less than the reserve
// stops before, saying so, and leaves the directory to import into again (Pebble, out of
// space for its log, panicked: the process died with "fatal commit error").
func TestImportOnAFillingDisk(t *testing.T) {
	src, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, src, "b", laurel.BoardSpec{Windows: []string{"all"}})
	// Names that do not compress, so that the store is about as large as its dump.
	name := func(prefix string, i int) string {
		h := sha256.Sum256(fmt.Appendf(nil, "%s%d", prefix, i))
		return fmt.Sprintf("%s%06d-%x", prefix, i, h[:30])
	}
	// A third of the events under -short (the race detector's run, ten times slower), on a
	// disk of half the size: a store's overhead does not shrink with its events.
	n, diskMiB, ballastMiB, reserveMiB := 60_000, 48, 24, 8
	if testing.Short() {
		n, diskMiB, ballastMiB, reserveMiB = 20_000, 24, 14, 3
	}
	for i := 0; i < n; i += 1000 {
		evs := make([]laurel.Event, 1000)
		for j := range evs {
			evs[j] = laurel.Event{Board: "b", Member: name("m", i+j), Value: 1, ID: name("e", i+j)}
		}
		submit(t, src, evs...)
	}
	dump := export(t, src)
	src.Close()

	disk := laureltest.SmallDisk(t, diskMiB)
	ballast := filepath.Join(disk, "ballast")
	if err := os.WriteFile(ballast, make([]byte, ballastMiB<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(disk, "store")
	opts := embedded.Options{MemTableSize: 1 << 20, CacheSize: 1 << 20, MinFreeDisk: 64 << 20}
	if err := importDump(dir, dump, opts); laurel.ErrorCode(err) != laurel.EUnavailable {
		t.Fatalf("import onto a disk with less free space than the reserve: %v; want unavailable at once", err)
	}
	opts.MinFreeDisk = int64(reserveMiB) << 20
	err = importDump(dir, dump, opts)
	if laurel.ErrorCode(err) != laurel.EUnavailable || !strings.Contains(err.Error(), "is nearly full") {
		t.Fatalf("import of %d MiB onto a disk with %d MiB free, %d kept: %v; want unavailable, the disk nearly full", len(dump)>>20, diskMiB-ballastMiB, reserveMiB, err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if err := importDump(dir, dump, opts); err != nil {
		t.Fatalf("import again once space is freed: %v", err)
	}
	e, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, err := e.Member(context.Background(), laurel.Query{Board: "b"}, "alice"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("a member never submitted: %+v, %v", got, err)
	}
	if got, err := e.Member(context.Background(), laurel.Query{Board: "b"}, name("m", n-1)); err != nil || got.Total != n {
		t.Fatalf("the last member imported: %+v, %v; want the board's total %d", got, err, n)
	}
}

// copyStore copies the store in dir to to, leaving out files that vanish meanwhile (tables a
// flush retried on a full disk makes and removes).
func copyStore(t *testing.T, dir, to string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
