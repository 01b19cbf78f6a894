package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/laurel/laurel"
)

// recordHistory stores the history points of a step's events once the index has given their
// standings: after the step's commit and its locks, in a transaction of its own (one
// statement) that does not wait for its fsync, so that a write does not wait twice for the
// disk. A crash of PostgreSQL, or of the node between the two transactions, can lose the
// points of the last moments, never the events themselves. (The embedded store loses
// none: it journals each group's events and recomputes their points at start; the same
// would serve here.) A point is stored only while its event is, and the event's row is locked
// meanwhile, so that a retraction or a deletion that comes in between, now that the shard is
// free, never leaves the point of an event it took away. The step's connection lost (its
// backend terminated), it tries again on others, with a statement that skips the points stored
// already (the first try may have committed before its connection went). It
// keeps to ctx, the committed step's deadline (it waited on a lock for as long as the lock was
// held, and the writes' answers with it): points not stored by then are lost, counted
// (HistoryPointsLost) and logged.
func (s *step) recordHistory(ctx context.Context, rows []historyRow) error {
	if len(rows) == 0 {
		return nil
	}
	var boards, members, points []string
	var seqs, times []int64
	for _, r := range rows {
		boards, members, seqs, times, points = append(boards, r.board), append(members, r.member), append(seqs, r.seq), append(times, r.ts), append(points, encodePoints(r.points))
	}
	args := []any{boards, members, seqs, times, points}
	_, err := s.conn.Exec(ctx, insertHistorySQL, args...)
	for pause := 5 * time.Millisecond; err != nil && (!refused(err) || duplicate(err)) && ctx.Err() == nil; pause = min(2*pause, 200*time.Millisecond) {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
			_, err = s.e.pool.Exec(ctx, insertHistoryAgainSQL, args...)
		}
		t.Stop()
	}
	if err != nil {
		s.e.historyLost.Add(uint64(len(rows)))
		return fmt.Errorf("postgres: %d history points lost: %w", len(rows), err)
	}
	return nil
}

// duplicate reports whether PostgreSQL refused a statement for a row a unique index holds
// already.
func duplicate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" // unique_violation
}

// HistoryPointsLost counts the history points of stored events that PostgreSQL did not take
// by their write's deadline (recordHistory): for metrics.
func (s *Store) HistoryPointsLost() uint64 { return s.historyLost.Load() }

// History returns the member's points in window, newest first.
func (s *Store) History(ctx context.Context, boardID, window, member string, limit int) (_ []laurel.HistoryPoint, err error) {
	defer func() { err = s.unavailable("read", err) }()
	if err := laurel.ValidateMember("member", member); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > laurel.MaxHistoryLimit {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "limit", "must be an integer from 1 to %d", laurel.MaxHistoryLimit)
	}
	rd, err := s.resolve(ctx, laurel.Query{Board: boardID, Window: window})
	if err != nil {
		return nil, err
	}
	var hidden bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM laurel_hidden WHERE member = $1)", member).Scan(&hidden); err != nil {
		return nil, fmt.Errorf("postgres: history: %w", err)
	}
	if hidden {
		return nil, laurel.FieldErrorf(laurel.ENotFound, "member", "member %q is hidden", member)
	}
	points := []laurel.HistoryPoint{}
	// Points without the window (the member was hidden then, or the window came later) are
	// skipped, so read in pages until limit points are found.
	before := int64(1<<63 - 1)
	for len(points) < limit {
		rows, err := s.pool.Query(ctx, `SELECT h.seq, h.ts, h.points, e.tag FROM laurel_history h
			LEFT JOIN laurel_events e ON e.board = h.board AND e.seq = h.seq
			WHERE h.board = $1 AND h.member = $2 AND h.seq < $3 ORDER BY h.seq DESC LIMIT $4`, boardID, member, before, limit)
		if err != nil {
			return nil, fmt.Errorf("postgres: history: %w", err)
		}
		n := 0
		for rows.Next() {
			var ts int64
			var raw []byte
			var tag *string
			if err := rows.Scan(&before, &ts, &raw, &tag); err != nil {
				rows.Close()
				return nil, err
			}
			n++
			var m map[string][3]int64 // score, rank, subscore (0 when left out)
			if err := json.Unmarshal(raw, &m); err != nil {
				rows.Close()
				return nil, fmt.Errorf("postgres: history: %w", err)
			}
			if p, ok := m[rd.res.Name]; ok && len(points) < limit {
				points = append(points, laurel.HistoryPoint{At: ts, Score: p[0], Sub: p[2], Rank: int(p[1]), Tag: tagJSON(tag)})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n < limit {
			break
		}
	}
	return points, nil
}
