// Package competition keeps what a board's competitions add to its rankings (docs/design.md,
// "Tournaments", "Cohorts", "Leagues"): the entries of tournaments' runs and the attempts their
// members used, the placement of members in cohorts and the reads ranked within one, the
// tiers of leagues, and the results of closed periods cohort by cohort. What a competition is
// (laurel.Tournament, laurel.Cohorts, their specs and checks) is the root package's; this
// package holds the state, in a store's laurel.Records, so that every store has the same
// rules and every node of the scale-out store the same counts. It reaches the store only
// through laurel.Service and laurel.Records.
//
// A new kind of competition goes here, in a file of its own: its configuration on laurel.Board
// (checked in the root package, as Tournament is), its records under kinds of its own, and
// what it does to a write in Service.Submit and to a board's deletion in DeleteBoard.
package competition

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/laurel/laurel"
)

// Service is a laurel.Service with its boards' competitions: it wraps a store's Service and
// keeps their state in the store's Records.
//
// An attempt is one event a run counts: it is reserved before the store takes the submit and
// given back if the store refuses it or finds it a duplicate; a retry of an event id already
// counted is not counted again. A process that dies between the reservation and the store's
// answer leaves the attempt counted (the event may or may not be stored; the store's answer
// never came): the one way a member can lose an attempt.
type Service struct {
	laurel.Service
	Records laurel.Records
	Now     func() int64 // nil: the clock

	configs sync.Map // board id → configCache: what a submit needs of a board
}

// configCache is a board's configuration as a submit read it last: a submit reads it again
// once it is configTTL old, so that a board's competitions cost no read of the board on most
// submits (on the scale-out store, a read of PostgreSQL and Redis). A change of a board's
// tournament or cohorts made through another node applies to this one's submits within
// configTTL (through this one, at once); admission by time never waits (the store decides it).
type configCache struct {
	board *laurel.Board // nil: the board has no competition, or does not exist
	read  time.Time
}

const configTTL = time.Second

var _ laurel.Contests = (*Service)(nil)

// New returns store with the competitions of its boards kept in rec, on the clock now (nil:
// the system's), which must be the store's.
func New(store laurel.Service, rec laurel.Records, now func() int64) *Service {
	return &Service{Service: store, Records: rec, Now: now}
}

func (s *Service) now() int64 {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now().UnixMilli()
}

// Submit applies events as the store does, after counting them against their tournaments'
// entries (an event a run does not take fails the whole submit, as any bad event does), and
// places their members in their cohorts, recording each one's new standing in its cohort. A
// placement that fails after the store took the events is left to the member's next event,
// which places it: the events are stored.
func (s *Service) Submit(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions) ([]laurel.EventResult, error) {
	boards, err := s.competitionBoards(ctx, events)
	if err != nil {
		return nil, err
	}
	if len(boards) == 0 {
		return s.Service.Submit(ctx, events, opts)
	}
	now := s.now()
	res, err := s.reserve(ctx, boards, events, now)
	if err != nil {
		return nil, err
	}
	results, err := s.Service.Submit(ctx, events, opts)
	if err != nil {
		s.release(context.WithoutCancel(ctx), res, events, nil)
		return nil, err
	}
	s.release(context.WithoutCancel(ctx), res, events, results)
	s.placeAll(context.WithoutCancel(ctx), boards, events, results, now)
	return results, nil
}

// Retract retracts an event as the store does. On a tournament board that caps attempts, the
// id first leaves the entry that counted it: used again, it makes a new event (docs/api.md),
// which is a new attempt, not a retry of a counted one. The retracted event's attempt stays
// used. Should the store then fail, the id stays out: a retry of the event, if it is still
// stored, is counted and then given back as a duplicate, or refused at the limit.
func (s *Service) Retract(ctx context.Context, board, id string) error {
	if err := laurel.ValidateRetract(board, id); err != nil {
		return err
	}
	b, err := s.competitionBoard(ctx, board)
	if err != nil {
		return err
	}
	if b != nil && b.Tournament != nil && b.Tournament.MaxAttempts != 0 {
		if err := s.forgetID(ctx, board, id); err != nil {
			return err
		}
	}
	return s.Service.Retract(ctx, board, id)
}

// competitionBoards returns the boards of events that have a tournament or
// cohorts; a board that does not exist is left to the store to answer for.
func (s *Service) competitionBoards(ctx context.Context, events []laurel.Event) (map[string]*laurel.Board, error) {
	var out map[string]*laurel.Board // nil for a submit to boards without competitions: most of them
	last := ""
	for _, ev := range events {
		if ev.Board == last { // a batch is mostly of one board
			continue
		}
		last = ev.Board
		if _, seen := out[ev.Board]; seen {
			continue
		}
		b, err := s.competitionBoard(ctx, ev.Board)
		if err != nil {
			return nil, err
		}
		if b != nil {
			if out == nil {
				out = map[string]*laurel.Board{}
			}
			out[ev.Board] = b
		}
	}
	return out, nil
}

