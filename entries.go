package laurel

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Competitions is a Service that keeps the entries of tournaments (tournament.go): who joined
// each run, how many members a run has, and how many attempts each member used. It wraps a
// store's Service and keeps the entries in the store's Records, so that every store has the
// same rules, and every node of the scale-out store the same counts.
//
// An attempt is one event a run counts: it is reserved before the store takes the submit and
// given back if the store refuses it or finds it a duplicate; a retry of an event id already
// counted is not counted again. A process that dies between the reservation and the store's
// answer leaves the attempt counted (the event may or may not be stored; the store's answer
// never came): the one way a member can lose an attempt.
type Competitions struct {
	Service
	Records Records
	Now     func() int64 // nil: the clock

	configs sync.Map // board id → configCache: what a submit needs of a board
}

// configCache is a board's configuration as a submit read it last: a submit reads it again
// once it is configTTL old, so that a board's competitions cost no read of the board on most
// submits (on the scale-out store, a read of PostgreSQL and Redis). A change of a board's
// tournament or cohorts made through another node applies to this one's submits within
// configTTL (through this one, at once); admission by time never waits (the store decides it).
type configCache struct {
	board *Board // nil: the board has no competition, or does not exist
	read  time.Time
}

const configTTL = time.Second

// Entrant is a member's entry in the run of a tournament taking events now.
type Entrant struct {
	Board       string
	Member      string
	Run         Run
	Joined      bool  // the member has an entry in the run (joined, or has played)
	JoinedAt    int64 // unix ms, when Joined
	Attempts    int   // events the run counted of the member
	MaxAttempts int   // 0: any number
	Members     int   // members with an entry in the run, when the run has a cap; else -1
	MaxMembers  int   // 0: any number
}

// entry is the record of a member's entry in a run: key board:run:member.
type entry struct {
	JoinedAt int64    `json:"joined_at"`
	Attempts int      `json:"attempts"`
	IDs      []string `json:"ids,omitempty"` // the ids of the counted events, when attempts are capped
}

const (
	recEntry   = "entry"     // board:run:member → entry
	recEntries = "run-count" // board:run → members with an entry, when the run has a cap
)

// NewCompetitions returns svc with the entries of tournaments kept in rec, on the clock now
// (nil: the system's), which must be the store's; a Watcher stays one.
func NewCompetitions(svc Service, rec Records, now func() int64) Service {
	t := &Competitions{Service: svc, Records: rec, Now: now}
	if w, ok := svc.(Watcher); ok {
		return &watchedCompetitions{t, w}
	}
	return t
}

type watchedCompetitions struct {
	*Competitions
	w Watcher
}

func (w *watchedCompetitions) Watch(changed func(boards []string)) (stop func()) {
	return w.w.Watch(changed)
}

// Contests is what Competitions adds to a Service: the API's routes of tournaments' entries,
// of cohorts and of leagues' tiers.
type Contests interface {
	Join(ctx context.Context, board, member string) (Entrant, bool, error)
	Entrant(ctx context.Context, board, member string) (Entrant, error)
	Cohort(ctx context.Context, q Query, member string) (Cohort, error)
	Tier(ctx context.Context, board, member string) (Tier, error)
	CohortHistory(ctx context.Context, board, window, member string, limit int) ([]HistoryPoint, error)
}

var _ Contests = (*Competitions)(nil)

func (t *Competitions) now() int64 {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now().UnixMilli()
}

// reservation is what a submit counted of one member in one run.
type reservation struct {
	board, run, member string
	events             []int  // indexes of the submit's events in the run
	counted            []int  // those it counted (not retries of counted ids)
	created            []byte // the entry as this submit made it, if it did
}

// Submit applies events as the store does, after counting them against their tournaments'
// entries (an event a run does not take fails the whole submit, as any bad event does), and
// places their members in their cohorts, recording each one's new standing in its cohort. A
// placement that fails after the store took the events is left to the member's next event,
// which places it: the events are stored.
func (t *Competitions) Submit(ctx context.Context, events []Event, opts SubmitOptions) ([]EventResult, error) {
	boards, err := t.competitionBoards(ctx, events)
	if err != nil {
		return nil, err
	}
	if len(boards) == 0 {
		return t.Service.Submit(ctx, events, opts)
	}
	now := t.now()
	res, err := t.reserve(ctx, boards, events, now)
	if err != nil {
		return nil, err
	}
	results, err := t.Service.Submit(ctx, events, opts)
	if err != nil {
		t.release(context.WithoutCancel(ctx), res, events, nil)
		return nil, err
	}
	t.release(context.WithoutCancel(ctx), res, events, results)
	t.placeAll(context.WithoutCancel(ctx), boards, events, results, now)
	return results, nil
}

