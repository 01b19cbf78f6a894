package competition

import (
	"context"
	"strings"

	"github.com/laurel/laurel"
)

// Results returns a closed period's results (laurel.BoardResults): on the whole board, or
// cohort by cohort when the period is one of the board's cohort window (of its cohorts
// removed since, when it holds their placements).
func (s *Service) Results(ctx context.Context, board, window, period string, offset, limit int) (laurel.Results, error) {
	info, err := s.Service.Board(ctx, board)
	if err != nil {
		return laurel.Results{}, err
	}
	c, err := s.cohortsOf(ctx, &info.Board)
	if err != nil {
		return laurel.Results{}, err
	}
	if c == nil || window != c.Window && !(window == "" && info.Windows[0].String() == c.Window) {
		return laurel.BoardResults(ctx, s.Service, board, window, period, offset, limit)
	}
	// The period's header and total, and whether it closed, from the whole board.
	head, err := laurel.BoardResults(ctx, s.Service, board, window, period, 0, 1)
	if err != nil {
		return laurel.Results{}, err
	}
	res := laurel.Results{Board: head.Board, Window: head.Window, Period: head.Period, Total: head.Total, HasSub: head.HasSub}
	ids, err := s.cohortIDs(ctx, board+":"+head.Period.ID+":")
	if err != nil {
		return laurel.Results{}, err
	}
	if len(ids) == 0 && info.Cohorts == nil { // a period after the cohorts were removed
		return laurel.BoardResults(ctx, s.Service, board, window, period, offset, limit)
	}
	for _, id := range ids {
		_, members, err := s.cohortMembers(ctx, board+":"+head.Period.ID+":"+id)
		if err != nil {
			return laurel.Results{}, err
		}
		page, err := s.Service.Lookup(ctx, laurel.Query{Board: board, Window: head.Window, Period: head.Period.ID}, members)
		if err != nil {
			return laurel.Results{}, err
		}
		tier := ""
		if len(c.Tiers) > 0 {
			tier, _, _ = strings.Cut(id, "/")
		}
		for i, en := range page.Entries {
			en.Rank = i + 1
			if reward, ok := info.Rewards.ForTier(head.Window, tier, en.Rank, len(page.Entries)); ok {
				res.Rewarded++
				res.Results = append(res.Results, laurel.Result{Entry: en, Reward: reward, Cohort: id})
			}
		}
	}
	return res.From(offset, limit), nil
}
