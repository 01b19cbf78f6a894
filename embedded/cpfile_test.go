package embedded_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestCheckpointRewriteFails: while the checkpoint file's rewrites fail (a disk that is full
// for a while), writes go on and are acknowledged, the old file keeps growing,
// and nothing is lost; once writes succeed again the next rewrite shrinks the file; after a
// restart the store holds every acknowledged event.
func TestCheckpointRewriteFails(t *testing.T) {
	ctx := context.Background()
	fs := &rewriteFaultFS{FS: vfs.NewMem()}
	fs.fail.Store(true)
	clock := laureltest.NewClock("2026-11-28T10:00:00Z")
	opts := embedded.Options{FS: fs, Now: clock.Now, CheckpointLag: 50, CheckpointFileMin: 8 << 10}
	e, err := embedded.Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "day", "hour"}})
	want := make(map[string]int64)
	submit := func(rounds int) {
		t.Helper()
		for i := range rounds {
			evs := make([]laurel.Event, 20)
			for j := range evs {
				m := fmt.Sprintf("m%03d", (i*7+j*13)%200)
				evs[j] = laurel.Event{Board: "b", Member: m, Value: int64(1 + j%5)}
				want[m] += evs[j].Value
			}
			if _, err := e.Submit(ctx, evs, laurel.SubmitOptions{}); err != nil {
				t.Fatalf("a write while the rewrite fails: %v", err)
			}
		}
	}
	size := func() int64 {
		t.Helper()
		info, err := fs.Stat("/db/checkpoints")
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	submit(300)
	if fs.failed.Load() == 0 {
		t.Fatal("no rewrite was tried: the test does not test what it says")
	}
	grown := size()
	t.Logf("%d rewrites failed; the file grew to %d bytes", fs.failed.Load(), grown)
	if err := e.Check(); err != nil {
		t.Fatalf("after rewrites that failed: %v", err)
	}
	fs.fail.Store(false)
	laureltest.Within(t, 10*time.Second, "a rewrite once writes succeed shrinks the file", func() bool {
		submit(20)
		return size() < grown
	})
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = embedded.Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	p, err := e.Page(ctx, laurel.Query{Board: "b"}, 0, 1000, laurel.ScoreRange{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != len(want) {
		t.Fatalf("%d members after a restart, want %d", len(p.Entries), len(want))
	}
	for _, en := range p.Entries {
		if en.Score != want[en.Member] {
			t.Fatalf("member %s: %d after a restart, want %d", en.Member, en.Score, want[en.Member])
		}
	}
}

// rewriteFaultFS fails, while fail is set, the first write to each new checkpoint file (a
// rewrite's), after writing half of it: a disk that filled up during the write.
type rewriteFaultFS struct {
	vfs.FS
	fail   atomic.Bool
	failed atomic.Int64
}

func (fs *rewriteFaultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, "checkpoints.new") {
		return f, err
	}
	return &rewriteFaultFile{File: f, fs: fs}, nil
}

type rewriteFaultFile struct {
	vfs.File
	fs      *rewriteFaultFS
	written bool
}

func (f *rewriteFaultFile) WriteAt(p []byte, off int64) (int, error) {
	if !f.written && f.fs.fail.Load() {
		f.written = true
		f.fs.failed.Add(1)
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, syscall.ENOSPC
	}
	f.written = true
	return f.File.WriteAt(p, off)
}

// TestCheckpointRewriteOfNothing: a checkpoint file written whole again when memory holds no
// aggregate of an open period or all (its members deleted) still holds the frame the durable
// commits name, so that the store opens again. Open rewrites the file when it ends with a
// frame cut short, as a crash leaves it; the rewrite once wrote an empty file, and the next
// Open refused it as corrupt.
func TestCheckpointRewriteOfNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := embedded.Options{CheckpointLag: 1}
	s, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, s, "b", laurel.BoardSpec{Windows: []string{"all"}})
	for i := range 3 {
		if _, err := s.Submit(ctx, []laurel.Event{{Board: "b", Member: "ann", Value: int64(i + 1)}}, laurel.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteMember(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A frame cut short after the last: the next commit's, torn by a crash.
	f, err := os.OpenFile(filepath.Join(dir, "checkpoints"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 0, 0, 0, 0, 9}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for round := range 2 {
		s, err := embedded.Open(dir, opts)
		if err != nil {
			t.Fatalf("open %d after the torn frame: %v", round+1, err)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("open %d after the torn frame: %v", round+1, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// appendFaultFS fails, while fail is set, every write to the checkpoint file: a disk filled
// from elsewhere faster than the store's reserve guard sees it.
type appendFaultFS struct {
	vfs.FS
	fail atomic.Bool
}

func (fs *appendFaultFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, o ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(name)(fs.FS.OpenReadWrite(name, c, o...))
}

func (fs *appendFaultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(name)(fs.FS.Create(name, c))
}

// wrap makes a checkpoint file that name opened fail as fs says.
func (fs *appendFaultFS) wrap(name string) func(vfs.File, error) (vfs.File, error) {
	return func(f vfs.File, err error) (vfs.File, error) {
		if err != nil || !strings.Contains(name, "checkpoints") {
			return f, err
		}
		return &appendFaultFile{File: f, fs: fs}, nil
	}
}

type appendFaultFile struct {
	vfs.File
	fs *appendFaultFS
}

func (f *appendFaultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.fail.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.WriteAt(p, off)
}

// TestCommitOnAFullDisk: a commit that finds the disk full (its checkpoint frame cannot be
// written) is answered unavailable, saying so, as is every write after it (it was a 500, an
// internal error); nothing of it is stored, and what was acknowledged before is there after a
// restart.
func TestCommitOnAFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fs := &appendFaultFS{FS: vfs.Default}
	opts := embedded.Options{FS: fs, CheckpointLag: 1, MinFreeDisk: -1}
	s, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, s, "b", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, s, laurel.Event{Board: "b", Member: "ann", Value: 1, ID: "kept"})
	fs.fail.Store(true)
	// The first commit that writes a checkpoint frame fails; the writes after it are refused.
	refused := ""
	for i := range 10 {
		id := fmt.Sprintf("w%d", i)
		_, err := s.Submit(ctx, []laurel.Event{{Board: "b", Member: "ann", Value: 10, ID: id}}, laurel.SubmitOptions{})
		if err == nil && refused == "" {
			continue
		}
		if laurel.ErrorCode(err) != laurel.EUnavailable || !strings.Contains(err.Error(), "disk filled up") {
			t.Fatalf("write %s with the disk full: %v; want unavailable, saying the disk filled up", id, err)
		}
		refused = cmp.Or(refused, id)
	}
	if refused == "" {
		t.Fatal("no write failed with the checkpoint file unwritable")
	}
	if !s.Failed() {
		t.Fatal("the store failed and does not say so")
	}
	fs.fail.Store(false)
	s.Close()
	if s, err = embedded.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := submit(t, s, laurel.Event{Board: "b", Member: "ann", Value: 1, ID: "kept"}, laurel.Event{Board: "b", Member: "ann", Value: 10, ID: refused})
	if res[0].Status != laurel.StatusDuplicate || res[1].Status != laurel.StatusApplied {
		t.Fatalf("after a restart: %+v; want the acknowledged event a duplicate, the refused one applied", res)
	}
}
