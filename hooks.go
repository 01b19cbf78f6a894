package laurel

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Webhooks deliver the results of closed periods (results.go) to the game's servers. The
// rules are here, over Records and the Service, so that every store has them; package
// webhook sends the requests.
//
// The outbox. A delivery is made once per (hook, board, window, period, part) as a record
// holding its whole body, before any attempt: what is due is never recomputed, so a restart,
// a crash or another node neither loses nor changes it. Each (hook, board, window) keeps a
// cursor, the start of the newest period whose deliveries are made (from the hook's first
// pass on: of the newest closed before the hook, when none is made yet), so a period is made
// once even after its deliveries are pruned. Making a delivery and moving the cursor are
// swaps: two nodes doing both make it once. An attempt first claims the delivery for a
// lease, so nodes do not send it together; one that dies mid-attempt leaves the lease to
// expire, and the delivery is sent again (at least once: receivers dedupe by the delivery id).

// Hook is a webhook: an URL that the results of closed periods are posted to.
type Hook struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Secret    string   `json:"secret"` // signs each delivery; the API never shows it
	Boards    []string `json:"boards,omitempty"`
	CreatedAt int64    `json:"created_at"`
}

// HookSpec creates or updates a hook: a nil field keeps its current value.
type HookSpec struct {
	URL    *string  `json:"url,omitempty"`
	Secret *string  `json:"secret,omitempty"`
	Boards []string `json:"boards,omitzero"` // [] hears every board
}

// Limits of hooks.
const (
	MaxHookURL      = 2048
	MinHookSecret   = 16
	MaxHookSecret   = 256
	MaxHookBoards   = 100
	MaxHooks        = 100
	ResultsPartSize = 1000 // rewarded members per delivery
)

// Apply returns the hook that spec makes of current (nil: a new hook created at now).
func (spec HookSpec) Apply(id string, current *Hook, now int64) (Hook, error) {
	if err := validateName("hook", id); err != nil {
		return Hook{}, err
	}
	h := Hook{ID: id, CreatedAt: now}
	if current != nil {
		h = *current
	}
	if spec.URL != nil {
		u, err := url.Parse(*spec.URL)
		if err != nil || len(*spec.URL) > MaxHookURL || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return Hook{}, FieldErrorf(EInvalid, "url", "must be an absolute http or https URL of at most %d bytes, with no user or fragment", MaxHookURL)
		}
		h.URL = *spec.URL
	}
	if spec.Secret != nil {
		if n := len(*spec.Secret); n < MinHookSecret || n > MaxHookSecret {
			return Hook{}, FieldErrorf(EInvalid, "secret", "must be %d to %d bytes", MinHookSecret, MaxHookSecret)
		}
		h.Secret = *spec.Secret
	}
	if spec.Boards != nil {
		if len(spec.Boards) > MaxHookBoards {
			return Hook{}, FieldErrorf(EInvalid, "boards", "must list at most %d boards", MaxHookBoards)
		}
		for i, b := range spec.Boards {
			if err := ValidateBoardID(b); err != nil {
				return Hook{}, FieldErrorf(EInvalid, "boards["+strconv.Itoa(i)+"]", "%s", ErrorMessage(err))
			}
		}
		h.Boards = slices.Compact(slices.Sorted(slices.Values(spec.Boards)))
		if len(h.Boards) == 0 {
			h.Boards = nil
		}
	}
	switch {
	case h.URL == "":
		return Hook{}, FieldErrorf(EInvalid, "url", "is required")
	case h.Secret == "":
		return Hook{}, FieldErrorf(EInvalid, "secret", "is required: receivers check each delivery's signature with it")
	}
	return h, nil
}

// hears reports whether the hook is told of board.
func (h *Hook) hears(board string) bool {
	return len(h.Boards) == 0 || slices.Contains(h.Boards, board)
}

// validateName checks a hook id: the syntax of a board id.
func validateName(field, id string) error {
	if err := ValidateBoardID(id); err != nil {
		return FieldErrorf(EInvalid, field, "must match [a-z0-9][a-z0-9_.-]{0,63}")
	}
	return nil
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // to be sent at NextAt
	DeliveryDelivered = "delivered" // a receiver answered 2xx
	DeliveryFailed    = "failed"    // every attempt failed; a replay sends it again
)

