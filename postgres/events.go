package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// Submit applies events atomically: every event is validated and staged on top of the ones
// before it, and one bad event rejects the whole batch with its index in the error's field.
// Submits to the same boards that arrive while one is being written are written together,
// in one step (see submits), with the shards that no other node's write holds.
//
// A submit with an event a hold rule holds is written again in a step of its own that also
// holds the held members' shards on every board: it hides them and opens their flags in the
// same commit as their events (hold.go).
func (s *Store) Submit(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions) ([]laurel.EventResult, error) {
	if err := laurel.ValidateEvents(events); err != nil {
		return nil, err
	}
	var held []string
	for {
		results, more, err := s.submit(ctx, events, opts, held)
		if more == nil {
			return results, err
		}
		held = append(held, more...)
	}
}

// submit writes a submit, in a group of those to the same boards, or alone when held (the
// members a hold rule held) is not nil. It returns the members held that held did not name
// (not nil, with nothing stored) when the write must start again with them.
func (s *Store) submit(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions, held []string) ([]laurel.EventResult, []string, error) {
	if held != nil {
		return s.submitHeld(ctx, events, opts, held)
	}
	var boards []string
	for i := range events {
		if !slices.Contains(boards, events[i].Board) {
			boards = append(boards, events[i].Board)
		}
	}
	slices.Sort(boards)
	deadline, _ := ctx.Deadline()
	req := &submitReq{deadline: deadline, events: events, opts: opts, results: make([]laurel.EventResult, len(events)), done: make(chan struct{})}
	s.submits.add(s, strings.Join(boards, "\x00"), req)
	select {
	case <-req.done:
	case <-ctx.Done():
		// Still queued, it is withdrawn: no step will write it. A step that has it answers
		// by the step's deadline, its requests' latest.
		if req.state.CompareAndSwap(reqQueued, reqWithdrawn) {
			return nil, nil, s.unavailable("write", ctx.Err())
		}
		<-req.done
	}
	return req.answer()
}

// answer is what a request's step answered: its results, or the members held that the step
// did not hide first, or its error.
func (r *submitReq) answer() ([]laurel.EventResult, []string, error) {
	switch {
	case errors.Is(r.err, errHeldLate):
		return nil, r.more, nil
	case r.err != nil:
		return nil, nil, r.err
	}
	return r.results, nil, nil
}

// submits groups the submits of this store to the same boards: the first to arrive writes
// the ones queued behind it in the same step, so that they share its locks, round trips and
// commit. Under load a step then carries many requests; alone, a request is its own step.
//
// A group's step tries the locks of its submits' shards (locks.go) and writes the submits
// whose shards it got; those whose shards another node's step holds wait for the group's next
// step, which starts with them. A node writing alone thus writes each board in one step at a
// time, all its shards in one commit, and nodes writing one board together share its shards
// out between their steps, none waiting for a shard while another is free. A step waits for
// the shards of its first submit only when that is all it has, or when that submit was left
// for later once already: so every submit is written after a step or two.
type submits struct {
	mu      sync.Mutex
	pending map[string][]*submitReq // by set of boards
	leading map[string]bool         // a group of those boards is being written
}

type submitReq struct {
	state  atomic.Int32 // reqQueued, then reqTaken by a step or reqWithdrawn by its caller
	events []laurel.Event
	opts   laurel.SubmitOptions
	// deadline is its caller's (zero: none): the step that takes it answers by then.
	deadline time.Time
	results  []laurel.EventResult
	err      error
	done     chan struct{}

	// everywhere, for a request that hides the members held, is every board: its step
	// holds those members' shards on each. held are those members; holds the events held as
	// staged, and more the members held that held does not name.
	everywhere []string
	held       []string
	holds      []holdAt
	more       []string

	left   int     // how often a step tried its shards and left it for later
	seqs   []int64 // of the applied events; 0 for duplicates
	times  []int64
	readAt []int // where each event's standings begin in its board's reads
}

