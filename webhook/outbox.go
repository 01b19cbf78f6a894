package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/laurel/laurel"
)

// Outbox is the webhooks of a store and their deliveries, kept in its Records, so that every
// store has the same rules and every node of the scale-out store the same deliveries.
//
// A delivery is made once per (hook, board, window, period, part) as a record holding its
// whole body, before any attempt: what is due is never recomputed, so a restart, a crash or
// another node neither loses nor changes it. Each (hook, board, window) keeps a cursor, the
// start of the newest period whose deliveries are made (from the hook's first pass on: of the
// newest closed before the hook, when none is made yet), so a period is made once even after
// its deliveries are pruned. Making a delivery and moving the cursor are swaps: two nodes
// doing both make it once. An attempt first claims the delivery for a lease, so nodes do not
// send it together; one that dies mid-attempt leaves the lease to expire, and the delivery is
// sent again (at least once: receivers dedupe by the delivery id).
type Outbox struct {
	Records laurel.Records
	Service laurel.Service
	// Encode makes a delivery's body (the HTTP API's JSON, so that a receiver reads the
	// results as GET …/results shows them).
	Encode func(laurel.ResultsPart) ([]byte, error)
	// EncodeFlag makes the body of a delivery of a flag's notice, for the hooks that ask for
	// flags; nil: they are told of none.
	EncodeFlag func(laurel.FlagDelivery) ([]byte, error)
	// Results reads a closed period's results: laurel.Contests.Results, which ranks the
	// members of each cohort apart, where the server keeps competitions; nil is
	// laurel.BoardResults over Service.
	Results func(ctx context.Context, board, window, period string, offset, limit int) (laurel.Results, error)
	Now     func() int64 // nil: the clock

	// Retry backs off from Backoff, doubling to at most MaxBackoff; after MaxAttempts a
	// delivery has failed. Retain is how long delivered and failed deliveries stay readable.
	// Zero values take the defaults below.
	Backoff, MaxBackoff time.Duration
	MaxAttempts         int
	Retain              time.Duration

	pruned atomic.Int64 // when prune last ran (by Now): it runs at most once an hour

	// What Collect need not read again yet: the boards (for a minute), and for each hook,
	// board and window the instant before which none of its periods can have closed since
	// Collect last looked (the current period's close, or a minute on, since a board's
	// late_limit may shorten meanwhile).
	boardsRead atomic.Pointer[boardsRead]
	lookAgain  sync.Map // hook:board:window → lookAgain
}

type boardsRead struct {
	boards []laurel.BoardInfo
	at     int64
}

type lookAgain struct{ looked, next int64 } // unix ms

// lookAgainAfter bounds how long Collect trusts what it read of boards and periods.
const lookAgainAfter = time.Minute

// Defaults of Outbox: about a day of retries, and a week of delivery history.
const (
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = time.Hour
	DefaultMaxAttempts = 36
	DefaultRetain      = 7 * 24 * time.Hour
)

// Kinds of records. A delivery's state is small and read often; its body, which may be large,
// is read only to send it or show it; the pending index lists the deliveries still to send,
// each with the instant it was (re)made pending, so that a claim does not read the others.
const (
	recHook         = "hook"
	recDelivery     = "delivery"      // id → its state (JSON)
	recDeliveryBody = "delivery-body" // id → its body
	recPending      = "delivery-pending"
	recCursor       = "hook-cursor"
)

// staleIndex is how old a pending index entry must be before a claim that finds it pointing at
// no pending delivery deletes it: younger, it may be one being made or replayed right now.
const staleIndex = time.Minute

func (o *Outbox) now() int64 {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now().UnixMilli()
}

