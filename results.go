package laurel

import (
	"context"
	"encoding/json"
)

// Results are the rewards a closed period's final ranks earn under its board's rules: every
// rewarded member in rank order. The period is frozen, so they never change once it has
// closed — except by the rules themselves, which are the board's current ones.
type Results struct {
	Board    string
	Window   string
	Period   PeriodInfo
	Total    int      // members ranked in the period
	Rewarded int      // members the rules reward
	Results  []Result // from offset, at most limit of them
	HasSub   bool     // the board has a subscore: its entries show theirs
}

// Result is one rewarded member's final entry and its reward. On a board with cohorts, the
// rank is within the member's cohort, and Cohort is its id.
type Result struct {
	Entry
	Reward json.RawMessage
	Cohort string
}

// resultsChunk is how many ranks one read of a closed period takes.
const resultsChunk = MaxPageLimit

// BoardResults returns the results of the closed period of window (empty: the board's first)
// with that id, ranked on the whole board, from offset among the rewarded members, limit of
// them (limit 0: all). A period that has not closed yet is EConflict: its ranks may still
// change. A board with cohorts rewards the ranks within each cohort instead: Contests.Results.
func BoardResults(ctx context.Context, svc Service, board, window, period string, offset, limit int) (Results, error) {
	if offset < 0 {
		return Results{}, FieldErrorf(EInvalid, "offset", "must not be negative")
	}
	if limit < 0 {
		return Results{}, FieldErrorf(EInvalid, "limit", "must not be negative")
	}
	if period == "" {
		return Results{}, FieldErrorf(EInvalid, "period", "a period id is required")
	}
	info, err := svc.Board(ctx, board)
	if err != nil {
		return Results{}, err
	}
	q := Query{Board: board, Window: window, Period: period}
	var res Results
	for at := 0; ; at += resultsChunk {
		page, err := svc.Page(ctx, q, at, resultsChunk, ScoreRange{})
		if err != nil {
			return Results{}, err
		}
		if at == 0 {
			if !page.Period.Closed {
				return Results{}, FieldErrorf(EConflict, "period", "period %s of %s has not closed: its ranks are final once it has ended and its board's late_limit has passed", period, page.Window)
			}
			res = Results{Board: page.Board, Window: page.Window, Period: page.Period, Total: page.Total, HasSub: page.HasSub}
		}
		last := info.Rewards.LastRank(res.Window, res.Total)
		for _, en := range page.Entries {
			if en.Rank > last {
				return res.From(offset, limit), nil
			}
			if reward, ok := info.Rewards.For(res.Window, en.Rank, res.Total); ok {
				res.Rewarded++
				res.Results = append(res.Results, Result{Entry: en, Reward: reward})
			}
		}
		if len(page.Entries) < resultsChunk {
			return res.From(offset, limit), nil
		}
	}
}

// From returns the results from offset among the rewarded members, limit of them (0: all).
func (r Results) From(offset, limit int) Results {
	r.Results = r.Results[min(offset, len(r.Results)):]
	if limit > 0 && len(r.Results) > limit {
		r.Results = r.Results[:limit]
	}
	return r
}
