package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// What a committed step does to the index, and how the index of a board is rebuilt from the
// store when it is not where the store says it is.

// changes lists what the step changed in the sets of shard i of a board: every ranked
// aggregate of its members written. A hidden member is in no set, so its aggregates are
// removals, whatever they are (it may have been hidden in this very step, after its
// aggregates changed).
func (s *step) changes(b *boardStep, i int) []shardindex.Change {
	var out []shardindex.Change
	n := b.st.shards()
	for k := range b.dirty {
		ws := b.st.window(k.win)
		if ws == nil || shardindex.ShardOf(k.member, n) != i {
			continue
		}
		set, ok := ws.indexSet(k.span)
		if !ok {
			continue
		}
		v := b.aggs[k]
		out = append(out, shardindex.Change{Set: set, Member: k.member, Score: v.score, At: v.at, Remove: !v.present || s.hidden[k.member]})
	}
	for _, c := range b.extra {
		if shardindex.ShardOf(c.Member, n) == i {
			out = append(out, c)
		}
	}
	return out
}

// expected returns the entry that read k of the board's step expects, as the step left it,
// and whether there is one.
func (b *boardStep) expected(k int) (shardindex.Key, bool) {
	x := b.expect[k]
	return x, x.Member != ""
}

// countsIn returns what shard i counts of the reads of the other shards (by shard, as
// readsByShard gives them): the entries that entry picks, and the reads they are for.
func countsIn(reads map[int][]int, i int, entry func(k int) (shardindex.Key, bool)) (keys []shardindex.Key, at []int) {
	n := 0
	for j, ks := range reads {
		if j != i {
			n += len(ks)
		}
	}
	keys, at = make([]shardindex.Key, 0, n), make([]int, 0, n)
	for j, ks := range reads {
		if j == i {
			continue
		}
		for _, k := range ks {
			if x, ok := entry(k); ok {
				keys, at = append(keys, x), append(at, k)
			}
		}
	}
	return keys, at
}

// countBefore counts in shard i the entries before keys, those of the reads at (countsIn),
// and tallies them.
func (s *step) countBefore(ctx context.Context, b *boardStep, i int, keys []shardindex.Key, at []int, mu *sync.Mutex) error {
	if len(keys) == 0 {
		return nil
	}
	counts, err := s.e.index.Before(ctx, b.id, b.st.shard(i), b.st.cfg.Order, b.version, keys)
	if err != nil {
		return err
	}
	b.tally(mu, i, at, counts)
	return nil
}

// tally adds to each read at at what shard i counts before its entry, counts[j] for at[j],
// and notes that i has counted it; under mu, as shards answer at once.
func (b *boardStep) tally(mu *sync.Mutex, i int, at, counts []int) {
	mu.Lock()
	defer mu.Unlock()
	n := b.st.shards()
	for j, k := range at {
		b.before[k] += counts[j]
		b.counted[k*n+i] = true
	}
}

// readsByShard returns, for each of n shards, the indexes in b.reads of its members' reads.
func (b *boardStep) readsByShard(n int) map[int][]int {
	reads := make(map[int][]int)
	for k, r := range b.reads {
		i := shardindex.ShardOf(r.Member, n)
		reads[i] = append(reads[i], k)
	}
	return reads
}

