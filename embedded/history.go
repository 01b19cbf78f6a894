package embedded

import (
	"context"
	"encoding/binary"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// A member's rank history (docs/api.md, "Live and history") is one record per event: its time and
// the member's score and rank in each window right after the event's group. Ranks are known
// only once a group is applied to memory, after its fsync, so the records of a group ride
// along with the next commit, or with a commit of their own after historyDelay when no other
// write comes: a point becomes readable, like everything else, once it is durable; a History
// read waits for that commit, so a client reads its own writes.
//
// So that a crash loses no point, each group's commit also stores its log record: the events
// it applied, with the group's time (checkpoint.go). After a crash, the newest log record
// names the only events whose points may not be stored, and Open computes them from the
// recovered state — which is the state right after that group, since any later commit would
// have stored the points — before anything else changes it.
const historyDelay = 50 * time.Millisecond

// recoverHistory stores the points of the events of the newest group in the log that have
// none (those of the last group before a crash: a later commit would have carried them), and
// attaches them to their events. It runs
// in Open, after recover and before anything changes the recovered state.
func (s *Store) recoverHistory() error {
	it, err := s.logDB.NewIter(&pebble.IterOptions{LowerBound: []byte{tagLog}, UpperBound: []byte{tagLog + 1}})
	if err != nil {
		return err
	}
	var last logRecord
	for valid := it.Last(); valid && err == nil && len(last.events) == 0; valid = it.Prev() {
		last, err = decodeLogRecord(readU64(it.Key()[1:]), it.Value())
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	now, entries := last.now, last.events
	var points []pointRecord
	for _, j := range entries {
		b := s.boards[j.board]
		i, ok := s.recent.index(j.seq)
		if b == nil || !ok || s.recent.list[i].point != 0 || s.recent.list[i].flags&flagRetracted != 0 {
			continue // its board or member deleted since, or it has its point, or it counts no more
		}
		names, standings := s.standings(b, s.currentSpans(b, now), j.member, nil, nil)
		points = append(points, pointRecord{j.seq, encodeHistory(j.ts, names, standings)})
	}
	if len(points) == 0 {
		return nil
	}
	if err := s.logDB.Set(logKey(s.logNo+1), appendLogRecord(nil, s.now(), nil, points, nil), pebble.Sync); err != nil {
		return err
	}
	s.logNo++
	for _, p := range points {
		s.recent.setPoint(p.seq, s.logNo)
	}
	s.log.Info("recovered the rank history of the last writes before a crash", "points", len(points))
	return nil
}

// encodeHistory encodes the event's time and the member's standing per window.
func encodeHistory(ts int64, names []string, standings []laurel.Standing) []byte {
	return appendHistory(make([]byte, 0, historySize(names, standings)), ts, names, standings)
}

// historySize is the length of a history record of the windows names.
func historySize(names []string, standings []laurel.Standing) int {
	n := 8
	for i, name := range names {
		n += 1 + len(name) + 12
		if standings[i].Sub != 0 {
			n += 8
		}
	}
	return n
}

// historySub marks, in the length of a window's name, a point whose subscore follows its
// rank: one whose subscore is not 0. Other points are written as before subscores were kept;
// window names are far shorter than 128 bytes.
const historySub = 0x80

func appendHistory(b []byte, ts int64, names []string, standings []laurel.Standing) []byte {
	b = appendU64(b, uint64(ts))
	for i, name := range names {
		n := byte(len(name))
		if standings[i].Sub != 0 {
			n |= historySub
		}
		b = append(b, n)
		b = append(b, name...)
		b = appendU64(b, uint64(standings[i].Score))
		b = binary.BigEndian.AppendUint32(b, uint32(standings[i].Rank))
		if standings[i].Sub != 0 {
			b = appendU64(b, uint64(standings[i].Sub))
		}
	}
	return b
}

// historyEntry reads the point at the start of b (the part of a history record after its
// time): the window's name, the point, and the rest of b.
func historyEntry(b []byte) (name string, p laurel.HistoryPoint, rest []byte, err error) {
	n, sub := int(b[0]&^historySub), b[0]&historySub != 0
	size := 1 + n + 12
	if sub {
		size += 8
	}
	if len(b) < size {
		return "", p, nil, errCorrupt
	}
	name = string(b[1 : 1+n])
	b = b[1+n:]
	p.Score = int64(readU64(b))
	p.Rank = int(binary.BigEndian.Uint32(b[8:]))
	if sub {
		p.Sub = int64(readU64(b[12:]))
	}
	return name, p, b[size-1-n:], nil
}

// decodeHistory finds window's point in a history record; ok is false when the member was not
// ranked in it (it was hidden, or the window was added later).
func decodeHistory(b []byte, window string) (p laurel.HistoryPoint, ok bool, err error) {
	if len(b) < 8 {
		return p, false, errCorrupt
	}
	at := int64(readU64(b))
	for b = b[8:]; len(b) > 0; {
		name, q, rest, err := historyEntry(b)
		if err != nil {
			return p, false, err
		}
		if name == window {
			q.At = at
			return q, true, nil
		}
		b = rest
	}
	p.At = at
	return p, false, nil
}

// decodePoints decodes a whole history record: the event's time and the member's [score,
// rank] per window, and the subscores that are not 0, as a dump holds them.
func decodePoints(b []byte) (ts int64, points map[string][2]int64, subs map[string]int64, err error) {
	if len(b) < 8 {
		return 0, nil, nil, errCorrupt
	}
	ts = int64(readU64(b))
	points = make(map[string][2]int64)
	for b = b[8:]; len(b) > 0; {
		name, p, rest, err := historyEntry(b)
		if err != nil {
			return 0, nil, nil, err
		}
		points[name] = [2]int64{p.Score, int64(p.Rank)}
		if p.Sub != 0 {
			if subs == nil {
				subs = make(map[string]int64)
			}
			subs[name] = p.Sub
		}
		b = rest
	}
	return ts, points, subs, nil
}

// recordHistory computes the member's standing in every window after an applied event, in
// the current spans of b's windows, and queues its history record. It runs in the writer,
// under the read lock, after the apply; it returns the standings for the event's result when
// ranks is set.
func (s *Store) recordHistory(b *board, spans []*span, member string, seq uint64, ts int64, ranks bool) map[string]laurel.Standing {
	var nameBuf [8]string
	var standingBuf [8]laurel.Standing
	names, standings := s.standings(b, spans, member, nameBuf[:0], standingBuf[:0])
	var entries map[string]laurel.Standing
	if ranks {
		entries = make(map[string]laurel.Standing, len(names))
		for i, name := range names {
			entries[name] = standings[i]
		}
	}
	if seq != 0 {
		point := appendHistory(s.pointChunks.take(historySize(names, standings)), ts, names, standings)
		s.history = append(s.history, pointRecord{seq, point})
		s.pending.Add(1)
	}
	return entries
}

// chunks hands out byte slices cut from chunks of pointChunk bytes that are never grown: a
// full chunk stays with the slices cut from it, and a new one is begun, so that many small
// slices kept a while (history points) cost an allocation a chunk rather than one each.
type chunks struct{ b []byte }

// pointChunk is the size of the chunks history points are kept in.
const pointChunk = 256 << 10

// take returns an empty slice with room for n bytes, which later takes never write over.
func (c *chunks) take(n int) []byte {
	if cap(c.b)-len(c.b) < n {
		c.b = make([]byte, 0, max(pointChunk, n))
	}
	start := len(c.b)
	c.b = c.b[:start+n]
	return c.b[start : start : start+n]
}

// standings appends to names and standings the member's standing in each window of b where
// it has one: its rank and score in the window's current span, of spans (currentSpans). A
// hidden member has none. It runs in the writer, under the read lock, right after the write.
func (s *Store) standings(b *board, spans []*span, member string, names []string, standings []laurel.Standing) ([]string, []laurel.Standing) {
	h, ok := b.members.lookup(member)
	if !ok || !s.ranked(member) {
		return names, standings
	}
	for i, sp := range spans {
		if sp == nil {
			continue
		}
		v, ok := sp.slots.get(h)
		if !ok {
			continue
		}
		if r, ok := sp.tree.Rank(treeKey(h, v)); ok {
			names, standings = append(names, b.windows[i].name), append(standings, laurel.Standing{Rank: r, Score: v.score, Sub: v.sub})
		}
	}
	return names, standings
}

// currentSpans returns the in-memory span of each of b's windows that a read at now sees,
// nil where it is empty.
func (s *Store) currentSpans(b *board, now int64) []*span {
	spans := make([]*span, len(b.windows))
	for i, w := range b.windows {
		spans[i] = s.currentSpan(b, w, now)
	}
	return spans
}

// stageHistory adds the queued history points to tx, for its log record (or its seal).
func (s *Store) stageHistory(tx *txn) {
	if len(s.history) == 0 {
		return
	}
	points := slices.Clone(s.history)
	tx.points = append(tx.points, points...)
	tx.historyPoints += len(points)
	s.history = s.history[:0]
	tx.onCommitBooks(func() {
		for _, p := range points {
			s.recent.setPoint(p.seq, s.logNo) // the record the commit just wrote
		}
	})
}

// History returns the member's points in window, newest first.
func (s *Store) History(ctx context.Context, boardID, window, member string, limit int) ([]laurel.HistoryPoint, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > laurel.MaxHistoryLimit {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "limit", "must be an integer from 1 to %d", laurel.MaxHistoryLimit)
	}
	if s.pending.Load() > 0 {
		// Wait for the commit that makes the points of recent events durable.
		if err := s.do(ctx, &op{}); err != nil {
			return nil, err
		}
	}
	rd, err := s.resolve(ctx, laurel.Query{Board: boardID, Window: window})
	if err != nil {
		return nil, err
	}
	defer rd.done()
	if s.hidden[member] {
		return nil, laurel.FieldErrorf(laurel.ENotFound, "member", "member %q is hidden", member)
	}
	// Newest first: the events since the last seal, those being sealed, then the sealed ones
	// from the end of the member's index, reading no further than limit.
	points := []laurel.HistoryPoint{}
	add := func(ev storedEvent) (bool, error) {
		if ev.flags&flagRetracted != 0 || ev.point == nil {
			return true, nil // retracted (its point with it), or not stored yet
		}
		pt, ok, err := decodeHistory(ev.point, rd.w.name)
		if ok {
			pt.Tag = tagJSON(ev.tag)
			points = append(points, pt)
		}
		return len(points) < limit, err
	}
	lp := newLogPoints(s.logDB)
	for _, r := range []*recentEvents{s.recent, s.sealing} {
		recent := r.member(rd.b.cfg.ID, member)
		for k := len(recent) - 1; k >= 0; k-- {
			_, ev := r.at(recent[k])
			point, err := lp.point(r.list[recent[k]].point, ev.seq)
			if err != nil {
				return nil, err
			}
			if more, err := add(storedEvent{ev, point}); err != nil || !more {
				return points, err
			}
		}
	}
	p := prefix(tagEvents, rd.b.cfg.ID, member)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: upper(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var seqs []uint64
	for valid := it.Last(); valid; valid = it.Prev() {
		if seqs, err = indexedSeqs(seqs[:0], it.Key(), it.Value()); err != nil {
			return nil, err
		}
		for _, seq := range slices.Backward(seqs) {
			if seq > s.sealedTo {
				continue // being sealed: read from sealing above
			}
			ev, ok, err := readSealed(s.snap, rd.b.cfg.ID, seq)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if more, err := add(ev); err != nil || !more {
				return points, err
			}
		}
	}
	return points, it.Error()
}