// Retract retracts an event as the store does. On a tournament board that caps attempts, the
// id first leaves the entry that counted it: used again, it makes a new event (docs/api.md),
// which is a new attempt, not a retry of a counted one. The retracted event's attempt stays
// used. Should the store then fail, the id stays out: a retry of the event, if it is still
// stored, is counted and then given back as a duplicate, or refused at the limit.
func (t *Competitions) Retract(ctx context.Context, board, id string) error {
	if err := ValidateRetract(board, id); err != nil {
		return err
	}
	b, err := t.competitionBoard(ctx, board)
	if err != nil {
		return err
	}
	if b != nil && b.Tournament != nil && b.Tournament.MaxAttempts != 0 {
		if err := t.forgetID(ctx, board, id); err != nil {
			return err
		}
	}
	return t.Service.Retract(ctx, board, id)
}

// forgetID takes id out of every entry of board's runs that counted it. It reads them all:
// retractions are rare, and an index of ids would cost every submit a write.
func (t *Competitions) forgetID(ctx context.Context, board, id string) error {
	var keys []string
	err := eachRecord(ctx, t.Records, recEntry, board+":", "", func(r Record) (bool, error) {
		var e entry
		if err := json.Unmarshal(r.Value, &e); err != nil {
			return false, err
		}
		if slices.Contains(e.IDs, id) {
			keys = append(keys, r.Key)
		}
		return true, nil
	})
	for _, key := range keys {
		if err == nil {
			_, err = t.changeEntry(ctx, key, func(n *entry) {
				n.IDs = slices.DeleteFunc(n.IDs, func(x string) bool { return x == id })
			})
		}
	}
	return err
}

// changeEntry changes the entry key with change (given a copy of it), again on what another
// request wrote meanwhile, until it is stored; changed is false when there is no such entry.
func (t *Competitions) changeEntry(ctx context.Context, key string, change func(*entry)) (changed bool, err error) {
	for {
		raw, e, err := t.entry(ctx, key)
		if err != nil || raw == nil {
			return false, err
		}
		n := *e
		n.IDs = slices.Clone(n.IDs)
		change(&n)
		if ok, err := t.swapEntry(ctx, key, raw, &n); err != nil || ok {
			return ok, err
		}
	}
}

// competitionBoards returns the boards of events that have a tournament with entries or
// cohorts; a board that does not exist is left to the store to answer for.
func (t *Competitions) competitionBoards(ctx context.Context, events []Event) (map[string]*Board, error) {
	var out map[string]*Board // nil for a submit to boards without competitions: most of them
	last := ""
	for _, ev := range events {
		if ev.Board == last { // a batch is mostly of one board
			continue
		}
		last = ev.Board
		if _, seen := out[ev.Board]; seen {
			continue
		}
		b, err := t.competitionBoard(ctx, ev.Board)
		if err != nil {
			return nil, err
		}
		if b != nil {
			if out == nil {
				out = map[string]*Board{}
			}
			out[ev.Board] = b
		}
	}
	return out, nil
}

// competitionBoard returns the board id if it has a tournament with entries or cohorts, as
// read within configTTL. When the store cannot tell, the last configuration read serves; a
// board never read fails the submit, which must not skip its competitions.
func (t *Competitions) competitionBoard(ctx context.Context, id string) (*Board, error) {
	c, cached := t.configs.Load(id)
	if cached && time.Since(c.(configCache).read) < configTTL {
		return c.(configCache).board, nil
	}
	read := time.Now()
	info, err := t.Service.Board(ctx, id)
	switch {
	case err != nil && ErrorCode(err) != ENotFound && cached:
		return c.(configCache).board, nil
	case err != nil && ErrorCode(err) != ENotFound:
		return nil, err
	}
	var b *Board
	if err == nil && (info.Tournament.KeepsEntries() || info.Cohorts != nil) {
		b = &info.Board
	}
	t.configs.Store(id, configCache{board: b, read: read})
	return b, nil
}