// applyIndex takes the board's step in the index, a step per shard that changed, and reads
// back the standings the step answers with; or rebuilds what of the board's index is not
// where the store says it is.
func (s *step) applyIndex(ctx context.Context, b *boardStep) error {
	idx := s.e.index
	if b.deleted {
		return s.e.deleteIndex(ctx, b.id, b.st.shards())
	}
	if b.rebuild {
		if s.early { // its locks went with a connection lost at its commit
			return s.e.catchUp(ctx, b.id)
		}
		return s.e.rebuild(ctx, s.conn, b.id, nil)
	}
	if b.st == nil {
		return nil
	}
	n := b.st.shards()
	reads := b.readsByShard(n)
	b.read = make([]shardindex.Entry, len(b.reads))
	// One shard's step tells subscribers of the write: shard 0's when the state changes
	// (it goes last), else the first that takes one.
	teller := 0
	if !b.stateChanged {
		teller = -1
		for i := range n {
			if sh := b.shards[i]; sh != nil && (sh.ranked || len(reads[i]) > 0) {
				teller = i
				break
			}
		}
	}
	// send gives shard i its update, with the shard's reads and the other shards' entries to
	// count, and takes the ranks and counts read back.
	b.expect, b.before, b.counted = make([]shardindex.Key, len(b.reads)), make([]int, len(b.reads)), make([]bool, len(b.reads)*n)
	for k, r := range b.reads {
		if v := b.aggs[b.readKeys[k]]; v.present {
			b.expect[k] = shardindex.Key{Set: r.Set, Score: v.score, At: v.at, Member: r.Member}
		}
	}
	var mu sync.Mutex
	send := func(i int, u shardindex.Update) error {
		for _, k := range reads[i] {
			u.Read = append(u.Read, b.reads[k])
		}
		var counts []int
		u.Count, counts = countsIn(reads, i, b.expected)
		got, err := idx.Apply(ctx, b.id, b.st.shard(i), b.st.cfg.Order, u)
		if err != nil {
			return err
		}
		for j, k := range reads[i] {
			b.read[k] = got.Read[j]
		}
		b.tally(&mu, i, counts, got.Before)
		return nil
	}
	// A shard whose step the index still refuses once the steps before it have had their
	// time (follow) missed one, and is rebuilt from the store, only that shard: the others,
	// stepped at once, each find their own state. A step that holds its locks rebuilds on its
	// own connection, so one shard at a time, after the steps; an early one, whose locks went
	// with its commit, catches the board up as a step of its own.
	var stale []int
	mend := func() error {
		if len(stale) == 0 {
			return nil
		}
		slices.Sort(stale)
		if s.early {
			s.e.log.Warn("the index missed a step; catching the board up", "board", b.id, "shards", stale)
			if err := s.e.catchUp(ctx, b.id); err != nil {
				return fmt.Errorf("postgres: index board %s: %w", b.id, err)
			}
		}
		for _, i := range stale {
			v := b.shards[i].version
			var err error
			if !s.early {
				s.e.log.Warn("the index missed a step; rebuilding it", "board", b.id, "shard", i, "version", v)
				err = s.e.rebuild(ctx, s.conn, b.id, []int{i})
			}
			if err == nil && len(reads[i]) > 0 {
				err = s.follow(ctx, b, i, shardindex.Update{After: v, Version: v}, true, send)
			}
			if err != nil {
				return fmt.Errorf("postgres: index board %s, shard %d: %w", b.id, i, err)
			}
		}
		stale = nil
		return nil
	}
	// apply takes shard i's step, or, in a shard the step neither writes nor reads, counts
	// the entries the step left in the others.
	apply := func(i int) error {
		sh := b.shards[i]
		if sh == nil || !sh.ranked && len(reads[i]) == 0 {
			if !b.stateChanged {
				// Counted here, beside the other shards' steps, rather than after them
				// (standings): the shard is the same either way. What this fails to
				// count, standings counts.
				keys, at := countsIn(reads, i, b.expected)
				_ = s.countBefore(ctx, b, i, keys, at, &mu)
			}
			return nil
		}
		u := shardindex.Update{After: sh.version, Version: sh.version, Quiet: i != teller}
		if sh.ranked {
			u.After--
			u.Changes = s.changes(b, i)
			if b.stateChanged {
				u.Drops, u.Stamp = b.drops, b.version
				if i == 0 {
					u.State = b.st.encode()
				}
			}
		}
		err := s.follow(ctx, b, i, u, len(reads[i]) > 0, send)
		if errors.Is(err, shardindex.ErrStale) {
			mu.Lock()
			stale = append(stale, i)
			mu.Unlock()
			return nil
		}
		if err != nil {
			return fmt.Errorf("postgres: index board %s, shard %d: %w", b.id, i, err)
		}
		return nil
	}
	// A change of state reaches shard 0, which records it, last: a read of the new state
	// then finds every shard at its stamp.
	var others []int
	for i := range n {
		if i != 0 || !b.stateChanged {
			others = append(others, i)
		}
	}
	if err := eachShard(others, apply); err != nil {
		return err
	}
	if err := mend(); err != nil {
		return err
	}
	if b.stateChanged {
		if err := apply(0); err != nil {
			return err
		}
		return mend()
	}
	return nil
}

