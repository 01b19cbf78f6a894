package embedded

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The checkpoint file.
//
// The aggregates of open calendar periods and all live whole in memory, which is their only
// index; the store needs them only to recover memory after a restart. So they are not kept in
// Pebble, whose memtable, flushes and compactions cost a third of the writer's CPU when they
// were, but appended to one file beside it, as records in frames: a commit that changes or
// checkpoints any writes one frame, fsync'd before the commit's own durable write, which
// stores the frame's number (tagCheckpointNo). Open reads the frames in order, later records
// winning, up to that number: a frame after it belongs to a commit that never became durable.
//
// A record sets an aggregate (with the last sequence number it counts, as checkpoint.go
// says), removes one, or drops every aggregate under a key prefix: a board's, a window's or a
// span's, when a board is deleted, a window is built anew or a period closes. Once the file is
// cpRewriteRatio times as large as when it was last written whole, the writer writes it whole
// again from memory, into a new file renamed over it (rewriteCheckpoints).
//
// Rolling windows' buckets stay in Pebble: older ones are read from it by key, which a file
// cannot answer.

const (
	cpFileName = "checkpoints"
	cpTempName = "checkpoints.new"

	cpSet  = 's' // key, then the aggregate and the last sequence number it counts (24 bytes)
	cpDel  = 'd' // key
	cpDrop = 'x' // a key prefix: every aggregate under it is gone

	cpFrameHeader = 16      // the frame's number (8), its payload's length (4) and CRC-32C (4)
	cpFrameMax    = 4 << 20 // a rewrite's frames are at most this large
	// cpRewriteRatio: the file is written whole again once it is this many times its size
	// when last written whole (and at least Options.CheckpointFileMin).
	cpRewriteRatio = 3
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendCPSet appends to b the record that sets the aggregate of key k.
func appendCPSet(b, k []byte, a aggregate, asOf uint64) []byte {
	b = append(b, cpSet)
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = appendU64(appendU64(b, uint64(a.score)), uint64(a.at))
	return appendU64(b, asOf)
}

// appendCPKey appends a record of kind cpDel or cpDrop for k.
func appendCPKey(b []byte, kind byte, k []byte) []byte {
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(k)))
	return append(b, k...)
}

// cpRecord is a decoded record; key and the aggregate's bytes are valid until the next.
type cpRecord struct {
	kind byte
	key  []byte
	a    aggregate
	asOf uint64
}