// reserve counts events against the entries of their runs.
func (t *Competitions) reserve(ctx context.Context, boards map[string]*Board, events []Event, now int64) ([]*reservation, error) {
	var out []*reservation
	byKey := map[string]*reservation{}
	for i := range events {
		ev := &events[i]
		b := boards[ev.Board]
		if b == nil || !b.Tournament.KeepsEntries() || ValidateMember("member", ev.Member) != nil {
			continue // the store answers for it
		}
		ts := now
		if ev.HasTS {
			ts = ev.TS
		}
		run, err := b.RunAt(ts)
		if err != nil {
			continue // the store refuses it, with the same words, or finds it a duplicate
		}
		key := ev.Board + ":" + run.ID + ":" + ev.Member
		r := byKey[key]
		if r == nil {
			r = &reservation{board: ev.Board, run: run.ID, member: ev.Member}
			byKey[key] = r
			out = append(out, r)
		}
		r.events = append(r.events, i)
	}
	for n, r := range out {
		if err := t.take(ctx, boards[r.board], r, events); err != nil {
			ctx := context.WithoutCancel(ctx)
			if r.created != nil {
				t.unenter(ctx, r, r.board+":"+r.run+":"+r.member) // it counted nothing
			}
			t.release(ctx, out[:n], events, nil)
			return nil, err
		}
	}
	return out, nil
}

// take reserves r's attempts in its entry, making the entry (within the run's cap) when the
// tournament lets a member enter by playing.
func (t *Competitions) take(ctx context.Context, b *Board, r *reservation, events []Event) error {
	tour := b.Tournament
	key := r.board + ":" + r.run + ":" + r.member
	first := r.events[0]
	for {
		raw, e, err := t.entry(ctx, key)
		if err != nil {
			return err
		}
		if raw == nil {
			if tour.JoinRequired {
				return InEvent(first, FieldErrorf(EConflict, "member", "%q has not joined run %s of the tournament: join it first (POST /v1/boards/%s/members/{member}/join)", r.member, r.run, r.board))
			}
			made, err := t.enter(ctx, b, r.run, key)
			if err != nil {
				return InEvent(first, err)
			}
			r.created = made
			continue // the entry exists now
		}
		n := *e
		r.counted = r.counted[:0]
		for k, i := range r.events {
			id := events[i].ID
			// A retry of a counted event, or an id again within this submit (the store finds it
			// a duplicate), is not an attempt.
			again := id != "" && tour.MaxAttempts != 0 && (slices.Contains(n.IDs, id) ||
				slices.ContainsFunc(r.events[:k], func(j int) bool { return events[j].ID == id }))
			if !again {
				r.counted = append(r.counted, i)
			}
		}
		n.Attempts += len(r.counted)
		if tour.MaxAttempts != 0 {
			// Retries alone are never refused, even past a limit lowered since they counted.
			if len(r.counted) > 0 && n.Attempts > tour.MaxAttempts {
				over := r.counted[max(0, tour.MaxAttempts-e.Attempts)] // the first event past the last attempt
				return InEvent(over, FieldErrorf(EConflict, "member", "%q has used %d attempts in run %s of the tournament, which allows %d; this submit has %d more",
					r.member, e.Attempts, r.run, tour.MaxAttempts, len(r.counted)))
			}
			n.IDs = slices.Clip(n.IDs)
			for _, i := range r.counted {
				if id := events[i].ID; id != "" {
					n.IDs = append(n.IDs, id)
				}
			}
		}
		ok, err := t.swapEntry(ctx, key, raw, &n)
		if err != nil || ok {
			return err
		}
	}
}

// enter makes key's entry in run, within the run's cap, and returns it (nil: it was made
// meanwhile by another request of the member).
func (t *Competitions) enter(ctx context.Context, b *Board, run, key string) ([]byte, error) {
	capped := b.Tournament.MaxMembers != 0
	if capped {
		if err := t.count(ctx, b.ID+":"+run, +1, b.Tournament.MaxMembers); err != nil {
			return nil, err
		}
	}
	v, _ := json.Marshal(entry{JoinedAt: t.now()})
	ok, err := t.Records.SwapRecord(ctx, recEntry, key, nil, v)
	if err == nil && !ok && capped {
		err = t.count(ctx, b.ID+":"+run, -1, 0)
	}
	if !ok {
		v = nil
	}
	return v, err
}