// competitionBoard returns the board id if it has a tournament or cohorts, as
// read within configTTL. When the store cannot tell, the last configuration read serves; a
// board never read fails the submit, which must not skip its competitions.
func (s *Service) competitionBoard(ctx context.Context, id string) (*laurel.Board, error) {
	c, cached := s.configs.Load(id)
	if cached && time.Since(c.(configCache).read) < configTTL {
		return c.(configCache).board, nil
	}
	read := time.Now()
	info, err := s.Service.Board(ctx, id)
	switch {
	case err != nil && laurel.ErrorCode(err) != laurel.ENotFound && cached:
		return c.(configCache).board, nil
	case err != nil && laurel.ErrorCode(err) != laurel.ENotFound:
		return nil, err
	}
	var b *laurel.Board
	if err == nil && (info.Tournament != nil || info.Cohorts != nil) {
		b = &info.Board
	}
	s.configs.Store(id, configCache{board: b, read: read})
	return b, nil
}

// PutBoard creates or changes a board; this node's submits see its competitions at once.
func (s *Service) PutBoard(ctx context.Context, id string, spec laurel.BoardSpec) (laurel.BoardInfo, bool, error) {
	defer s.configs.Delete(id)
	if spec.Cohorts == nil {
		return s.Service.PutBoard(ctx, id, spec)
	}
	// Cohorts set or removed: those removed keep their placements readable.
	var before *laurel.Cohorts
	if info, err := s.Service.Board(ctx, id); err == nil {
		before = info.Cohorts
	} else if laurel.ErrorCode(err) != laurel.ENotFound {
		return laurel.BoardInfo{}, false, err
	}
	info, created, err := s.Service.PutBoard(ctx, id, spec)
	if err != nil {
		return info, created, err
	}
	ctx, cancel := laurel.AfterWrite(ctx, laurel.AfterWriteGrace)
	defer cancel()
	return info, created, s.keepRemoved(ctx, id, before, info.Cohorts)
}

// DeleteBoard deletes the board, then what competitions keep of it: its tournament's entries,
// its cohorts and its tiers.
func (s *Service) DeleteBoard(ctx context.Context, id string) error {
	defer s.configs.Delete(id)
	if err := s.Service.DeleteBoard(ctx, id); err != nil {
		return err
	}
	ctx, cancel := laurel.AfterWrite(ctx, laurel.AfterWriteGrace)
	defer cancel()
	all := func(string) bool { return true }
	for _, kind := range []string{recEntry, recEntries, recCohortOf, recCohort, recCohortFill, recCohortHistory, recTier} {
		if err := laurel.DeleteRecords(ctx, s.Records, kind, id+":", all); err != nil {
			return err
		}
	}
	return laurel.DeleteRecord(ctx, s.Records, recCohortsGone, id)
}

// DeleteMember erases the member, then what competitions keep of it: its entries (which
// free their places in capped runs), its cohort placements (it leaves its cohorts' lists), its
// cohort history and its tiers.
func (s *Service) DeleteMember(ctx context.Context, member string) error {
	if err := s.Service.DeleteMember(ctx, member); err != nil {
		return err
	}
	ctx, cancel := laurel.AfterWrite(ctx, laurel.AfterWriteGrace)
	defer cancel()
	err := laurel.DeleteRecords(ctx, s.Records, recEntry, "", func(key string) bool {
		board, rest, _ := strings.Cut(key, ":")
		run, m, _ := strings.Cut(rest, ":")
		if m != member {
			return false
		}
		s.count(ctx, board+":"+run, -1, 0) // a run without a cap has no count: it stays absent
		return true
	})
	if err == nil {
		err = laurel.DeleteRecords(ctx, s.Records, recCohortOf, "", func(key string) bool {
			board, rest, _ := strings.Cut(key, ":")
			period, m, _ := strings.Cut(rest, ":")
			return m == member && s.leave(ctx, board+":"+period+":", member) == nil
		})
	}
	if err == nil {
		err = laurel.DeleteRecords(ctx, s.Records, recTier, "", func(key string) bool {
			_, m, _ := strings.Cut(key, ":")
			return m == member
		})
	}
	if err == nil {
		err = laurel.DeleteRecords(ctx, s.Records, recCohortHistory, "", func(key string) bool { // board:member:period
			_, rest, _ := strings.Cut(key, ":")
			i := strings.LastIndexByte(rest, ':')
			return i >= 0 && rest[:i] == member
		})
	}
	return err
}
