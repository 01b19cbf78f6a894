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
// the shards' versions (follow), and the standings it answers with, ranked in the board's
// sets. How the index of a board is made what the store holds when it is not: rebuild.go.

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

// moved lists the members whose entries the step changed, in every shard, each once, in no
// order: a member has an aggregate a window, so a set finds each once where sorting them all
// cost a batched step some 3% of the node's CPU.
func (b *boardStep) moved() []string {
	seen := make(map[string]struct{}, len(b.readAt)+len(b.extra))
	out := make([]string, 0, len(b.readAt)+len(b.extra))
	add := func(m string) {
		if _, ok := seen[m]; !ok {
			seen[m] = struct{}{}
			out = append(out, m)
		}
	}
	for k := range b.dirty {
		add(k.member)
	}
	for _, c := range b.extra {
		add(c.Member)
	}
	return out
}

// applyIndex takes the board's step in the index, every shard that changed in one call that
// also reads back the standings the step answers with; a shard whose step the index refused
// follows alone (follow), and the standings are then read after it. Or it rebuilds what of
// the board's index is not where the store says it is.
func (s *step) applyIndex(ctx context.Context, b *boardStep) error {
	if b.deleted {
		return s.e.index.DeleteBoard(ctx, b.id)
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
	changes := s.changes(b)
	var ranked []int
	for i := range n {
		if sh := b.shards[i]; sh != nil && sh.ranked {
			ranked = append(ranked, i)
		}
	}
	// A change of state reaches shard 0, which records it, last: a read of the new state
	// then finds every shard at its stamp (the index refuses it when a step before it was
	// refused).
	if b.stateChanged && len(ranked) > 1 && ranked[0] == 0 {
		ranked = append(ranked[1:], 0)
	}
	b.read = nil
	b.setPriorKeys()
	// One shard's step tells subscribers of the write: shard 0's when the state changes,
	// else the first that takes one.
	teller := 0
	if len(ranked) > 0 && !b.stateChanged {
		teller = ranked[0]
	}
	update := func(i int) shardindex.Update {
		sh := b.shards[i]
		u := shardindex.Update{After: sh.version - 1, Version: sh.version, Quiet: i != teller, Changes: changes[i]}
		if i == teller && !b.stateChanged {
			u.Tell = b.moved()
		}
		if b.stateChanged {
			u.Drops, u.Stamp = b.drops, b.version
			if i == 0 {
				u.State = b.st.encode()
			}
		}
		return u
	}
	order := b.st.cfg.Ordering()
	var refused []int
	var asks shardindex.Asks
	if len(b.reads) > 0 {
		asks = b.asks(ranked)
	}
	if len(ranked) > 0 {
		steps := make([]shardindex.Step, len(ranked))
		for k, i := range ranked {
			steps[k] = shardindex.Step{Shard: i, Update: update(i)}
		}
		got, err := s.e.index.Apply(ctx, b.id, n, order, steps, asks)
		if err != nil {
			return fmt.Errorf("postgres: index board %s: %w", b.id, err)
		}
		b.answered(got)
		refused = got.Refused
	}
	// A shard whose step the index still refuses once the steps before it have had their
	// time (follow) missed one, and is rebuilt from the store, only that shard: the others
	// each find their own state. A step that holds its locks rebuilds on its own connection,
	// so one shard at a time, after the steps; an early one, whose locks went with its
	// commit, catches the board up as a step of its own. A refused step sent again alone,
	// the last of its write, asks what the write's call asked: the others are in.
	var stale []int
	var mu sync.Mutex
	step := func(i int, alone bool) error {
		var a shardindex.Asks
		if alone {
			a = asks
		}
		got, err := s.follow(ctx, b, i, update(i), true, a)
		if alone {
			b.answered(got)
		}
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
		} else {
			for _, i := range stale {
				s.e.log.Warn("the index missed a step; rebuilding it", "board", b.id, "shard", i, "version", b.shards[i].version)
				if err := s.e.rebuild(ctx, s.conn, b.id, []int{i}); err != nil {
					return fmt.Errorf("postgres: index board %s, shard %d: %w", b.id, i, err)
				}
			}
		}
		stale = nil
		return nil
	}
	if len(refused) > 0 {
		others := slices.DeleteFunc(slices.Clone(refused), func(i int) bool { return i == 0 && b.stateChanged })
		alone := len(others) == len(refused) && len(others) == 1
		if err := eachShard(others, func(i int) error { return step(i, alone) }); err != nil {
			return err
		}
		if err := mend(); err != nil {
			return err
		}
		if len(others) < len(refused) {
			if err := step(0, true); err != nil {
				return err
			}
			if err := mend(); err != nil {
				return err
			}
		}
	}
	// The reads no step answered are read in the whole board, once every shard the step
	// holds is where the store says: one the index is behind on missed a step (its writer
	// died before the index took it), and is mended as a step refused.
	for attempt := 0; b.read == nil && len(b.reads) > 0; attempt++ {
		if attempt == 2 {
			return fmt.Errorf("postgres: index board %s: shards %v stay below the store's versions", b.id, b.below)
		}
		if err := s.rank(ctx, b); err != nil {
			return err
		}
		for _, i := range b.below {
			if _, err := s.follow(ctx, b, i, shardindex.Update{After: b.shards[i].version, Version: b.shards[i].version, Quiet: true}, false, shardindex.Asks{}); errors.Is(err, shardindex.ErrStale) {
				stale = append(stale, i)
			} else if err != nil {
				return fmt.Errorf("postgres: index board %s, shard %d: %w", b.id, i, err)
			}
		}
		if err := mend(); err != nil {
			return err
		}
	}
	return nil
}