// indexWait is how long a step waits for the steps committed before it to reach a shard of
// the index before it takes the shard for one lost (its writer died between its commit and
// the index, or the index lost the shard) and rebuilds it.
const indexWait = time.Second

// follow sends shard i of a board its step u. A shard not at u.After is most often behind by
// steps that other writes committed first and are still taking to the index (an early step's
// locks go with its commit): follow waits until the shard is at u.After and sends u again,
// or until a later step or a rebuild has taken the shard past u.Version — the shard then
// holds u's changes, and follow only reads, when it has reads. It returns ErrIndexStale when
// the shard is still behind after indexWait.
func (s *step) follow(ctx context.Context, b *boardStep, i int, u shardindex.Update, reads bool, send func(int, shardindex.Update) error) error {
	wait := newPacing(indexWait)
	for {
		err := send(i, u)
		if !errors.Is(err, shardindex.ErrStale) {
			return err
		}
		// Until the shard is where the step can follow, only its version is read: a step
		// waits for another that its writer has not sent yet (a node descheduled or
		// throttled between its commit and the index), and should cost little meanwhile.
		for {
			vs, err := s.e.index.Versions(ctx, b.id, b.st.shards())
			if err != nil {
				return err
			}
			v := vs[i].Version
			if v >= u.Version && v > 0 {
				if !reads {
					return nil
				}
				u = shardindex.Update{After: v, Version: v, Quiet: true}
				break
			}
			if v == u.After {
				break
			}
			if more, err := wait.pause(ctx); err != nil || !more {
				return cmp.Or(err, shardindex.ErrStale)
			}
		}
	}
}

// pacing paces a wait for the index to take the steps on their way to it: pauses from
// 100 µs, each twice the last up to 1 ms, for indexWait in all. Steps wait in chains (each for
// the one before it on a shard), so a pause longer than the wait it covers delays every step
// behind: with pauses of up to 20 ms, four nodes capped at 0.2 CPU waited 150 ms a step on
// average and wrote 0.6 of what they wrote with pauses of up to 1 ms.
type pacing struct {
	deadline time.Time
	next     time.Duration
}

func newPacing(within time.Duration) *pacing {
	return &pacing{time.Now().Add(within), 100 * time.Microsecond}
}

// pause waits once, and reports false, without waiting, once indexWait has passed.
func (p *pacing) pause(ctx context.Context) (bool, error) {
	if time.Now().After(p.deadline) {
		return false, nil
	}
	t := time.NewTimer(p.next)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-t.C:
	}
	p.next = min(2*p.next, time.Millisecond)
	return true, nil
}

