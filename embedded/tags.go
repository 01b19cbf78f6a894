package embedded

import (
	"encoding/json"

	"github.com/laurel/laurel"
)

// Tags are kept with their events only, so that they cost the index nothing: a read finds an
// entry's tag among the member's events (laurel.TagOf), on the boards whose events carried one.

// taggedKey is the mark of a board whose events carried a tag.
func taggedKey(board string) []byte { return prefix(tagTagged, board) }

// markTagged marks b as carrying tags, in memory at once (a batch that fails only costs its
// reads the look-ups) and in the store with the first commit that holds a tagged event.
func (s *Store) markTagged(tx *txn, b *board) {
	b.tagged.Store(true)
	if !b.tagKept {
		tx.set(taggedKey(b.cfg.ID), nil)
		tx.onCommit(b, func() { b.tagKept = true })
	}
}

// recoverTagged reads b's mark.
func (s *Store) recoverTagged(b *board) error {
	_, ok, err := get(s.db, taggedKey(b.cfg.ID))
	if ok {
		b.tagged.Store(true)
		b.tagKept = true
	}
	return err
}

// tags sets the tag of each entry of a reading of a tagged board: that of the event that made
// its score among the member's counted events, or, in a closed period, among all its events
// (the period froze with events retracted since).
func (rd *reading) tags(entries []laurel.Entry) error {
	if !rd.b.tagged.Load() {
		return nil
	}
	for i := range entries {
		events, err := rd.e.readEvents(rd.b.cfg.ID, entries[i].Member, rd.period.Closed)
		if err != nil {
			return err
		}
		entries[i].Tag = laurel.TagOf(rd.b.cfg.Mode, entries[i].Score, entries[i].ReachedAt, counted(events))
	}
	return nil
}

// readEvents returns the member's events on a board as a read under the read lock sees them,
// in arrival order: the sealed ones as the snapshot holds them, those being sealed, then those
// since the last seal; the retracted ones too when all is set.
func (s *Store) readEvents(boardID, member string, all bool) ([]storedEvent, error) {
	var out []storedEvent
	err := scanPrefix(s.snap, prefix(tagEvents, boardID, member), func(k, v []byte) error {
		seqs, err := indexedSeqs(nil, k, v)
		if err != nil {
			return err
		}
		for _, seq := range seqs {
			if seq > s.sealedTo {
				continue // being sealed: read from sealing below
			}
			ev, ok, err := readSealed(s.snap, boardID, seq)
			if err != nil {
				return err
			}
			if ok && (all || ev.flags&flagRetracted == 0) {
				out = append(out, ev)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range []*recentEvents{s.sealing, s.recent} {
		for _, i := range r.member(boardID, member) {
			if _, ev := r.at(i); all || ev.flags&flagRetracted == 0 {
				out = append(out, storedEvent{event: ev})
			}
		}
	}
	return out, nil
}

// tagJSON is a stored tag as the domain carries it: nil for none.
func tagJSON(tag string) json.RawMessage {
	if tag == "" {
		return nil
	}
	return json.RawMessage(tag)
}