// eachCPRecord calls fn for each record of a frame's payload, in order.
func eachCPRecord(p []byte, fn func(r *cpRecord) error) error {
	var r cpRecord
	for len(p) > 0 {
		r.kind = p[0]
		n, w := binary.Uvarint(p[1:])
		if w <= 0 || uint64(len(p)-1-w) < n {
			return errCorrupt
		}
		p = p[1+w:]
		r.key, p = p[:n], p[n:]
		switch r.kind {
		case cpSet:
			if len(p) < 24 {
				return errCorrupt
			}
			r.a = aggregate{int64(readU64(p)), int64(readU64(p[8:]))}
			r.asOf, p = readU64(p[16:]), p[24:]
		case cpDel, cpDrop:
		default:
			return errCorrupt
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}

// cpFile is the checkpoint file, open for appending. The writer alone uses it.
type cpFile struct {
	f         vfs.File
	size      int64 // where the next frame goes
	rewriteAt int64 // the size past which it is written whole again
	frame     []byte
}

// appendFrame appends a frame of number n holding payload at the end of the file.
func (c *cpFile) appendFrame(n uint64, payload []byte) error {
	c.frame = appendFrame(c.frame[:0], n, payload)
	if _, err := c.f.WriteAt(c.frame, c.size); err != nil {
		return err
	}
	c.size += int64(len(c.frame))
	if cap(c.frame) > cpFrameMax {
		c.frame = nil
	}
	return nil
}

func appendFrame(b []byte, n uint64, payload []byte) []byte {
	b = appendU64(b, n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, crcTable))
	return append(b, payload...)
}

func (c *cpFile) close() error {
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}

// readCheckpoints reads the checkpoint file in dir, calling fn for each record of the frames
// numbered up to last, in order. It returns the size of the part read, and whether anything
// follows it: frames of commits that never became durable, or one cut short by a crash. Every
// frame up to the first numbered last is whole, since each is synced before its commit; a
// frame numbered lower than the one before it, or damaged before last, is corrupt. A store
// whose commits name no frame may have no file.
func readCheckpoints(fs vfs.FS, dir string, last uint64, fn func(r *cpRecord) error) (size int64, tail bool, err error) {
	f, err := fs.Open(fs.PathJoin(dir, cpFileName))
	if errors.Is(err, os.ErrNotExist) && last == 0 {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("checkpoint file: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var header [cpFrameHeader]byte
	var payload []byte
	prev := uint64(0)
	// damaged answers for a frame that cannot be read whole: the end of what counts, once
	// the frames of last have begun.
	damaged := func(what string) (int64, bool, error) {
		if prev == last {
			return size, true, nil
		}
		return size, false, fmt.Errorf("checkpoint file: %s at offset %d, before frame %d: %w", what, size, last, errCorrupt)
	}
	for {
		if _, err := io.ReadFull(r, header[:]); err == io.EOF {
			if prev != last {
				return damaged("end")
			}
			return size, false, nil
		} else if err == io.ErrUnexpectedEOF {
			return damaged("a frame cut short")
		} else if err != nil {
			return size, false, err
		}
		n, length, sum := readU64(header[:]), binary.BigEndian.Uint32(header[8:]), binary.BigEndian.Uint32(header[12:])
		if n > last || n < prev || length > 1<<30 {
			return damaged(fmt.Sprintf("frame %d after %d", n, prev))
		}
		if cap(payload) < int(length) {
			payload = make([]byte, length)
		}
		payload = payload[:length]
		if _, err := io.ReadFull(r, payload); err == io.EOF || err == io.ErrUnexpectedEOF {
			return damaged("a frame cut short")
		} else if err != nil {
			return size, false, err
		}
		if crc32.Checksum(payload, crcTable) != sum {
			return damaged(fmt.Sprintf("frame %d damaged", n))
		}
		if err := eachCPRecord(payload, fn); err != nil {
			return size, false, fmt.Errorf("checkpoint file: frame %d: %w", n, err)
		}
		prev = n
		size += cpFrameHeader + int64(length)
	}
}

// writeCheckpoints writes the checkpoint file's part of tx's commit, before the commit's
// own durable write: tx's records in a frame, synced, whose number tx's batch stores.
func (e *Store) writeCheckpoints(tx *txn) error {
	if len(tx.cpRecs) == 0 {
		return nil
	}
	return e.appendCheckpoints(tx.cpRecs, tx.batch)
}

// appendCheckpoints appends recs to the checkpoint file as its next frame, synced, and stages
// the frame's number in the batch that makes it count.
func (e *Store) appendCheckpoints(recs []byte, batch *pebble.Batch) error {
	n := e.cpNo + 1
	if err := e.cpf.appendFrame(n, recs); err != nil {
		return err
	}
	if err := e.cpf.f.Sync(); err != nil {
		return err
	}
	if err := batch.Set([]byte{tagCheckpointNo}, appendU64(nil, n), nil); err != nil {
		return err
	}
	e.cpNo = n
	return nil
}

// maybeRewriteCheckpoints starts writing the checkpoint file whole again once it has grown
// cpRewriteRatio times. A commit of its own first checkpoints everything dirty, so that replay
// starts after it and what Open notes of the rewritten aggregates stays small (recover's
// asOf); then memory's aggregates are copied, and written out by another goroutine while the
// writer goes on appending to the file (finishRewrite ends it).
func (e *Store) maybeRewriteCheckpoints(now int64) {
	if e.broken() || e.rewriting != nil || e.cpf.size < e.cpf.rewriteAt {
		return
	}
	// The new file is about as large as the old one was when last written whole; until the
	// disk has room for it beyond the reserve, the old one grows.
	if !e.disk.room(uint64(e.cpf.rewriteAt / cpRewriteRatio)) {
		return
	}
	tx := e.newTxn(now)
	e.checkpoint(tx, true)
	e.commit(tx, nil)
	if e.broken() {
		return
	}
	rw, err := e.startRewrite()
	if err != nil {
		e.rewriteFailed(err)
		return
	}
	e.rewriting = rw
	go func() { rw.done <- rw.write() }()
}

// cpRewrite is a rewrite of the checkpoint file: memory's aggregates of open periods and all
// as of one commit, the one whose frame is number n, going to a new file; the frames the
// writer appends after from meanwhile are copied after them once they are written.
type cpRewrite struct {
	fs    vfs.FS
	f     vfs.File // the new file, under cpTempName
	n     uint64
	asOf  uint64 // the last sequence number memory counted
	from  int64
	spans []spanCopy
	size  int64
	done  chan error
}

// spanCopy is an open period's or all's aggregates, copied, with what names its members.
type spanCopy struct {
	prefix []byte // spanPrefix(tagAgg, ...)
	names  members
	slots  slots
}

// startRewrite copies memory's aggregates of open periods and all, and makes the new file.
func (e *Store) startRewrite() (*cpRewrite, error) {
	fs := e.opts.FS
	f, err := fs.Create(fs.PathJoin(e.dir, cpTempName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	rw := &cpRewrite{fs: fs, f: f, n: e.cpNo, asOf: e.seq, from: e.cpf.size, done: make(chan error, 1)}
	for _, b := range e.boards {
		for _, w := range b.windows {
			if w.w.IsRolling() {
				continue
			}
			for _, sp := range w.open {
				// The member table's slices only grow, and what they hold is never written
				// again: a copy of their headers names every member of the span.
				rw.spans = append(rw.spans, spanCopy{spanPrefix(tagAgg, b.cfg.ID, w.name, sp.start), *b.members, sp.slots.clone()})
			}
		}
	}
	return rw, nil
}

// write writes the copied aggregates into the new file, each counting every event up to
// rw.asOf, in frames numbered rw.n: they count nothing that is not durable. It touches
// nothing the writer uses.
func (rw *cpRewrite) write() error {
	c := cpFile{f: rw.f}
	var p, k []byte
	var err error
	for i := range rw.spans {
		sc := &rw.spans[i]
		k = append(k[:0], sc.prefix...)
		sc.slots.each(func(h uint32, v slot) {
			k = append(k[:len(sc.prefix)], sc.names.name(h)...)
			p = appendCPSet(p, k, aggregate(v), rw.asOf)
			if len(p) >= cpFrameMax && err == nil {
				err = c.appendFrame(rw.n, p)
				p = p[:0]
			}
		})
		rw.spans[i] = spanCopy{} // done with: the copy goes as it is written
	}
	if err == nil && len(p) > 0 {
		err = c.appendFrame(rw.n, p)
	}
	if err == nil {
		err = rw.f.Sync()
	}
	rw.size = c.size
	return err
}

// finishRewrite ends the rewrite once its goroutine is done: the frames appended since it
// began are copied after what it wrote, and the new file, synced, is renamed over the old.
// A crash before the rename leaves the old file, whole; the new one is removed at Open.
func (e *Store) finishRewrite(err error) {
	rw := e.rewriting
	e.rewriting = nil
	if err == nil {
		err = e.switchFile(rw)
	}
	if err != nil {
		rw.f.Close()
		e.rewriteFailed(err)
	}
}

// switchFile copies the frames appended to the checkpoint file after rw.from into rw's file,
// then puts that file in its place.
func (e *Store) switchFile(rw *cpRewrite) error {
	fs := e.opts.FS
	tail := make([]byte, e.cpf.size-rw.from)
	if _, err := e.cpf.f.ReadAt(tail, rw.from); err != nil && (err != io.EOF || len(tail) > 0) {
		return err
	}
	if _, err := rw.f.WriteAt(tail, rw.size); err != nil {
		return err
	}
	if err := rw.f.Sync(); err != nil {
		return err
	}
	if err := fs.Rename(fs.PathJoin(e.dir, cpTempName), fs.PathJoin(e.dir, cpFileName)); err != nil {
		return err
	}
	if err := syncDir(fs, e.dir); err != nil {
		return err
	}
	e.cpf.close()
	size := rw.size + int64(len(tail))
	e.cpf = cpFile{f: rw.f, size: size, rewriteAt: e.rewriteAt(rw.size)}
	return nil
}

// rewriteFailed notes a rewrite that did not finish: the file it was to replace is whole, so
// nothing is lost; the next is tried once the file has grown as much again.
func (e *Store) rewriteFailed(err error) {
	e.log.Warn("writing the checkpoint file whole again; it keeps growing until the next try", "err", err)
	e.opts.FS.Remove(e.opts.FS.PathJoin(e.dir, cpTempName))
	e.cpf.rewriteAt = 2 * e.cpf.size
}

// rewriteCheckpoints writes the checkpoint file whole again at once, as Open does once replay
// is done.
func (e *Store) rewriteCheckpoints() error {
	rw, err := e.startRewrite()
	if err == nil {
		if err = rw.write(); err == nil {
			err = e.switchFile(rw)
		}
		if err != nil {
			rw.f.Close()
		}
	}
	return err
}

// rewriteAt is the size past which a checkpoint file written whole at size is written again.
func (e *Store) rewriteAt(size int64) int64 {
	return max(e.opts.CheckpointFileMin, cpRewriteRatio*size)
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// recoverCheckpoints applies the checkpoint file to the spans recovered from the store (those
// of stores written before it, or imported), noting in asOf the aggregates that count events
// from where replay starts. It then opens the file for appending: written whole again first
// when it ends with frames no durable commit names, since a later frame must not land among
// their bytes.
func (e *Store) recoverCheckpoints(asOf map[string]uint64) (rewrite bool, err error) {
	if v, ok, err := get(e.db, []byte{tagCheckpointNo}); err != nil {
		return false, err
	} else if ok {
		e.cpNo = readU64(v)
	}
	fs := e.opts.FS
	// A rewrite that a crash cut short.
	if err := fs.Remove(fs.PathJoin(e.dir, cpTempName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	ap := &cpApplier{e: e, asOf: asOf}
	size, tail, err := readCheckpoints(fs, e.dir, e.cpNo, func(r *cpRecord) error {
		return ap.apply(r)
	})
	if err != nil {
		return false, err
	}
	f, err := fs.OpenReadWrite(fs.PathJoin(e.dir, cpFileName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return false, err
	}
	if err := syncDir(fs, e.dir); err != nil { // the file's name, if it was made just now
		f.Close()
		return false, err
	}
	e.cpf = cpFile{f: f, size: size, rewriteAt: e.rewriteAt(size)}
	return tail, nil
}

// cpApplier applies the records of the checkpoint file to memory, as recovery reads them. A
// span it changes has its tree built once replay is done (buildTrees). What a record says of a
// board or window the store no longer has, or of a period closed since, is past.
type cpApplier struct {
	e    *Store
	asOf map[string]uint64
	// the board and window of the record before, and their ids: records come a span at a
	// time in a rewritten file, and in runs of one board in others.
	b          *board
	w          *window
	boardID    []byte
	windowName []byte
	hint       uint32 // the handle after the last record's: a span's come in handle order when written whole
}

func (ap *cpApplier) apply(r *cpRecord) error {
	k, err := parseAggKey(r.key)
	if err != nil {
		return err
	}
	if ap.b == nil || !bytes.Equal(k.board, ap.boardID) {
		ap.b, ap.w, ap.windowName = ap.e.boards[string(k.board)], nil, nil
		ap.boardID = append(ap.boardID[:0], k.board...)
	}
	b := ap.b
	if b == nil {
		return nil
	}
	if r.kind == cpDrop {
		ap.drop(r.key, k)
		return nil
	}
	if !k.hasStart {
		return errCorrupt
	}
	if ap.w == nil || !bytes.Equal(k.window, ap.windowName) {
		ap.w = b.window(string(k.window))
		ap.windowName = append(ap.windowName[:0], k.window...)
	}
	w := ap.w
	if w == nil || w.w.IsRolling() || w.w.IsCalendar() && frozenSince(w, k.start) {
		return nil
	}
	member := unsafe.String(unsafe.SliceData(k.member), len(k.member)) // intern copies it
	if r.kind == cpDel {
		if sp := w.span(k.start); sp != nil {
			if h, ok := b.members.lookup(member); ok {
				sp.slots.del(h)
			}
		}
		delete(ap.asOf, string(r.key))
		return nil
	}
	sp := w.span(k.start)
	if sp == nil {
		end := int64(0)
		if w.w.IsCalendar() {
			end = b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(k.start)).End.UnixMilli()
		}
		sp = b.spanFor(w, k.start, end, true)
	}
	sp.tree = nil
	h := b.members.internAt(member, ap.hint)
	ap.hint = h + 1
	sp.slots.set(h, slot(r.a), b.members.count())
	if r.asOf >= ap.e.cp.replayFrom && r.asOf > 0 {
		ap.asOf[string(r.key)] = r.asOf
	} else if len(ap.asOf) > 0 {
		delete(ap.asOf, string(r.key))
	}
	return nil
}

// drop applies a record that drops the aggregates under prefix p.
func (ap *cpApplier) drop(p []byte, k aggKeyParts) {
	for _, w := range ap.b.windows {
		if w.w.IsRolling() || k.hasWindow && w.name != string(k.window) {
			continue
		}
		switch {
		case k.hasStart && w.w.IsCalendar():
			if i := slices.IndexFunc(w.open, func(sp *span) bool { return sp.start == k.start }); i >= 0 {
				w.open = slices.Delete(w.open, i, i+1)
			}
		case w.w.IsCalendar():
			w.open = nil
		default:
			w.open = []*span{{}}
		}
	}
	for s := range ap.asOf {
		if strings.HasPrefix(s, string(p)) {
			delete(ap.asOf, s)
		}
	}
}

// aggKeyParts is an aggregate's key split, or a prefix of one that ends after a board, a
// window or a start. The parts share the key's bytes.
type aggKeyParts struct {
	board, window, member []byte
	start                 int64
	hasWindow, hasStart   bool
}

func parseAggKey(key []byte) (k aggKeyParts, err error) {
	if len(key) < 2 || key[0] != tagAgg {
		return k, errCorrupt
	}
	rest := key[1:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return k, errCorrupt
	}
	k.board, rest = rest[:i], rest[i+1:]
	if len(rest) == 0 {
		return k, nil
	}
	if i = bytes.IndexByte(rest, 0); i < 0 {
		return k, errCorrupt
	}
	k.window, k.hasWindow, rest = rest[:i], true, rest[i+1:]
	if len(rest) == 0 {
		return k, nil
	}
	if len(rest) < 8 {
		return k, errCorrupt
	}
	k.start, k.hasStart, k.member = readTime(rest), true, rest[8:]
	return k, nil
}

// rewriteDone is the rewrite in progress's done; nil, which never answers, when none is.
func (e *Store) rewriteDone() <-chan error {
	if e.rewriting == nil {
		return nil
	}
	return e.rewriting.done
}
