package embedded

import (
	"errors"
	"fmt"
	"slices"

	"github.com/laurel/laurel"
)

// The rate rule of a board's guard counts a member's counted events in an interval of time
// (docs/design.md, "Guards"). The writer keeps, for boards with the rule only, the times of
// each member's counted events since a horizon in memory: from the store when the store opens
// or the rule is put (exclusive operations, which see every committed event), then as events
// are staged (an operation that fails takes its times back, rateUndo), retracted or erased.
// The horizon trails the writer's clock by the rule's interval and the board's late_limit,
// so that every event a submit may stage is judged from memory; an import's older event is
// judged from the store, in an exclusive operation (errRateFromStore).

// rateTimes are the times of the counted events of a board's members, each member's in order:
// every one at or after from, and maybe some before. The writer's alone.
type rateTimes struct {
	from    int64
	members map[string][]int64
	added   int // times added since the last sweep
}

// rateUndo is what an operation's staging of a time replaced: a member's times before.
type rateUndo struct {
	rt     *rateTimes
	member string
	old    []int64
	had    bool
}

// errRateFromStore ends a submit that is not exclusive and has an event a rate rule must judge
// on events older than memory holds: it is written again as an exclusive operation.
var errRateFromStore = errors.New("embedded: a rate rule judges an event on older events than memory holds")

// rateHorizon is what memory must hold of a board's times at now: every event that a submit
// not imported may stage at now is judged on events after it.
func rateHorizon(cfg *laurel.Board, now int64) int64 {
	return cfg.Guard.Rate.Since(now - cfg.LateLimit.Milliseconds() - 1)
}

// loadRate reads the times of a board's counted events since the horizon at now from the
// store; nil when its guard has no rate rule. Only an exclusive operation, or Open, calls it:
// the store and its recent events hold every committed event then.
func (s *Store) loadRate(cfg *laurel.Board, now int64) (*rateTimes, error) {
	if cfg.Guard == nil || cfg.Guard.Rate == nil {
		return nil, nil
	}
	from := rateHorizon(cfg, now)
	members, err := s.storedTimes(cfg.ID, from)
	return &rateTimes{from: from, members: members}, err
}

// storedTimes returns the times, each member's in order, of a board's counted events at or
// after from, as the store and its recent events hold them.
func (s *Store) storedTimes(boardID string, from int64) (map[string][]int64, error) {
	out := make(map[string][]int64)
	err := eachMemberEvents(s.db, s.recent, nil, boardID, false, func(member string, events []storedEvent) error {
		var times []int64
		for _, ev := range events {
			if ev.ts >= from {
				times = append(times, ev.ts)
			}
		}
		if len(times) > 0 {
			slices.Sort(times)
			out[member] = times
		}
		return nil
	})
	return out, err
}

// checkRates verifies, in an exclusive operation, that each board with a rate rule holds in
// memory the times of exactly its counted events at or after its horizon, as the store does.
func (s *Store) checkRates() error {
	for _, b := range s.boards {
		if rule := b.cfg.Guard != nil && b.cfg.Guard.Rate != nil; (b.rate != nil) != rule {
			return fmt.Errorf("board %s: times of events kept: %v; a rate rule: %v", b.cfg.ID, b.rate != nil, rule)
		}
		if b.rate == nil {
			continue
		}
		from := b.rate.from
		want, err := s.storedTimes(b.cfg.ID, from)
		if err != nil {
			return err
		}
		for m, times := range b.rate.members {
			if !slices.IsSorted(times) {
				return fmt.Errorf("board %s: memory holds the times of %s's events out of order: %v", b.cfg.ID, m, times)
			}
			got := slices.DeleteFunc(slices.Clone(times), func(ts int64) bool { return ts < from })
			if w := want[m]; !slices.Equal(got, w) {
				return fmt.Errorf("board %s: memory holds %d times of %s's events since %d, the store %d: %v, %v", b.cfg.ID, len(got), m, from, len(w), got, w)
			}
			delete(want, m)
		}
		for m, w := range want {
			return fmt.Errorf("board %s: memory holds no times of %s's events since %d, the store %v", b.cfg.ID, m, from, w)
		}
	}
	return nil
}