// A request's states: a step takes a queued one, its caller withdraws one still queued when
// its deadline passes. Once taken it stays taken (left for the next step, it is queued again
// taken), and its step answers it.
const (
	reqQueued int32 = iota
	reqTaken
	reqWithdrawn
)

// maxGroupEvents caps the events of one step, bounding how long its locks are held.
const maxGroupEvents = 2000

// stepTimeout bounds a group's step whose requests have no deadline.
const stepTimeout = time.Minute

// add queues req, and writes it, with what queues behind it, unless a group of its shards
// is being written: then that writer takes it next.
func (q *submits) add(e *Store, key string, req *submitReq) {
	q.mu.Lock()
	if q.pending == nil {
		q.pending, q.leading = make(map[string][]*submitReq), make(map[string]bool)
	}
	q.pending[key] = append(q.pending[key], req)
	if q.leading[key] {
		q.mu.Unlock()
		return
	}
	q.leading[key] = true
	q.mu.Unlock()
	q.lead(e, key)
}

// lead writes a group of the requests queued for a set of boards, and hands the lead on to a
// goroutine of its own as soon as the group's step gives its locks back: the next step begins
// while this one reads its answers' ranks and records their history.
func (q *submits) lead(e *Store, key string) {
	group := q.take(key, maxGroupEvents, true)
	if group == nil {
		return
	}
	handOff := func(later []*submitReq) {
		q.putBack(key, later)
		go q.lead(e, key)
	}
	for _, r := range e.submitGroup(group, func(budget int) []*submitReq { return q.take(key, budget, false) }, handOff) {
		close(r.done)
	}
}

// putBack queues reqs again, first, in their order.
func (q *submits) putBack(key string, reqs []*submitReq) {
	if len(reqs) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending[key] = append(reqs, q.pending[key]...)
}

// take removes from the queue of key the requests that come first, up to budget events (at
// least one request when first). With none to take, first ends the lead of key.
func (q *submits) take(key string, budget int, first bool) []*submitReq {
	q.mu.Lock()
	defer q.mu.Unlock()
	queue := q.pending[key]
	var out []*submitReq
	n, events := 0, 0
	for ; n < len(queue) && (first && len(out) == 0 || events+len(queue[n].events) <= budget); n++ {
		r := queue[n]
		if r.state.CompareAndSwap(reqQueued, reqTaken) || r.state.Load() == reqTaken {
			out = append(out, r)
			events += len(r.events)
		} // else withdrawn: its caller answered it
	}
	if n == len(queue) {
		delete(q.pending, key)
	} else {
		q.pending[key] = queue[n:]
	}
	if len(out) == 0 && first {
		delete(q.leading, key)
	}
	return out
}

