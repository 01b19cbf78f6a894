package embedded

import (
	"context"
	"slices"
	"time"

	"github.com/laurel/laurel"
)

// Submit applies events atomically: every event is validated and staged on top of the ones
// before it, and one bad event rejects the whole batch with its index in the error's field.
func (e *Store) Submit(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions) ([]laurel.EventResult, error) {
	if err := laurel.ValidateEvents(events); err != nil {
		return nil, err
	}
	results := make([]laurel.EventResult, len(events))
	seqs := make([]uint64, len(events)) // of the applied events; 0 for duplicates
	times := make([]int64, len(events))
	var now int64
	o := &op{
		weight: len(events),
		run: func(tx *txn) error {
			now = tx.now
			tx.deferAggs = true
			for i := range events {
				status, seq, ts, err := e.stageEvent(tx, &events[i], opts.Import)
				if err != nil {
					return laurel.InEvent(i, err)
				}
				seqs[i], times[i] = seq, ts
				ev := &events[i]
				results[i] = laurel.EventResult{Board: ev.Board, Member: ev.Member, ID: ev.ID, Status: status}
			}
			return nil
		},
		finish: func() {
			for i := range results {
				b := e.boards[results[i].Board]
				if b == nil || opts.NoRanks && seqs[i] == 0 {
					continue
				}
				// Every applied event leaves a history point, ranks asked for or not.
				entries := e.recordHistory(b, results[i].Member, seqs[i], times[i], now)
				if !opts.NoRanks {
					results[i].Entries = entries
				}
			}
		},
	}
	if err := e.do(ctx, o); err != nil {
		return nil, err
	}
	return results, nil
}

// stageEvent validates one event against its board and stages it in every window. It returns
// the event's status and, when applied, its sequence number and time.
func (e *Store) stageEvent(tx *txn, in *laurel.Event, imported bool) (status string, seq uint64, ts int64, err error) {
	b := e.boards[in.Board]
	if b == nil {
		return "", 0, 0, laurel.ErrNoBoard(in.Board)
	}
	ts, err = b.cfg.Admit(in, tx.now, imported)
	if err != nil {
		return "", 0, 0, err
	}
	if in.ID != "" {
		prev, ok, err := tx.idGet(b.cfg.ID, in.ID)
		if err != nil {
			return "", 0, 0, err
		}
		if ok {
			if in.Repeats(prev.member, prev.value, prev.ts, ts) {
				return laurel.StatusDuplicate, 0, 0, nil
			}
			return "", 0, 0, laurel.ErrIDConflict(in.ID)
		}
	}
	ev := event{member: in.Member, seq: tx.nextSeq(), value: in.Value, ts: ts, id: in.ID}
	if in.HasTS {
		ev.flags |= flagExplicitTS
	}
	if err := laurel.StageEvent(&b.cfg, staged{tx, b}, ev.member, ev.value, ev.ts, ev.seq, tx.now); err != nil {
		return "", 0, 0, err
	}
	tx.set(eventKey(b.cfg.ID, ev.member, ev.seq), ev.encodeValue())
	tx.logged = append(tx.logged, loggedEvent{board: b.cfg.ID, member: ev.member, seq: ev.seq, ts: ev.ts})
	if ev.id != "" {
		tx.idSet(b.cfg.ID, ev, true)
	}
	if in.Name != nil {
		if err := e.stageProfile(tx, in.Member, laurel.ProfileSpec{Name: in.Name}); err != nil {
			return "", 0, 0, err
		}
	}
	return laurel.StatusApplied, ev.seq, ev.ts, nil
}

// standing is a member's rank and score in w's current span at now. It runs in the writer,
// under the read lock, right after the write.
func (e *Store) standing(b *board, w *window, member string, now int64) (laurel.Standing, bool) {
	sp := e.currentSpan(b, w, now)
	if sp == nil || e.hidden[member] {
		return laurel.Standing{}, false
	}
	h, v, ok := slotOf(b, &sp.slots, member)
	if !ok {
		return laurel.Standing{}, false
	}
	r, ok := sp.tree.Rank(treeKey(h, v))
	return laurel.Standing{Rank: r, Score: v.score}, ok
}

// currentSpan is the in-memory span of w that a read at now sees, or nil when it is empty.
func (e *Store) currentSpan(b *board, w *window, now int64) *span {
	if w.w.IsCalendar() {
		return w.span(b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(now)).Start.UnixMilli())
	}
	return w.span(rollingSpan)
}

// Retract removes the event with id from every open period and from the rolling and all
// windows, recomputing the member's aggregates there from its remaining events. Closed periods
// do not change. The id may then be used again.
func (e *Store) Retract(ctx context.Context, boardID, id string) error {
	if err := laurel.ValidateRetract(boardID, id); err != nil {
		return err
	}
	return e.do(ctx, &op{exclusive: true, run: func(tx *txn) error {
		b := e.boards[boardID]
		if b == nil {
			return laurel.ErrNoBoard(boardID)
		}
		ev, ok, err := tx.idGet(boardID, id)
		if err != nil {
			return err
		}
		if !ok {
			return laurel.FieldErrorf(laurel.ENotFound, "id", "no event with id %q on board %q", id, boardID)
		}
		k := eventKey(boardID, ev.member, ev.seq)
		ev.flags |= flagRetracted
		tx.set(k, ev.encodeValue())
		tx.del(historyKey(boardID, ev.member, ev.seq))
		tx.idSet(boardID, ev, false)
		rest, err := e.memberEvents(boardID, ev.member)
		if err != nil {
			return err
		}
		rest = slices.DeleteFunc(rest, func(x event) bool { return x.seq == ev.seq })
		return laurel.Recompute(&b.cfg, staged{tx, b}, ev.member, ev.ts, counted(rest), tx.now)
	}})
}

// memberEvents returns the member's counted events on a board, in arrival order, as the store
// holds them (exclusive operations only: it does not see the group's overlay).
func (e *Store) memberEvents(boardID, member string) ([]event, error) {
	var out []event
	p := prefix(tagEvent, boardID, member)
	err := scanPrefix(e.db, p, func(k, v []byte) error {
		var ev event
		if err := decodeEventValue(&ev, v); err != nil {
			return err
		}
		if ev.flags&flagRetracted != 0 {
			return nil
		}
		ev.member = member
		ev.seq = readU64(k[len(p):])
		out = append(out, ev)
		return nil
	})
	return out, err
}