// Delivery is one post of one part of a closed period's results to one hook.
type Delivery struct {
	ID          string          `json:"id"` // hook:board:window:period:part, then ~ and the board's making for a board made again (deliveryID)
	Hook        string          `json:"hook"`
	Board       string          `json:"board"`
	Window      string          `json:"window"`
	Period      string          `json:"period"`
	Part        int             `json:"part"` // 1 … Parts
	Parts       int             `json:"parts"`
	State       string          `json:"state"`
	Attempts    int             `json:"attempts"`
	NextAt      int64           `json:"next_at"`     // pending: when the next attempt may begin
	LeaseUntil  int64           `json:"lease_until"` // an attempt in progress holds it until then
	LastStatus  int             `json:"last_status,omitempty"`
	LastError   string          `json:"last_error,omitempty"`
	CreatedAt   int64           `json:"created_at"`
	DeliveredAt int64           `json:"delivered_at,omitempty"`
	Body        json.RawMessage `json:"-"` // what is posted, frozen when the delivery was made

	raw []byte // the record as read, for the next swap
}

// ResultsPart is what one delivery posts: a part of a closed period's results.
type ResultsPart struct {
	Delivery    string
	Hook        string
	Part, Parts int
	Results     Results // Results.Results holds the part's members only
}

// Hooks are the webhooks of a store and their outbox.
type Hooks struct {
	Records Records
	Service Service
	// Encode makes a delivery's body (the HTTP API's JSON, so that a receiver reads the
	// results as GET …/results shows them).
	Encode func(ResultsPart) ([]byte, error)
	Now    func() int64 // nil: the clock

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
	boards []BoardInfo
	at     int64
}

type lookAgain struct{ looked, next int64 } // unix ms

// lookAgainAfter bounds how long Collect trusts what it read of boards and periods.
const lookAgainAfter = time.Minute