// submitGroup writes a group of submits in one step, with those that queued for the same
// boards while it waited for its locks (more takes them), and returns the requests it
// answered. It calls handOff once, with the requests it left for the next step because it did
// not hold their shards (see submits): as soon as the step's locks are gone, or at its end. A
// request that fails leaves no trace and fails alone; a step that fails fails them all.
func (s *Store) submitGroup(group []*submitReq, more func(budget int) []*submitReq, handOff func(later []*submitReq)) (done []*submitReq) {
	// The step outlives any one caller's wait: a caller that gives up does not cancel the
	// others' writes. A database that stops answering fails it at its requests' latest
	// deadline, so that each is answered 503 about when it asked to be.
	ctx, cancel := context.WithDeadline(context.Background(), groupDeadline(group))
	defer cancel()
	var targets []target
	join := func(r *submitReq, maybe bool) {
		for i := range r.events {
			ev := &r.events[i]
			k := slices.IndexFunc(targets, func(t target) bool { return t.board == ev.Board })
			if k < 0 {
				targets, k = append(targets, target{board: ev.Board}), len(targets)
			}
			if maybe {
				targets[k].maybe = append(targets[k].maybe, ev.Member)
			} else {
				targets[k].members = append(targets[k].members, ev.Member)
			}
		}
		for _, id := range r.everywhere {
			k := slices.IndexFunc(targets, func(t target) bool { return t.board == id })
			if k < 0 {
				targets, k = append(targets, target{board: id}), len(targets)
			}
			targets[k].members = append(targets[k].members, r.held...)
		}
	}
	events := 0
	wait := len(group) == 1 || group[0].left > 0 // for the first submit's shards
	for i, r := range group {
		join(r, i > 0 || !wait)
		events += len(r.events)
	}
	tried := len(group) // the requests whose shards the step locks or tries; more come after
	var later []*submitReq
	handed := false // hand runs on this goroutine: from the step once unlocked, or at the end
	hand := func() {
		if handed {
			return
		}
		handed = true
		for _, r := range later {
			if slices.Index(group, r) < tried {
				r.left++
			}
		}
		handOff(later)
	}
	var history []historyRow
	var ok []*submitReq // the requests staged
	err := s.write(ctx, targets, func(ctx context.Context, w *step) error {
		// The requests that queued for the same boards meanwhile join the group, and should
		// the step start again, its targets count their members (join changes them in place).
		if events < maxGroupEvents {
			for _, r := range more(maxGroupEvents - events) {
				group = append(group, r)
				events += len(r.events)
				join(r, true)
			}
		}
		// The step may run again (with more locked): it starts from nothing each time. It
		// writes the requests whose shards it holds.
		history, ok, done, later = nil, nil, nil, nil
		for _, r := range group {
			if w.holds(r.events) {
				done = append(done, r)
			} else {
				later = append(later, r)
			}
		}
		if len(done) == 0 {
			return errNothing
		}
		w.ops, w.submit = len(done), true
		w.unlocked = hand
		for _, t := range targets {
			if b := w.boards[t.board]; b.st != nil {
				if err := w.advance(ctx, b); err != nil {
					return err
				}
			}
		}
		var all []laurel.Event
		for _, r := range done {
			all = append(all, r.events...)
		}
		if err := w.prefetchEvents(ctx, all); err != nil {
			return err
		}
		var members []string
		for _, r := range done {
			r.err = w.stageRequest(ctx, r)
			if whole := (*needWhole)(nil); errors.As(r.err, &whole) {
				r.err = nil
				return whole
			}
			if r.err == nil && len(r.holds) > 0 {
				// What hold writes cannot be rolled back alone: it fails the step (alone).
				if err := w.hold(ctx, r); err != nil {
					return err
				}
			}
			if r.err == nil {
				ok = append(ok, r)
				for i := range r.events {
					members = append(members, r.events[i].Member)
				}
			}
		}
		if len(ok) == 0 {
			return errNothing
		}
		w.setNames(ok)
		// The standings to answer with, read from the index once the step is in it: every
		// event's member in every window's current span, hidden members left out.
		if err := w.readHidden(ctx, members); err != nil {
			return err
		}
		for _, r := range ok {
			r.readAt = make([]int, len(r.events))
			for i := range r.events {
				ev := &r.events[i]
				b := w.boards[ev.Board]
				if r.opts.NoRanks && r.seqs[i] == 0 || w.hidden[ev.Member] {
					continue
				}
				r.readAt[i] = b.readStandings(ev.Member, w.now, !r.opts.NoRanks && r.seqs[i] != 0)
			}
		}
		w.after = append(w.after, func(ctx context.Context) error {
			sets := make(map[*boardStep]map[shardindex.Set]*priorSet) // the changes of each board's events, by set
			for _, r := range ok {
				history = append(history, w.answer(r, sets)...)
			}
			return w.recordHistory(ctx, history)
		})
		return nil
	})
	if err == nil || errors.Is(err, errNothing) {
		hand()
		return done
	}
	// Nothing of the group was stored: every request not refused on its own gets the
	// step's error, those never staged (the step failed before them) included.
	for _, r := range group {
		if r.err == nil {
			r.err = err
		}
	}
	later = nil // failed with the group
	hand()
	return group
}

// groupDeadline is the latest deadline of the requests of a group, or stepTimeout from now
// when one has none (nor later than that).
func groupDeadline(group []*submitReq) time.Time {
	limit := time.Now().Add(stepTimeout)
	var latest time.Time
	for _, r := range group {
		d := r.deadline
		if d.IsZero() {
			return limit
		}
		latest = later(latest, d)
	}
	if latest.After(limit) {
		return limit
	}
	return latest
}

