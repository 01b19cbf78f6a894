package embedded

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

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
// A keyed record sets an aggregate (with the last sequence number it counts, as checkpoint.go
// says), removes one, or drops every aggregate under a key prefix: a board's, a window's or a
// span's, when a board is deleted, a window is built anew or a period closes. Commits append
// those. Once the file is cpRewriteRatio times as large as when it was last written whole, it
// is written whole again from a copy of memory, into a new file renamed over it
// (cprewrite.go), as a section a board: its member ids, then its spans' entries by handle
// (cpsection.go). Open applies it to memory (cprecover.go), keyed records as earlier builds
// wrote the whole file too.
//
// Rolling windows' buckets are in Pebble, where older ones and past instants are read by key,
// which a file cannot answer; the file holds a copy of those of each window's current span,
// for Open (cpsection.go, "Buckets"): every commit that stores a bucket aggregate in Pebble
// appends the same record to its frame, in the order of its batch.

const (
	cpFileName = "checkpoints"
	cpTempName = "checkpoints.new"

	cpSet = 's' // key, then the aggregate and the last sequence number it counts (24 bytes)
	// cpSetSub is cpSet for an aggregate whose subscore is not 0: the subscore follows (32
	// bytes). Other aggregates are written as before subscores were kept.
	cpSetSub = 'S'
	cpDel    = 'd' // key
	cpDrop   = 'x' // a key prefix: every aggregate under it is gone
	// A rewrite writes a board's aggregates as a section of its member ids, then its spans'
	// entries by handle (cpsection.go): a key (a board's or a span's prefix), then a body.
	cpMembers = 'm'
	cpSpan    = 'p'

	cpFrameHeader = 16      // the frame's number (8), its payload's length (4) and CRC-32C (4)
	cpFrameMax    = 4 << 20 // a rewrite's frames are at most this large
	// cpRewriteRatio: the file is written whole again once it is this many times its size
	// when last written whole (and at least Options.CheckpointFileMin).
	cpRewriteRatio = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendCPAgg appends to b the record that sets (present) or removes member's aggregate in
// the span of board's window at start, its key (aggKey) written in place: the writer appends
// one for each aggregate a checkpoint stores.
func appendCPAgg(b []byte, board, window string, start int64, member string, a aggregate, present bool, asOf uint64) []byte {
	b = append(b, cpKind(a, present))
	b = binary.AppendUvarint(b, uint64(len(board)+len(window)+len(member)+11))
	b = append(appendTime(appendPrefix(b, tagAgg, board, window), start), member...)
	if !present {
		return b
	}
	return appendCPValue(b, a, asOf)
}

// appendCPKeyed appends to b the record that sets (present) or removes the aggregate of key
// k: a rolling window's bucket aggregate, as the store gets it.
func appendCPKeyed(b, k []byte, a aggregate, present bool, asOf uint64) []byte {
	b = append(b, cpKind(a, present))
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	if !present {
		return b
	}
	return appendCPValue(b, a, asOf)
}

func cpKind(a aggregate, present bool) byte {
	switch {
	case present && a.sub != 0:
		return cpSetSub
	case present:
		return cpSet
	}
	return cpDel
}

func appendCPValue(b []byte, a aggregate, asOf uint64) []byte {
	b = appendU64(appendU64(appendU64(b, uint64(a.score)), uint64(a.at)), asOf)
	if a.sub != 0 {
		b = appendU64(b, uint64(a.sub))
	}
	return b
}

// appendCPDrop appends the record that drops every aggregate under the key prefix p.
func appendCPDrop(b, p []byte) []byte {
	b = append(b, cpDrop)
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// cpRecord is a decoded record; key, body and the aggregate's bytes are valid until the next.
type cpRecord struct {
	kind byte
	key  []byte
	a    aggregate
	asOf uint64
	body []byte // a section's record's (cpMembers, cpSpan)
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
		case cpSet, cpSetSub:
			n := 24
			if r.kind == cpSetSub {
				n = 32
			}
			if len(p) < n {
				return errCorrupt
			}
			r.a = aggregate{score: int64(readU64(p)), at: int64(readU64(p[8:]))}
			if r.kind == cpSetSub {
				r.a.sub = int64(readU64(p[24:]))
				r.kind = cpSet
			}
			r.asOf, p = readU64(p[16:]), p[n:]
		case cpDel, cpDrop:
		case cpMembers, cpSpan:
			n, w := binary.Uvarint(p)
			if w <= 0 || uint64(len(p)-w) < n {
				return errCorrupt
			}
			r.body, p = p[w:w+int(n)], p[w+int(n):]
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

// appendSynced appends a frame and syncs the file.
func (c *cpFile) appendSynced(n uint64, payload []byte) error {
	if err := c.appendFrame(n, payload); err != nil {
		return err
	}
	return c.f.Sync()
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

// startCheckpoints begins writing the records tx holds so far (a checkpoint's, staged first in
// a group) as the checkpoint file's next frame, synced, on another goroutine: the writer
// stages the group's operations meanwhile, and its commit waits for the frame
// (writeCheckpoints): its fsync, done by the writer, would be nearly a quarter of the time
// the writer spends off its CPU.
// Nothing else touches the file until then: a rewrite starts and ends between groups.
func (s *Store) startCheckpoints(tx *txn) {
	if len(tx.cpRecs) == 0 || tx.cpFrame != nil {
		return
	}
	f := &cpFrameWrite{n: s.cpNo + 1, recs: len(tx.cpRecs), done: make(chan error, 1)}
	recs := tx.cpRecs[:f.recs] // later records go after: never over these
	go func() { f.done <- s.cpf.appendSynced(f.n, recs) }()
	tx.cpFrame = f
}

// cpFrameWrite is a frame of the checkpoint file being written by startCheckpoints: number n,
// holding the first recs bytes of its txn's records.
type cpFrameWrite struct {
	n    uint64
	recs int
	done chan error
}

// writeCheckpoints writes the checkpoint file's part of tx's commit, before the commit's
// own durable write: tx's records in frames, synced, the last of whose numbers tx's batch
// stores. A frame begun by startCheckpoints holds the first of them.
func (s *Store) writeCheckpoints(tx *txn) error {
	recs := tx.cpRecs
	if f := tx.cpFrame; f != nil {
		tx.cpFrame = nil
		if err := <-f.done; err != nil {
			return err
		}
		s.cpNo = f.n
		recs = recs[f.recs:]
		if len(recs) == 0 {
			return setCheckpointNo(tx.batch, f.n)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return s.appendCheckpoints(recs, tx.batch)
}

// appendCheckpoints appends recs to the checkpoint file as its next frame, synced, and stages
// the frame's number in the batch that makes it count.
func (s *Store) appendCheckpoints(recs []byte, batch *pebble.Batch) error {
	n := s.cpNo + 1
	if err := s.cpf.appendSynced(n, recs); err != nil {
		return err
	}
	s.cpNo = n
	return setCheckpointNo(batch, n)
}

func setCheckpointNo(batch *pebble.Batch, n uint64) error {
	return batch.Set([]byte{tagCheckpointNo}, appendU64(nil, n), nil)
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