// Put creates or updates the hook id.
func (o *Outbox) Put(ctx context.Context, id string, spec laurel.HookSpec) (laurel.Hook, bool, error) {
	if err := laurel.ValidateHookID(id); err != nil {
		return laurel.Hook{}, false, err
	}
	for {
		raw, cur, err := o.hook(ctx, id)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
			return laurel.Hook{}, false, err
		}
		if raw == nil {
			if n, err := o.Records.Records(ctx, recHook, "", "", laurel.MaxHooks); err != nil {
				return laurel.Hook{}, false, err
			} else if len(n) >= laurel.MaxHooks {
				return laurel.Hook{}, false, laurel.Errorf(laurel.EConflict, "a store holds at most %d hooks", laurel.MaxHooks)
			}
		}
		h, err := spec.Apply(id, cur, o.now())
		if err != nil {
			return laurel.Hook{}, false, err
		}
		var cursors map[string]int64
		if raw == nil {
			// Read before the hook is stored: a store that cannot answer refuses the hook,
			// rather than storing it and answering that it failed.
			if cursors, err = o.closedSoFar(ctx, h); err != nil {
				return laurel.Hook{}, false, err
			}
		}
		v, err := json.Marshal(h)
		if err != nil {
			return laurel.Hook{}, false, err
		}
		ok, err := o.Records.SwapRecord(ctx, recHook, id, raw, v)
		if err != nil {
			return laurel.Hook{}, false, err
		}
		if ok {
			// A cursor not written (the store failed meanwhile) leaves its window to the
			// reckoning of hooks made before cursors were: the hook is stored, and says so.
			for key, start := range cursors {
				if _, err := o.swapCursor(ctx, key, nil, start); err != nil {
					break
				}
			}
			return h, raw == nil, nil
		}
	}
}

// closedSoFar returns, for a hook about to be made, the cursor of each calendar window of
// every board: the newest period closed so far, which is not the hook's business, however the
// boards' late_limit changes later (reckoned from the late_limit of the day, a close that a
// longer one then moves past the hook's making would count). Boards and windows made later
// have no cursor, and all their periods close after the hook.
func (o *Outbox) closedSoFar(ctx context.Context, h laurel.Hook) (map[string]int64, error) {
	boards, err := o.Service.Boards(ctx)
	if err != nil {
		return nil, err
	}
	cursors := map[string]int64{}
	for _, b := range boards {
		for _, w := range b.Windows {
			if !w.IsCalendar() {
				continue
			}
			periods, err := o.Service.Periods(ctx, b.ID, w.String())
			if laurel.ErrorCode(err) == laurel.ENotFound { // deleted meanwhile
				continue
			}
			if err != nil {
				return nil, err
			}
			newest, late := int64(math.MinInt64), b.LateLimit.Milliseconds()
			for _, p := range periods {
				// One that closes at the hook's very instant counts as closing after it.
				if p.Closed && p.End+late != h.CreatedAt {
					newest = max(newest, p.Start)
				}
			}
			cursors[cursorKey(h.ID, b.ID, w.String())] = newest
		}
	}
	return cursors, nil
}

// Hook returns the hook id.
func (o *Outbox) Hook(ctx context.Context, id string) (laurel.Hook, error) {
	if err := laurel.ValidateHookID(id); err != nil {
		return laurel.Hook{}, err
	}
	_, h, err := o.hook(ctx, id)
	if err != nil {
		return laurel.Hook{}, err
	}
	return *h, nil
}

func (o *Outbox) hook(ctx context.Context, id string) ([]byte, *laurel.Hook, error) {
	raw, err := o.Records.Record(ctx, recHook, id)
	if laurel.ErrorCode(err) == laurel.ENotFound {
		return nil, nil, laurel.FieldErrorf(laurel.ENotFound, "hook", "no hook %q", id)
	}
	if err != nil {
		return nil, nil, err
	}
	var h laurel.Hook
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, nil, err
	}
	return raw, &h, nil
}