// holds reports whether the step holds the shards of the events' members.
func (s *step) holds(events []laurel.Event) bool {
	for i := range events {
		b := s.boards[events[i].Board]
		if b == nil {
			return false
		}
		if b.st != nil && !b.whole && b.shards[shardindex.ShardOf(events[i].Member, b.st.shards())] == nil {
			return false
		}
	}
	return true
}

// errNothing ends a step that writes nothing: it held the shards of no request, or every
// request it held failed.
var errNothing = errors.New("postgres: no request of the group could be staged")

// stageRequest stages one submit's events in the step, all or none. Events a hold rule holds
// are staged, and noted in r.holds; when their members are not all in r.held, nothing is, and
// the request fails with errHeldLate, naming them in r.more.
func (s *step) stageRequest(ctx context.Context, r *submitReq) error {
	r.seqs, r.times = make([]int64, len(r.events)), make([]int64, len(r.events))
	r.holds, r.more = r.holds[:0], r.more[:0]
	s.begin()
	for i := range r.events {
		ev := &r.events[i]
		status, seq, ts, rule, err := s.stageEvent(ctx, ev, r.opts)
		if err != nil {
			s.rollback()
			return laurel.InEvent(i, err)
		}
		r.seqs[i], r.times[i] = seq, ts
		r.results[i] = laurel.EventResult{Board: ev.Board, Member: ev.Member, ID: ev.ID, Status: status, HasSub: s.boards[ev.Board].st.cfg.Subscore != nil}
		if rule != "" {
			r.holds = append(r.holds, holdAt{i, laurel.HeldEvent{Board: ev.Board, Member: ev.Member, Event: laurel.FlagEvent{Rule: rule, ID: ev.ID, Value: ev.Value, TS: ts}}})
			if !slices.Contains(r.held, ev.Member) && !slices.Contains(r.more, ev.Member) {
				r.more = append(r.more, ev.Member)
			}
		}
	}
	if len(r.more) > 0 {
		s.rollback()
		return errHeldLate
	}
	s.keep()
	return nil
}

// answer fills a request's results with the standings the index read back, and returns its
// events' history points.
func (s *step) answer(r *submitReq, sets map[*boardStep]map[shardindex.Set]*priorSet) []historyRow {
	var history []historyRow
	for i := range r.events {
		ev := &r.events[i]
		b := s.boards[ev.Board]
		if r.opts.NoRanks && r.seqs[i] == 0 {
			continue
		}
		entries := make(map[string]laurel.Standing)
		var previous map[string]laurel.Standing
		var points []historyPoint
		if !s.hidden[ev.Member] {
			for j := range b.st.Windows {
				if en := b.read[r.readAt[i]+j]; en.Rank > 0 {
					name := b.st.Windows[j].Name
					entries[name] = laurel.Standing{Rank: en.Rank, Score: en.Score, Sub: en.Sub}
					points = append(points, historyPoint{name, en.Score, en.Sub, en.Rank})
				}
				if r.opts.NoRanks || r.results[i].Status != laurel.StatusApplied {
					continue
				}
				if sets[b] == nil {
					sets[b] = b.priorSets(s.hidden)
				}
				if prev, ok := b.previous(r.readAt[i]+j, sets[b]); ok {
					if previous == nil {
						previous = make(map[string]laurel.Standing)
					}
					previous[b.st.Windows[j].Name] = prev
				}
			}
		}
		if !r.opts.NoRanks {
			r.results[i].Entries, r.results[i].Previous = entries, previous
		}
		if r.seqs[i] != 0 {
			history = append(history, historyRow{ev.Board, ev.Member, r.seqs[i], r.times[i], points})
		}
	}
	return history
}

