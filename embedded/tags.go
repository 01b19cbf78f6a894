package embedded

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// An entry of an open period or all carries the tag of the event that made it beside its
// aggregate (span.tags, only for entries that have one): staging and retraction set it with
// the aggregate (laurel.Merge chooses it), Open from the events (recoverTags), since the
// checkpoint file holds none. Elsewhere (a rolling window, whose current span is merged from
// buckets without tags; a past instant; a closed period) a read finds an entry's tag among the
// member's events at its reached_at (laurel.TagOf), on the boards whose events carried one.
// Those since the last seal are in memory; a seal indexes the sealed events of such boards by
// member and time (D), so that a read finds the few at one instant without reading the
// member's others. Events sealed before their board's first tag are not indexed: none of them
// carries one, and the rule finds them only to break a tie in best mode (an untagged event and
// a later tagged one at the same millisecond with the same value).

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

// taggedBoards returns the boards that carry tags, for a seal to index their events; in the
// writer.
func (s *Store) taggedBoards() map[string]bool {
	var out map[string]bool
	for id, b := range s.boards {
		if b.tagged.Load() {
			if out == nil {
				out = make(map[string]bool)
			}
			out[id] = true
		}
	}
	return out
}

// appendByTimeKey appends the key of a sealed event in the index by member and time.
func appendByTimeKey(b []byte, board, member string, ts int64, seq uint64) []byte {
	return appendU64(appendTime(appendPrefix(b, tagByTime, board, member), ts), seq)
}

// tags sets the tag of each entry of a reading of a tagged board that memory does not hold
// beside its aggregate (a rolling window's, a closed period's): that of the event that made
// its score among the member's counted events at its reached_at, or, in a closed period, among
// all its events there (the period froze with events retracted since).
func (rd *reading) tags(entries []laurel.Entry) error {
	if !rd.b.tagged.Load() || len(entries) == 0 || !rd.looksUpTags() {
		return nil
	}
	return rd.e.lookUpTags(rd.b, entries, rd.period.Closed)
}

// lookUpTags sets the tag of each of b's entries from the member's counted events at its
// reached_at (all: its events, retracted ones too). Under the read lock, or the writer's at
// Open.
func (s *Store) lookUpTags(b *board, entries []laurel.Entry, all bool) error {
	events := make([][]storedEvent, len(entries))
	if err := s.sealedAt(b.cfg.ID, entries, all, events); err != nil {
		return err
	}
	for _, r := range []*recentEvents{s.sealing, s.recent} {
		r.eventsAt(b.cfg.ID, entries, all, events)
	}
	for i := range entries {
		entries[i].Tag = laurel.TagOf(b.cfg.Mode, entries[i].Key(), counted(events[i]))
	}
	return nil
}

// lookUpSpanTags returns the entries of sp, a span of b, with the tags the look-up finds, and
// their members' handles.
func (s *Store) lookUpSpanTags(b *board, sp *span) ([]uint32, []laurel.Entry, error) {
	handles := make([]uint32, 0, sp.slots.n)
	entries := make([]laurel.Entry, 0, sp.slots.n)
	sp.slots.each(func(h uint32, v slot) {
		entries = append(entries, laurel.Entry{Member: b.members.name(h), Score: v.score, Sub: v.sub, ReachedAt: v.at})
		handles = append(handles, h)
	})
	return handles, entries, s.lookUpTags(b, entries, false)
}