// List returns every hook, by id.
func (o *Outbox) List(ctx context.Context) ([]laurel.Hook, error) {
	recs, err := o.Records.Records(ctx, recHook, "", "", laurel.MaxHooks)
	if err != nil {
		return nil, err
	}
	out := make([]laurel.Hook, len(recs))
	for i, r := range recs {
		if err := json.Unmarshal(r.Value, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Delete deletes the hook id, then its deliveries and cursors: nothing more is sent to it.
func (o *Outbox) Delete(ctx context.Context, id string) error {
	raw, _, err := o.hook(ctx, id)
	if err != nil {
		return err
	}
	if _, err := o.Records.SwapRecord(ctx, recHook, id, raw, nil); err != nil {
		return err
	}
	for _, kind := range []string{recPending, recDelivery, recDeliveryBody, recCursor} {
		if err := laurel.DeleteRecords(ctx, o.Records, kind, id+":", func(string) bool { return true }); err != nil {
			return err
		}
	}
	return nil
}

// ForgetBoard deletes the hooks' cursors on a board deleted, so that a board made again under
// its id is told of from its first period.
func (o *Outbox) ForgetBoard(ctx context.Context, board string) error {
	return laurel.DeleteRecords(ctx, o.Records, recCursor, "", func(key string) bool { // hook:board:window
		_, rest, _ := strings.Cut(key, ":")
		b, _, _ := strings.Cut(rest, ":")
		return b == board
	})
}

// Deliveries lists the deliveries of hook in id order after after, at most limit of them, of
// one state when state is not empty.
func (o *Outbox) Deliveries(ctx context.Context, hook, state, after string, limit int) ([]laurel.Delivery, error) {
	if _, err := o.Hook(ctx, hook); err != nil {
		return nil, err
	}
	if state != "" && state != laurel.DeliveryPending && state != laurel.DeliveryDelivered && state != laurel.DeliveryFailed {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "state", "must be pending, delivered or failed")
	}
	var out []laurel.Delivery
	err := laurel.EachRecord(ctx, o.Records, recDelivery, hook+":", after, func(r laurel.Record) (bool, error) {
		d, err := decodeDelivery(r.Value)
		if err != nil {
			return false, err
		}
		if state == "" || d.State == state {
			out = append(out, d.Delivery)
		}
		return len(out) < limit, nil
	})
	return out, err
}

// Delivery returns the delivery id of hook.
func (o *Outbox) Delivery(ctx context.Context, hook, id string) (laurel.Delivery, error) {
	d, err := o.stored(ctx, hook, id)
	return d.Delivery, err
}

// stored reads the delivery id of hook.
func (o *Outbox) stored(ctx context.Context, hook, id string) (Stored, error) {
	if !strings.HasPrefix(id, hook+":") || laurel.ValidateRecordKey(id) != nil {
		return Stored{}, laurel.FieldErrorf(laurel.ENotFound, "delivery", "hook %q has no delivery %q", hook, id)
	}
	d, err := o.delivery(ctx, id)
	if laurel.ErrorCode(err) == laurel.ENotFound {
		return Stored{}, laurel.FieldErrorf(laurel.ENotFound, "delivery", "hook %q has no delivery %q", hook, id)
	}
	return d, err
}

// delivery reads a delivery's state and body.
func (o *Outbox) delivery(ctx context.Context, id string) (Stored, error) {
	raw, err := o.Records.Record(ctx, recDelivery, id)
	if err != nil {
		return Stored{}, err
	}
	d, err := decodeDelivery(raw)
	if err == nil {
		d.Body, err = o.Records.Record(ctx, recDeliveryBody, id)
	}
	return d, err
}

// markPending (re)makes the pending index entry of a delivery, before its state says pending.
func (o *Outbox) markPending(ctx context.Context, id string) error {
	for {
		old, err := o.Records.Record(ctx, recPending, id)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
			return err
		}
		ok, err := o.Records.SwapRecord(ctx, recPending, id, old, []byte(strconv.FormatInt(o.now(), 10)))
		if err != nil || ok {
			return err
		}
	}
}

// unmarkPending deletes a delivery's pending index entry as read (raw), if it is unchanged.
func (o *Outbox) unmarkPending(ctx context.Context, id string, raw []byte) error {
	_, err := o.Records.SwapRecord(ctx, recPending, id, raw, nil)
	return err
}

// Replay makes a delivery pending again, to be sent at once with a fresh count of attempts,
// whatever its state: a receiver that lost it, or failed for longer than the retries, gets it
// again, under the same id.
func (o *Outbox) Replay(ctx context.Context, hook, id string) (laurel.Delivery, error) {
	for {
		d, err := o.stored(ctx, hook, id)
		if err != nil {
			return laurel.Delivery{}, err
		}
		if err := o.markPending(ctx, id); err != nil {
			return laurel.Delivery{}, err
		}
		n := d
		n.State, n.Attempts, n.NextAt, n.LeaseUntil, n.LastError, n.LastStatus, n.DeliveredAt = laurel.DeliveryPending, 0, o.now(), 0, "", 0, 0
		if ok, err := o.swap(ctx, d, &n); err != nil || ok {
			return n.Delivery, err
		}
	}
}

// Stored is a delivery as read, with its record: Claim returns them, and Finish and Abandon
// swap them, so that what a replay or another claim did since is left as it is.
type Stored struct {
	laurel.Delivery
	raw []byte
}

func decodeDelivery(raw []byte) (Stored, error) {
	d := Stored{raw: raw}
	err := json.Unmarshal(raw, &d.Delivery)
	return d, err
}

// swap stores n over d as read; n.raw becomes what is stored.
func (o *Outbox) swap(ctx context.Context, d Stored, n *Stored) (bool, error) {
	v, err := json.Marshal(n.Delivery)
	if err != nil {
		return false, err
	}
	ok, err := o.Records.SwapRecord(ctx, recDelivery, d.ID, d.raw, v)
	if ok {
		n.raw = v
	}
	return ok, err
}

// Collect makes the deliveries of every period closed since each hook last collected, on the
// boards it hears of, in the windows that have rewards, and prunes deliveries older than
// Retain. It returns how many deliveries it made.
func (o *Outbox) Collect(ctx context.Context) (int, error) {
	hooks, err := o.List(ctx)
	if err != nil {
		return 0, err
	}
	made, err := o.collectFlags(ctx, hooks)
	if err != nil || len(hooks) == 0 {
		return made, err
	}
	now := o.now()
	br := o.boardsRead.Load()
	if br == nil || now-br.at >= lookAgainAfter.Milliseconds() || now < br.at {
		boards, err := o.Service.Boards(ctx)
		if err != nil {
			return 0, err
		}
		br = &boardsRead{boards: boards, at: now}
		o.boardsRead.Store(br)
	}
	results := map[string]laurel.Results{}
	// A board about to be collected is read again, once a pass: the list may be a minute
	// old, and a board deleted and made again since would be collected as the old one (its
	// making decides which periods a hook was told of).
	fresh := map[string]*laurel.BoardInfo{}
	current := func(id string) (*laurel.BoardInfo, error) {
		if b, ok := fresh[id]; ok {
			return b, nil
		}
		b, err := o.Service.Board(ctx, id)
		if err != nil {
			return nil, err
		}
		fresh[id] = &b
		return &b, nil
	}
	for _, h := range hooks {
		for _, listed := range br.boards {
			if !h.Hears(listed.ID) {
				continue
			}
			for _, w := range listed.Windows {
				name := w.String()
				if !w.IsCalendar() || !listed.Rewards.Has(name) {
					continue
				}
				key := cursorKey(h.ID, listed.ID, name)
				if la, ok := o.lookAgain.Load(key); ok && now >= la.(lookAgain).looked && now < la.(lookAgain).next {
					continue // nothing can have closed since (a clock set back looks again)
				}
				b, err := current(listed.ID)
				if laurel.ErrorCode(err) == laurel.ENotFound { // deleted meanwhile
					break
				}
				if err != nil {
					return made, err
				}
				if _, ok := b.Window(name); !ok || !b.Rewards.Has(name) {
					continue // changed meanwhile: the next list has it as it is
				}
				n, err := o.collect(ctx, &h, &b.Board, name, results)
				made += n
				if err != nil && laurel.ErrorCode(err) != laurel.ENotFound { // a board deleted meanwhile
					return made, err
				}
				// The next close: that of the oldest period still open, the one holding now − late_limit.
				late := b.LateLimit.Milliseconds()
				oldestOpen := b.Calendar().PeriodAt(w, time.UnixMilli(now-late))
				next := min(now+lookAgainAfter.Milliseconds(), oldestOpen.End.UnixMilli()+late)
				o.lookAgain.Store(key, lookAgain{looked: now, next: next})
			}
		}
	}
	return made, o.prune(ctx)
}

// collect makes the deliveries of the periods of one window closed since the hook's cursor.
func (o *Outbox) collect(ctx context.Context, h *laurel.Hook, b *laurel.Board, window string, results map[string]laurel.Results) (int, error) {
	key := cursorKey(h.ID, b.ID, window)
	cur, err := o.Records.Record(ctx, recCursor, key)
	if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
		return 0, err
	}
	// Without a cursor (one the hook's making did not fix: a hook of an earlier version), the
	// periods closed before the hook existed are not its business. A board made after the
	// hook has none such: a period closes only while its board exists.
	from := h.CreatedAt - b.LateLimit.Milliseconds()
	if b.CreatedAt >= h.CreatedAt {
		from = math.MinInt64
	}
	if cur != nil {
		from, err = strconv.ParseInt(string(cur), 10, 64)
		if err != nil {
			return 0, err
		}
	}
	periods, err := o.Service.Periods(ctx, b.ID, window)
	if err != nil {
		return 0, err
	}
	made := 0
	before := int64(math.MinInt64)               // the start of the newest period closed before the hook
	for _, p := range slices.Backward(periods) { // oldest first: the cursor only moves on
		switch {
		case !p.Closed:
			continue
		case cur == nil && p.End < from:
			before = p.Start
			continue
		case cur != nil && p.Start <= from:
			continue
		case p.Total == 0: // no one in it: no results to tell
			continue
		}
		n, err := o.make(ctx, h, b, window, p.ID, results)
		made += n
		if err != nil {
			return made, err
		}
		if cur, err = o.swapCursor(ctx, key, cur, p.Start); err != nil {
			return made, err
		}
	}
	if cur == nil {
		// The first pass fixes which periods closed before the hook: a period closes after
		// every older one, so any that closes later starts after them, even one that a
		// shorter late_limit closes at once (whose end the formula above would put before
		// the hook).
		_, err = o.swapCursor(ctx, key, nil, before)
	}
	return made, err
}

