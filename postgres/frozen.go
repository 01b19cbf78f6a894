package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
)

// frozenRanking reads a closed period from the store. Its rows hold the ranks it was frozen
// with; members hidden or deleted since are left out and the ranks after theirs close up.
type frozenRanking struct {
	e        *Store
	board    string
	win      string
	order    laurel.Ordering
	cp       closedPeriod
	excluded []uint32 // frozen ranks left out, sorted
}

// frozen opens the closed period cp of a board's window for reading.
func (s *Store) frozen(ctx context.Context, board, win string, order laurel.Ordering, cp closedPeriod) (*frozenRanking, error) {
	var removed, hidden []int32
	err := s.pool.QueryRow(ctx, `SELECT c.removed, coalesce((SELECT array_agg(f.rank) FROM laurel_hidden h
			JOIN laurel_frozen f ON f.board = c.board AND f.win = c.win AND f.span = c.span AND f.member = h.member), '{}')
		FROM laurel_closed c WHERE c.board = $1 AND c.win = $2 AND c.span = $3`, board, win, cp.Start).Scan(&removed, &hidden)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: read closed period: %w", err)
	}
	v := &frozenRanking{e: s, board: board, win: win, order: order, cp: cp}
	for _, r := range append(removed, hidden...) {
		v.excluded = append(v.excluded, uint32(r))
	}
	slices.Sort(v.excluded)
	v.excluded = slices.Compact(v.excluded)
	return v, nil
}

// excludedCounts returns, per closed period of a board's window, how many of its frozen
// ranks are left out now.
func (s *Store) excludedCounts(ctx context.Context, board, win string) (map[int64]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.span, cardinality(c.removed) + (SELECT count(*) FROM laurel_hidden h
			JOIN laurel_frozen f ON f.board = c.board AND f.win = c.win AND f.span = c.span AND f.member = h.member)
		FROM laurel_closed c WHERE c.board = $1 AND c.win = $2`, board, win)
	if err != nil {
		return nil, fmt.Errorf("postgres: read closed periods: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]int)
	for rows.Next() {
		var start, n int64
		if err := rows.Scan(&start, &n); err != nil {
			return nil, err
		}
		out[start] = int(n)
	}
	return out, rows.Err()
}

func (v *frozenRanking) Total(context.Context) (int, error) { return v.cp.Total - len(v.excluded), nil }

func (v *frozenRanking) Page(ctx context.Context, from, n int) ([]laurel.Entry, error) {
	total, _ := v.Total(ctx)
	if from < 1 || from > total || n <= 0 {
		return nil, nil
	}
	raw := laurel.FrozenRank(v.excluded, from)
	rows, err := v.e.pool.Query(ctx, `SELECT rank, member, score, coalesce(sub, 0), at FROM laurel_frozen
		WHERE board = $1 AND win = $2 AND span = $3 AND rank >= $4 ORDER BY rank LIMIT $5`,
		v.board, v.win, v.cp.Start, raw, n+len(v.excluded))
	if err != nil {
		return nil, fmt.Errorf("postgres: read closed period: %w", err)
	}
	return v.collect(rows, n)
}

func (v *frozenRanking) Entries(ctx context.Context, members []string) ([]laurel.Entry, error) {
	rows, err := v.e.pool.Query(ctx, readFrozenSQL, v.board, v.win, v.cp.Start, members)
	if err != nil {
		return nil, fmt.Errorf("postgres: read closed period: %w", err)
	}
	return v.collect(rows, len(members))
}

// collect reads up to n rows of frozen entries, leaving the excluded out.
func (v *frozenRanking) collect(rows pgx.Rows, n int) ([]laurel.Entry, error) {
	defer rows.Close()
	var out []laurel.Entry
	for rows.Next() && len(out) < n {
		var raw int32
		var en laurel.Entry
		if err := rows.Scan(&raw, &en.Member, &en.Score, &en.Sub, &en.ReachedAt); err != nil {
			return nil, err
		}
		if _, ex := slices.BinarySearch(v.excluded, uint32(raw)); ex {
			continue
		}
		en.Rank = laurel.VisibleRank(v.excluded, uint32(raw))
		out = append(out, en)
	}
	return out, rows.Err()
}

func (v *frozenRanking) Search(ctx context.Context, k laurel.Key) (int, error) {
	return laurel.SearchByPage(ctx, v, v.order, k)
}
