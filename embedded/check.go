package embedded

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/laurel/laurel"
)

// Check verifies that memory and the store agree, for tests: every span's tree is sound and
// holds exactly its members not hidden; each open calendar period and all hold the aggregates
// the checkpoint file holds, hidden members' included, and the file holds no others; each
// rolling window's span holds the merge of its stored buckets, and its newest bucket the
// stored one; each entry of an open calendar period or all has the tag that the look-up among
// the member's events finds (tags.go); each closed period holds as many ranks as it says; the
// member index lists each sealed event once, and nothing else; so do the ids (checkSealed); a
// board with a rate rule holds the times of its counted events since its horizon (checkRates).
//
// It first has the writer store every aggregate that memory holds alone (checkpoint.go), so
// that the two can be compared, and checks that the checkpoint queue then names nothing.
func (s *Store) Check() error {
	// The checkpoint file is read by the writer, right after the commit: it appends to it,
	// and renames another over it, only between groups.
	var spans map[string]map[string]laurel.Agg
	var from map[string]int64
	var readErr error
	err := s.do(context.Background(), &op{exclusive: true, run: func(tx *txn) error {
		s.checkpoint(tx, true)
		if err := s.checkRates(); err != nil {
			return err
		}
		return s.checkQueueEmpty()
	}, finish: func() {
		if spans, from, readErr = s.checkpointedSpans(s.cpNo); readErr == nil {
			readErr = s.checkSealed()
		}
	}})
	if err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.snap == nil {
		return errClosed
	}
	for _, b := range s.boards {
		for _, w := range b.windows {
			if err := s.checkWindow(b, w, spans); err != nil {
				return fmt.Errorf("board %s window %s: %w", b.cfg.ID, w.name, err)
			}
			if err := s.checkFileBuckets(b, w, spans, from); err != nil {
				return fmt.Errorf("board %s window %s: the checkpoint file's buckets: %w", b.cfg.ID, w.name, err)
			}
		}
	}
	for k, entries := range spans {
		if len(entries) > 0 {
			return fmt.Errorf("the checkpoint file holds %d aggregates of span %q, which memory does not have", len(entries), k)
		}
	}
	return nil
}

// sealedRef names a sealed event: sequence numbers are a board's after an import.
type sealedRef struct {
	seq   uint64
	board string
}

// checkSealed verifies, in the writer, that the sealed events through the last seal that
// ended are of boards the store has, and that the member index and the ids agree with them,
// reading them once for both (a seal under way may have ingested its files already).
func (s *Store) checkSealed() error {
	retracted := make(map[string]bool)
	err := scanPrefix(s.db, []byte{tagRetract}, func(k, _ []byte) error {
		retracted[string(k)] = true
		return nil
	})
	if err != nil {
		return err
	}
	members := make(map[sealedRef]string)
	ids := make(map[boardID]uint64) // of the events neither retracted nor erased
	err = scanPrefix(s.db, []byte{tagSealed}, func(k, v []byte) error {
		seq := readU64(k[1:9])
		if seq > s.sealedTo {
			return nil
		}
		board, ev, _, err := decodeSealed(seq, v)
		if err != nil {
			return err
		}
		if s.boards[board] == nil {
			return fmt.Errorf("sealed event %d is of board %q, which the store does not have", seq, board)
		}
		members[sealedRef{seq, board}] = ev.member
		if ev.id == "" || ev.flags&flagRetracted != 0 || retracted[string(retractKey(board, seq))] {
			return nil
		}
		if other, ok := ids[boardID{board, ev.id}]; ok {
			return fmt.Errorf("sealed events %d and %d of board %q both hold id %q", other, seq, board, ev.id)
		}
		ids[boardID{board, ev.id}] = seq
		return nil
	})
	if err != nil {
		return err
	}
	return cmp.Or(s.checkMemberIndex(members), s.checkIDs(ids), s.checkUnsealedIDs())
}

// checkUnsealedIDs verifies that the id filter holds the ids of the events not sealed.
func (s *Store) checkUnsealedIDs() error {
	return s.eachUnsealedID(func(k []byte, board string, ev event) error {
		if s.ids.absent(k) {
			return fmt.Errorf("the id filter calls the id %q of board %q (event %d, not sealed) surely absent", ev.id, board, ev.seq)
		}
		return nil
	})
}