// recoverTags sets the tags of the entries of the open periods and all of the boards that
// carry tags, which the checkpoint file does not hold, from their events: once, at Open,
// after replay.
func (s *Store) recoverTags() error {
	// An entry's tag depends on its member, its reached_at and, in best, its score: the
	// windows share most of those (a member's latest event makes its entry in all, the week
	// and the day of a sum board), so each is looked up once.
	type made struct {
		h              uint32
		at, score, sub int64
	}
	for _, b := range s.boards {
		if !b.tagged.Load() {
			continue
		}
		madeOf := func(h uint32, v slot) made {
			if b.cfg.Mode == laurel.Best {
				return made{h, v.at, v.score, v.sub}
			}
			return made{h: h, at: v.at}
		}
		index := make(map[made]int)
		var entries []laurel.Entry
		for _, w := range b.windows {
			for _, sp := range w.open {
				if w.w.IsRolling() {
					continue
				}
				sp.slots.each(func(h uint32, v slot) {
					if k := madeOf(h, v); index[k] == 0 {
						entries = append(entries, laurel.Entry{Member: b.members.name(h), Score: v.score, Sub: v.sub, ReachedAt: v.at})
						index[k] = len(entries)
					}
				})
			}
		}
		if err := s.lookUpTags(b, entries, false); err != nil {
			return err
		}
		for _, w := range b.windows {
			for _, sp := range w.open {
				if w.w.IsRolling() {
					continue
				}
				sp.slots.each(func(h uint32, v slot) {
					sp.setTag(h, string(entries[index[madeOf(h, v)]-1].Tag))
				})
			}
		}
	}
	return nil
}

// sealedAt sets events[i] to entries[i]'s member's sealed events on a board at its
// reached_at that the index by time lists, as the snapshot holds them, in arrival order; the
// retracted ones too when all is set. Under the read lock. Two iterators serve every entry (a
// Pebble iterator made for each cost Open some 30 µs an entry), which it takes in key order.
func (s *Store) sealedAt(boardID string, entries []laurel.Entry, all bool, events [][]storedEvent) error {
	board := prefix(tagByTime, boardID)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: board, UpperBound: upper(board)})
	if err != nil {
		return err
	}
	defer it.Close()
	pr, err := newPointReader(s.snap)
	if err != nil {
		return err
	}
	defer pr.close()
	get := func(k []byte) ([]byte, bool, error) {
		v, ok, err := pr.get(k)
		return append([]byte(nil), v...), ok, err
	}
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		return cmp.Or(strings.Compare(entries[i].Member, entries[j].Member), cmp.Compare(entries[i].ReachedAt, entries[j].ReachedAt))
	})
	var p []byte
	var seqs []uint64
	for _, i := range order {
		p = appendTime(appendPrefix(p[:0], tagByTime, boardID, entries[i].Member), entries[i].ReachedAt)
		seqs = seqs[:0]
		for ok := it.SeekGE(p); ok && bytes.HasPrefix(it.Key(), p); ok = it.Next() {
			k := it.Key()
			if len(k) != len(p)+8 {
				return errCorrupt
			}
			if seq := binary.BigEndian.Uint64(k[len(p):]); seq <= s.sealedTo { // else being sealed: read from memory
				seqs = append(seqs, seq)
			}
		}
		if err := it.Error(); err != nil {
			return err
		}
		for _, seq := range seqs {
			ev, ok, err := readSealedBy(get, boardID, seq)
			if err != nil {
				return err
			}
			if ok && (all || ev.flags&flagRetracted == 0) {
				events[i] = append(events[i], ev)
			}
		}
	}
	return nil
}

// eventsAt appends to events[i] the events of r (r may be nil) of entries[i]'s member on a
// board at its reached_at, in arrival order; the retracted ones too when all is set. One pass
// over r for every entry: a member's events are not indexed in memory.
func (r *recentEvents) eventsAt(board string, entries []laurel.Entry, all bool, events [][]storedEvent) {
	if r == nil {
		return
	}
	var filter [1024]bool // by the member hash's low bits: most events are passed over here
	byHash := make(map[uint64][]int, len(entries))
	for i := range entries {
		h := r.hash(board, entries[i].Member)
		filter[h%1024] = true
		byHash[h] = append(byHash[h], i)
	}
	for i := range r.list {
		re := &r.list[i]
		if !filter[re.mh%1024] || byHash[re.mh] == nil || !all && re.flags&flagRetracted != 0 {
			continue
		}
		b, ev := r.view(int32(i))
		if b != board {
			continue
		}
		for _, j := range byHash[re.mh] {
			if entries[j].Member == ev.member && entries[j].ReachedAt == ev.ts {
				_, ev := r.at(int32(i)) // a copy, whose tag outlives the arena
				events[j] = append(events[j], storedEvent{event: ev})
			}
		}
	}
}

