package competition

import (
	"context"
	"encoding/json"
	"time"

	"github.com/laurel/laurel"
)

// Leagues are cohorts placed by tier (docs/design.md, "Leagues"): a board's cohorts with
// Tiers set place each member among the members of its tier, and when a period of the cohort
// window closes, the first Promote of each cohort move up a tier and the last Demote down one
// for the periods after; a member that did not play in a period moves down one when
// DemoteAbsent is set. Every member starts in the first tier.
//
// A member's tier is computed when asked — when it is placed, or read — from its last
// computed tier and the periods closed since, each read from the store as it froze them, and
// the result is kept with its history. So a promotion needs no job at the period's end, and
// a member placed in a period before the previous one closed (an event within the board's
// late_limit of it) is placed by the tier it had then: its move counts from the next period.

// tierRecord is the record of a member's tier: key board:member.
type tierRecord struct {
	Tier  int               `json:"tier"`  // index in Cohorts.Tiers
	AsOf  int64             `json:"as_of"` // start of the last closed period counted; tierUnknownAt: none
	Moves []laurel.TierMove `json:"moves,omitempty"`
}

const recTier = "tier"

const (
	maxTierSteps  = 1000
	tierUnknownAt = -1 << 63
)

// tierNow returns the tier a member is placed by: its tier after every period of the cohort
// window closed by now.
func (s *Service) tierNow(ctx context.Context, b *laurel.Board, member string) (string, error) {
	rec, err := s.tier(ctx, b, member)
	if err != nil {
		return "", err
	}
	return b.Cohorts.Tiers[rec.Tier], nil
}

// Tier returns member's tier on board, with its history.
func (s *Service) Tier(ctx context.Context, board, member string) (laurel.Tier, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Tier{}, err
	}
	info, err := s.Service.Board(ctx, board)
	if err != nil {
		return laurel.Tier{}, err
	}
	if info.Cohorts == nil || len(info.Cohorts.Tiers) == 0 {
		return laurel.Tier{}, laurel.Errorf(laurel.EInvalid, "board %q has no leagues: its cohorts have no tiers", board)
	}
	rec, err := s.tier(ctx, &info.Board, member)
	if err != nil {
		return laurel.Tier{}, err
	}
	return laurel.Tier{Board: board, Member: member, Tier: info.Cohorts.Tiers[rec.Tier], Moves: rec.Moves}, nil
}

// tier brings a member's tier record up to the periods closed by now, and returns it.
func (s *Service) tier(ctx context.Context, b *laurel.Board, member string) (tierRecord, error) {
	c := b.Cohorts
	w, _ := b.Window(c.Window)
	cal := b.Calendar()
	newest := laurel.NoMarks.NewestClosed(b, w, s.now()) // by the board's late_limit now
	key := b.ID + ":" + member
	for {
		raw, err := s.Records.Record(ctx, recTier, key)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
			return tierRecord{}, err
		}
		rec := tierRecord{AsOf: tierUnknownAt}
		if raw != nil {
			if err := json.Unmarshal(raw, &rec); err != nil {
				return tierRecord{}, err
			}
			rec.Tier = min(max(rec.Tier, 0), len(c.Tiers)-1) // tiers removed since
		} else {
			rec.AsOf = newest.Start.UnixMilli() // a new member: nothing before counts
		}
		if rec.AsOf >= newest.Start.UnixMilli() && raw != nil {
			return rec, nil
		}
		p := cal.NextPeriod(w, cal.PeriodAt(w, time.UnixMilli(rec.AsOf)))
		for steps := 0; raw != nil && p.Start.UnixMilli() <= newest.Start.UnixMilli(); steps++ {
			if steps == maxTierSteps { // absent for ages: the rest changes nothing more than this
				break
			}
			if err := s.closeTier(ctx, b, member, p, &rec); err != nil {
				return tierRecord{}, err
			}
			rec.AsOf = p.Start.UnixMilli()
			p = cal.NextPeriod(w, p)
		}
		rec.AsOf = max(rec.AsOf, newest.Start.UnixMilli())
		v, err := json.Marshal(rec)
		if err != nil {
			return tierRecord{}, err
		}
		if ok, err := s.Records.SwapRecord(ctx, recTier, key, raw, v); err != nil || ok {
			return rec, err
		}
	}
}

// closeTier applies one closed period p to a member's tier.
func (s *Service) closeTier(ctx context.Context, b *laurel.Board, member string, p laurel.Period, rec *tierRecord) error {
	c := b.Cohorts
	from := rec.Tier
	move := laurel.TierMove{Period: p.ID, From: c.Tiers[from]}
	base := b.ID + ":" + p.ID + ":"
	id, err := s.Records.Record(ctx, recCohortOf, base+member)
	if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
		return err
	}
	rank, of := 0, 0
	if id != nil {
		_, members, err := s.cohortMembers(ctx, base+string(id))
		if err != nil {
			return err
		}
		page, err := s.Service.Lookup(ctx, laurel.Query{Board: b.ID, Window: c.Window, Period: p.ID}, members)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound { // a period dropped since: nothing to rank
			return err
		}
		of = len(page.Entries)
		for i, en := range page.Entries {
			if en.Member == member {
				rank = i + 1
			}
		}
	}
	// A rank in both zones (a cohort smaller than promote + demote) counts as promoted: the
	// member moves up, or stays at the top tier (docs/design.md, "Leagues").
	switch {
	case rank == 0: // did not play (or is hidden, or erased since)
		if c.DemoteAbsent {
			rec.Tier = max(rec.Tier-1, 0)
		}
	case rank <= c.Promote:
		rec.Tier = min(rec.Tier+1, len(c.Tiers)-1)
	case rank > of-c.Demote:
		rec.Tier = max(rec.Tier-1, 0)
	}
	if rank == 0 && rec.Tier == from {
		return nil // nothing to tell
	}
	move.To = c.Tiers[rec.Tier]
	if rank > 0 {
		move.Cohort, move.Rank, move.Of = string(id), rank, of
	}
	rec.Moves = append([]laurel.TierMove{move}, rec.Moves...)
	if len(rec.Moves) > laurel.MaxTierMoves {
		rec.Moves = rec.Moves[:laurel.MaxTierMoves]
	}
	return nil
}
