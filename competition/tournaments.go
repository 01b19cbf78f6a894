package competition

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/laurel/laurel"
)

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

// reservation is what a submit counted of one member in one run.
type reservation struct {
	board, run, member string
	events             []int  // indexes of the submit's events in the run
	counted            []int  // those it counted (not retries of counted ids)
	created            []byte // the entry as this submit made it, if it did
}

// forgetID takes id out of every entry of board's runs that counted it. It reads them all:
// retractions are rare, and an index of ids would cost every submit a write.
func (s *Service) forgetID(ctx context.Context, board, id string) error {
	var keys []string
	err := laurel.EachRecord(ctx, s.Records, recEntry, board+":", "", func(r laurel.Record) (bool, error) {
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
			_, err = s.changeEntry(ctx, key, func(n *entry) {
				n.IDs = slices.DeleteFunc(n.IDs, func(x string) bool { return x == id })
			})
		}
	}
	return err
}

// changeEntry changes the entry key with change (given a copy of it), again on what another
// request wrote meanwhile, until it is stored; changed is false when there is no such entry.
func (s *Service) changeEntry(ctx context.Context, key string, change func(*entry)) (changed bool, err error) {
	for {
		raw, e, err := s.entry(ctx, key)
		if err != nil || raw == nil {
			return false, err
		}
		n := *e
		n.IDs = slices.Clone(n.IDs)
		change(&n)
		if ok, err := s.swapEntry(ctx, key, raw, &n); err != nil || ok {
			return ok, err
		}
	}
}

// reserve counts events against the entries of their runs.
func (s *Service) reserve(ctx context.Context, boards map[string]*laurel.Board, events []laurel.Event, now int64) ([]*reservation, error) {
	var out []*reservation
	byKey := map[string]*reservation{}
	for i := range events {
		ev := &events[i]
		b := boards[ev.Board]
		if b == nil || b.Tournament == nil || laurel.ValidateMember("member", ev.Member) != nil {
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
		if err := s.take(ctx, boards[r.board], r, events); err != nil {
			ctx := context.WithoutCancel(ctx)
			if r.created != nil {
				s.unenter(ctx, r, r.board+":"+r.run+":"+r.member) // it counted nothing
			}
			s.release(ctx, out[:n], events, nil)
			return nil, err
		}
	}
	return out, nil
}

// take reserves r's attempts in its entry, making the entry (within the run's cap) when the
// tournament lets a member enter by playing.
func (s *Service) take(ctx context.Context, b *laurel.Board, r *reservation, events []laurel.Event) error {
	tour := b.Tournament
	key := r.board + ":" + r.run + ":" + r.member
	first := r.events[0]
	for {
		raw, e, err := s.entry(ctx, key)
		if err != nil {
			return err
		}
		if raw == nil {
			if tour.JoinRequired {
				return laurel.InEvent(first, laurel.FieldErrorf(laurel.EConflict, "member", "%q has not joined run %s of the tournament: join it first (POST /v1/boards/%s/members/{member}/join)", r.member, r.run, r.board))
			}
			made, err := s.enter(ctx, b, r.run, key)
			if err != nil {
				return laurel.InEvent(first, err)
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
				return laurel.InEvent(over, laurel.FieldErrorf(laurel.EConflict, "member", "%q has used %d attempts in run %s of the tournament, which allows %d; this submit has %d more",
					r.member, e.Attempts, r.run, tour.MaxAttempts, len(r.counted)))
			}
			n.IDs = slices.Clip(n.IDs)
			for _, i := range r.counted {
				if id := events[i].ID; id != "" {
					n.IDs = append(n.IDs, id)
				}
			}
		}
		ok, err := s.swapEntry(ctx, key, raw, &n)
		if err != nil || ok {
			return err
		}
	}
}

// enter makes key's entry in run, within the run's cap, and returns it (nil: it was made
// meanwhile by another request of the member).
func (s *Service) enter(ctx context.Context, b *laurel.Board, run, key string) ([]byte, error) {
	capped := b.Tournament.MaxMembers != 0
	if capped {
		if err := s.count(ctx, b.ID+":"+run, +1, b.Tournament.MaxMembers); err != nil {
			return nil, err
		}
	}
	v, _ := json.Marshal(entry{JoinedAt: s.now()})
	ok, err := s.Records.SwapRecord(ctx, recEntry, key, nil, v)
	if err == nil && !ok && capped {
		err = s.count(ctx, b.ID+":"+run, -1, 0)
	}
	if !ok {
		v = nil
	}
	return v, err
}

// count adds d to a run's count of members, refusing to pass max (when max > 0).
func (s *Service) count(ctx context.Context, key string, d, max int) error {
	for {
		raw, err := s.Records.Record(ctx, recEntries, key)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
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
			return laurel.FieldErrorf(laurel.EConflict, "member", "run %s of the tournament is full: it takes %d members", run, max)
		}
		var next []byte
		if n+d > 0 {
			next = []byte(strconv.Itoa(n + d))
		}
		if ok, err := s.Records.SwapRecord(ctx, recEntries, key, raw, next); err != nil || ok {
			return err
		}
	}
}

