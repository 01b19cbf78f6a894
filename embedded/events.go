package embedded

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// Submit applies events atomically: every event is validated and staged on top of the ones
// before it, and one bad event rejects the whole batch with its index in the error's field.
// A batch with an event a hold rule holds is written again as an exclusive operation that
// hides the members held before it stages their events (their entries never reach a tree)
// and opens their flags, all in one commit.
func (s *Store) Submit(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions) ([]laurel.EventResult, error) {
	if err := laurel.ValidateEvents(events); err != nil {
		return nil, err
	}
	var held []string
	for {
		results, more, err := s.submit(ctx, events, opts, held)
		if errors.Is(err, errRateFromStore) && held == nil {
			held = []string{} // exclusive, holding no one yet
			continue
		}
		if len(more) == 0 {
			return results, err
		}
		// Held members the write did not hide first: it stored nothing, and starts again.
		held = append(held, more...)
	}
}

// errHeldLate ends a write that held members it had not hidden first.
var errHeldLate = errors.New("embedded: members held that the write did not hide first")

// submit writes events as one operation, exclusive when held (members to hide before the
// events are staged) is not nil. It returns the members held that held did not name, having
// stored nothing, if any.
func (s *Store) submit(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions, held []string) ([]laurel.EventResult, []string, error) {
	results := make([]laurel.EventResult, len(events))
	seqs := make([]uint64, len(events)) // of the applied events; 0 for duplicates
	times := make([]int64, len(events))
	var more []string
	var now int64
	o := &op{
		exclusive: held != nil,
		weight:    len(events),
		memOnly:   true, // standings and history points
		run: func(tx *txn) error {
			now = tx.now
			tx.deferAggs = true
			more = more[:0]
			for _, m := range held {
				if err := s.stageHidden(tx, m, true); err != nil {
					return err
				}
			}
			var previous []map[string]laurel.Standing
			if !opts.NoRanks {
				previous = s.previous(events, now)
			}
			var holds []laurel.HeldEvent
			var holdAt []int // the events held, by index
			for i := range events {
				status, seq, ts, rule, err := s.stageEvent(tx, &events[i], opts)
				if errors.Is(err, errRateFromStore) {
					return err
				}
				if err != nil {
					return laurel.InEvent(i, err)
				}
				seqs[i], times[i] = seq, ts
				ev := &events[i]
				results[i] = laurel.EventResult{Board: ev.Board, Member: ev.Member, ID: ev.ID, Status: status}
				if previous != nil && status == laurel.StatusApplied {
					results[i].Previous = previous[i]
				}
				if rule != "" {
					holds = append(holds, laurel.HeldEvent{Board: ev.Board, Member: ev.Member, Event: laurel.FlagEvent{Rule: rule, ID: ev.ID, Value: ev.Value, TS: ts}})
					holdAt = append(holdAt, i)
					if !slices.Contains(held, ev.Member) && !slices.Contains(more, ev.Member) {
						more = append(more, ev.Member)
					}
				}
			}
			if len(more) > 0 {
				return errHeldLate
			}
			if len(holds) == 0 {
				return nil
			}
			flags, err := laurel.OpenFlags(holds, now, s.openFlag)
			if err != nil {
				return err
			}
			s.stageFlags(tx, flags)
			for j, i := range holdAt {
				r := &results[i]
				r.Previous, r.Rule = nil, holds[j].Event.Rule
				r.Flag = flags[slices.IndexFunc(flags, func(f *laurel.Flag) bool { return f.Board == holds[j].Board && f.Member == holds[j].Member })].ID
			}
			return nil
		},
		finish: func() {
			var last *board
			var spans []*span // of last, at now
			for i := range results {
				b := s.boards[results[i].Board]
				if b == nil || opts.NoRanks && seqs[i] == 0 {
					continue
				}
				if b != last {
					last, spans = b, s.currentSpans(b, now)
				}
				// Every applied event leaves a history point, ranks asked for or not.
				results[i].Entries = s.recordHistory(b, spans, results[i].Member, seqs[i], times[i], !opts.NoRanks)
			}
		},
	}
	if err := s.do(ctx, o); err != nil {
		if errors.Is(err, errHeldLate) {
			return nil, more, nil
		}
		return nil, nil, err
	}
	return results, nil, nil
}

// openFlag returns the member's open flag on the board, or nil.
func (s *Store) openFlag(board, member string) (*laurel.Flag, error) {
	id, err := s.record(recordKey(laurel.OpenFlagKind, laurel.OpenFlagKey(board, member)))
	if id == nil || err != nil {
		return nil, err
	}
	v, err := s.record(recordKey(laurel.FlagKind, string(id)))
	if v == nil || err != nil {
		return nil, err
	}
	return laurel.DecodeFlag(v)
}

