package embedded

import (
	"context"
	"encoding/binary"
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

// recoverHistory stores the points of the events of the newest log record that have none:
// those of the last group before a crash, and publishes them in a new snapshot. It runs in
// Open, after recover and before anything changes the recovered state. (A store of an earlier
// version kept that record apart, as its journal: it is read too, and dropped.)
func (e *Store) recoverHistory() error {
	batch := e.db.NewBatch()
	defer batch.Close()
	recovered, journal := 0, false
	for _, k := range [][]byte{{tagJournal}, e.newestLog()} {
		if k == nil {
			continue
		}
		v, ok, err := get(e.db, k)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if k[0] == tagJournal {
			journal = true
			batch.Delete(k, nil)
		}
		now, entries, err := decodeLog(v)
		if err != nil {
			return err
		}
		n, err := e.recoverPoints(batch, now, entries)
		if err != nil {
			return err
		}
		recovered += n
	}
	if recovered == 0 && !journal {
		return nil // nothing to store: no commit, no fsync
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return err
	}
	if recovered > 0 {
		e.snap.Close()
		e.snap = e.db.NewSnapshot()
		e.log.Info("recovered the rank history of the last writes before a crash", "points", recovered)
	}
	return nil
}

// recoverPoints stages in batch the points of entries that have none, as memory stands.
func (e *Store) recoverPoints(batch *pebble.Batch, now int64, entries []loggedEvent) (int, error) {
	recovered := 0
	for _, j := range entries {
		b := e.boards[j.board]
		if b == nil {
			continue // deleted since
		}
		k := historyKey(j.board, j.member, j.seq)
		if _, ok, err := get(e.db, k); err != nil {
			return 0, err
		} else if ok {
			continue
		}
		if _, ok, err := get(e.db, eventKey(j.board, j.member, j.seq)); err != nil {
			return 0, err
		} else if !ok {
			continue // retracted since
		}
		var names []string
		var standings []laurel.Standing
		for _, w := range b.windows {
			if s, ok := e.standing(b, w, j.member, now); ok {
				names, standings = append(names, w.name), append(standings, s)
			}
		}
		if err := batch.Set(k, encodeHistory(j.ts, names, standings), nil); err != nil {
			return 0, err
		}
		recovered++
	}
	return recovered, nil
}

// historyRecord is one pending history record.
type historyRecord struct{ key, value []byte }

func historyKey(board, member string, seq uint64) []byte {
	return appendU64(prefix(tagHistory, board, member), seq)
}

// encodeHistory encodes the event's time and the member's standing per window.
func encodeHistory(ts int64, names []string, standings []laurel.Standing) []byte {
	b := appendU64(make([]byte, 0, 8+len(names)*20), uint64(ts))
	for i, name := range names {
		b = append(b, byte(len(name)))
		b = append(b, name...)
		b = appendU64(b, uint64(standings[i].Score))
		b = binary.BigEndian.AppendUint32(b, uint32(standings[i].Rank))
	}
	return b
}

// decodeHistory finds window's point in a history record; ok is false when the member was not
// ranked in it (it was hidden, or the window was added later).
func decodeHistory(b []byte, window string) (p laurel.HistoryPoint, ok bool, err error) {
	if len(b) < 8 {
		return p, false, errCorrupt
	}
	p.At = int64(readU64(b))
	for b = b[8:]; len(b) > 0; {
		n := int(b[0])
		if len(b) < 1+n+12 {
			return p, false, errCorrupt
		}
		name := string(b[1 : 1+n])
		b = b[1+n:]
		if name == window {
			p.Score = int64(readU64(b))
			p.Rank = int(binary.BigEndian.Uint32(b[8:]))
			return p, true, nil
		}
		b = b[12:]
	}
	return p, false, nil
}

// decodePoints decodes a whole history record: the event's time and the member's [score,
// rank] per window, as a dump holds them.
func decodePoints(b []byte) (ts int64, points map[string][2]int64, err error) {
	if len(b) < 8 {
		return 0, nil, errCorrupt
	}
	ts = int64(readU64(b))
	points = make(map[string][2]int64)
	for b = b[8:]; len(b) > 0; b = b[12:] {
		n := int(b[0])
		if len(b) < 1+n+12 {
			return 0, nil, errCorrupt
		}
		name := string(b[1 : 1+n])
		b = b[1+n:]
		points[name] = [2]int64{int64(readU64(b)), int64(binary.BigEndian.Uint32(b[8:]))}
	}
	return ts, points, nil
}

// recordHistory computes the member's standing in every window after an applied event and
// queues its history record. It runs in the writer, under the read lock, after the apply; it
// returns the standings for the event's result.
func (e *Store) recordHistory(b *board, member string, seq uint64, ts, now int64) map[string]laurel.Standing {
	entries := make(map[string]laurel.Standing, len(b.windows))
	names := make([]string, 0, len(b.windows))
	standings := make([]laurel.Standing, 0, len(b.windows))
	for _, w := range b.windows {
		if s, ok := e.standing(b, w, member, now); ok {
			entries[w.name] = s
			names = append(names, w.name)
			standings = append(standings, s)
		}
	}
	if seq != 0 {
		e.history = append(e.history, historyRecord{historyKey(b.cfg.ID, member, seq), encodeHistory(ts, names, standings)})
		e.pending.Add(1)
	}
	return entries
}

// stageHistory adds the queued history records to tx: first in its batch, so that a
// retraction or deletion later in the batch removes them.
func (e *Store) stageHistory(tx *txn) {
	for _, r := range e.history {
		tx.set(r.key, r.value)
	}
	tx.historyPoints += len(e.history)
	e.history = e.history[:0]
}

// History returns the member's points in window, newest first.
func (e *Store) History(ctx context.Context, boardID, window, member string, limit int) ([]laurel.HistoryPoint, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > laurel.MaxHistoryLimit {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "limit", "must be an integer from 1 to %d", laurel.MaxHistoryLimit)
	}
	if e.pending.Load() > 0 {
		// Wait for the commit that makes the points of recent events durable.
		if err := e.do(ctx, &op{}); err != nil {
			return nil, err
		}
	}
	rd, err := e.resolve(ctx, laurel.Query{Board: boardID, Window: window})
	if err != nil {
		return nil, err
	}
	defer rd.done()
	if e.hidden[member] {
		return nil, laurel.FieldErrorf(laurel.ENotFound, "member", "member %q is hidden", member)
	}
	p := prefix(tagHistory, rd.b.cfg.ID, member)
	it, err := e.snap.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: upper(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	points := []laurel.HistoryPoint{}
	for valid := it.Last(); valid && len(points) < limit; valid = it.Prev() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		pt, ok, err := decodeHistory(v, rd.w.name)
		if err != nil {
			return nil, err
		}
		if ok {
			points = append(points, pt)
		}
	}
	return points, nil
}