// checkMemberIndex verifies that the member index lists each sealed event of members once,
// by its board and member's record, and that each number listed is such an event; it
// empties members.
func (s *Store) checkMemberIndex(members map[sealedRef]string) error {
	var seqs []uint64
	err := scanPrefix(s.db, []byte{tagEvents}, func(k, v []byte) (err error) {
		board, rest, _ := strings.Cut(string(k[1:]), "\x00")
		member := rest[:len(rest)-9]
		if seqs, err = indexedSeqs(seqs[:0], k, v); err != nil {
			return err
		}
		for _, seq := range seqs {
			if seq > s.sealedTo {
				continue
			}
			if m, ok := members[sealedRef{seq, board}]; !ok || m != member {
				return fmt.Errorf("the member index lists event %d of board %q for member %q; the sealed events have it for %q", seq, board, member, m)
			}
			delete(members, sealedRef{seq, board})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for ev, member := range members {
		return fmt.Errorf("sealed event %d of board %q, member %q, is not in the member index (and %d more)", ev.seq, ev.board, member, len(members)-1)
	}
	return nil
}

// checkQueueEmpty verifies, once every dirty aggregate is checkpointed, that nothing of the
// queue is left: no run, no target in use, no span or bucket that says it is one.
func (s *Store) checkQueueEmpty() error {
	cp := &s.cp
	if _, ok := cp.queue.oldest(); ok || len(cp.runs) > cp.runsHead {
		return fmt.Errorf("checkpoint queue: entries or runs left after a full checkpoint")
	}
	if len(cp.free) != len(cp.targets) {
		return fmt.Errorf("checkpoint queue: %d targets, %d free", len(cp.targets), len(cp.free))
	}
	for _, b := range s.boards {
		for _, w := range b.windows {
			for _, sp := range w.open {
				if sp.target != 0 {
					return fmt.Errorf("board %s window %s: span %d still a checkpoint target", b.cfg.ID, w.name, sp.start)
				}
			}
			for _, bk := range w.inMemory() {
				if bk.target != 0 {
					return fmt.Errorf("board %s window %s: bucket %d still a checkpoint target", b.cfg.ID, w.name, bk.start)
				}
			}
		}
	}
	return nil
}

// checkpointedSpans reads the checkpoint file through frame last: the aggregates it holds,
// by span (spanPrefix) and member.
//
// It also returns, by a rolling window's key prefix, from which bucket on the file says it
// holds the window's buckets (cpSpanFrom); spans then holds them too.
func (s *Store) checkpointedSpans(last uint64) (map[string]map[string]laurel.Agg, map[string]int64, error) {
	spans := make(map[string]map[string]laurel.Agg)
	from := make(map[string]int64)
	forget := func(p string) {
		for sp := range spans {
			if strings.HasPrefix(sp, p) {
				delete(spans, sp)
			}
		}
		for wp := range from {
			if strings.HasPrefix(wp, p) {
				delete(from, wp)
			}
		}
	}
	ids := make(map[string][]string) // by board, the ids its sections name, by handle
	_, _, err := readCheckpoints(s.opts.FS, s.dir, last, func(r *cpRecord) error {
		k, err := parseAggKey(r.key)
		if err != nil {
			return err
		}
		switch r.kind {
		case cpMembers:
			board := string(k.board)
			return readMembers(r.body, func(mh membersHead) error {
				if mh.first == 0 {
					ids[board] = nil
				}
				if uint64(len(ids[board])) != mh.first {
					return errCorrupt
				}
				return nil
			}, func(id []byte) { ids[board] = append(ids[board], string(id)) })
		case cpSpan:
			sp := string(r.key)
			if spans[sp] == nil {
				spans[sp] = make(map[string]laurel.Agg)
			}
			names := ids[string(k.board)]
			return readSpan(r.body, func(sh spanHead) error {
				if sh.flags&cpSpanFrom != 0 {
					wp := string(prefix(tagAgg, string(k.board), string(k.window)))
					forget(wp)
					from[wp] = k.start
					spans[sp] = make(map[string]laurel.Agg)
				}
				return nil
			}, func(h uint32, v slot) error {
				if int(h) >= len(names) {
					return errCorrupt
				}
				spans[sp][names[h]] = toAgg(aggregate(v), true)
				return nil
			})
		}
		if r.kind == cpDrop {
			forget(string(r.key))
			return nil
		}
		sp := string(r.key[:len(r.key)-len(k.member)])
		if spans[sp] == nil {
			spans[sp] = make(map[string]laurel.Agg)
		}
		if r.kind == cpSet {
			spans[sp][string(k.member)] = toAgg(r.a, true)
		} else {
			delete(spans[sp], string(k.member))
		}
		return nil
	})
	return spans, from, err
}

// checkFileBuckets checks that the checkpoint file holds the buckets of w, a rolling window,
// that the store holds, from the bucket it says on (cpsection.go, "Buckets"), and takes the
// file's records of w out of spans.
func (s *Store) checkFileBuckets(b *board, w *window, spans map[string]map[string]laurel.Agg, from map[string]int64) error {
	if !w.w.IsRolling() {
		return nil
	}
	wp := prefix(tagAgg, b.cfg.ID, w.name)
	start, ok := from[string(wp)]
	if ok {
		stored := make(map[string]map[string]laurel.Agg)
		err := scan(s.snap, spanPrefix(tagAgg, b.cfg.ID, w.name, start), upper(wp), func(k, v []byte) error {
			a, err := decodeAgg(v)
			bp := string(k[:len(wp)+8])
			if stored[bp] == nil {
				stored[bp] = make(map[string]laurel.Agg)
			}
			stored[bp][string(k[len(wp)+8:])] = toAgg(a, true)
			return err
		})
		if err != nil {
			return err
		}
		for bp, file := range spans {
			if strings.HasPrefix(bp, string(wp)) && readTime([]byte(bp[len(wp):])) >= start && len(file) > 0 && stored[bp] == nil {
				stored[bp] = make(map[string]laurel.Agg)
			}
		}
		for bp, want := range stored {
			got := spans[bp]
			if len(got) != len(want) {
				return fmt.Errorf("bucket %d: %d members in the file, %d in the store", readTime([]byte(bp[len(wp):])), len(got), len(want))
			}
			for m, a := range want {
				if f, ok := got[m]; !ok || f != a {
					return fmt.Errorf("bucket %d: member %q: file %+v (present %v), store %+v", readTime([]byte(bp[len(wp):])), m, f, ok, a)
				}
			}
		}
	}
	for bp := range spans {
		if strings.HasPrefix(bp, string(wp)) {
			delete(spans, bp)
		}
	}
	return nil
}

func (s *Store) checkWindow(b *board, w *window, spans map[string]map[string]laurel.Agg) error {
	for _, sp := range w.open {
		if err := sp.tree.Check(); err != nil {
			return err
		}
		if err := s.checkTags(b, w, sp); err != nil {
			return err
		}
		// What the store says the span holds: the merge of a rolling window's buckets, or
		// a period's aggregates.
		var want map[string]laurel.Agg
		var err error
		if w.w.IsRolling() {
			if want, err = loadBuckets(s.snap, b, w, nil, sp.start, sp.end); err != nil {
				return err
			}
		} else {
			k := string(spanPrefix(tagAgg, b.cfg.ID, w.name, sp.start))
			want = spans[k]
			delete(spans, k) // checked
		}
		if len(want) != sp.slots.n {
			return fmt.Errorf("span %d: %d members in memory, %d in the store", sp.start, sp.slots.n, len(want))
		}
		ranked := 0
		for m, a := range want {
			h, ok := b.members.lookup(m)
			if !ok {
				return fmt.Errorf("span %d: member %q is not interned", sp.start, m)
			}
			if v, ok := sp.slots.get(h); !ok || v != slot(fromAgg(a)) {
				return fmt.Errorf("span %d: member %q: memory %+v (present %v), store %+v", sp.start, m, v, ok, a)
			}
			if s.hidden[m] {
				continue
			}
			ranked++
			if k := treeKey(h, slot(fromAgg(a))); !sp.tree.Has(k) {
				return fmt.Errorf("span %d: member %q (%+v) is not in the tree", sp.start, m, a)
			}
		}
		if ranked != sp.tree.Len() {
			return fmt.Errorf("span %d: %d members ranked, tree holds %d", sp.start, ranked, sp.tree.Len())
		}
	}
	if nb := w.newest; nb != nil {
		want, err := loadBuckets(s.snap, b, w, nil, nb.start, nb.start+1)
		if err != nil {
			return err
		}
		if len(want) != nb.slots.n {
			return fmt.Errorf("newest bucket %d: %d members in memory, %d in the store", nb.start, nb.slots.n, len(want))
		}
		for m, a := range want {
			if _, v, ok := slotOf(b, &nb.slots, m); !ok || v != slot(fromAgg(a)) {
				return fmt.Errorf("newest bucket %d: member %q: memory %+v (present %v), store %+v", nb.start, m, v, ok, a)
			}
		}
	}
	for _, cp := range w.closed {
		n := 0
		var prev *frozen
		err := scanPrefix(s.snap, spanPrefix(tagRank, b.cfg.ID, w.name, cp.start), func(k, v []byte) error {
			n++
			// Entries by rank, in the board's order: score, subscore, reached_at, member.
			f, err := decodeFrozen(binary.BigEndian.Uint32(k[len(k)-4:]), v, b.cfg.Subscore != nil)
			if err != nil {
				return err
			}
			if prev != nil && laurel.CompareRanked(b.cfg.Ordering(), prev.agg.key(), prev.member, f.agg.key(), f.member) >= 0 {
				return fmt.Errorf("closed period %s: rank %d (%+v) does not rank before rank %d (%+v)", cp.id, prev.rank, *prev, f.rank, f)
			}
			prev = &f
			return nil
		})
		if err != nil {
			return err
		}
		if n+len(cp.removed) != int(cp.total) {
			return fmt.Errorf("closed period %s: %d ranks stored, %d removed, total %d", cp.id, n, len(cp.removed), cp.total)
		}
	}
	return nil
}

// boardID names an event by its board and id.
type boardID struct{ board, id string }

// checkIDs verifies that the id records name the sealed events of want, each once, in the
// run that covers it or under I, and nothing else; and that the runs are listed in order and
// do not overlap (idruns.go). It empties want.
func (s *Store) checkIDs(want map[boardID]uint64) error {
	for i := 1; i < len(s.idRuns); i++ {
		if s.idRuns[i].first <= s.idRuns[i-1].last {
			return fmt.Errorf("id runs %+v and %+v overlap", s.idRuns[i-1], s.idRuns[i])
		}
	}
	found := func(where, board, id string, seq uint64) error {
		if s.ids.absent(key(tagID, board, id)) {
			// Which of two faults: a live id the filter missed, or a record that should be gone.
			sealed, live := want[boardID{board, id}]
			return fmt.Errorf("the id filter calls the id %q of board %q (%s, event %d; a sealed event holds it: %v, event %d) surely absent",
				id, board, where, seq, live, sealed)
		}
		if sealed, ok := want[boardID{board, id}]; !ok || sealed != seq {
			return fmt.Errorf("the id %q of board %q (%s) names event %d; the sealed events have it for %d", id, board, where, seq, sealed)
		}
		delete(want, boardID{board, id})
		return nil
	}
	err := scanPrefix(s.db, []byte{tagIDRun}, func(k, v []byte) error {
		r, err := readIDRun(k)
		if err != nil || r.first > s.sealedTo { // a seal under way
			return err
		}
		if !slices.Contains(s.idRuns, r) {
			return fmt.Errorf("the store holds ids of run %+v, which is not listed", r)
		}
		board, id, _ := strings.Cut(string(k[idRunPrefixLen:]), "\x00")
		if len(v) != 8 || !r.covers(readU64(v)) {
			return fmt.Errorf("the id %q of board %q in run %+v: record %x: %w", id, board, r, v, errCorrupt)
		}
		return found(fmt.Sprintf("run %+v", r), board, id, readU64(v))
	})
	if err != nil {
		return err
	}
	err = scanPrefix(s.db, []byte{tagID}, func(k, v []byte) error {
		board, id, _ := strings.Cut(string(k[1:]), "\x00")
		ev, _, err := decodeID(v, id)
		if err != nil || ev.seq > s.sealedTo {
			return err
		}
		return found("under I", board, id, ev.seq)
	})
	if err != nil {
		return err
	}
	for k, seq := range want {
		return fmt.Errorf("sealed event %d of board %q has id %q, which no id record names (and %d more)", seq, k.board, k.id, len(want)-1)
	}
	return nil
}
