package embedded

import (
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The checkpoint file's rewrite (cpfile.go): memory's aggregates of open periods and all,
// copied at a commit and written by another goroutine into a new file, which the writer then
// completes with the frames appended meanwhile and renames over the file.

// maybeRewriteCheckpoints starts writing the checkpoint file whole again once it has grown
// cpRewriteRatio times. A commit of its own first checkpoints everything dirty, so that replay
// starts after it and what Open notes of the rewritten aggregates stays small (recover's
// asOf); then memory's aggregates are copied, and written out by another goroutine while the
// writer goes on appending to the file (finishRewrite ends it).
func (s *Store) maybeRewriteCheckpoints(now int64) {
	if s.broken() || s.rewriting != nil || s.cpf.size < s.cpf.rewriteAt {
		return
	}
	// The new file is about as large as the old one was when last written whole: at most
	// half of it now (a file keyed throughout, which its first rewrite converts, shrinks
	// more). Until the disk has room for it beyond the reserve, the old one grows.
	if !s.disk.room(uint64(s.cpf.size / cpRewriteRatio)) {
		return
	}
	tx := s.newTxn(now)
	s.checkpoint(tx, true)
	s.commit(tx, nil)
	if s.broken() {
		return
	}
	rw, err := s.startRewrite()
	if err != nil {
		s.rewriteFailed(err)
		return
	}
	s.rewriting = rw
	go func() {
		inBackground()
		rw.done <- rw.write()
	}()
}

// cpRewrite is a rewrite of the checkpoint file: memory's aggregates of open periods and all
// as of one commit, the one whose frame is number n, going to a new file; the frames the
// writer appends after from meanwhile are copied after them once they are written.
type cpRewrite struct {
	f      vfs.File // the new file, under cpTempName
	n      uint64
	asOf   uint64 // the last sequence number memory counted
	from   int64
	boards []boardCopy
	snap   *pebble.Snapshot // the store as of the commit: the rolling windows' buckets
	size   int64
	done   chan error
}

// boardCopy is what a rewrite writes of a board: its open periods' and all's aggregates, and
// which rolling windows' buckets to copy from the store.
type boardCopy struct {
	id      string
	names   members
	spans   []spanCopy
	rolling []rollingCopy
}

// spanCopy is an open period's or all's aggregates, copied, with what names its members.
type spanCopy struct {
	board, window string
	start         int64
	names         members
	slots         slots
}

// rollingCopy is a rolling window whose buckets from its current span's start on a rewrite
// copies into the file (cpsection.go, "Buckets").
type rollingCopy struct {
	window string
	from   int64
	subs   bool // the board has a subscore
}

// copyBoards copies the aggregates of every open period and all, each window's spans by
// start, and notes the rolling windows: for a rewrite, and for an export (copySpans), which
// then read them while the writer goes on. It runs on the writer's goroutine or under the read
// lock. The member table's slices only grow, and what they hold is never written again: a
// copy of their headers names every member of the span.
func (s *Store) copyBoards() []boardCopy {
	var boards []boardCopy
	for _, b := range s.boards {
		bc := boardCopy{id: b.cfg.ID, names: *b.members}
		for _, w := range b.windows {
			if w.w.IsRolling() {
				bc.rolling = append(bc.rolling, rollingCopy{w.name, w.open[0].start, b.cfg.Subscore != nil})
				continue
			}
			for _, sp := range w.open {
				bc.spans = append(bc.spans, spanCopy{b.cfg.ID, w.name, sp.start, *b.members, sp.slots.clone()})
			}
		}
		boards = append(boards, bc)
	}
	return boards
}

// copySpans copies the aggregates of every open period and all (copyBoards).
func (s *Store) copySpans() []spanCopy {
	var spans []spanCopy
	for _, bc := range s.copyBoards() {
		spans = append(spans, bc.spans...)
	}
	return spans
}

// startRewrite copies memory's aggregates of open periods and all, takes the store's snapshot
// for the rolling windows' buckets, and makes the new file.
func (s *Store) startRewrite() (*cpRewrite, error) {
	fs := s.opts.FS
	f, err := fs.Create(fs.PathJoin(s.dir, cpTempName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	return &cpRewrite{f: f, n: s.cpNo, asOf: s.seq, from: s.cpf.size, boards: s.copyBoards(), snap: s.db.NewSnapshot(), done: make(chan error, 1)}, nil
}

// write writes the copied aggregates into the new file, each counting every event up to
// rw.asOf, in frames numbered rw.n: they count nothing that is not durable. Each board's are
// a section (cpsection.go): its members, its spans, then its rolling windows' buckets as the
// snapshot holds them. It touches nothing the writer uses.
func (rw *cpRewrite) write() error {
	defer rw.snap.Close()
	w := sectionWriter{c: cpFile{f: rw.f}, n: rw.n}
	for i := range rw.boards {
		bc := &rw.boards[i]
		w.members(bc.id, &bc.names)
		for j := range bc.spans {
			w.span(&bc.spans[j], rw.asOf)
			bc.spans[j] = spanCopy{} // done with: the copy goes as it is written
		}
		for _, rc := range bc.rolling {
			w.buckets(rw.snap, bc.id, rc, rw.asOf)
		}
	}
	var err error
	rw.size, err = w.finish()
	return err
}

// finishRewrite ends the rewrite once its goroutine is done: the frames appended since it
// began are copied after what it wrote, and the new file, synced, is renamed over the old.
// A crash before the rename leaves the old file, whole; the new one is removed at Open.
func (s *Store) finishRewrite(err error) {
	rw := s.rewriting
	s.rewriting = nil
	if err == nil {
		err = s.switchFile(rw)
	}
	if err != nil && s.cpf.f != rw.f {
		rw.f.Close()
		s.rewriteFailed(err)
	}
}

// switchFile copies the frames appended to the checkpoint file after rw.from into rw's file,
// then puts that file in its place. Once the rename is done the writer appends to the new
// file; if the rename's sync then fails, the name may still be the old file's after a crash,
// without what is appended next: the store fails, and acknowledges nothing more.
func (s *Store) switchFile(rw *cpRewrite) error {
	fs := s.opts.FS
	tail := make([]byte, s.cpf.size-rw.from)
	if _, err := s.cpf.f.ReadAt(tail, rw.from); err != nil && (err != io.EOF || len(tail) > 0) {
		return err
	}
	if _, err := rw.f.WriteAt(tail, rw.size); err != nil {
		return err
	}
	if err := rw.f.Sync(); err != nil {
		return err
	}
	if err := fs.Rename(fs.PathJoin(s.dir, cpTempName), fs.PathJoin(s.dir, cpFileName)); err != nil {
		return err
	}
	s.cpf.close()
	s.cpf = cpFile{f: rw.f, size: rw.size + int64(len(tail)), rewriteAt: s.rewriteAt(rw.size)}
	if err := syncDir(fs, s.dir); err != nil {
		s.fail(fmt.Errorf("embedded: the checkpoint file, written whole again: %w", err))
		return err
	}
	return nil
}

// rewriteFailed notes a rewrite that did not finish: the file it was to replace is whole, so
// nothing is lost; the next is tried once the file has grown as much again.
func (s *Store) rewriteFailed(err error) {
	s.log.Warn("writing the checkpoint file whole again; it keeps growing until the next try", "err", err)
	s.opts.FS.Remove(s.opts.FS.PathJoin(s.dir, cpTempName))
	s.cpf.rewriteAt = 2 * s.cpf.size
}

// rewriteCheckpoints writes the checkpoint file whole again at once, as Open does once replay
// is done.
func (s *Store) rewriteCheckpoints() error {
	rw, err := s.startRewrite()
	if err == nil {
		if err = rw.write(); err == nil {
			err = s.switchFile(rw)
		}
		if err != nil && s.cpf.f != rw.f {
			rw.f.Close()
		}
	}
	return err
}

// rewriteAt is the size past which a checkpoint file written whole at size is written again.
func (s *Store) rewriteAt(size int64) int64 {
	return max(s.opts.CheckpointFileMin, cpRewriteRatio*size)
}

// rewriteDone is the rewrite in progress's done; nil, which never answers, when none is.
func (s *Store) rewriteDone() <-chan error {
	if s.rewriting == nil {
		return nil
	}
	return s.rewriting.done
}