// cursorKey names the cursor of a hook on a board's window: the record of where its
// deliveries stand, and the key of when Collect looks at that window again.
func cursorKey(hook, board, window string) string { return hook + ":" + board + ":" + window }

// swapCursor sets the cursor key, if it is old (nil: none yet), to the start of the newest
// period the hook is done with, and returns the record set. A cursor set meanwhile by another
// node is left as it is.
func (o *Outbox) swapCursor(ctx context.Context, key string, old []byte, start int64) ([]byte, error) {
	v := []byte(strconv.FormatInt(start, 10))
	_, err := o.Records.SwapRecord(ctx, recCursor, key, old, v)
	return v, err
}

// make makes the deliveries of one closed period, unless they are made already.
func (o *Outbox) make(ctx context.Context, h *laurel.Hook, b *laurel.Board, window, period string, results map[string]laurel.Results) (int, error) {
	board := b.ID
	// Every hook hearing the board gets the same results: read them once a pass.
	key := board + ":" + window + ":" + period
	res, ok := results[key]
	if !ok {
		var err error
		if res, err = o.results(ctx, board, window, period); err != nil {
			return 0, err
		}
		results[key] = res
	}
	parts := max(1, (len(res.Results)+laurel.ResultsPartSize-1)/laurel.ResultsPartSize)
	all, now, made := res.Results, o.now(), 0
	for part := 1; part <= parts; part++ {
		id, exists, err := o.deliveryID(ctx, h.ID+":"+board+":"+window+":"+period+":"+strconv.Itoa(part), b)
		if err != nil {
			return made, err
		}
		if exists {
			continue // made already
		}
		res.Results = all[min(len(all), (part-1)*laurel.ResultsPartSize):min(len(all), part*laurel.ResultsPartSize)]
		body, err := o.Encode(laurel.ResultsPart{Delivery: id, Hook: h.ID, Part: part, Parts: parts, Results: res})
		if err != nil {
			return made, err
		}
		d := laurel.Delivery{ID: id, Hook: h.ID, Board: board, Window: window, Period: period, Part: part, Parts: parts,
			State: laurel.DeliveryPending, NextAt: now, CreatedAt: now}
		ok, err := o.store(ctx, d, body)
		if err != nil {
			return made, err
		}
		if ok {
			made++
		}
	}
	return made, nil
}

