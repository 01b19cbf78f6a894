package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// profile is a member's profile as stored.
type profile struct {
	Name     string          `json:"name,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

func (tx *txn) profileGet(member string) (*profile, error) {
	for t := tx; t != nil; t = t.parent {
		if p, ok := t.profiles[member]; ok {
			return p, nil
		}
	}
	v, ok, err := tx.storeGet(key(tagProfile, member))
	if err != nil || !ok {
		return nil, err
	}
	var p profile
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// stageProfile sets the fields of a member's profile that spec gives, when they change it.
func (s *Store) stageProfile(tx *txn, member string, spec laurel.ProfileSpec) error {
	cur, err := tx.profileGet(member)
	if err != nil {
		return err
	}
	var p profile
	if cur != nil {
		p = *cur
	}
	if spec.Name != nil {
		p.Name = *spec.Name
	}
	if spec.Metadata != nil {
		p.Metadata = spec.Metadata
	}
	if cur != nil && p.Name == cur.Name && bytes.Equal(p.Metadata, cur.Metadata) {
		// Unchanged: nothing to write, nothing for watchers to hear (a client that sends
		// each member's name with every event writes it once).
		return nil
	}
	if tx.profiles == nil {
		tx.profiles = make(map[string]*profile)
	}
	tx.profiles[member] = &p
	v, err := json.Marshal(&p)
	if err != nil {
		return err
	}
	tx.set(key(tagProfile, member), v)
	tx.onCommitFree(nil, func() { s.profiles.put(member, &p) })
	return nil
}

// PutProfile sets a member's name and metadata; a field left nil keeps its value.
func (s *Store) PutProfile(ctx context.Context, member string, spec laurel.ProfileSpec) (laurel.Profile, error) {
	spec, err := laurel.ValidateProfile(member, spec)
	if err != nil {
		return laurel.Profile{}, err
	}
	err = s.do(ctx, &op{run: func(tx *txn) error { return s.stageProfile(tx, member, spec) }})
	if err != nil {
		return laurel.Profile{}, err
	}
	return s.Profile(ctx, member)
}

// Profile returns a member's profile; ENotFound when it has none.
func (s *Store) Profile(ctx context.Context, member string) (laurel.Profile, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Profile{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	stored, err := s.profile(member)
	if err != nil {
		return laurel.Profile{}, err
	}
	hidden := !s.ranked(member)
	if stored == nil && !hidden {
		return laurel.Profile{}, laurel.FieldErrorf(laurel.ENotFound, "member", "no profile for %q", member)
	}
	var p profile
	if stored != nil {
		p = *stored
	}
	if p.Metadata == nil {
		p.Metadata = json.RawMessage("{}")
	}
	return laurel.Profile{Member: member, Name: p.Name, Metadata: p.Metadata, Hidden: hidden}, nil
}

// Hide leaves a member out of every ranking and total, closed periods included, keeping its
// data.
func (s *Store) Hide(ctx context.Context, member string) error {
	return s.setHidden(ctx, member, true)
}

// Unhide puts a hidden member back in every ranking.
func (s *Store) Unhide(ctx context.Context, member string) error {
	return s.setHidden(ctx, member, false)
}

func (s *Store) setHidden(ctx context.Context, member string, hide bool) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	// Exclusive: the member's entries are read from memory and the store as they stand.
	return s.do(ctx, &op{exclusive: true, run: func(tx *txn) error { return s.stageHidden(tx, member, hide) }})
}

// stageHidden hides or unhides a member in tx, an exclusive operation's: its entries leave
// the trees or come back once tx commits, as staged so far (the events tx stages before it
// included, whose entries are placed before they leave).
func (s *Store) stageHidden(tx *txn, member string, hide bool) error {
	if s.hidden[member] == hide {
		return nil
	}
	if hide {
		tx.set(key(tagHidden, member), nil)
	} else {
		tx.del(key(tagHidden, member))
	}
	// The member's keys in open spans, and its frozen ranks in closed periods.
	type openKey struct {
		sp *span
		k  rank.Key
	}
	type frozenRank struct {
		cp   *closedPeriod
		rank uint32
	}
	var keys []openKey
	var ranks []frozenRank
	for _, b := range s.boards {
		h, ok := b.members.lookup(member)
		for _, w := range b.windows {
			for _, sp := range w.open {
				if !ok {
					break
				}
				if v, present := tx.entryGet(w, sp.start, h); present {
					keys = append(keys, openKey{sp, treeKey(h, v)})
				}
			}
			for _, cp := range w.closed {
				r, ok, err := frozenRankOf(s.db, b.cfg.ID, w.name, cp.start, member)
				if err != nil {
					return err
				}
				if ok {
					ranks = append(ranks, frozenRank{cp, r})
				}
			}
		}
	}
	tx.onCommit(nil, func() {
		if hide {
			s.hidden[member] = true
		} else {
			delete(s.hidden, member)
		}
		for _, ok := range keys {
			if hide {
				ok.sp.tree.Delete(ok.k)
			} else {
				ok.sp.tree.Insert(ok.k)
			}
		}
		for _, fr := range ranks {
			if hide {
				fr.cp.hidden = insertSorted(fr.cp.hidden, fr.rank)
			} else {
				fr.cp.hidden = removeSorted(fr.cp.hidden, fr.rank)
			}
			fr.cp.updateExcluded()
		}
	})
	return nil
}

// DeleteMember erases a member everywhere: its events, ids, entries (closed periods
// included), profile and hidden mark.
func (s *Store) DeleteMember(ctx context.Context, member string) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	return s.do(ctx, &op{exclusive: true, seals: true, run: func(tx *txn) error {
		tx.erase = &erasure{members: make(map[string]bool)}
		for _, b := range s.boards {
			if err := s.deleteFromBoard(tx, b, member); err != nil {
				return err
			}
		}
		tx.del(key(tagProfile, member))
		tx.del(key(tagHidden, member))
		tx.onCommit(nil, func() {
			delete(s.hidden, member)
			s.profiles.put(member, nil)
		})
		return nil
	}})
}

// deleteFromBoard stages the erasure of a member's events, ids and entries on a board: its
// sealed events here, those since the last seal by the seal that commits the deletion.
func (s *Store) deleteFromBoard(tx *txn, b *board, member string) error {
	id := b.cfg.ID
	events, err := s.memberEvents(s.db, id, member, true)
	if err != nil {
		return err
	}
	p := prefix(tagEvents, id, member)
	tx.delRange(p, upper(p))
	p = prefix(tagByTime, id, member)
	tx.delRange(p, upper(p))
	tx.erase.members[pairKey(id, member)] = true
	times := make([]int64, 0, len(events))
	for _, ev := range events {
		if ev.id != "" && ev.flags&flagRetracted == 0 {
			tx.idSet(id, ev.event, false)
			tx.delID(id, ev.id, ev.seq)
		}
		if _, recent := s.recent.index(ev.seq); !recent {
			tx.delSealed(ev.seq, id)
		}
		tx.del(retractKey(id, ev.seq))
		times = append(times, ev.ts)
	}
	if err := laurel.Erase(&b.cfg, newStaged(tx, b), member, times, tx.now); err != nil {
		return err
	}
	tx.eraseTimes(b, member)
	for _, w := range b.windows {
		for _, cp := range w.closed {
			r, ok, err := frozenRankOf(s.db, id, w.name, cp.start, member)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			tx.del(frozenMemberKey(id, w.name, cp.start, member))
			tx.del(rankKey(id, w.name, cp.start, r))
			removed := insertSorted(slices.Clone(cp.removed), r)
			tx.set(closedKey(id, w.name, cp.start), encodeClosed(cp, removed))
			tx.onCommit(b, func() {
				cp.removed = removed
				cp.hidden = removeSorted(cp.hidden, r)
				cp.updateExcluded()
			})
		}
	}
	return nil
}

func insertSorted(s []uint32, v uint32) []uint32 {
	i, ok := slices.BinarySearch(s, v)
	if ok {
		return s
	}
	return slices.Insert(s, i, v)
}

func removeSorted(s []uint32, v uint32) []uint32 {
	i, ok := slices.BinarySearch(s, v)
	if !ok {
		return s
	}
	return slices.Delete(slices.Clone(s), i, i+1)
}

func (cp *closedPeriod) updateExcluded() {
	ex := make([]uint32, 0, len(cp.removed)+len(cp.hidden))
	ex = append(ex, cp.removed...)
	ex = append(ex, cp.hidden...)
	slices.Sort(ex)
	cp.excluded = slices.Compact(ex)
}

// ranked reports whether member has places in trees: whether it is not hidden.
func (s *Store) ranked(member string) bool { return len(s.hidden) == 0 || !s.hidden[member] }