// count adds d to a run's count of members, refusing to pass max (when max > 0).
func (t *Competitions) count(ctx context.Context, key string, d, max int) error {
	for {
		raw, err := t.Records.Record(ctx, recEntries, key)
		if err != nil && ErrorCode(err) != ENotFound {
			return err
		}
		n := 0
		if raw != nil {
			if n, err = strconv.Atoi(string(raw)); err != nil {
				return err
			}
		}
		if max > 0 && n+d > max {
			run := key[strings.IndexByte(key, ':')+1:]
			return FieldErrorf(EConflict, "member", "run %s of the tournament is full: it takes %d members", run, max)
		}
		var next []byte
		if n+d > 0 {
			next = []byte(strconv.Itoa(n + d))
		}
		if ok, err := t.Records.SwapRecord(ctx, recEntries, key, raw, next); err != nil || ok {
			return err
		}
	}
}

// release gives back what reservations counted: all of it when results is nil (the store
// refused the submit), else the events the store found duplicates (stored before, uncounted).
// An entry a refused submit made is taken back. Errors are dropped: the attempts stay
// counted.
func (t *Competitions) release(ctx context.Context, res []*reservation, events []Event, results []EventResult) {
	for _, r := range res {
		back, ids := 0, []string{}
		for _, i := range r.counted {
			if results == nil || results[i].Status == StatusDuplicate {
				back++
				if events[i].ID != "" {
					ids = append(ids, events[i].ID)
				}
			}
		}
		if back == 0 {
			continue
		}
		key := r.board + ":" + r.run + ":" + r.member
		changed, err := t.changeEntry(ctx, key, func(n *entry) {
			n.Attempts = max(0, n.Attempts-back)
			n.IDs = slices.DeleteFunc(n.IDs, func(id string) bool { return slices.Contains(ids, id) })
		})
		if err == nil && changed && results == nil && r.created != nil {
			t.unenter(ctx, r, key)
		}
	}
}

// unenter takes back the entry a refused submit made, unless something changed it since.
func (t *Competitions) unenter(ctx context.Context, r *reservation, key string) {
	if ok, err := t.Records.SwapRecord(ctx, recEntry, key, r.created, nil); err == nil && ok {
		t.count(ctx, r.board+":"+r.run, -1, 0)
	}
}

func (t *Competitions) entry(ctx context.Context, key string) ([]byte, *entry, error) {
	raw, err := t.Records.Record(ctx, recEntry, key)
	if ErrorCode(err) == ENotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var e entry
	return raw, &e, json.Unmarshal(raw, &e)
}

func (t *Competitions) swapEntry(ctx context.Context, key string, old []byte, e *entry) (bool, error) {
	v, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	return t.Records.SwapRecord(ctx, recEntry, key, old, v)
}

// tournamentBoard returns the board with its tournament, and the run taking events now.
func (t *Competitions) tournamentBoard(ctx context.Context, board, member string) (*Board, Run, error) {
	if err := ValidateMember("member", member); err != nil {
		return nil, Run{}, err
	}
	info, err := t.Service.Board(ctx, board)
	if err != nil {
		return nil, Run{}, err
	}
	if info.Tournament == nil {
		return nil, Run{}, Errorf(EInvalid, "board %q is not a tournament", board)
	}
	run, err := info.RunAt(t.now())
	if err != nil {
		return nil, Run{}, Errorf(ErrorCode(err), "no run of the tournament takes members now: %s", ErrorMessage(err))
	}
	return &info.Board, run, nil
}

// Join enters member in the run of board's tournament that takes events now, within its cap.
// It reports whether it did: a member already in the run is left as it is.
func (t *Competitions) Join(ctx context.Context, board, member string) (Entrant, bool, error) {
	b, run, err := t.tournamentBoard(ctx, board, member)
	if err != nil {
		return Entrant{}, false, err
	}
	key := board + ":" + run.ID + ":" + member
	raw, _, err := t.entry(ctx, key)
	if err != nil {
		return Entrant{}, false, err
	}
	if raw == nil {
		if _, err := t.enter(ctx, b, run.ID, key); err != nil {
			return Entrant{}, false, err
		}
	}
	en, err := t.entrant(ctx, b, run, member)
	return en, raw == nil, err
}