// prefetchEvents reads, in one round trip, the ids the events use, the aggregates they
// change, the times of events a rate rule counts, their members' hidden marks and the names of
// those that carry one.
func (s *step) prefetchEvents(ctx context.Context, events []laurel.Event) error {
	type need struct {
		ids   []string
		keys  []aggKey
		rates []rateKey // the intervals the events are judged in, on a board with a rate rule
	}
	needs := make(map[string]*need)
	for i := range events {
		ev := &events[i]
		b := s.boards[ev.Board]
		if b.st == nil {
			continue
		}
		n := needs[ev.Board]
		if n == nil {
			n = new(need)
			needs[ev.Board] = n
		}
		if ev.ID != "" {
			n.ids = append(n.ids, ev.ID)
		}
		if g := b.st.cfg.Guard; g != nil && g.Rate != nil {
			n.rates = append(n.rates, rateKeyOf(g.Rate, ev, s.now))
		}
		ts := s.now
		if ev.HasTS {
			ts = ev.TS
		}
		cal := b.st.cfg.Calendar()
		for j := range b.st.Windows {
			ws := &b.st.Windows[j]
			start, _ := cal.SpanOf(ws.w, ts)
			n.keys = append(n.keys, aggKey{ws.Name, start, ev.Member})
			if ws.w.IsRolling() {
				n.keys = append(n.keys, aggKey{ws.Name, currentSpan, ev.Member})
			}
		}
	}
	// One round trip: ids (locked board by board, in order), aggregates, hidden marks.
	var r reads
	for _, id := range slices.Sorted(maps.Keys(needs)) {
		n := needs[id]
		b := s.boards[id]
		s.queueIDs(&r, b, n.ids)
		s.queueAggs(&r, b, n.keys)
		if len(n.rates) > 0 {
			s.queueRates(&r, b, n.rates)
		}
	}
	members := make([]string, len(events))
	var named []string
	for i := range events {
		members[i] = events[i].Member
		if events[i].Name != nil {
			named = append(named, events[i].Member)
		}
	}
	s.queueHidden(&r, members)
	s.queueNames(&r, named)
	return r.run(ctx, s)
}

// readIDs reads the counted events that hold ids, those the step has not read yet.
func (s *step) readIDs(ctx context.Context, b *boardStep, ids []string) error {
	var r reads
	s.queueIDs(&r, b, ids)
	return r.run(ctx, s)
}

// queueIDs queues the reads of readIDs.
func (s *step) queueIDs(r *reads, b *boardStep, ids []string) {
	var ask []string
	for _, id := range ids {
		if _, ok := b.ids[id]; !ok {
			b.ids[id] = nil
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return
	}
	if !b.whole { // another shard's write may use the same ids (locks.go, idLockKeys)
		hi, lo := idLockKeys(s.e.ns, b.id, ask)
		r.queue("SELECT pg_advisory_xact_lock(k.hi, k.lo) FROM unnest($1::int[], $2::int[]) AS k(hi, lo)", []any{hi, lo}, func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("postgres: lock ids: %w", err)
			}
			return nil
		})
	}
	sql, hasSub := readIDsSQL, b.st.cfg.Subscore != nil
	if hasSub {
		sql = readIDsSubSQL
	}
	r.queue(sql, []any{b.id, ask}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: read ids: %w", err)
		}
		defer rows.Close()
		dest := make([]any, 5, 6)
		var id string
		for rows.Next() {
			ev := new(storedEvent)
			dest[0], dest[1], dest[2], dest[3], dest[4] = &id, &ev.seq, &ev.member, &ev.value, &ev.ts
			if hasSub {
				dest = append(dest[:5], &ev.sub)
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			b.ids[id] = ev
		}
		return rows.Err()
	})
}

