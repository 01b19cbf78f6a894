package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// PutProfile sets a member's name and metadata; a field left nil keeps its value.
func (s *Store) PutProfile(ctx context.Context, member string, spec laurel.ProfileSpec) (laurel.Profile, error) {
	spec, err := laurel.ValidateProfile(member, spec)
	if err != nil {
		return laurel.Profile{}, err
	}
	var metadata *string
	if spec.Metadata != nil {
		metadata = ptr(string(spec.Metadata))
	}
	// The answer comes back with the write: a read after it could fail (its deadline spent)
	// and answer 503 for a profile stored.
	var name *string
	var stored []byte
	var hidden bool
	err = s.pool.QueryRow(ctx, `INSERT INTO laurel_profiles (member, name, metadata) VALUES ($1, coalesce($2, ''), $3)
		ON CONFLICT (member) DO UPDATE SET name = coalesce($2, laurel_profiles.name), metadata = coalesce($3, laurel_profiles.metadata)
		RETURNING name, metadata, EXISTS (SELECT 1 FROM laurel_hidden h WHERE h.member = $1)`,
		member, spec.Name, metadata).Scan(&name, &stored, &hidden)
	if err != nil {
		return laurel.Profile{}, s.unavailable("write", fmt.Errorf("postgres: put profile: %w", err))
	}
	pctx, cancel := laurel.AfterWrite(ctx, indexGrace)
	defer cancel()
	if err := s.index.Publish(pctx, false); err != nil {
		s.log.Error("publish a change", "err", err)
	}
	return profileOf(member, name, stored, hidden), nil
}

func ptr[T any](v T) *T { return &v }

// Profile returns a member's profile; ENotFound when it has none.
func (s *Store) Profile(ctx context.Context, member string) (_ laurel.Profile, err error) {
	defer func() { err = s.unavailable("read", err) }()
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Profile{}, err
	}
	var name *string
	var metadata []byte
	var hidden bool
	err = s.pool.QueryRow(ctx, `SELECT p.name, p.metadata, EXISTS (SELECT 1 FROM laurel_hidden h WHERE h.member = $1)
		FROM (SELECT 1) one LEFT JOIN laurel_profiles p ON p.member = $1`, member).Scan(&name, &metadata, &hidden)
	if err != nil {
		return laurel.Profile{}, fmt.Errorf("postgres: read profile: %w", err)
	}
	if name == nil && !hidden {
		return laurel.Profile{}, laurel.FieldErrorf(laurel.ENotFound, "member", "no profile for %q", member)
	}
	return profileOf(member, name, metadata, hidden), nil
}

// profileOf is the profile of member as stored: its name and metadata (nil: none) and whether
// it is hidden.
func profileOf(member string, name *string, metadata []byte, hidden bool) laurel.Profile {
	p := laurel.Profile{Member: member, Metadata: json.RawMessage("{}"), Hidden: hidden}
	if name != nil {
		p.Name = *name
	}
	if metadata != nil {
		p.Metadata = metadata
	}
	return p
}

// Hide leaves a member out of every ranking and total, closed periods included, keeping its
// data.
func (s *Store) Hide(ctx context.Context, member string) error {
	return s.setHidden(ctx, member, true)
}

// Unhide puts a hidden member back in every ranking.
func (s *Store) Unhide(ctx context.Context, member string) error {
	return s.setHidden(ctx, member, false)
}

func (s *Store) setHidden(ctx context.Context, member string, hide bool) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	return s.everywhere(ctx, member, func(w *step, boards []string) error { return w.setHidden(ctx, member, boards, hide) })
}

// setHidden hides or unhides a member in the step, which holds its shard of each of boards
// (every board): its ranked aggregates leave the index or come back, as the step has them
// (those of events it staged before included: indexstep.go removes them too).
func (w *step) setHidden(ctx context.Context, member string, boards []string, hide bool) error {
	var was bool
	if err := w.tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM laurel_hidden WHERE member = $1)", member).Scan(&was); err != nil {
		return fmt.Errorf("postgres: hide: %w", err)
	}
	if was == hide {
		w.hidden[member] = hide
		return nil
	}
	q := "DELETE FROM laurel_hidden WHERE member = $1"
	if hide {
		q = "INSERT INTO laurel_hidden (member) VALUES ($1)"
	}
	if _, err := w.tx.Exec(ctx, q, member); err != nil {
		return fmt.Errorf("postgres: hide: %w", err)
	}
	w.hidden[member] = hide
	w.global, w.moved = true, true // closed periods read the mark from the store
	for _, id := range boards {
		b := w.boards[id]
		if err := w.advance(ctx, b); err != nil {
			return err
		}
		keys := b.rankedKeys(member)
		if err := w.prefetch(ctx, b, keys); err != nil {
			return err
		}
		for _, k := range keys {
			if v := b.aggs[k]; v.present {
				set, _ := b.st.window(k.win).indexSet(k.span)
				b.extra = append(b.extra, shardindex.Change{Set: set, Member: member, Score: v.score, Sub: v.sub, At: v.at, Remove: hide})
			}
		}
	}
	return nil
}