// Entrant returns member's entry in the run of board's tournament that takes events now.
func (t *Competitions) Entrant(ctx context.Context, board, member string) (Entrant, error) {
	b, run, err := t.tournamentBoard(ctx, board, member)
	if err != nil {
		return Entrant{}, err
	}
	return t.entrant(ctx, b, run, member)
}

func (t *Competitions) entrant(ctx context.Context, b *Board, run Run, member string) (Entrant, error) {
	en := Entrant{Board: b.ID, Member: member, Run: run, MaxAttempts: b.Tournament.MaxAttempts, MaxMembers: b.Tournament.MaxMembers, Members: -1}
	raw, e, err := t.entry(ctx, b.ID+":"+run.ID+":"+member)
	if err != nil {
		return Entrant{}, err
	}
	if raw != nil {
		en.Joined, en.JoinedAt, en.Attempts = true, e.JoinedAt, e.Attempts
	}
	if en.MaxMembers != 0 {
		raw, err := t.Records.Record(ctx, recEntries, b.ID+":"+run.ID)
		if err != nil && ErrorCode(err) != ENotFound {
			return Entrant{}, err
		}
		en.Members, _ = strconv.Atoi(string(raw))
	}
	return en, nil
}

// PutBoard creates or changes a board; this node's submits see its competitions at once.
func (t *Competitions) PutBoard(ctx context.Context, id string, spec BoardSpec) (BoardInfo, bool, error) {
	defer t.configs.Delete(id)
	return t.Service.PutBoard(ctx, id, spec)
}

// DeleteBoard deletes the board, then what competitions and webhooks keep of it: its
// tournament's entries, its cohorts, its tiers, and the hooks' cursors on it (so that a board
// made again under its id is told of from its first period).
func (t *Competitions) DeleteBoard(ctx context.Context, id string) error {
	defer t.configs.Delete(id)
	if err := t.Service.DeleteBoard(ctx, id); err != nil {
		return err
	}
	ctx, cancel := AfterWrite(ctx, storedGrace)
	defer cancel()
	all := func(string) bool { return true }
	for _, kind := range []string{recEntry, recEntries, recCohortOf, recCohort, recCohortFill, recCohortHistory, recTier} {
		if err := deleteRecords(ctx, t.Records, kind, id+":", all); err != nil {
			return err
		}
	}
	return deleteRecords(ctx, t.Records, recCursor, "", func(key string) bool { // hook:board:window
		_, rest, _ := strings.Cut(key, ":")
		board, _, _ := strings.Cut(rest, ":")
		return board == id
	})
}

// storedGrace bounds what a Competitions write does once its store has taken its part.
const storedGrace = 5 * time.Second

// DeleteMember erases the member, then what competitions keep of it: its entries (which
// free their places in capped runs), its cohort placements (it leaves its cohorts' lists), its
// cohort history and its tiers.
func (t *Competitions) DeleteMember(ctx context.Context, member string) error {
	if err := t.Service.DeleteMember(ctx, member); err != nil {
		return err
	}
	ctx, cancel := AfterWrite(ctx, storedGrace)
	defer cancel()
	err := deleteRecords(ctx, t.Records, recEntry, "", func(key string) bool {
		board, rest, _ := strings.Cut(key, ":")
		run, m, _ := strings.Cut(rest, ":")
		if m != member {
			return false
		}
		t.count(ctx, board+":"+run, -1, 0) // a run without a cap has no count: it stays absent
		return true
	})
	if err == nil {
		err = deleteRecords(ctx, t.Records, recCohortOf, "", func(key string) bool {
			board, rest, _ := strings.Cut(key, ":")
			period, m, _ := strings.Cut(rest, ":")
			return m == member && t.leave(ctx, board+":"+period+":", member) == nil
		})
	}
	if err == nil {
		err = deleteRecords(ctx, t.Records, recTier, "", func(key string) bool {
			_, m, _ := strings.Cut(key, ":")
			return m == member
		})
	}
	if err == nil {
		err = deleteRecords(ctx, t.Records, recCohortHistory, "", func(key string) bool { // board:member:period
			_, rest, _ := strings.Cut(key, ":")
			i := strings.LastIndexByte(rest, ':')
			return i >= 0 && rest[:i] == member
		})
	}
	return err
}
