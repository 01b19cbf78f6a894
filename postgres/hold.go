package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
)

// A submit whose events a hold rule holds hides their members and opens their flags in the
// step that stores the events (docs/design.md, "Guards"). Hiding takes a member's shard on
// every board, so such a submit is written in a step of its own, which holds those shards
// besides its events' (submitReq.everywhere): the first try, in a group, finds the members
// held and stores nothing (errHeldLate); the second holds them all. A rule is judged under
// the member's shard lock either way, so the second try judges what every node committed
// before it, and may hold another member (then it starts again with that one too).

// holdAt is an event of a request that a rule held, at its index in the request.
type holdAt struct {
	at int
	ev laurel.HeldEvent
}

// errHeldLate fails a request that held members its step does not hold everywhere.
var errHeldLate = errors.New("postgres: members held whose shards the step does not hold on every board")

// submitHeld writes a submit alone, in a step that holds held's shards on every board.
func (s *Store) submitHeld(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions, held []string) ([]laurel.EventResult, []string, error) {
	for {
		all, err := s.boardIDs(ctx, s.pool)
		if err != nil {
			return nil, nil, s.unavailable("write", err)
		}
		deadline, _ := ctx.Deadline()
		req := &submitReq{deadline: deadline, events: events, opts: opts, results: make([]laurel.EventResult, len(events)),
			everywhere: all, held: held}
		req.state.Store(reqTaken)
		s.submitGroup([]*submitReq{req}, func(int) []*submitReq { return nil }, func(later []*submitReq) {
			if len(later) > 0 { // a step alone waits for its shards: not expected
				req.err = laurel.Errorf(laurel.EUnavailable, "the write could not take its members' shards; try again")
			}
		})
		if !errors.Is(req.err, errMoreBoards) {
			return req.answer()
		}
	}
}

// hold hides the members of r's held events and opens their flags, or adds the events to
// their open ones, in the step.
func (w *step) hold(ctx context.Context, r *submitReq) error {
	now, err := w.e.boardIDs(ctx, w.tx)
	if err != nil {
		return err
	}
	if !slices.Equal(now, r.everywhere) {
		return errMoreBoards
	}
	var boards []string
	for _, id := range now {
		if w.boards[id].st != nil {
			boards = append(boards, id)
		}
	}
	holds := make([]laurel.HeldEvent, len(r.holds))
	for i, h := range r.holds {
		holds[i] = h.ev
		if i == slices.IndexFunc(r.holds, func(g holdAt) bool { return g.ev.Member == h.ev.Member }) {
			if err := w.setHidden(ctx, h.ev.Member, boards, true); err != nil {
				return err
			}
		}
	}
	flags, err := laurel.OpenFlags(holds, w.now, func(board, member string) (*laurel.Flag, error) { return w.openFlag(ctx, board, member) })
	if err != nil {
		return err
	}
	if err := w.writeFlags(ctx, flags); err != nil {
		return err
	}
	for _, h := range r.holds {
		i := slices.IndexFunc(flags, func(f *laurel.Flag) bool { return f.Board == h.ev.Board && f.Member == h.ev.Member })
		r.results[h.at].Flag, r.results[h.at].Rule = flags[i].ID, h.ev.Event.Rule
	}
	return nil
}

// openFlag returns the member's open flag on the board, or nil, locking its rows until the
// step commits: a review's resolution of it waits for the step, or the step for it.
func (w *step) openFlag(ctx context.Context, board, member string) (*laurel.Flag, error) {
	var v []byte
	err := w.tx.QueryRow(ctx, `SELECT f.value FROM laurel_records o JOIN laurel_records f ON f.kind = $3 AND f.key = convert_from(o.value, 'UTF8')
		WHERE o.kind = $1 AND o.key = $2 FOR UPDATE`, laurel.OpenFlagKind, laurel.OpenFlagKey(board, member), laurel.FlagKind).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read a flag: %w", err)
	}
	return laurel.DecodeFlag(v)
}

// ChangeFlags changes a member's open flags and its hidden mark in one step over the member's
// shard of every board (laurel.FlagStore): a hold of the member's events on any board waits
// for it, or it for the hold.
func (s *Store) ChangeFlags(ctx context.Context, member string, change func(now int64, open []*laurel.Flag) ([]*laurel.Flag, *bool, error)) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	return s.everywhere(ctx, member, func(w *step, boards []string) error {
		rows, err := w.tx.Query(ctx, `SELECT f.value FROM laurel_records o JOIN laurel_records f ON f.kind = $3 AND f.key = convert_from(o.value, 'UTF8')
			WHERE o.kind = $1 AND starts_with(o.key, $2) ORDER BY o.key FOR UPDATE`, laurel.OpenFlagKind, member+"/", laurel.FlagKind)
		if err != nil {
			return fmt.Errorf("postgres: read flags: %w", err)
		}
		values, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return fmt.Errorf("postgres: read flags: %w", err)
		}
		open := make([]*laurel.Flag, len(values))
		for i, v := range values {
			if open[i], err = laurel.DecodeFlag(v); err != nil {
				return err
			}
		}
		write, hide, err := change(w.now, open)
		if err != nil {
			return err
		}
		if err := w.writeFlags(ctx, write); err != nil {
			return err
		}
		if hide != nil {
			return w.setHidden(ctx, member, boards, *hide)
		}
		return nil
	})
}

// writeFlags writes the records of flags in the step.
func (w *step) writeFlags(ctx context.Context, flags []*laurel.Flag) error {
	for _, f := range flags {
		for _, r := range f.Records(w.now) {
			q, args := `DELETE FROM laurel_records WHERE kind = $1 AND key = $2`, []any{r.Kind, r.Key}
			if r.Value != nil {
				q, args = `INSERT INTO laurel_records (kind, key, value) VALUES ($1, $2, $3)
					ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value`, append(args, r.Value)
			}
			if _, err := w.tx.Exec(ctx, q, args...); err != nil {
				return fmt.Errorf("postgres: write a flag: %w", err)
			}
		}
	}
	return nil
}
