package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/laurel/laurel/shardindex"
)

// A committed step taken to the index: the changes of each shard it holds, in the order of
// the shards' versions (follow), and the standings it answers with, ranked across shards.
// How the index of a board is made what the store holds when it is not: rebuild.go.

// changes lists what the step changed in the sets of each shard of a board (by shard
// number): every ranked aggregate of its members written. A hidden member is in no set, so
// its aggregates are removals, whatever they are (it may have been hidden in this very step,
// after its aggregates changed).
func (s *step) changes(b *boardStep) [][]shardindex.Change {
	n := b.st.shards()
	out := make([][]shardindex.Change, n)
	for k := range b.dirty {
		ws := b.st.window(k.win)
		if ws == nil {
			continue
		}
		set, ok := ws.indexSet(k.span)
		if !ok {
			continue
		}
		v := b.aggs[k]
		i := shardindex.ShardOf(k.member, n)
		out[i] = append(out[i], shardindex.Change{Set: set, Member: k.member, Score: v.score, Sub: v.sub, At: v.at, Remove: !v.present || s.hidden[k.member]})
	}
	for _, c := range b.extra {
		i := shardindex.ShardOf(c.Member, n)
		out[i] = append(out[i], c)
	}
	return out
}

// moved lists the members whose entries the step changed, in every shard, each once.
func (b *boardStep) moved() []string {
	out := make([]string, 0, len(b.dirty)+len(b.extra))
	for k := range b.dirty {
		out = append(out, k.member)
	}
	for _, c := range b.extra {
		out = append(out, c.Member)
	}
	slices.Sort(out)
	return slices.Compact(out)
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
// and those before the old entries of the reads priorAt (priorsIn), and tallies them.
func (s *step) countBefore(ctx context.Context, b *boardStep, i int, keys []shardindex.Key, at []int, mu *sync.Mutex) error {
	priors, priorAt := b.priorsIn(i)
	if len(keys)+len(priors) == 0 {
		return nil
	}
	counts, err := s.e.index.Before(ctx, b.id, b.st.shard(i), b.st.cfg.Ordering(), b.version, append(keys[:len(keys):len(keys)], priors...))
	if err != nil {
		return err
	}
	b.tally(mu, i, at, counts[:len(keys)], false)
	b.tally(mu, i, priorAt, counts[len(keys):], true)
	return nil
}

// tally adds to each read at at what shard i counts before its entry, counts[j] for at[j],
// and notes that i has counted it; under mu, as shards answer at once. The entry is the new
// one, or, with prior, the old one (prior.go).
func (b *boardStep) tally(mu *sync.Mutex, i int, at, counts []int, prior bool) {
	mu.Lock()
	defer mu.Unlock()
	before, counted := b.before, b.counted
	if prior {
		before, counted = b.priorBefore, b.priorCounted
	}
	n := b.st.shards()
	for j, k := range at {
		before[k] += counts[j]
		counted[k*n+i] = true
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
	changes := s.changes(b)
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
			b.expect[k] = shardindex.Key{Set: r.Set, Score: v.score, Sub: v.sub, At: v.at, Member: r.Member}
		}
	}
	b.setPriorKeys()
	var mu sync.Mutex
	send := func(i int, u shardindex.Update) error {
		for _, k := range reads[i] {
			u.Read = append(u.Read, b.reads[k])
		}
		var counts []int
		u.Count, counts = countsIn(reads, i, b.expected)
		priors, priorAt := b.priorsIn(i)
		u.Count = append(u.Count, priors...)
		got, err := idx.Apply(ctx, b.id, b.st.shard(i), b.st.cfg.Ordering(), u)
		if err != nil {
			return err
		}
		for j, k := range reads[i] {
			b.read[k] = got.Read[j]
		}
		b.tally(&mu, i, counts, got.Before[:len(counts)], false)
		b.tally(&mu, i, priorAt, got.Before[len(counts):], true)
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
		if i == teller && !b.stateChanged {
			u.Tell = b.moved()
		}
		if sh.ranked {
			u.After--
			u.Changes = changes[i]
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
		if x := b.expect[k]; en.Rank > 0 && (en.Score != x.Score || en.Sub != x.Sub || en.At != x.At) {
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
			return shardindex.Key{Set: b.reads[k].Set, Score: en.Score, Sub: en.Sub, At: en.At, Member: b.reads[k].Member}, en.Rank > 0 && !b.counted[k*n+i]
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
