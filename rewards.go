package laurel

import (
	"encoding/json"
	"fmt"
	"math"
)

// Limits of a board's rewards.
const (
	MaxRewardRules = 32
	MaxReward      = 4 << 10 // bytes of one reward payload
	MaxRewardRank  = 1_000_000
)

// RewardRule grants a reward to the members of a closed period of a calendar window whose
// final rank lies in Ranks (from, to, inclusive) or, with Percent, within the first Percent
// per cent of the period's ranked members (rank ≤ ⌈total·Percent/100⌉, at least rank 1).
// Reward is an opaque JSON object that the game interprets. A board's rules are tried in
// order and the first that matches a member is its reward, so tiers are listed best first:
// {ranks 1–1}, {ranks 2–10}, {percent 10}, {percent 50}.
type RewardRule struct {
	Window  string          `json:"window"`
	Tier    string          `json:"tier,omitempty"` // a league's tier whose cohorts it rewards; "": any
	Ranks   []int           `json:"ranks,omitempty"`
	Percent float64         `json:"percent,omitempty"`
	Reward  json.RawMessage `json:"reward"`
}

// Rewards are a board's reward rules.
type Rewards []RewardRule

// validateRewards checks rules against the board's windows and returns them compacted.
func validateRewards(rules Rewards, b *Board) (Rewards, error) {
	if len(rules) > MaxRewardRules {
		return nil, FieldErrorf(EInvalid, "rewards", "must list at most %d rules", MaxRewardRules)
	}
	out := make(Rewards, len(rules))
	for i, r := range rules {
		field := func(name string) string { return fmt.Sprintf("rewards[%d].%s", i, name) }
		w, ok := b.Window(r.Window)
		if !ok || !w.IsCalendar() {
			return nil, FieldErrorf(EInvalid, field("window"), "must be one of the board's calendar windows (hour, day, week, month, year): only their periods close")
		}
		switch {
		case len(r.Ranks) > 0 && r.Percent != 0:
			return nil, FieldErrorf(EInvalid, field("ranks"), "give ranks or percent, not both")
		case len(r.Ranks) > 0:
			if len(r.Ranks) != 2 || r.Ranks[0] < 1 || r.Ranks[1] < r.Ranks[0] || r.Ranks[1] > MaxRewardRank {
				return nil, FieldErrorf(EInvalid, field("ranks"), "must be [from, to] with 1 ≤ from ≤ to ≤ %d", MaxRewardRank)
			}
		case r.Percent > 0 && r.Percent <= 100 && !math.IsNaN(r.Percent):
		default:
			return nil, FieldErrorf(EInvalid, field("percent"), "give ranks [from, to] or a percent above 0 and at most 100")
		}
		reward, err := ValidateMetadata(field("reward"), r.Reward, MaxReward)
		if err != nil {
			return nil, err
		}
		r.Reward = reward
		out[i] = r
	}
	return out, nil
}

// For returns the reward of a member ranked rank of total in a closed period of window, and
// whether the rules grant one.
func (rs Rewards) For(window string, rank, total int) (json.RawMessage, bool) {
	return rs.ForTier(window, "", rank, total)
}

// ForTier is For for a member of a league's tier, ranked within its cohort: the rules of that
// tier and those of no tier apply.
func (rs Rewards) ForTier(window, tier string, rank, total int) (json.RawMessage, bool) {
	for _, r := range rs {
		if r.Window == window && (r.Tier == "" || r.Tier == tier) && r.covers(rank, total) {
			return r.Reward, true
		}
	}
	return nil, false
}

// LastRank returns the worst rank of total that any rule of window rewards; 0 if none does.
func (rs Rewards) LastRank(window string, total int) int {
	last := 0
	for _, r := range rs {
		if r.Window == window {
			last = max(last, r.lastRank(total))
		}
	}
	return min(last, total)
}

// Has reports whether any rule rewards the periods of window.
func (rs Rewards) Has(window string) bool {
	for _, r := range rs {
		if r.Window == window {
			return true
		}
	}
	return false
}

func (r RewardRule) covers(rank, total int) bool {
	if len(r.Ranks) == 2 {
		return rank >= r.Ranks[0] && rank <= r.Ranks[1]
	}
	return rank <= r.lastRank(total)
}

func (r RewardRule) lastRank(total int) int {
	if len(r.Ranks) == 2 {
		return r.Ranks[1]
	}
	return max(1, int(math.Ceil(float64(total)*r.Percent/100-1e-9)))
}