// tagJSON is a stored tag as the domain carries it: nil for none.
func tagJSON(tag string) json.RawMessage {
	if tag == "" {
		return nil
	}
	return json.RawMessage(tag)
}

// looksUpTags reports whether rd's entries' tags are looked up among the events: all but those
// of an open period or all, which its span holds (memView).
func (rd *reading) looksUpTags() bool {
	_, open := rd.v.(memView)
	return !open || rd.w.w.IsRolling()
}

// tagOf returns the tag of member h's entry in sp, a copy.
func (sp *span) tagOf(h uint32) json.RawMessage { return sp.tags.get(h) }

// setTag sets the tag of member h's entry in sp: "" for none.
func (sp *span) setTag(h uint32, tag string) { sp.tags.set(h, tag) }

// spanTags holds the tags of a span's entries that have one, without a pointer for the
// collector to follow in each (a map of strings made the collector's scans a tenth of a tagged
// board's CPU): each tag's bytes in one arena, found by the member's handle. A tag replaced
// leaves its bytes behind until the arena is written again without them, once it is more
// than twice what its entries refer to.
type spanTags struct {
	refs  map[uint32]tagRef // nil until an entry has a tag
	arena []byte            // appended to only: a new one replaces it, bytes never change
	live  int               // bytes of arena the entries refer to
}

// tagRef is where an entry's tag is in the arena: its offset, and its length (at most
// laurel.MaxTag) in the low 16 bits.
type tagRef uint64

func (r tagRef) bytes(arena []byte) []byte { return arena[r>>16 : r>>16+r&0xFFFF] }

func (t *spanTags) get(h uint32) json.RawMessage {
	r, ok := t.refs[h]
	if !ok {
		return nil
	}
	return append(json.RawMessage(nil), r.bytes(t.arena)...)
}

// set sets h's tag; "" removes it.
func (t *spanTags) set(h uint32, tag string) {
	if tag == "" {
		t.del(h)
		return
	}
	r, had := t.refs[h]
	if had {
		if string(r.bytes(t.arena)) == tag {
			return // most events repeat their member's tag
		}
		t.live -= int(r & 0xFFFF)
	}
	if t.refs == nil {
		t.refs = make(map[uint32]tagRef)
	}
	if len(t.arena) > 2*t.live+4096 {
		t.compact()
	}
	t.refs[h] = tagRef(len(t.arena))<<16 | tagRef(len(tag))
	t.arena = append(t.arena, tag...)
	t.live += len(tag)
}

func (t *spanTags) del(h uint32) {
	if r, ok := t.refs[h]; ok {
		t.live -= int(r & 0xFFFF)
		delete(t.refs, h)
	}
}

// compact writes the arena again with the tags its entries refer to alone.
func (t *spanTags) compact() {
	arena := make([]byte, 0, 2*t.live+4096)
	for h, r := range t.refs {
		t.refs[h] = tagRef(len(arena))<<16 | r&0xFFFF
		arena = append(arena, r.bytes(t.arena)...)
	}
	t.arena = arena
}

// checkTags checks that the tags sp holds beside its entries are those the look-up finds, for
// Check; a rolling window's span holds none.
func (s *Store) checkTags(b *board, w *window, sp *span) error {
	if w.w.IsRolling() || !b.tagged.Load() {
		if len(sp.tags.refs) > 0 {
			return fmt.Errorf("span %d holds %d tags", sp.start, len(sp.tags.refs))
		}
		return nil
	}
	handles, entries, err := s.lookUpSpanTags(b, sp)
	if err != nil {
		return err
	}
	held := 0
	for i, en := range entries {
		if got := sp.tagOf(handles[i]); string(got) != string(en.Tag) {
			return fmt.Errorf("span %d: member %q: tag %s beside the entry, %s among its events", sp.start, en.Member, got, en.Tag)
		}
		if en.Tag != nil {
			held++
		}
	}
	if held != len(sp.tags.refs) {
		return fmt.Errorf("span %d: %d tags for %d entries that have one", sp.start, len(sp.tags.refs), held)
	}
	return nil
}