// stageEvent validates one event against its board and stages it in every window. It returns
// the event's status and, when applied, its sequence number, its time and the rule that held
// it, if one did.
func (s *step) stageEvent(ctx context.Context, in *laurel.Event, opts laurel.SubmitOptions) (status string, seq, ts int64, held string, err error) {
	b, err := s.board(in.Board)
	if err != nil {
		return "", 0, 0, "", err
	}
	if err := b.st.cfg.AdmitWriter(in, opts); err != nil {
		return "", 0, 0, "", err
	}
	if in.ID != "" {
		if err := s.readIDs(ctx, b, []string{in.ID}); err != nil {
			return "", 0, 0, "", err
		}
		if prev := b.ids[in.ID]; prev != nil {
			if in.Repeats(prev.member, prev.value, prev.sub, prev.ts) {
				return laurel.StatusDuplicate, 0, 0, "", nil
			}
			return "", 0, 0, "", laurel.ErrIDConflict(in.ID)
		}
	}
	if ts, err = b.st.cfg.Admit(in, s.now, opts.Import); err != nil {
		return "", 0, 0, "", err
	}
	_, sh, err := b.shardOf(in.Member)
	if err != nil {
		return "", 0, 0, "", err
	}
	sh.seq += int64(b.st.shards())
	seq = sh.seq
	one := laurel.Counted{Value: in.Value, Sub: in.Sub, TS: ts, Seq: uint64(seq)}
	if held, err = laurel.StageCounted(ctx, &b.st.cfg, staged{s, b}, in.Member, one, s.now); err != nil {
		return "", 0, 0, "", err
	}
	ev := newEvent{seq: seq, member: in.Member, value: in.Value, sub: in.Sub, ts: ts, id: in.ID}
	if in.Tag != nil {
		tag := string(in.Tag)
		ev.tag = &tag
	}
	b.events = append(b.events, ev)
	b.stageTime(in.Member, ts)
	if in.ID != "" {
		b.setID(in.ID, &storedEvent{seq: seq, member: in.Member, value: in.Value, sub: in.Sub, ts: ts})
	}
	return laurel.StatusApplied, seq, ts, held, nil
}

// setNames stages the profile names that the applied events of requests carry, the last one
// per member winning, for the step's commit to write: those that differ from the names its
// prefetch read (queueNames), so that a client sending each member's name with every event
// writes it once.
func (s *step) setNames(reqs []*submitReq) {
	for _, r := range reqs {
		for i := range r.events {
			if ev := &r.events[i]; ev.Name != nil && r.results[i].Status == laurel.StatusApplied {
				if s.names == nil {
					s.names = make(map[string]string)
				}
				s.names[ev.Member] = *ev.Name
			}
		}
	}
	for m, name := range s.names {
		if stored, ok := s.storedNames[m]; ok && stored == name {
			delete(s.names, m)
		}
	}
	if len(s.names) > 0 {
		s.global = true
	}
}

// queueNames queues the read of the stored names of members, for setNames.
func (s *step) queueNames(r *reads, members []string) {
	if len(members) == 0 {
		return
	}
	r.queue("SELECT member, name FROM laurel_profiles WHERE member = ANY($1)", []any{members}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: read names: %w", err)
		}
		defer rows.Close()
		if s.storedNames == nil {
			s.storedNames = make(map[string]string)
		}
		for rows.Next() {
			var m, name string
			if err := rows.Scan(&m, &name); err != nil {
				return err
			}
			s.storedNames[m] = name
		}
		return rows.Err()
	})
}

// queueNamesWrite queues, in the commit's batch, the write of the names setNames staged.
func (s *step) queueNamesWrite(batch *pgx.Batch) {
	if len(s.names) == 0 {
		return
	}
	members := slices.Sorted(maps.Keys(s.names))
	values := make([]string, len(members))
	for i, m := range members {
		values[i] = s.names[m]
	}
	batch.Queue(`INSERT INTO laurel_profiles (member, name)
		SELECT * FROM unnest($1::text[], $2::text[])
		ON CONFLICT (member) DO UPDATE SET name = excluded.name`, members, values)
}