// asks are the reads of the step and the old entries to count, after the steps of the shards
// stepped (nil: none): every other shard the step holds must be at the store's version.
func (b *boardStep) asks(stepped []int) shardindex.Asks {
	a := shardindex.Asks{Read: b.reads, Count: b.priorKeys()}
	if stepped == nil {
		// After steps sent before: each read's entry as they left it is looked for first (in
		// the steps' own call the index knows what it gave). A member has one entry in a set,
		// so an entry found is the member's, whatever wrote it.
		a.Read = slices.Clone(b.reads)
		for k := range a.Read {
			if v := b.aggs[b.readKeys[k]]; v.present {
				a.Read[k].Expect, a.Read[k].Score, a.Read[k].Sub, a.Read[k].At = true, v.score, v.sub, v.at
			}
		}
	}
	for i, sh := range b.shards {
		if !slices.Contains(stepped, i) {
			a.Floors = append(a.Floors, shardindex.Floor{Shard: i, Version: sh.version})
		}
	}
	return a
}

// rank reads the step's reads in the whole board, waiting up to indexWait for the board's
// shards to follow one state (a rebuild of a shard, a change of state on its way), and
// leaves them unranked past it. It notes the shards the step holds that are below its
// versions (b.below), leaving the reads unanswered.
func (s *step) rank(ctx context.Context, b *boardStep) error {
	wait := newPacing(indexWait)
	for {
		got, err := s.e.index.Apply(ctx, b.id, b.st.shards(), b.st.cfg.Ordering(), nil, b.asks(nil))
		if err != nil {
			return fmt.Errorf("postgres: index board %s: ranking: %w", b.id, err)
		}
		if got.Ranked || got.Below != nil {
			b.answered(got)
			return nil
		}
		if more, perr := wait.pause(ctx); perr != nil || !more {
			if perr != nil {
				return perr
			}
			s.e.log.Warn("the board's shards kept to different states; its write is answered without ranks", "board", b.id)
			b.unranked()
			return nil
		}
	}
}

// answered takes the standings the index answered for the step's reads, or the shards it found
// below the store's versions.
func (b *boardStep) answered(got shardindex.Applied) {
	b.below = got.Below
	if !got.Ranked {
		return
	}
	b.read = got.Read
	b.priorBefore = make([]int, len(b.reads))
	j := 0
	for k, x := range b.priorKey {
		if x.Member != "" {
			b.priorBefore[k] = got.Before[j]
			j++
		}
	}
}

// unranked leaves the step's reads without ranks, when the index could not give them: the
// write is answered without them.
func (b *boardStep) unranked() {
	b.read, b.priorKey = make([]shardindex.Entry, len(b.reads)), nil
}

// indexWait is how long a step waits for the steps committed before it to reach a shard of
// the index before it takes the shard for one lost (its writer died between its commit and
// the index, or the index lost the shard) and rebuilds it.
const indexWait = time.Second

// follow sends shard i of a board its step u, asking a, which the index refused once
// already when refused is set. A shard not at u.After is most often behind by steps that
// other writes committed first and are still taking to the index (an early step's locks go
// with its commit): follow waits until the shard is at u.After and sends u again, or until a
// later step or a rebuild has taken the shard past u.Version — the shard then holds u's
// changes, and a is left unanswered. It returns ErrStale when the shard is still behind after
// indexWait.
func (s *step) follow(ctx context.Context, b *boardStep, i int, u shardindex.Update, refused bool, a shardindex.Asks) (shardindex.Applied, error) {
	wait := newPacing(indexWait)
	for {
		if !refused {
			got, err := shardindex.ApplyOne(ctx, s.e.index, b.id, b.st.shard(i), b.st.cfg.Ordering(), u, a)
			if !errors.Is(err, shardindex.ErrStale) {
				return got, err
			}
		}
		refused = false
		// Until the shard is where the step can follow, only its version is read: a step
		// waits for another that its writer has not sent yet (a node descheduled or
		// throttled between its commit and the index), and should cost little meanwhile.
		for {
			vs, err := s.e.index.Versions(ctx, b.id, b.st.shards())
			if err != nil {
				return shardindex.Applied{}, err
			}
			v := vs[i].Version
			if v >= u.Version && v > 0 {
				return shardindex.Applied{}, nil
			}
			if v == u.After {
				break
			}
			if more, err := wait.pause(ctx); err != nil || !more {
				return shardindex.Applied{}, cmp.Or(err, shardindex.ErrStale)
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