// everywhere runs fn as a step over the member's shard of every board (every board the member
// could be on, for a hide or a deletion), passing the boards that exist. A board created
// meanwhile makes it start again with that board locked too.
func (s *Store) everywhere(ctx context.Context, member string, fn func(w *step, boards []string) error) error {
	for {
		all, err := s.boardIDs(ctx, s.pool)
		if err != nil {
			return s.unavailable("write", err)
		}
		targets := make([]target, len(all))
		for i, id := range all {
			targets[i] = target{board: id, members: []string{member}}
		}
		err = s.write(ctx, targets, func(ctx context.Context, w *step) error {
			now, err := s.boardIDs(ctx, w.tx)
			if err != nil {
				return err
			}
			for _, id := range now {
				if _, ok := w.boards[id]; !ok {
					return errMoreBoards
				}
			}
			var boards []string
			for _, id := range now {
				if w.boards[id].st != nil {
					boards = append(boards, id)
				}
			}
			return fn(w, boards)
		})
		if !errors.Is(err, errMoreBoards) {
			return err
		}
	}
}

var errMoreBoards = errors.New("postgres: a board was created meanwhile")

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// BoardIDs lists the ids of every board in the store, sorted.
func (s *Store) BoardIDs(ctx context.Context) ([]string, error) { return s.boardIDs(ctx, s.pool) }

func (s *Store) boardIDs(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.Query(ctx, "SELECT id FROM laurel_boards ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("postgres: list boards: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// rankedKeys returns the keys of a member's aggregates in the spans of a board that the
// index ranks.
func (b *boardStep) rankedKeys(member string) []aggKey {
	var keys []aggKey
	for i := range b.st.Windows {
		ws := &b.st.Windows[i]
		for _, sp := range ws.rankedSpans() {
			keys = append(keys, aggKey{ws.Name, sp, member})
		}
	}
	return keys
}

// DeleteMember erases a member everywhere: its events, entries (closed periods included),
// history, profile and hidden mark.
func (s *Store) DeleteMember(ctx context.Context, member string) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	return s.everywhere(ctx, member, func(w *step, boards []string) error {
		if err := w.readHidden(ctx, []string{member}); err != nil {
			return err
		}
		for _, id := range boards {
			if err := w.deleteFromBoard(ctx, w.boards[id], member); err != nil {
				return err
			}
		}
		for _, table := range []string{"laurel_profiles", "laurel_hidden"} {
			if _, err := w.tx.Exec(ctx, "DELETE FROM "+table+" WHERE member = $1", member); err != nil {
				return fmt.Errorf("postgres: delete member: %w", err)
			}
		}
		w.global, w.moved = true, true
		return nil
	})
}

func (s *step) deleteFromBoard(ctx context.Context, b *boardStep, member string) error {
	if err := s.advance(ctx, b); err != nil {
		return err
	}
	rows, err := s.tx.Query(ctx, "DELETE FROM laurel_events WHERE member = $1 AND board = $2 RETURNING ts", member, b.id)
	if err != nil {
		return fmt.Errorf("postgres: delete member: %w", err)
	}
	times, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("postgres: delete member: %w", err)
	}
	if len(times) == 0 {
		return nil
	}
	if _, err := s.tx.Exec(ctx, "DELETE FROM laurel_history WHERE board = $1 AND member = $2", b.id, member); err != nil {
		return fmt.Errorf("postgres: delete member: %w", err)
	}
	if err := laurel.Erase(&b.st.cfg, staged{s, b}, member, times, s.now); err != nil {
		return err
	}
	var closedWins []string
	var closedSpans []int64
	for i := range b.st.Windows {
		ws := &b.st.Windows[i]
		for _, cp := range ws.Closed {
			closedWins, closedSpans = append(closedWins, ws.Name), append(closedSpans, cp.Start)
		}
	}
	if len(closedWins) == 0 {
		return nil
	}
	// Its frozen ranks are removed; the ranks after them close up when read.
	_, err = s.tx.Exec(ctx, `WITH gone AS (
			DELETE FROM laurel_frozen f USING unnest($3::text[], $4::bigint[]) AS k(win, span)
			WHERE f.board = $1 AND f.member = $2 AND f.win = k.win AND f.span = k.span
			RETURNING f.win, f.span, f.rank)
		UPDATE laurel_closed c SET removed = c.removed || gone.rank
		FROM gone WHERE c.board = $1 AND c.win = gone.win AND c.span = gone.span`,
		b.id, member, closedWins, closedSpans)
	if err != nil {
		return fmt.Errorf("postgres: delete member: %w", err)
	}
	return nil
}