// Retract removes the event with id from every open period and from the rolling and all
// windows, recomputing the member's aggregates there from its remaining events. Closed
// periods do not change. The id may then be used again.
func (s *Store) Retract(ctx context.Context, boardID, id string) error {
	if err := laurel.ValidateRetract(boardID, id); err != nil {
		return err
	}
	// The event's member says which shard to lock; under the lock the event is read again, as
	// the id may have been retracted and used by another member meanwhile.
	for range maxStarts {
		var member string
		err := s.pool.QueryRow(ctx, "SELECT member FROM laurel_events WHERE board = $1 AND id = $2 AND NOT retracted", boardID, id).Scan(&member)
		if errors.Is(err, pgx.ErrNoRows) {
			member = id // no such event: any shard will say so, under its lock
		} else if err != nil {
			return s.unavailable("write", fmt.Errorf("postgres: retract: %w", err))
		}
		err = s.write(ctx, []target{{board: boardID, members: []string{member}}}, func(ctx context.Context, w *step) error {
			b, err := w.board(boardID)
			if err != nil {
				return err
			}
			if err := w.advance(ctx, b); err != nil {
				return err
			}
			if err := w.readIDs(ctx, b, []string{id}); err != nil {
				return err
			}
			held := b.ids[id]
			if held == nil {
				return laurel.FieldErrorf(laurel.ENotFound, "id", "no event with id %q on board %q", id, boardID)
			}
			if _, _, err := b.shardOf(held.member); err != nil {
				return errRetractAgain
			}
			ev := *held
			if _, err := w.tx.Exec(ctx, "UPDATE laurel_events SET retracted = true WHERE board = $1 AND seq = $2", boardID, ev.seq); err != nil {
				return fmt.Errorf("postgres: retract: %w", err)
			}
			if _, err := w.tx.Exec(ctx, "DELETE FROM laurel_history WHERE board = $1 AND member = $2 AND seq = $3", boardID, ev.member, ev.seq); err != nil {
				return fmt.Errorf("postgres: retract: %w", err)
			}
			rest, err := w.memberEvents(ctx, boardID, ev.member)
			if err != nil {
				return err
			}
			return laurel.Recompute(&b.st.cfg, staged{w, b}, ev.member, ev.ts, counted(rest), w.now)
		})
		if !errors.Is(err, errRetractAgain) {
			return err
		}
	}
	return laurel.Errorf(laurel.EUnavailable, "the event %q kept changing while it was retracted; try again", id)
}

// errRetractAgain ends a retraction that locked the shard of another member than the one
// whose event holds the id now.
var errRetractAgain = errors.New("postgres: the id is another member's now")

// memberEvents returns the member's counted events on a board, in arrival order.
func (s *step) memberEvents(ctx context.Context, board, member string) ([]storedEvent, error) {
	rows, err := s.tx.Query(ctx, "SELECT seq, member, value, coalesce(sub, 0), ts FROM laurel_events WHERE member = $1 AND board = $2 AND NOT retracted ORDER BY seq", member, board)
	if err != nil {
		return nil, fmt.Errorf("postgres: read events: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (storedEvent, error) {
		var ev storedEvent
		err := r.Scan(&ev.seq, &ev.member, &ev.value, &ev.sub, &ev.ts)
		return ev, err
	})
}

// historyPoint is a member's standing in one window after an event; sub is 0 on a board
// without a subscore.
type historyPoint struct {
	window     string
	score, sub int64
	rank       int
}

type historyRow struct {
	board, member string
	seq, ts       int64
	points        []historyPoint
}

// encodePoints writes points (one per window) as a JSON object, window → [score, rank], or
// [score, rank, subscore] when the subscore is not 0 (on a board with one), in the order of
// the windows' names as encoding/json would; by hand, as a step writes one for
// each of its events. It sorts points in place. Window names (all, day, last7d…) need no
// escapes.
func encodePoints(points []historyPoint) string {
	slices.SortFunc(points, func(a, b historyPoint) int { return strings.Compare(a.window, b.window) })
	v := make([]byte, 0, 32*len(points)+2)
	v = append(v, '{')
	for i, p := range points {
		if i > 0 {
			v = append(v, ',')
		}
		v = append(v, '"')
		v = append(v, p.window...)
		v = append(v, `":[`...)
		v = strconv.AppendInt(v, p.score, 10)
		v = append(v, ',')
		v = strconv.AppendInt(v, int64(p.rank), 10)
		if p.sub != 0 {
			v = append(v, ',')
			v = strconv.AppendInt(v, p.sub, 10)
		}
		v = append(v, ']')
	}
	return string(append(v, '}'))
}
