package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Recovery of the checkpoint file (cpfile.go): its records applied to memory at Open.

// recoverCheckpoints applies the checkpoint file to the spans recovered from the store (those
// of stores written before it, or imported), noting in asOf the aggregates that count events
// from where replay starts. It then opens the file for appending, overwriting with zeros
// first what follows the frames read, when they are followed by frames no durable commit names:
// a later frame must not land among their bytes, where a crash after it would leave them to be
// read as its successors. (Open wrote the whole file again instead: 4.5 GB at 25M members.)
//
// It returns what the file holds of the rolling windows' buckets, for recoverRolling.
func (s *Store) recoverCheckpoints(asOf map[string]uint64) (map[*window]*fileBuckets, error) {
	if v, ok, err := get(s.db, []byte{tagCheckpointNo}); err != nil {
		return nil, err
	} else if ok {
		s.cpNo = readU64(v)
	}
	fs := s.opts.FS
	// A rewrite that a crash cut short.
	if err := fs.Remove(fs.PathJoin(s.dir, cpTempName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ap := &cpApplier{e: s, asOf: asOf}
	size, tail, err := readCheckpoints(fs, s.dir, s.cpNo, ap.apply)
	if err != nil {
		return nil, err
	}
	ap.flush()
	f, err := fs.OpenReadWrite(fs.PathJoin(s.dir, cpFileName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	if tail {
		err = zeroFrom(f, size)
	}
	if err == nil {
		err = syncDir(fs, s.dir) // the file's name, if it was made just now
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	// Written whole again once it has grown by what its sections hold: a file that earlier
	// builds wrote, keyed throughout or without the rolling windows' buckets, at the first
	// commit, which converts it.
	written := ap.sectionBytes
	for _, b := range s.boards {
		for _, w := range b.windows {
			if w.w.IsRolling() && ap.rolling[w] == nil {
				written = 0
			}
		}
	}
	s.cpf = cpFile{f: f, size: size, rewriteAt: s.rewriteAt(written)}
	return ap.rolling, nil
}

// zeroFrom overwrites with zeros what f holds from offset on, and syncs it. A frame header of
// zeros is numbered 0, below any frame before it: where the next frame does not reach, the
// reading stops (readCheckpoints).
func zeroFrom(f vfs.File, offset int64) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	zeros := make([]byte, min(info.Size()-offset, 1<<20))
	for at := offset; at < info.Size(); at += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), info.Size()-at)], at); err != nil {
			return err
		}
	}
	return f.Sync()
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
	// The entries read for sparse span gathering, not set yet, so that it is laid out once
	// for all of them (slots.load): until the next record of another kind or span, or until
	// they are enough for it to switch to chunks, to which the next are set directly.
	gathering *span
	gathered  []handleSlot
	files     map[*board]*fileMembers // what the sections' cpMembers records said of each board
	filling   *span                   // the span of the last cpSpan record
	// rolling is what the file holds of each rolling window's buckets, once it says from
	// where (cpsection.go, "Buckets"); fillingBucket is the bucket of the last cpSpan record.
	rolling       map[*window]*fileBuckets
	fillingBucket *slots
	// sectionBytes is what the file's sections take, about: the part of it written whole.
	sectionBytes int64
}

// flush sets the entries gathered.
func (ap *cpApplier) flush() {
	if len(ap.gathered) > 0 {
		ap.gathering.slots.load(ap.gathered, ap.b.members.count())
	}
	ap.gathering, ap.gathered = nil, ap.gathered[:0]
}

func (ap *cpApplier) apply(r *cpRecord) error {
	if r.kind != cpSet {
		ap.flush()
	}
	k, err := parseAggKey(r.key)
	if err != nil {
		return err
	}
	if ap.b == nil || !bytes.Equal(k.board, ap.boardID) {
		ap.flush()
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
	if r.kind == cpMembers || r.kind == cpSpan {
		ap.sectionBytes += int64(len(r.key) + len(r.body) + 2*binary.MaxVarintLen32)
	}
	if r.kind == cpMembers {
		if k.hasWindow {
			return errCorrupt
		}
		return ap.members(b, r.body)
	}
	if !k.hasStart {
		return errCorrupt
	}
	if ap.w == nil || !bytes.Equal(k.window, ap.windowName) {
		ap.w = b.window(string(k.window))
		ap.windowName = append(ap.windowName[:0], k.window...)
	}
	w := ap.w
	if w != nil && w.w.IsRolling() {
		return ap.bucket(b, w, r, k)
	}
	if w == nil || w.w.IsCalendar() && frozenSince(w, k.start) {
		return nil
	}
	if r.kind == cpSpan {
		if len(k.member) > 0 {
			return errCorrupt
		}
		return ap.span(b, w, k.start, r.key, r.body)
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
	if sp.slots.dense != nil {
		sp.slots.set(h, slot(r.a), b.members.count())
	} else {
		if sp != ap.gathering {
			ap.flush()
			ap.gathering = sp
		}
		ap.gathered = append(ap.gathered, handleSlot{h, slot(r.a)})
		if n := len(ap.gathered); n > denseAbove && 5*n > 2*b.members.count() {
			ap.flush() // it switches to chunks
		}
	}
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
		if k.hasWindow && w.name != string(k.window) {
			continue
		}
		switch {
		case w.w.IsRolling():
			delete(ap.rolling, w) // the file's buckets and its start: cpsection.go, "Buckets"
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
	prefix := string(p)
	for s := range ap.asOf {
		if strings.HasPrefix(s, prefix) {
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

// compactMoved compacts the ranges whose aggregates Open moved to the checkpoint file, so
// that their deleted records leave the disk, and the scans of later opens, now rather than
// whenever writes reach them. It runs beside the writer, and stops with the store.
func (s *Store) compactMoved() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	for _, r := range s.moved {
		if err := s.db.Compact(ctx, r[0], r[1], false); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("compacting the aggregates moved to the checkpoint file", "err", err)
			}
			return
		}
	}
	s.log.Info("compacted the aggregates moved to the checkpoint file", "ranges", len(s.moved), "took", time.Since(start))
}