// Defaults of Hooks: about a day of retries, and a week of delivery history.
const (
	DefaultHookBackoff     = time.Second
	DefaultHookMaxBackoff  = time.Hour
	DefaultHookMaxAttempts = 36
	DefaultHookRetain      = 7 * 24 * time.Hour
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

func (hs *Hooks) now() int64 {
	if hs.Now != nil {
		return hs.Now()
	}
	return time.Now().UnixMilli()
}

// Put creates or updates the hook id.
func (hs *Hooks) Put(ctx context.Context, id string, spec HookSpec) (Hook, bool, error) {
	if err := validateName("hook", id); err != nil {
		return Hook{}, false, err
	}
	for {
		raw, cur, err := hs.hook(ctx, id)
		if err != nil && ErrorCode(err) != ENotFound {
			return Hook{}, false, err
		}
		if raw == nil {
			if n, err := hs.Records.Records(ctx, recHook, "", "", MaxHooks); err != nil {
				return Hook{}, false, err
			} else if len(n) >= MaxHooks {
				return Hook{}, false, Errorf(EConflict, "a store holds at most %d hooks", MaxHooks)
			}
		}
		h, err := spec.Apply(id, cur, hs.now())
		if err != nil {
			return Hook{}, false, err
		}
		var cursors map[string]int64
		if raw == nil {
			// Read before the hook is stored: a store that cannot answer refuses the hook,
			// rather than storing it and answering that it failed.
			if cursors, err = hs.closedSoFar(ctx, h); err != nil {
				return Hook{}, false, err
			}
		}
		v, err := json.Marshal(h)
		if err != nil {
			return Hook{}, false, err
		}
		ok, err := hs.Records.SwapRecord(ctx, recHook, id, raw, v)
		if err != nil {
			return Hook{}, false, err
		}
		if ok {
			// A cursor not written (the store failed meanwhile) leaves its window to the
			// reckoning of hooks made before cursors were: the hook is stored, and says so.
			for key, start := range cursors {
				if _, err := hs.swapCursor(ctx, key, nil, start); err != nil {
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
func (hs *Hooks) closedSoFar(ctx context.Context, h Hook) (map[string]int64, error) {
	boards, err := hs.Service.Boards(ctx)
	if err != nil {
		return nil, err
	}
	cursors := map[string]int64{}
	for _, b := range boards {
		for _, w := range b.Windows {
			if !w.IsCalendar() {
				continue
			}
			periods, err := hs.Service.Periods(ctx, b.ID, w.String())
			if ErrorCode(err) == ENotFound { // deleted meanwhile
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
func (hs *Hooks) Hook(ctx context.Context, id string) (Hook, error) {
	if err := validateName("hook", id); err != nil {
		return Hook{}, err
	}
	_, h, err := hs.hook(ctx, id)
	if err != nil {
		return Hook{}, err
	}
	return *h, nil
}

func (hs *Hooks) hook(ctx context.Context, id string) ([]byte, *Hook, error) {
	raw, err := hs.Records.Record(ctx, recHook, id)
	if ErrorCode(err) == ENotFound {
		return nil, nil, FieldErrorf(ENotFound, "hook", "no hook %q", id)
	}
	if err != nil {
		return nil, nil, err
	}
	var h Hook
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, nil, err
	}
	return raw, &h, nil
}

// List returns every hook, by id.
func (hs *Hooks) List(ctx context.Context) ([]Hook, error) {
	recs, err := hs.Records.Records(ctx, recHook, "", "", MaxHooks)
	if err != nil {
		return nil, err
	}
	out := make([]Hook, len(recs))
	for i, r := range recs {
		if err := json.Unmarshal(r.Value, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Delete deletes the hook id, then its deliveries and cursors: nothing more is sent to it.
func (hs *Hooks) Delete(ctx context.Context, id string) error {
	raw, _, err := hs.hook(ctx, id)
	if err != nil {
		return err
	}
	if _, err := hs.Records.SwapRecord(ctx, recHook, id, raw, nil); err != nil {
		return err
	}
	for _, kind := range []string{recPending, recDelivery, recDeliveryBody, recCursor} {
		if err := deleteRecords(ctx, hs.Records, kind, id+":", func(string) bool { return true }); err != nil {
			return err
		}
	}
	return nil
}

// Deliveries lists the deliveries of hook in id order after after, at most limit of them, of
// one state when state is not empty.
func (hs *Hooks) Deliveries(ctx context.Context, hook, state, after string, limit int) ([]Delivery, error) {
	if _, err := hs.Hook(ctx, hook); err != nil {
		return nil, err
	}
	if state != "" && state != DeliveryPending && state != DeliveryDelivered && state != DeliveryFailed {
		return nil, FieldErrorf(EInvalid, "state", "must be pending, delivered or failed")
	}
	var out []Delivery
	err := eachRecord(ctx, hs.Records, recDelivery, hook+":", after, func(r Record) (bool, error) {
		d, err := decodeDelivery(r.Value)
		if err != nil {
			return false, err
		}
		if state == "" || d.State == state {
			out = append(out, d)
		}
		return len(out) < limit, nil
	})
	return out, err
}

// Delivery returns the delivery id of hook.
func (hs *Hooks) Delivery(ctx context.Context, hook, id string) (Delivery, error) {
	if !strings.HasPrefix(id, hook+":") || ValidateRecordKey(id) != nil {
		return Delivery{}, FieldErrorf(ENotFound, "delivery", "hook %q has no delivery %q", hook, id)
	}
	d, err := hs.delivery(ctx, id)
	if ErrorCode(err) == ENotFound {
		return Delivery{}, FieldErrorf(ENotFound, "delivery", "hook %q has no delivery %q", hook, id)
	}
	return d, err
}

// delivery reads a delivery's state and body.
func (hs *Hooks) delivery(ctx context.Context, id string) (Delivery, error) {
	raw, err := hs.Records.Record(ctx, recDelivery, id)
	if err != nil {
		return Delivery{}, err
	}
	d, err := decodeDelivery(raw)
	if err == nil {
		d.Body, err = hs.Records.Record(ctx, recDeliveryBody, id)
	}
	return d, err
}

// markPending (re)makes the pending index entry of a delivery, before its state says pending.
func (hs *Hooks) markPending(ctx context.Context, id string) error {
	for {
		old, err := hs.Records.Record(ctx, recPending, id)
		if err != nil && ErrorCode(err) != ENotFound {
			return err
		}
		ok, err := hs.Records.SwapRecord(ctx, recPending, id, old, []byte(strconv.FormatInt(hs.now(), 10)))
		if err != nil || ok {
			return err
		}
	}
}

// unmarkPending deletes a delivery's pending index entry as read (raw), if it is unchanged.
func (hs *Hooks) unmarkPending(ctx context.Context, id string, raw []byte) error {
	_, err := hs.Records.SwapRecord(ctx, recPending, id, raw, nil)
	return err
}

// Replay makes a delivery pending again, to be sent at once with a fresh count of attempts,
// whatever its state: a receiver that lost it, or failed for longer than the retries, gets it
// again, under the same id.
func (hs *Hooks) Replay(ctx context.Context, hook, id string) (Delivery, error) {
	for {
		d, err := hs.Delivery(ctx, hook, id)
		if err != nil {
			return Delivery{}, err
		}
		if err := hs.markPending(ctx, id); err != nil {
			return Delivery{}, err
		}
		n := d
		n.State, n.Attempts, n.NextAt, n.LeaseUntil, n.LastError, n.LastStatus, n.DeliveredAt = DeliveryPending, 0, hs.now(), 0, "", 0, 0
		if ok, err := hs.swap(ctx, d, &n); err != nil || ok {
			return n, err
		}
	}
}

func decodeDelivery(raw []byte) (Delivery, error) {
	var d Delivery
	err := json.Unmarshal(raw, &d)
	d.raw = raw
	return d, err
}

// swap stores n over d as read; n.raw becomes what is stored.
func (hs *Hooks) swap(ctx context.Context, d Delivery, n *Delivery) (bool, error) {
	v, err := json.Marshal(n)
	if err != nil {
		return false, err
	}
	ok, err := hs.Records.SwapRecord(ctx, recDelivery, d.ID, d.raw, v)
	if ok {
		n.raw = v
	}
	return ok, err
}

// Collect makes the deliveries of every period closed since each hook last collected, on the
// boards it hears of, in the windows that have rewards, and prunes deliveries older than
// Retain. It returns how many deliveries it made.
func (hs *Hooks) Collect(ctx context.Context) (int, error) {
	hooks, err := hs.List(ctx)
	if err != nil || len(hooks) == 0 {
		return 0, err
	}
	now := hs.now()
	br := hs.boardsRead.Load()
	if br == nil || now-br.at >= lookAgainAfter.Milliseconds() || now < br.at {
		boards, err := hs.Service.Boards(ctx)
		if err != nil {
			return 0, err
		}
		br = &boardsRead{boards: boards, at: now}
		hs.boardsRead.Store(br)
	}
	made, results := 0, map[string]Results{}
	// A board about to be collected is read again, once a pass: the list may be a minute
	// old, and a board deleted and made again since would be collected as the old one (its
	// making decides which periods a hook was told of).
	fresh := map[string]*BoardInfo{}
	current := func(id string) (*BoardInfo, error) {
		if b, ok := fresh[id]; ok {
			return b, nil
		}
		b, err := hs.Service.Board(ctx, id)
		if err != nil {
			return nil, err
		}
		fresh[id] = &b
		return &b, nil
	}
	for _, h := range hooks {
		for _, listed := range br.boards {
			if !h.hears(listed.ID) {
				continue
			}
			for _, w := range listed.Windows {
				name := w.String()
				if !w.IsCalendar() || !listed.Rewards.Has(name) {
					continue
				}
				key := cursorKey(h.ID, listed.ID, name)
				if la, ok := hs.lookAgain.Load(key); ok && now >= la.(lookAgain).looked && now < la.(lookAgain).next {
					continue // nothing can have closed since (a clock set back looks again)
				}
				b, err := current(listed.ID)
				if ErrorCode(err) == ENotFound { // deleted meanwhile
					break
				}
				if err != nil {
					return made, err
				}
				if _, ok := b.Window(name); !ok || !b.Rewards.Has(name) {
					continue // changed meanwhile: the next list has it as it is
				}
				n, err := hs.collect(ctx, &h, &b.Board, name, results)
				made += n
				if err != nil && ErrorCode(err) != ENotFound { // a board deleted meanwhile
					return made, err
				}
				// The next close: that of the oldest period still open, the one holding now − late_limit.
				late := b.LateLimit.Milliseconds()
				oldestOpen := b.Calendar().PeriodAt(w, time.UnixMilli(now-late))
				next := min(now+lookAgainAfter.Milliseconds(), oldestOpen.End.UnixMilli()+late)
				hs.lookAgain.Store(key, lookAgain{looked: now, next: next})
			}
		}
	}
	return made, hs.prune(ctx)
}

// collect makes the deliveries of the periods of one window closed since the hook's cursor.
func (hs *Hooks) collect(ctx context.Context, h *Hook, b *Board, window string, results map[string]Results) (int, error) {
	key := cursorKey(h.ID, b.ID, window)
	cur, err := hs.Records.Record(ctx, recCursor, key)
	if err != nil && ErrorCode(err) != ENotFound {
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
	periods, err := hs.Service.Periods(ctx, b.ID, window)
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
		n, err := hs.make(ctx, h, b, window, p.ID, results)
		made += n
		if err != nil {
			return made, err
		}
		if cur, err = hs.swapCursor(ctx, key, cur, p.Start); err != nil {
			return made, err
		}
	}
	if cur == nil {
		// The first pass fixes which periods closed before the hook: a period closes after
		// every older one, so any that closes later starts after them, even one that a
		// shorter late_limit closes at once (whose end the formula above would put before
		// the hook).
		_, err = hs.swapCursor(ctx, key, nil, before)
	}
	return made, err
}

// cursorKey names the cursor of a hook on a board's window: the record of where its
// deliveries stand, and the key of when Collect looks at that window again.
func cursorKey(hook, board, window string) string { return hook + ":" + board + ":" + window }

// swapCursor sets the cursor key, if it is old (nil: none yet), to the start of the newest
// period the hook is done with, and returns the record set. A cursor set meanwhile by another
// node is left as it is.
func (hs *Hooks) swapCursor(ctx context.Context, key string, old []byte, start int64) ([]byte, error) {
	v := []byte(strconv.FormatInt(start, 10))
	_, err := hs.Records.SwapRecord(ctx, recCursor, key, old, v)
	return v, err
}

// make makes the deliveries of one closed period, unless they are made already.
func (hs *Hooks) make(ctx context.Context, h *Hook, b *Board, window, period string, results map[string]Results) (int, error) {
	board := b.ID
	// Every hook hearing the board gets the same results: read them once a pass.
	key := board + ":" + window + ":" + period
	res, ok := results[key]
	if !ok {
		var err error
		if res, err = PeriodResults(ctx, hs.Service, board, window, period, 0, 0); err != nil {
			return 0, err
		}
		results[key] = res
	}
	parts := max(1, (len(res.Results)+ResultsPartSize-1)/ResultsPartSize)
	all, now, made := res.Results, hs.now(), 0
	for part := 1; part <= parts; part++ {
		id, exists, err := hs.deliveryID(ctx, h.ID+":"+board+":"+window+":"+period+":"+strconv.Itoa(part), b)
		if err != nil {
			return made, err
		}
		if exists {
			continue // made already
		}
		res.Results = all[min(len(all), (part-1)*ResultsPartSize):min(len(all), part*ResultsPartSize)]
		body, err := hs.Encode(ResultsPart{Delivery: id, Hook: h.ID, Part: part, Parts: parts, Results: res})
		if err != nil {
			return made, err
		}
		d := Delivery{ID: id, Hook: h.ID, Board: board, Window: window, Period: period, Part: part, Parts: parts,
			State: DeliveryPending, NextAt: now, CreatedAt: now}
		v, err := json.Marshal(d)
		if err != nil {
			return made, err
		}
		// The index first, then the body, then the state that makes the delivery exist: a crash
		// before the state leaves the rest to be made again, or pruned.
		if err := hs.markPending(ctx, id); err != nil {
			return made, err
		}
		if _, err := hs.Records.SwapRecord(ctx, recDeliveryBody, id, nil, body); err != nil {
			return made, err
		}
		ok, err := hs.Records.SwapRecord(ctx, recDelivery, id, nil, v)
		if err != nil {
			return made, err
		}
		if ok {
			made++
		}
	}
	return made, nil
}

// deliveryID is the id of the delivery named name (hook:board:window:period:part) of board b.
// A board deleted and made again under its id has periods of the same names, whose results
// are not the old ones: where the old board's delivery of that name is still kept (made
// before b was), the new one's id carries b's making, "~" and its unix ms, so that a receiver
// applying each id once applies it too. It reports whether the delivery is made already.
func (hs *Hooks) deliveryID(ctx context.Context, name string, b *Board) (id string, exists bool, err error) {
	raw, err := hs.Records.Record(ctx, recDelivery, name)
	if ErrorCode(err) == ENotFound {
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
	_, err = hs.Records.Record(ctx, recDelivery, id)
	if ErrorCode(err) == ENotFound {
		return id, false, nil
	}
	return id, err == nil, err
}

// prune deletes the delivered and failed deliveries older than Retain, at most once an hour.
func (hs *Hooks) prune(ctx context.Context) error {
	now := hs.now()
	if last := hs.pruned.Load(); last != 0 && now-last < time.Hour.Milliseconds() {
		return nil
	}
	hs.pruned.Store(now)
	before := now - cmp.Or(hs.Retain, DefaultHookRetain).Milliseconds()
	return eachRecord(ctx, hs.Records, recDelivery, "", "", func(r Record) (bool, error) {
		d, err := decodeDelivery(r.Value)
		if err != nil || d.State == DeliveryPending || d.CreatedAt >= before {
			return err == nil, err
		}
		if ok, err := hs.Records.SwapRecord(ctx, recDelivery, d.ID, d.raw, nil); err != nil || !ok {
			return err == nil, err
		}
		return true, deleteRecord(ctx, hs.Records, recDeliveryBody, d.ID)
	})
}

// Claim takes up to limit deliveries due now for an attempt, each for lease: no other
// claim takes them until the lease ends or Finish records the attempt. It reads the pending
// index only, and deletes the entries of deliveries no longer pending.
func (hs *Hooks) Claim(ctx context.Context, limit int, lease time.Duration) ([]Delivery, error) {
	now := hs.now()
	var out []Delivery
	err := eachRecord(ctx, hs.Records, recPending, "", "", func(r Record) (bool, error) {
		d, err := hs.delivery(ctx, r.Key)
		if err != nil && ErrorCode(err) != ENotFound {
			return false, err
		}
		if err != nil || d.State != DeliveryPending {
			if at, _ := strconv.ParseInt(string(r.Value), 10, 64); now-at > staleIndex.Milliseconds() {
				return true, hs.unmarkPending(ctx, r.Key, r.Value)
			}
			return true, nil
		}
		if d.NextAt > now || d.LeaseUntil > now {
			return true, nil
		}
		n := d
		n.LeaseUntil = now + lease.Milliseconds()
		n.Attempts++
		ok, err := hs.swap(ctx, d, &n)
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
func (hs *Hooks) Finish(ctx context.Context, d Delivery, status int, failure string) (Delivery, error) {
	now := hs.now()
	n := d
	n.LeaseUntil, n.LastStatus, n.LastError = 0, status, failure
	switch {
	case failure == "":
		n.State, n.DeliveredAt = DeliveryDelivered, now
	case d.Attempts >= cmp.Or(hs.MaxAttempts, DefaultHookMaxAttempts):
		n.State = DeliveryFailed
	default:
		n.NextAt = now + hs.backoff(d.Attempts).Milliseconds()
	}
	// The index entry as it was before the outcome: a replay meanwhile renews it, and keeps it.
	index, _ := hs.Records.Record(ctx, recPending, d.ID)
	ok, err := hs.swap(ctx, d, &n)
	if ok && n.State != DeliveryPending && index != nil {
		err = hs.unmarkPending(ctx, d.ID, index)
	}
	return n, err
}

// Abandon gives back the attempt of a claimed delivery that its sender stopped, not its
// receiver (the node shuts down mid-send): the attempt is not counted, and the delivery is
// due again at once, on whichever node claims it next. A delivery replayed or taken by
// another claim since is left as it is.
func (hs *Hooks) Abandon(ctx context.Context, d Delivery) error {
	n := d
	n.LeaseUntil, n.NextAt, n.Attempts = 0, hs.now(), max(0, d.Attempts-1)
	_, err := hs.swap(ctx, d, &n)
	return err
}

// backoff is the wait after the attempt-th failed attempt.
func (hs *Hooks) backoff(attempt int) time.Duration {
	b, most := cmp.Or(hs.Backoff, DefaultHookBackoff), cmp.Or(hs.MaxBackoff, DefaultHookMaxBackoff)
	for i := 1; i < attempt && b < most; i++ {
		b *= 2
	}
	return min(b, most)
}