// release gives back what reservations counted: all of it when results is nil (the store
// refused the submit), else the events the store found duplicates (stored before, uncounted).
// An entry a refused submit made is taken back. Errors are dropped: the attempts stay
// counted.
func (s *Service) release(ctx context.Context, res []*reservation, events []laurel.Event, results []laurel.EventResult) {
	for _, r := range res {
		back, ids := 0, []string{}
		for _, i := range r.counted {
			if results == nil || results[i].Status == laurel.StatusDuplicate {
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
		changed, err := s.changeEntry(ctx, key, func(n *entry) {
			n.Attempts = max(0, n.Attempts-back)
			n.IDs = slices.DeleteFunc(n.IDs, func(id string) bool { return slices.Contains(ids, id) })
		})
		if err == nil && changed && results == nil && r.created != nil {
			s.unenter(ctx, r, key)
		}
	}
}

// unenter takes back the entry a refused submit made, unless something changed it since.
func (s *Service) unenter(ctx context.Context, r *reservation, key string) {
	if ok, err := s.Records.SwapRecord(ctx, recEntry, key, r.created, nil); err == nil && ok {
		s.count(ctx, r.board+":"+r.run, -1, 0)
	}
}

func (s *Service) entry(ctx context.Context, key string) ([]byte, *entry, error) {
	raw, err := s.Records.Record(ctx, recEntry, key)
	if laurel.ErrorCode(err) == laurel.ENotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var e entry
	return raw, &e, json.Unmarshal(raw, &e)
}

func (s *Service) swapEntry(ctx context.Context, key string, old []byte, e *entry) (bool, error) {
	v, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	return s.Records.SwapRecord(ctx, recEntry, key, old, v)
}

// tournamentBoard returns the board with its tournament, and the run taking events now.
func (s *Service) tournamentBoard(ctx context.Context, board, member string) (*laurel.Board, laurel.Run, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return nil, laurel.Run{}, err
	}
	info, err := s.Service.Board(ctx, board)
	if err != nil {
		return nil, laurel.Run{}, err
	}
	if info.Tournament == nil {
		return nil, laurel.Run{}, laurel.Errorf(laurel.EInvalid, "board %q is not a tournament", board)
	}
	run, err := info.RunAt(s.now())
	if err != nil {
		return nil, laurel.Run{}, laurel.Errorf(laurel.ErrorCode(err), "no run of the tournament takes members now: %s", laurel.ErrorMessage(err))
	}
	return &info.Board, run, nil
}

// Join enters member in the run of board's tournament that takes events now, within its cap.
// It reports whether it did: a member already in the run is left as it is.
func (s *Service) Join(ctx context.Context, board, member string) (laurel.Entrant, bool, error) {
	b, run, err := s.tournamentBoard(ctx, board, member)
	if err != nil {
		return laurel.Entrant{}, false, err
	}
	key := board + ":" + run.ID + ":" + member
	raw, _, err := s.entry(ctx, key)
	if err != nil {
		return laurel.Entrant{}, false, err
	}
	if raw == nil {
		if _, err := s.enter(ctx, b, run.ID, key); err != nil {
			return laurel.Entrant{}, false, err
		}
	}
	en, err := s.entrant(ctx, b, run, member)
	return en, raw == nil, err
}

// Entrant returns member's entry in the run of board's tournament that takes events now.
func (s *Service) Entrant(ctx context.Context, board, member string) (laurel.Entrant, error) {
	b, run, err := s.tournamentBoard(ctx, board, member)
	if err != nil {
		return laurel.Entrant{}, err
	}
	return s.entrant(ctx, b, run, member)
}

func (s *Service) entrant(ctx context.Context, b *laurel.Board, run laurel.Run, member string) (laurel.Entrant, error) {
	en := laurel.Entrant{Board: b.ID, Member: member, Run: run, MaxAttempts: b.Tournament.MaxAttempts, MaxMembers: b.Tournament.MaxMembers, Members: -1}
	raw, e, err := s.entry(ctx, b.ID+":"+run.ID+":"+member)
	if err != nil {
		return laurel.Entrant{}, err
	}
	if raw != nil {
		en.Joined, en.JoinedAt, en.Attempts = true, e.JoinedAt, e.Attempts
	}
	if en.MaxMembers != 0 {
		raw, err := s.Records.Record(ctx, recEntries, b.ID+":"+run.ID)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
			return laurel.Entrant{}, err
		}
		en.Members, _ = strconv.Atoi(string(raw))
	}
	return en, nil
}