// previous returns, for each event, its member's standing in each window's current span at
// now before the events, as the trees show it before the writer stages them: the state of
// the last commit, which the group's commit changes at once. Nil where the member has none.
func (s *Store) previous(events []laurel.Event, now int64) []map[string]laurel.Standing {
	out := make([]map[string]laurel.Standing, len(events))
	var seen map[[2]string]int // board and member → the first event of theirs, in batches of several
	var last *board
	var spans []*span // of last, at now
	for i := range events {
		ev := &events[i]
		if len(events) > 1 {
			if seen == nil {
				seen = make(map[[2]string]int, len(events))
			}
			k := [2]string{ev.Board, ev.Member}
			if j, ok := seen[k]; ok {
				out[i] = out[j]
				continue
			}
			seen[k] = i
		}
		b := s.boards[ev.Board]
		if b == nil {
			continue // refused when staged
		}
		if b != last {
			last, spans = b, s.currentSpans(b, now)
		}
		var nameBuf [8]string
		var standingBuf [8]laurel.Standing
		names, standings := s.standings(b, spans, ev.Member, nameBuf[:0], standingBuf[:0])
		if len(names) > 0 {
			out[i] = make(map[string]laurel.Standing, len(names))
			for j, name := range names {
				out[i][name] = standings[j]
			}
		}
	}
	return out
}

// stageEvent validates one event against its board and stages it in every window. It returns
// the event's status and, when applied, its sequence number, its time and the rule that held
// it, if one did.
func (s *Store) stageEvent(tx *txn, in *laurel.Event, opts laurel.SubmitOptions) (status string, seq uint64, ts int64, held string, err error) {
	b := s.boards[in.Board]
	if b == nil {
		return "", 0, 0, "", laurel.ErrNoBoard(in.Board)
	}
	if err := b.cfg.AdmitWriter(in, opts); err != nil {
		return "", 0, 0, "", err
	}
	if in.ID != "" {
		prev, ok, err := tx.idGet(b.cfg.ID, in.ID)
		if err != nil {
			return "", 0, 0, "", err
		}
		if ok {
			if in.Repeats(prev.member, prev.value, prev.sub, prev.ts) {
				return laurel.StatusDuplicate, 0, 0, "", nil
			}
			return "", 0, 0, "", laurel.ErrIDConflict(in.ID)
		}
	}
	ts, err = b.cfg.Admit(in, tx.now, opts.Import)
	if err != nil {
		return "", 0, 0, "", err
	}
	ev := event{member: in.Member, seq: tx.nextSeq(), value: in.Value, ts: ts, id: in.ID, tag: string(in.Tag), sub: in.Sub}
	if in.HasTS {
		ev.flags |= flagExplicitTS
	}
	held, err = laurel.StageCounted(context.Background(), &b.cfg, newStaged(tx, b), // staged reads memory only: nothing to cancel
		ev.member, laurel.Counted{Value: ev.value, Sub: ev.sub, TS: ev.ts, Seq: ev.seq, Tag: tagJSON(ev.tag)}, tx.now)
	if err != nil {
		return "", 0, 0, "", err
	}
	tx.stageTime(b, ev.member, ev.ts)
	if ev.tag != "" {
		s.markTagged(tx, b)
	}
	tx.logged = append(tx.logged, loggedEvent{board: b.cfg.ID, event: ev})
	if ev.id != "" {
		tx.idSet(b.cfg.ID, ev, true)
	}
	// Memory's index of recent events takes it from the group's list (not a closure: one
	// allocation an event less).
	tx.queue(b, change{kind: changeFree, set: entryChange{to: toRecent, logged: &tx.logged[len(tx.logged)-1]}})
	if in.Name != nil {
		if err := s.stageProfile(tx, in.Member, laurel.ProfileSpec{Name: in.Name}); err != nil {
			return "", 0, 0, "", err
		}
	}
	return laurel.StatusApplied, ev.seq, ev.ts, held, nil
}

// currentSpan is the in-memory span of w that a read at now sees, or nil when it is empty.
func (s *Store) currentSpan(b *board, w *window, now int64) *span {
	if w.w.IsCalendar() {
		return w.span(b.cfg.Calendar().PeriodAt(w.w, time.UnixMilli(now)).Start.UnixMilli())
	}
	return w.span(rollingSpan)
}

// Retract removes the event with id from every open period and from the rolling and all
// windows, recomputing the member's aggregates there from its remaining events. Closed periods
// do not change. The id may then be used again.
func (s *Store) Retract(ctx context.Context, boardID, id string) error {
	if err := laurel.ValidateRetract(boardID, id); err != nil {
		return err
	}
	return s.do(ctx, &op{exclusive: true, run: func(tx *txn) error {
		b := s.boards[boardID]
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
		ev.flags |= flagRetracted
		tx.set(retractKey(boardID, ev.seq), nil)
		tx.idSet(boardID, ev, false)
		tx.delID(boardID, id, ev.seq)
		if _, ok := s.recent.index(ev.seq); ok {
			seq := ev.seq
			tx.onCommitFree(b, func() { s.recent.retract(seq) })
		}
		rest, err := s.memberEvents(s.db, boardID, ev.member, false)
		if err != nil {
			return err
		}
		rest = slices.DeleteFunc(rest, func(x storedEvent) bool { return x.seq == ev.seq })
		tx.unstageTime(b, ev.member, ev.ts)
		return laurel.Recompute(&b.cfg, newStaged(tx, b), ev.member, ev.ts, counted(rest), tx.now)
	}})
}

