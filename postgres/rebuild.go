package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// The index of a board made what the store holds: where it is (indexView) against the store's
// versions, a board caught up (catchUp) or its index rebuilt, deleted, or resharded. A step's
// own way to the index: indexstep.go.

// rebuild makes the index of a board what the store holds, under the board's lock (held by
// conn's session): the shards only (nil: all of them; their locks are held). Until shard 0
// records the state at the end, reads find none and wait for the lock. A rebuild that finds
// the index changed under it (Redis flushed or restarted) starts again, at most
// rebuildAttempts times in all.
func (s *Store) rebuild(ctx context.Context, conn *pgxpool.Conn, id string, only []int) error {
	for attempt := 1; ; attempt++ {
		err := s.rebuildOnce(ctx, conn, id, only)
		if !errors.Is(err, shardindex.ErrStale) || attempt == rebuildAttempts {
			return err
		}
		s.log.Warn("the index changed during a rebuild; starting it again", "board", id, "attempt", attempt)
	}
}

const rebuildAttempts = 3

// rebuildChunk is how many members one step of a rebuild puts in a shard of the index.
const rebuildChunk = 10_000

// rebuildOnce clears the shards and fills them in chunks. Each shard's first chunk sets a
// fence, a negative version of this rebuild's own that no step takes, and every later chunk
// names it: when the index loses the shard meanwhile (a flush) or another rebuild replaces
// the fence, the next chunk is refused with ErrIndexStale, so that a partial index is never
// marked current. Each shard's last chunk records its version and the board's stamp; shard 0's,
// the very last, the board's state.
func (s *Store) rebuildOnce(ctx context.Context, conn *pgxpool.Conn, id string, only []int) error {
	var raw []byte
	var stamp int64
	err := conn.QueryRow(ctx, "SELECT state, version FROM laurel_boards WHERE id = $1", id).Scan(&raw, &stamp)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.index.DeleteBoard(ctx, id)
	}
	if err != nil {
		return err
	}
	st, err := decodeState(id, raw)
	if err != nil {
		return err
	}
	n := st.shards()
	rows, err := conn.Query(ctx, "SELECT shard, version FROM laurel_shards WHERE board = $1 ORDER BY shard", id)
	if err != nil {
		return err
	}
	versions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int64, error) {
		var i int32
		var v int64
		err := r.Scan(&i, &v)
		return v, err
	})
	if err != nil {
		return err
	}
	if len(versions) != n {
		return fmt.Errorf("postgres: board %s has %d shard rows, its state says %d shards", id, len(versions), n)
	}
	if only == nil {
		for i := range n {
			only = append(only, i)
		}
		err = s.index.DeleteBoard(ctx, id)
	} else {
		err = eachShard(only, func(i int) error { return s.index.Delete(ctx, id, st.shard(i)) })
	}
	if err != nil {
		return err
	}
	order := st.cfg.Ordering()
	type building struct {
		fence, after int64
		changes      []shardindex.Change
	}
	shards := make(map[int]*building, len(only))
	for _, i := range only {
		shards[i] = &building{fence: -1 - rand.Int64N(math.MaxInt64-1)}
	}
	put := func(i int, final bool) error {
		sh := shards[i]
		if len(sh.changes) < rebuildChunk && !final {
			return nil
		}
		u := shardindex.Update{After: sh.after, Version: sh.fence, Changes: sh.changes}
		if final {
			u.Version, u.Stamp = versions[i], stamp
			if i == 0 {
				u.State = raw
			}
		}
		_, err := shardindex.ApplyOne(ctx, s.index, id, st.shard(i), order, u, shardindex.Asks{})
		sh.changes, sh.after = sh.changes[:0], sh.fence
		return err
	}
	// Every ranked aggregate is an element of its member's row: the rows are read once, each
	// element given to its set, those of periods closed since the member's last write left.
	err = eachElem(ctx, conn, st, "", true, func(k aggKey, v aggVal) error {
		c := shardindex.Change{Member: k.member, Score: v.score, Sub: v.sub, At: v.at}
		c.Set, _ = st.window(k.win).indexSet(k.span)
		i := shardindex.ShardOf(c.Member, n)
		sh := shards[i]
		if sh == nil {
			return nil
		}
		sh.changes = append(sh.changes, c)
		return put(i, false)
	})
	if err != nil {
		return err
	}
	var last []int
	for _, i := range only {
		if i != 0 {
			last = append(last, i)
		}
	}
	if err := eachShard(last, func(i int) error { return put(i, true) }); err != nil {
		return err
	}
	if slices.Contains(only, 0) {
		return put(0, true)
	}
	return nil
}

// indexView is where the index of a board is: whether shard 0 holds the state, its stamp, and
// each shard's version and stamp.
type indexView struct {
	ok     bool
	stamp  int64
	shards []shardindex.Version
}

func (s *Store) indexView(ctx context.Context, id string, n int) (indexView, error) {
	is, ok, err := s.index.State(ctx, id)
	if err != nil || !ok {
		return indexView{}, err
	}
	vs, err := s.index.Versions(ctx, id, n)
	return indexView{ok: true, stamp: is.Stamp, shards: vs}, err
}