// standings turns the ranks the shards read back, each within its shard, into ranks in the
// whole board: each other shard counts the entries that rank before the member's. applyIndex
// counted them for the entries the step left, in every shard (beside its steps); standings
// counts the rest (entries the step did not know or that changed since, and what a count
// beside the steps failed to), once the step's locks are gone, so that the shards' next
// writes need not wait for it: the ranks may then count the writes of other shards that came
// meanwhile, as a read does.
func (s *step) standings(ctx context.Context, b *boardStep) error {
	if b.st == nil || b.st.shards() == 1 || len(b.read) == 0 {
		return nil
	}
	n := b.st.shards()
	reads := b.readsByShard(n)
	for k, en := range b.read {
		// Counted for an entry other than the one read back: count again.
		if x := b.expect[k]; en.Rank > 0 && (en.Score != x.Score || en.At != x.At) {
			b.before[k] = 0
			clear(b.counted[k*n : (k+1)*n])
		}
	}
	shards := make([]int, n)
	for i := range shards {
		shards[i] = i
	}
	// Each shard's entries to count are picked before any shard answers, which notes what it
	// counted.
	keys, at := make([][]shardindex.Key, n), make([][]int, n)
	for i := range n {
		keys[i], at[i] = countsIn(reads, i, func(k int) (shardindex.Key, bool) {
			en := b.read[k]
			return shardindex.Key{Set: b.reads[k].Set, Score: en.Score, At: en.At, Member: b.reads[k].Member}, en.Rank > 0 && !b.counted[k*n+i]
		})
	}
	var mu sync.Mutex
	err := eachShard(shards, func(i int) error { return s.countBefore(ctx, b, i, keys[i], at[i], &mu) })
	if err != nil {
		return fmt.Errorf("postgres: index board %s: counting ranks: %w", b.id, err)
	}
	for k := range b.read {
		if b.read[k].Rank > 0 {
			b.read[k].Rank += b.before[k]
		}
	}
	return nil
}

