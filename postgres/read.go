package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// reading is a resolved Query: the ranking to answer from and what describes it.
type reading struct {
	st     *state
	stamp  int64
	res    laurel.Resolved
	now    int64
	period laurel.PeriodInfo
	v      laurel.Ranking
}

// maxAttempts bounds how often a read starts again because the board changed under it.
const maxAttempts = 16

// again waits before a read's next attempt: a change of a board's state reaches its shards one
// after the other, shard 0 last, and a read that found them apart finds them together once it
// is done. The waits double from 1 ms to 64 ms, about half a second in all.
func again(ctx context.Context, attempt int) error {
	if attempt < 2 {
		return nil
	}
	t := time.NewTimer(time.Millisecond << min(attempt-2, 6))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// read resolves q and runs fn on it, again from the start when the index says the board's
// state changed meanwhile (a period closed, a bucket left, a window was added): untilSettled.
// A board read before is planned from the state this node last found, while the index is
// asked for its state at the same time as fn's own reads (resolveAhead): one round trip to
// Redis rather than two, one after the other.
func (s *Store) read(ctx context.Context, q laurel.Query, fn func(rd *reading) error) error {
	return s.untilSettled(ctx, q.Board, func() error {
		rd, confirm, err := s.resolveAhead(ctx, q)
		if err == nil {
			err = fn(rd)
		}
		if confirm != nil {
			if cerr := confirm(); cerr != nil {
				return cerr // an answer planned from a state that was no longer the index's
			}
		}
		return err
	})
}

// untilSettled runs try until the index does not say that board's state changed under it
// (ErrIndexStale), maxAttempts times at most, pausing between tries. A board whose shards
// keep disagreeing with its state half as many times as that is caught up, which rebuilds
// what of its index missed a step.
func (s *Store) untilSettled(ctx context.Context, board string, try func() error) error {
	for attempt := range maxAttempts {
		err := try()
		if !errors.Is(err, shardindex.ErrStale) {
			return err
		}
		if attempt == maxAttempts/2 {
			if err := s.catchUp(ctx, board); err != nil {
				return err
			}
		}
		if err := again(ctx, attempt); err != nil {
			return err
		}
	}
	return laurel.Errorf(laurel.EUnavailable, "board %q kept changing while it was read; try again", board)
}

// boardState returns a board's state as the index has it, catching the board up first when
// its time has come or rebuilding its index when the index has none of it.
func (s *Store) boardState(ctx context.Context, id string) (*state, int64, int64, error) {
	if err := laurel.ValidateBoardID(id); err != nil {
		return nil, 0, 0, err
	}
	if err := s.repairIfMissed(ctx, id); err != nil {
		return nil, 0, 0, err
	}
	for range maxAttempts {
		is, ok, err := s.index.State(ctx, id)
		if err != nil {
			return nil, 0, 0, err
		}
		now := s.now()
		if !ok {
			var exists bool
			if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM laurel_boards WHERE id = $1)", id).Scan(&exists); err != nil {
				return nil, 0, 0, fmt.Errorf("postgres: %w", err)
			}
			if !exists {
				return nil, 0, 0, laurel.ErrNoBoard(id)
			}
			if err := s.catchUp(ctx, id); err != nil {
				return nil, 0, 0, err
			}
			continue
		}
		st, err := s.states.parse(id, is.State)
		if err != nil {
			return nil, 0, 0, err
		}
		if st.due(now) {
			if err := s.catchUp(ctx, id); err != nil {
				return nil, 0, 0, err
			}
			continue
		}
		s.seen.put(id, seenState{raw: is.State, st: st, stamp: is.Stamp})
		return st, is.Stamp, now, nil
	}
	return nil, 0, 0, laurel.Errorf(laurel.EUnavailable, "board %q kept changing while it was read; try again", id)
}

// resolve finds what q reads, from the board's state as the index has it now.
func (s *Store) resolve(ctx context.Context, q laurel.Query) (*reading, error) {
	if err := checkQuery(q); err != nil {
		return nil, err
	}
	st, stamp, now, err := s.boardState(ctx, q.Board)
	if err != nil {
		return nil, err
	}
	return s.plan(ctx, q, st, stamp, now)
}

func checkQuery(q laurel.Query) error {
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return err
	}
	if q.HasAt && q.Period != "" {
		return laurel.FieldErrorf(laurel.EInvalid, "period", "give either at or period, not both")
	}
	return nil
}