// store makes the delivery d with its body, unless it is made already, and reports whether it
// made it.
func (o *Outbox) store(ctx context.Context, d laurel.Delivery, body []byte) (bool, error) {
	v, err := json.Marshal(d)
	if err != nil {
		return false, err
	}
	// The index first, then the body, then the state that makes the delivery exist: a crash
	// before the state leaves the rest to be made again, or pruned.
	if err := o.markPending(ctx, d.ID); err != nil {
		return false, err
	}
	if _, err := o.Records.SwapRecord(ctx, recDeliveryBody, d.ID, nil, body); err != nil {
		return false, err
	}
	return o.Records.SwapRecord(ctx, recDelivery, d.ID, nil, v)
}

// collectFlags makes a delivery of each flag's notice the stores queued (laurel.FlagNoticeKind)
// to each hook that asks for flags and hears its board, then deletes the notice: each is told
// once, to the hooks there are when it is collected. Two nodes collecting one notice make its
// deliveries once (their ids are the notice's).
func (o *Outbox) collectFlags(ctx context.Context, hooks []laurel.Hook) (int, error) {
	made, now := 0, o.now()
	err := laurel.EachRecord(ctx, o.Records, laurel.FlagNoticeKind, "", "", func(r laurel.Record) (bool, error) {
		var n laurel.FlagNotice
		if err := json.Unmarshal(r.Value, &n); err != nil || n.Flag == nil {
			return false, fmt.Errorf("webhook: a flag's notice %s: %v", r.Key, err)
		}
		for _, h := range hooks {
			if !h.Flags || !h.Hears(n.Flag.Board) || o.EncodeFlag == nil {
				continue
			}
			id := h.ID + ":flag:" + r.Key
			body, err := o.EncodeFlag(laurel.FlagDelivery{Delivery: id, Hook: h.ID, Notice: n})
			if err != nil {
				return false, err
			}
			ok, err := o.store(ctx, laurel.Delivery{ID: id, Hook: h.ID, Board: n.Flag.Board, Part: 1, Parts: 1,
				State: laurel.DeliveryPending, NextAt: now, CreatedAt: now}, body)
			if err != nil {
				return false, err
			}
			if ok {
				made++
			}
		}
		_, err := o.Records.SwapRecord(ctx, laurel.FlagNoticeKind, r.Key, r.Value, nil)
		return err == nil, err
	})
	return made, err
}