// storedEvent is an event as the store holds it, sealed or since the last seal.
type storedEvent struct {
	event
	point []byte // its history point; nil when it has none
}

// memberEvents returns the member's events on a board, in arrival order: the sealed ones as r
// holds them (the store, or a snapshot of it), with their points, and those since the last
// seal, without, the retracted ones too when all is set. Readers other than the writer hold
// the read lock.
func (s *Store) memberEvents(r pebble.Reader, boardID, member string, all bool) ([]storedEvent, error) {
	var out []storedEvent
	err := scanPrefix(r, prefix(tagEvents, boardID, member), func(k, v []byte) (err error) {
		out, err = appendListed(out, r, boardID, k, v, all)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, i := range s.recent.member(boardID, member) {
		if _, ev := s.recent.at(i); all || ev.flags&flagRetracted == 0 {
			out = append(out, storedEvent{ev, nil}) // points are read from the log where needed
		}
	}
	return out, nil
}

// appendListed appends to out the sealed events, as r holds them, that a record (k, v) of a
// board's member index lists; the retracted ones too when all is set.
func appendListed(out []storedEvent, r pebble.Reader, boardID string, k, v []byte, all bool) ([]storedEvent, error) {
	seqs, err := indexedSeqs(nil, k, v)
	if err != nil {
		return out, err
	}
	for _, seq := range seqs {
		ev, ok, err := readSealed(r, boardID, seq)
		if err != nil {
			return out, err
		}
		if ok && (all || ev.flags&flagRetracted == 0) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// readSealed reads the sealed event seq of a board, flagged retracted when it was since.
func readSealed(r pebble.Reader, boardID string, seq uint64) (storedEvent, bool, error) {
	return readSealedBy(func(k []byte) ([]byte, bool, error) { return get(r, k) }, boardID, seq)
}

// readSealedBy is readSealed through get, which returns a copy of a key's value.
func readSealedBy(get func(k []byte) ([]byte, bool, error), boardID string, seq uint64) (storedEvent, bool, error) {
	v, ok, err := get(sealedKey(seq, boardID))
	if err != nil || !ok {
		return storedEvent{}, false, err
	}
	board, ev, point, err := decodeSealed(seq, v)
	if err != nil || board != boardID {
		return storedEvent{}, false, err
	}
	if ev.flags&flagRetracted == 0 {
		if _, ok, err := get(retractKey(boardID, seq)); err != nil {
			return storedEvent{}, false, err
		} else if ok {
			ev.flags |= flagRetracted
		}
	}
	return storedEvent{ev, point}, true, nil
}

// eachMemberEvents calls fn with each member's events on a board, in arrival order (the
// retracted ones too when all is set): the sealed ones as r holds them, then those of recent,
// the events since the last seal as r's moment saw them, with their points when lp reads
// them. Members come in bytewise order.
func eachMemberEvents(r pebble.Reader, recent *recentEvents, lp *logPoints, boardID string, all bool, fn func(member string, events []storedEvent) error) error {
	newer := make(map[string][]storedEvent)
	for i := range recent.list {
		board, ev := recent.at(int32(i))
		if board != boardID || !all && ev.flags&flagRetracted != 0 {
			continue
		}
		se := storedEvent{event: ev}
		if lp != nil {
			var err error
			if se.point, err = lp.point(recent.list[i].point, ev.seq); err != nil {
				return err
			}
		}
		newer[ev.member] = append(newer[ev.member], se)
	}
	only := slices.Sorted(maps.Keys(newer)) // members with recent events, until one is sealed too
	// upTo calls fn for the members with recent events only, before member.
	upTo := func(member string, inclusive bool) error {
		for len(only) > 0 && (only[0] < member || inclusive) {
			m := only[0]
			only = only[1:]
			if evs, ok := newer[m]; ok {
				if err := fn(m, evs); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var member string
	var events []storedEvent
	flush := func() error {
		if member == "" {
			return nil
		}
		if err := upTo(member, false); err != nil {
			return err
		}
		events = append(events, newer[member]...)
		delete(newer, member)
		err := fn(member, events)
		events = events[:0]
		return err
	}
	p := prefix(tagEvents, boardID)
	err := scanPrefix(r, p, func(k, v []byte) (err error) {
		if m := k[len(p) : len(k)-9]; string(m) != member {
			if err := flush(); err != nil {
				return err
			}
			member = string(m)
		}
		events, err = appendListed(events, r, boardID, k, v, all)
		return err
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	return upTo("", true)
}
