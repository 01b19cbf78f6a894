package laurel

import (
	"context"
)

// Contests are what a board's competitions keep beside its rankings (docs/design.md,
// "Tournaments", "Cohorts", "Leagues"): tournaments' entries, cohorts and leagues' tiers,
// as the API's routes read them, and the results of closed periods ranked cohort by cohort.
// Package competition implements it, as a Service that wraps a store's and keeps its state
// in the store's Records; a server without it keeps no competitions.
type Contests interface {
	Join(ctx context.Context, board, member string) (Entrant, bool, error)
	Entrant(ctx context.Context, board, member string) (Entrant, error)
	Cohort(ctx context.Context, q Query, member string) (Cohort, error)
	Tier(ctx context.Context, board, member string) (Tier, error)
	CohortHistory(ctx context.Context, board, window, member string, limit int) ([]HistoryPoint, error)
	// Results are BoardResults, with the ranks of a board's cohort window ranked within each
	// cohort.
	Results(ctx context.Context, board, window, period string, offset, limit int) (Results, error)
}