// results reads all the results of a closed period.
func (o *Outbox) results(ctx context.Context, board, window, period string) (laurel.Results, error) {
	if o.Results != nil {
		return o.Results(ctx, board, window, period, 0, 0)
	}
	return laurel.BoardResults(ctx, o.Service, board, window, period, 0, 0)
}

// deliveryID is the id of the delivery named name (hook:board:window:period:part) of board b.
// A board deleted and made again under its id has periods of the same names, whose results
// are not the old ones: where the old board's delivery of that name is still kept (made
// before b was), the new one's id carries b's making, "~" and its unix ms, so that a receiver
// applying each id once applies it too. It reports whether the delivery is made already.
func (o *Outbox) deliveryID(ctx context.Context, name string, b *laurel.Board) (id string, exists bool, err error) {
	raw, err := o.Records.Record(ctx, recDelivery, name)
	if laurel.ErrorCode(err) == laurel.ENotFound {
		return name, false, nil
	}
	if err != nil {
		return "", false, err
	}
	d, err := decodeDelivery(raw)
	if err != nil || d.CreatedAt >= b.CreatedAt {
		return name, true, err
	}
	id = name + "~" + strconv.FormatInt(b.CreatedAt, 10)
	_, err = o.Records.Record(ctx, recDelivery, id)
	if laurel.ErrorCode(err) == laurel.ENotFound {
		return id, false, nil
	}
	return id, err == nil, err
}