// resolveAhead finds what q reads from the state this node last found for the board, and
// asks the index for its state meanwhile; confirm, called once the reading was used, waits for
// that answer and returns shardindex.ErrStale unless the state is the one planned from, so
// that the read starts again (from the index's state, resolve). The stamp every read of the
// index checks, and the state compared byte for byte, make an answer exactly what resolve's
// would have been: planned from the index's state, read at its stamp. A board not read yet,
// one whose time has come or whose index missed a step, is resolved as before (confirm nil).
func (s *Store) resolveAhead(ctx context.Context, q laurel.Query) (rd *reading, confirm func() error, err error) {
	seen, ok := s.seen.get(q.Board)
	now := s.now()
	if !ok || s.missed.any.Load() || seen.st.due(now) {
		rd, err := s.resolve(ctx, q)
		return rd, nil, err
	}
	if err := checkQuery(q); err != nil {
		return nil, nil, err
	}
	type found struct {
		is  shardindex.State
		ok  bool
		err error
	}
	asked := make(chan found, 1)
	go func() {
		is, ok, err := s.index.State(ctx, q.Board)
		asked <- found{is, ok, err}
	}()
	confirm = func() error {
		f := <-asked
		if f.err != nil {
			return f.err
		}
		if !f.ok || f.is.Stamp != seen.stamp || !bytes.Equal(f.is.State, seen.raw) {
			s.seen.forget(q.Board)
			return shardindex.ErrStale
		}
		return nil
	}
	rd, err = s.plan(ctx, q, seen.st, seen.stamp, now)
	if err != nil {
		if cerr := confirm(); cerr != nil {
			return nil, nil, cerr
		}
		return nil, nil, err
	}
	return rd, confirm, nil
}

// plan finds what q reads in the board's state st, stamped stamp, at now.
func (s *Store) plan(ctx context.Context, q laurel.Query, st *state, stamp, now int64) (*reading, error) {
	res, err := st.cfg.Resolve(q, now)
	if err != nil {
		return nil, err
	}
	rd := &reading{st: st, stamp: stamp, res: res, now: now, period: res.Period}
	ws := st.window(res.Name)
	plan, err := laurel.Plan(&st.cfg, res, ws.Marks, ws.Open, ws.Closed, now)
	if err != nil {
		return nil, err
	}
	rd.period = plan.Period
	order := st.cfg.Ordering()
	switch plan.Source {
	case laurel.FromOpen:
		set := shardindex.Set{Window: ws.Name}
		if ws.w.IsCalendar() {
			set.Start = res.Period.Start
		}
		rd.v = s.openRanking(st, set, stamp)
	case laurel.FromBuckets:
		rd.v, err = s.rollingAt(ctx, st, ws, res.Period.Start, res.Period.End)
	case laurel.FromClosed:
		rd.v, err = s.frozen(ctx, q.Board, ws.Name, order, ws.Closed[plan.Closed])
	case laurel.FromNothing:
		rd.v = laurel.NewSortedRanking(order, nil)
	}
	if err != nil {
		return nil, err
	}
	return rd, nil
}

// openRanking is the ranking of an open span's set.
func (s *Store) openRanking(st *state, set shardindex.Set, stamp int64) laurel.Ranking {
	return s.index.Ranking(st.cfg.ID, st.shards(), st.cfg.Ordering(), set, stamp)
}