// eachShard runs fn for each of shards at once and returns the first error.
func eachShard(shards []int, fn func(i int) error) error {
	if len(shards) == 1 {
		return fn(shards[0])
	}
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for k, i := range shards {
		wg.Go(func() { errs[k] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteIndex removes what the index holds of a board of n shards.
func (e *Store) deleteIndex(ctx context.Context, id string, n int) error {
	shards := make([]int, n)
	for i := range shards {
		shards[i] = i
	}
	return eachShard(shards, func(i int) error {
		return e.index.Delete(ctx, id, shardindex.Shard{Number: i, Count: n})
	})
}

// rebuild makes the index of a board what the store holds, under the board's lock (held by
// conn's session): the shards only (nil: all of them; their locks are held). Until shard 0
// records the state at the end, reads find none and wait for the lock. A rebuild that finds
// the index changed under it (Redis flushed or restarted) starts again, at most
// rebuildAttempts times in all.
func (e *Store) rebuild(ctx context.Context, conn *pgxpool.Conn, id string, only []int) error {
	for attempt := 1; ; attempt++ {
		err := e.rebuildOnce(ctx, conn, id, only)
		if !errors.Is(err, shardindex.ErrStale) || attempt == rebuildAttempts {
			return err
		}
		e.log.Warn("the index changed during a rebuild; starting it again", "board", id, "attempt", attempt)
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
func (e *Store) rebuildOnce(ctx context.Context, conn *pgxpool.Conn, id string, only []int) error {
	var raw []byte
	var stamp int64
	err := conn.QueryRow(ctx, "SELECT state, version FROM laurel_boards WHERE id = $1", id).Scan(&raw, &stamp)
	if errors.Is(err, pgx.ErrNoRows) {
		// Whatever shard count the index had, shard 0 holds the state reads look for.
		return e.index.Delete(ctx, id, shardindex.Shard{Number: 0, Count: 1})
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
	}
	if err := eachShard(only, func(i int) error { return e.index.Delete(ctx, id, st.shard(i)) }); err != nil {
		return err
	}
	order := st.cfg.Order
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
		_, err := e.index.Apply(ctx, id, st.shard(i), order, u)
		sh.changes, sh.after = sh.changes[:0], sh.fence
		return err
	}
	for w := range st.Windows {
		ws := &st.Windows[w]
		for _, sp := range ws.rankedSpans() {
			set, _ := ws.indexSet(sp)
			rows, err := conn.Query(ctx, `SELECT a.member, a.score, a.at FROM laurel_aggs a
				WHERE a.board = $1 AND a.win = $2 AND a.span = $3
				AND NOT EXISTS (SELECT 1 FROM laurel_hidden h WHERE h.member = a.member)`, id, ws.Name, sp)
			if err != nil {
				return err
			}
			for rows.Next() {
				c := shardindex.Change{Set: set}
				if err := rows.Scan(&c.Member, &c.Score, &c.At); err != nil {
					rows.Close()
					return err
				}
				i := shardindex.ShardOf(c.Member, n)
				sh := shards[i]
				if sh == nil {
					continue
				}
				sh.changes = append(sh.changes, c)
				if err := put(i, false); err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
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

func (e *Store) indexView(ctx context.Context, id string, n int) (indexView, error) {
	is, ok, err := e.index.State(ctx, id)
	if err != nil || !ok {
		return indexView{}, err
	}
	vs, err := e.index.Versions(ctx, id, n)
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
func (e *Store) settled(ctx context.Context, id string, stamp int64, versions []int64, within time.Duration) (indexView, error) {
	wait := newPacing(within)
	for {
		view, err := e.indexView(ctx, id, len(versions))
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
func (e *Store) catchUp(ctx context.Context, id string) error {
	return e.catchUpWithin(ctx, id, indexWait)
}

// catchUpWithin is catchUp giving the steps on their way wait to arrive (0: none is).
func (e *Store) catchUpWithin(ctx context.Context, id string, wait time.Duration) error {
	return e.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, s *step) error {
		b, err := s.board(id)
		if err != nil {
			return err
		}
		versions := make([]int64, b.st.shards())
		for i, sh := range b.shards {
			versions[i] = sh.version
		}
		view, err := e.settled(ctx, id, b.version, versions, wait)
		if err != nil {
			return err
		}
		if !view.at(b.version, versions) {
			e.log.Warn("the index is not at the store's version; rebuilding it", "board", id, "store", b.version)
			if err := e.rebuild(ctx, s.conn, id, nil); err != nil {
				return err
			}
		}
		return s.advance(ctx, b)
	})
}

// Indexed reports whether the index holds a board's state and each of its shards: one
// rebuilt, then lost in part or whole to a flush or a restart of Redis, does not. (Every
// shard of a board the index holds is at a version above zero: the board's making is a step
// of each.) A board the store no longer has counts as indexed.
func (e *Store) Indexed(ctx context.Context, id string) (bool, error) {
	counts, err := e.counts(ctx, []string{id})
	if err != nil || counts[id] == 0 {
		return true, err
	}
	view, err := e.indexView(ctx, id, counts[id])
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
func (e *Store) Rebuild(ctx context.Context, id string) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	return e.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, s *step) error {
		if _, err := s.board(id); err != nil {
			return err
		}
		return e.rebuild(ctx, s.conn, id, nil)
	})
}

// MaxShards bounds a board's shard count.
const MaxShards = 256

// Reshard splits a board's members into n shards, and rebuilds its index so. Writes and reads
// of the board wait for it.
func (e *Store) Reshard(ctx context.Context, id string, n int) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	if n < 1 || n > MaxShards {
		return laurel.FieldErrorf(laurel.EInvalid, "shards", "must be 1 to %d", MaxShards)
	}
	return e.write(ctx, []target{wholeBoard(id)}, func(ctx context.Context, s *step) error {
		b, err := s.board(id)
		if err != nil {
			return err
		}
		if b.st.shards() == n {
			return nil
		}
		// The index goes first: until the rebuild after the commit records the state again,
		// reads find none and wait for the lock.
		if err := e.deleteIndex(ctx, id, b.st.shards()); err != nil {
			return err
		}
		if err := s.tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM laurel_events WHERE board = $1", id).Scan(&b.seqFloor); err != nil {
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