// prune deletes the delivered and failed deliveries older than Retain, at most once an hour.
func (o *Outbox) prune(ctx context.Context) error {
	now := o.now()
	if last := o.pruned.Load(); last != 0 && now-last < time.Hour.Milliseconds() {
		return nil
	}
	o.pruned.Store(now)
	before := now - cmp.Or(o.Retain, DefaultRetain).Milliseconds()
	return laurel.EachRecord(ctx, o.Records, recDelivery, "", "", func(r laurel.Record) (bool, error) {
		d, err := decodeDelivery(r.Value)
		if err != nil || d.State == laurel.DeliveryPending || d.CreatedAt >= before {
			return err == nil, err
		}
		if ok, err := o.Records.SwapRecord(ctx, recDelivery, d.ID, d.raw, nil); err != nil || !ok {
			return err == nil, err
		}
		return true, laurel.DeleteRecord(ctx, o.Records, recDeliveryBody, d.ID)
	})
}

// Claim takes up to limit deliveries due now for an attempt, each for lease: no other
// claim takes them until the lease ends or Finish records the attempt. It reads the pending
// index only, and deletes the entries of deliveries no longer pending.
func (o *Outbox) Claim(ctx context.Context, limit int, lease time.Duration) ([]Stored, error) {
	now := o.now()
	var out []Stored
	err := laurel.EachRecord(ctx, o.Records, recPending, "", "", func(r laurel.Record) (bool, error) {
		d, err := o.delivery(ctx, r.Key)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
			return false, err
		}
		if err != nil || d.State != laurel.DeliveryPending {
			if at, _ := strconv.ParseInt(string(r.Value), 10, 64); now-at > staleIndex.Milliseconds() {
				return true, o.unmarkPending(ctx, r.Key, r.Value)
			}
			return true, nil
		}
		if d.NextAt > now || d.LeaseUntil > now {
			return true, nil
		}
		n := d
		n.LeaseUntil = now + lease.Milliseconds()
		n.Attempts++
		ok, err := o.swap(ctx, d, &n)
		if ok {
			out = append(out, n)
		}
		return len(out) < limit, err
	})
	return out, err
}

// Finish records how an attempt of a claimed delivery went: status is the receiver's HTTP
// status (0 when none came), failure why it failed ("" for a 2xx). A delivery replayed or
// taken by another claim since is left as it is.
func (o *Outbox) Finish(ctx context.Context, d Stored, status int, failure string) (laurel.Delivery, error) {
	now := o.now()
	n := d
	n.LeaseUntil, n.LastStatus, n.LastError = 0, status, failure
	switch {
	case failure == "":
		n.State, n.DeliveredAt = laurel.DeliveryDelivered, now
	case d.Attempts >= cmp.Or(o.MaxAttempts, DefaultMaxAttempts):
		n.State = laurel.DeliveryFailed
	default:
		n.NextAt = now + o.backoff(d.Attempts).Milliseconds()
	}
	// The index entry as it was before the outcome: a replay meanwhile renews it, and keeps it.
	index, _ := o.Records.Record(ctx, recPending, d.ID)
	ok, err := o.swap(ctx, d, &n)
	if ok && n.State != laurel.DeliveryPending && index != nil {
		err = o.unmarkPending(ctx, d.ID, index)
	}
	return n.Delivery, err
}

// Abandon gives back the attempt of a claimed delivery that its sender stopped, not its
// receiver (the node shuts down mid-send): the attempt is not counted, and the delivery is
// due again at once, on whichever node claims it next. A delivery replayed or taken by
// another claim since is left as it is.
func (o *Outbox) Abandon(ctx context.Context, d Stored) error {
	n := d
	n.LeaseUntil, n.NextAt, n.Attempts = 0, o.now(), max(0, d.Attempts-1)
	_, err := o.swap(ctx, d, &n)
	return err
}

// backoff is the wait after the attempt-th failed attempt.
func (o *Outbox) backoff(attempt int) time.Duration {
	b, most := cmp.Or(o.Backoff, DefaultBackoff), cmp.Or(o.MaxBackoff, DefaultMaxBackoff)
	for i := 1; i < attempt && b < most; i++ {
		b *= 2
	}
	return min(b, most)
}