// rollingAt computes a rolling window's ranking over [start, end) from its buckets: a read
// at another instant than the window's current span.
func (s *Store) rollingAt(ctx context.Context, st *state, ws *windowState, start, end int64) (laurel.Ranking, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.member, a.score, coalesce(a.sub, 0), a.at FROM laurel_aggs a
		WHERE a.board = $1 AND a.win = $2 AND a.span >= $3 AND a.span < $4
		AND NOT EXISTS (SELECT 1 FROM laurel_hidden h WHERE h.member = a.member)
		ORDER BY a.member`, st.cfg.ID, ws.Name, start, end)
	if err != nil {
		return nil, fmt.Errorf("postgres: read buckets: %w", err)
	}
	defer rows.Close()
	m, o := st.cfg.Mode, st.cfg.Ordering()
	var entries []laurel.Entry
	var cur laurel.Agg
	var member string
	emit := func() {
		if cur.Present() {
			entries = append(entries, laurel.Entry{Member: member, Score: cur.Score, Sub: cur.Sub, ReachedAt: cur.At})
		}
	}
	for rows.Next() {
		var mb string
		a := laurel.Agg{Count: 1}
		if err := rows.Scan(&mb, &a.Score, &a.Sub, &a.At); err != nil {
			return nil, err
		}
		if mb != member {
			emit()
			member, cur = mb, laurel.Agg{}
		}
		if c, err := laurel.Merge(m, o, cur, a); err == nil {
			cur = c
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	emit()
	return laurel.NewSortedRanking(o, entries), nil
}

// fill adds profiles (name, and metadata when asked) and tags to the entries of a read of board
// b (closed: of a closed period), in one round trip.
func (s *Store) fill(ctx context.Context, b *laurel.Board, closed bool, entries []laurel.Entry, metadata bool) error {
	if len(entries) == 0 {
		return nil
	}
	members := make([]string, len(entries))
	for i := range entries {
		members[i] = entries[i].Member
	}
	var batch pgx.Batch
	batch.Queue("SELECT member, name, metadata FROM laurel_profiles WHERE member = ANY($1)", members)
	queueTags(&batch, b, closed, entries)
	br := s.pool.SendBatch(ctx, &batch)
	defer br.Close()
	if err := fillProfiles(br, entries, metadata); err != nil {
		return err
	}
	return readTags(br, b, entries)
}

// fillProfiles reads the profiles fill asked for and adds them to entries.
func fillProfiles(br pgx.BatchResults, entries []laurel.Entry, metadata bool) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("postgres: read profiles: %w", err)
	}
	defer rows.Close()
	type profile struct {
		name     string
		metadata []byte
	}
	profiles := make(map[string]profile, len(entries))
	for rows.Next() {
		var m string
		var p profile
		if err := rows.Scan(&m, &p.name, &p.metadata); err != nil {
			return err
		}
		profiles[m] = p
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range entries {
		if p, ok := profiles[entries[i].Member]; ok {
			entries[i].Name = p.name
			if metadata && p.metadata != nil {
				entries[i].Metadata = json.RawMessage(p.metadata)
			}
		}
	}
	return nil
}

// Read resolves q and calls fn with its reading, again from the start when the index says
// the board's state changed meanwhile.
func (s *Store) Read(ctx context.Context, q laurel.Query, fn func(laurel.Reading) error) (err error) {
	defer func() { err = s.unavailable("read", err) }()
	return s.read(ctx, q, func(rd *reading) error {
		return fn(laurel.Reading{Board: rd.st.cfg.ID, Window: rd.res.Name, Order: rd.st.cfg.Ordering(), At: rd.res.At,
			Period: rd.period, Ranking: rd.v,
			Fill: func(entries []laurel.Entry, metadata bool) error {
				return s.fill(ctx, &rd.st.cfg, rd.period.Closed, entries, metadata)
			}})
	})
}

// Board returns a board's configuration and, per window, its current period and total.
func (s *Store) Board(ctx context.Context, id string) (info laurel.BoardInfo, err error) {
	defer func() { err = s.unavailable("read", err) }()
	err = s.untilSettled(ctx, id, func() error {
		st, stamp, now, err := s.boardState(ctx, id)
		if err != nil {
			return err
		}
		info = st.info(now)
		var sets []shardindex.Set
		var names []string
		for i := range st.Windows {
			ws := &st.Windows[i]
			if set, ok := st.currentSet(ws, now); ok {
				sets, names = append(sets, set), append(names, ws.Name)
			}
		}
		totals, err := s.index.Totals(ctx, st.cfg.ID, st.shards(), sets, stamp)
		if err != nil {
			return err
		}
		for i, name := range names {
			p := info.Current[name]
			p.Total = totals[i]
			info.Current[name] = p
		}
		return nil
	})
	if err != nil {
		return laurel.BoardInfo{}, err
	}
	return info, nil
}

// info is what Board answers of a board in state st at now, its current periods' totals
// left at zero.
func (st *state) info(now int64) laurel.BoardInfo {
	info := laurel.BoardInfo{Board: st.cfg, Current: make(map[string]laurel.PeriodInfo, len(st.Windows))}
	info.Board.Windows = slices.Clone(st.cfg.Windows)
	for i := range st.Windows {
		ws := &st.Windows[i]
		info.Current[ws.Name] = st.cfg.CurrentPeriod(ws.w, now)
	}
	return info
}

// Boards lists every board, sorted by id.
func (s *Store) Boards(ctx context.Context) (_ []laurel.BoardInfo, err error) {
	defer func() { err = s.unavailable("read", err) }()
	ids, err := s.boardIDs(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	return laurel.BoardsOf(ctx, ids, s.Board)
}

// Periods lists a calendar window's kept periods, newest first: the current one, the open
// ones that still take late events, and the closed ones.
func (s *Store) Periods(ctx context.Context, boardID, windowName string) (_ []laurel.PeriodInfo, err error) {
	defer func() { err = s.unavailable("read", err) }()
	var out []laurel.PeriodInfo
	err = s.read(ctx, laurel.Query{Board: boardID, Window: windowName}, func(rd *reading) error {
		ws := rd.st.window(rd.res.Name)
		cur := rd.period
		var err error
		if cur.Total, err = rd.v.Total(ctx); err != nil {
			return err
		}
		var totals []int
		excluded := map[int64]int{}
		if ws.w.IsCalendar() {
			sets := make([]shardindex.Set, len(ws.Open))
			for i, sp := range ws.Open {
				sets[i] = shardindex.Set{Window: ws.Name, Start: sp.Start}
			}
			if totals, err = s.index.Totals(ctx, rd.st.cfg.ID, rd.st.shards(), sets, rd.stamp); err != nil {
				return err
			}
			if excluded, err = s.excludedCounts(ctx, boardID, ws.Name); err != nil {
				return err
			}
		}
		out, err = laurel.PeriodList(&rd.st.cfg, ws.w, cur, ws.Open, ws.Closed,
			func(i int) int { return totals[i] },
			func(i int) int { return ws.Closed[i].Total - excluded[ws.Closed[i].Start] })
		return err
	})
	return out, err
}