// keepRate returns the times a board keeps under its configuration cfg, put at now: those it
// has when they reach back as far as cfg's rule needs (an update of anything else, or of
// max, reads no event), else read from the store; nil without a rate rule.
func (s *Store) keepRate(rt *rateTimes, cfg *laurel.Board, now int64) (*rateTimes, error) {
	switch {
	case cfg.Guard == nil || cfg.Guard.Rate == nil:
		return nil, nil
	case rt != nil && rt.from <= rateHorizon(cfg, now):
		return rt, nil
	}
	return s.loadRate(cfg, now)
}

// countEvents is laurel.Aggregates.CountEvents.
func (s *staged) countEvents(member string, from, to int64) (int, error) {
	rt := s.b.rate
	if rt == nil {
		return 0, laurel.Errorf(laurel.EInternal, "embedded: board %q has a rate rule and no times of its events", s.b.cfg.ID)
	}
	times := rt.members[member]
	if from < rt.from-1 { // older than memory holds: read from the store
		if !s.tx.exclusive {
			return 0, errRateFromStore
		}
		events, err := s.tx.e.memberEvents(s.tx.e.db, s.b.cfg.ID, member, false)
		if err != nil {
			return 0, err
		}
		times = times[:0:0]
		for _, ev := range events {
			times = append(times, ev.ts)
		}
		// The operation's own events, staged before this one: the only ones of its group.
		for _, le := range s.tx.logged[s.tx.from.logged:] {
			if le.board == s.b.cfg.ID && le.event.member == member {
				times = append(times, le.event.ts)
			}
		}
	}
	if from < rt.from-1 {
		n := 0
		for _, ts := range times {
			if ts > from && ts <= to {
				n++
			}
		}
		return n, nil
	}
	return after(times, from) - after(times, to), nil
}

// after returns how many of times, in order, are after ts.
func after(times []int64, ts int64) int {
	i, _ := slices.BinarySearchFunc(times, ts, func(t, ts int64) int {
		if t <= ts {
			return -1
		}
		return 1
	})
	return len(times) - i
}

// stageTime adds the time of an event staged on a board with a rate rule, noting in the
// operation's undo log what it replaced. Now and then it drops the times before the horizon.
func (tx *txn) stageTime(b *board, member string, ts int64) {
	rt := b.rate
	if rt == nil {
		return
	}
	old, had := rt.members[member]
	if tx.parent != nil {
		tx.rateUndo = append(tx.rateUndo, rateUndo{rt, member, old, had})
	}
	// Appended past old's end, or, for a late event, into a new array in order: old stays as
	// it was, for undo.
	if n := len(old); n == 0 || old[n-1] <= ts {
		rt.members[member] = append(old, ts)
	} else {
		i := n - after(old, ts)
		rt.members[member] = slices.Insert(slices.Clone(old), i, ts)
	}
	if rt.added++; rt.added > 2*len(rt.members)+1024 {
		rt.sweep(rateHorizon(&b.cfg, tx.now))
	}
}

// sweep drops the times before horizon, into new arrays (an undo log may hold the old ones).
func (rt *rateTimes) sweep(horizon int64) {
	rt.added = 0
	if horizon <= rt.from {
		return
	}
	rt.from = horizon
	for m, times := range rt.members {
		i, _ := slices.BinarySearch(times, horizon)
		switch {
		case i == len(times):
			delete(rt.members, m)
		case i > 0:
			rt.members[m] = slices.Clone(times[i:]) // the array before it is dropped
		}
	}
}

// undoTimes takes an operation's staged times back, last first.
func (tx *txn) undoTimes() {
	for i := len(tx.rateUndo) - 1; i >= 0; i-- {
		u := tx.rateUndo[i]
		if u.had {
			u.rt.members[u.member] = u.old
		} else {
			delete(u.rt.members, u.member)
		}
	}
	tx.rateUndo = nil
}

// unstageTime takes the time of a retracted event out of the board's times once the
// retraction commits.
func (tx *txn) unstageTime(b *board, member string, ts int64) {
	tx.onCommit(b, func() {
		if rt := b.rate; rt != nil {
			times := rt.members[member]
			if i, ok := slices.BinarySearch(times, ts); ok {
				rt.members[member] = slices.Delete(slices.Clone(times), i, i+1)
			}
		}
	})
}

// eraseTimes forgets a member's times on a board once its erasure commits.
func (tx *txn) eraseTimes(b *board, member string) {
	tx.onCommit(b, func() {
		if b.rate != nil {
			delete(b.rate.members, member)
		}
	})
}