// at reports whether the index is exactly where the store says: its state stamped stamp,
// every shard at its version and following that state.
func (v indexView) at(stamp int64, versions []int64) bool {
	if !v.ok || v.stamp != stamp || len(v.shards) != len(versions) {
		return false
	}
	for i, sh := range v.shards {
		if sh.Version != versions[i] || sh.Stamp != stamp {
			return false
		}
	}
	return true
}

// below reports whether some part of the index is behind the store's versions: a step the
// store committed that the index has not taken, yet or ever. (Ahead is a step taken since
// the store's versions were read.)
func (v indexView) below(stamp int64, versions []int64) bool {
	if !v.ok || v.stamp < stamp || len(versions) != len(v.shards) {
		return true // of another shard count: not known to be at those versions
	}
	for i, sh := range v.shards {
		if sh.Version < versions[i] || sh.Stamp < stamp {
			return true
		}
	}
	return false
}

// settled returns the view of a board's index once no step the store committed is on its
// way to it: the steps of early writes, whose locks went with their commits, may still be
// reaching the index when the whole board is locked. It waits up to within for the index
// to reach the store's stamp and versions, and returns the view it last found.
func (s *Store) settled(ctx context.Context, id string, stamp int64, versions []int64, within time.Duration) (indexView, error) {
	wait := newPacing(within)
	for {
		view, err := s.indexView(ctx, id, len(versions))
		if err != nil || !view.ok || !view.below(stamp, versions) {
			return view, err
		}
		if more, err := wait.pause(ctx); err != nil || !more {
			return view, err
		}
	}
}

// catchUp brings a board to now in a step of its own, the whole board locked: periods to
// close, closed periods to drop, rolling buckets to leave; and rebuilds its index if it
// missed a step, once the steps on their way to it have had indexWait to arrive.
func (s *Store) catchUp(ctx context.Context, id string) error {
	return s.catchUpWithin(ctx, id, indexWait)
}

// catchUpWithin is catchUp giving the steps on their way wait to arrive (0: none is).
func (s *Store) catchUpWithin(ctx context.Context, id string, wait time.Duration) error {
	return s.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, w *step) error {
		b, err := w.board(id)
		if err != nil {
			return err
		}
		versions := make([]int64, b.st.shards())
		for i, sh := range b.shards {
			versions[i] = sh.version
		}
		view, err := s.settled(ctx, id, b.version, versions, wait)
		if err != nil {
			return err
		}
		if !view.at(b.version, versions) {
			s.log.Warn("the index is not at the store's version; rebuilding it", "board", id, "store", b.version)
			if err := s.rebuild(ctx, w.conn, id, nil); err != nil {
				return err
			}
		}
		return w.advance(ctx, b)
	})
}

// Indexed reports whether the index holds a board's state and each of its shards: one
// rebuilt, then lost in part or whole to a flush or a restart of Redis, does not. (Every
// shard of a board the index holds is at a version above zero: the board's making is a step
// of each.) A board the store no longer has counts as indexed.
func (s *Store) Indexed(ctx context.Context, id string) (bool, error) {
	counts, err := s.counts(ctx, []string{id})
	if err != nil || counts[id] == 0 {
		return true, err
	}
	view, err := s.indexView(ctx, id, counts[id])
	if err != nil || !view.ok {
		return false, err
	}
	for _, sh := range view.shards {
		if sh.Version == 0 {
			return false, nil
		}
	}
	return true, nil
}

// Rebuild makes a board's index what the store holds, whatever the index holds now: after
// the index was lost, or to be sure. Reads of the board wait for it.
func (s *Store) Rebuild(ctx context.Context, id string) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	return s.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, w *step) error {
		if _, err := w.board(id); err != nil {
			return err
		}
		return s.rebuild(ctx, w.conn, id, nil)
	})
}

// MaxShards bounds a board's shard count.
const MaxShards = 256

// Reshard splits a board's members into n shards, and rebuilds its index so. Writes and reads
// of the board wait for it.
func (s *Store) Reshard(ctx context.Context, id string, n int) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	if n < 1 || n > MaxShards {
		return laurel.FieldErrorf(laurel.EInvalid, "shards", "must be 1 to %d", MaxShards)
	}
	return s.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, w *step) error {
		b, err := w.board(id)
		if err != nil {
			return err
		}
		if b.st.shards() == n {
			return nil
		}
		// The index goes first: until the rebuild after the commit records the state again,
		// reads find none and wait for the lock.
		if err := s.index.DeleteBoard(ctx, id); err != nil {
			return err
		}
		if err := w.tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM laurel_events WHERE board = $1", id).Scan(&b.seqFloor); err != nil {
			return fmt.Errorf("postgres: reshard: %w", err)
		}
		// Versions go on from the highest, so that no read stamped before can take the
		// new shards for the old.
		var top int64
		for _, sh := range b.shards {
			top = max(top, sh.version)
		}
		b.st.Shards = n
		b.makeShards()
		for _, sh := range b.shards {
			sh.version = top
		}
		b.stateChanged, b.rebuild = true, true
		return nil
	})
}
