package postgres

import (
	"slices"
	"sort"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// A submit's previous standings (docs/design.md, "Where the member came from"): each read's
// member as it ranked before the step's events, in the same round trips as its standing
// after. The index holds the state after the step; the state before differs from it only by
// the aggregates the events wrote, which the step knows both ways. So the rank before an
// entry K is what ranks before K after the step, less the written entries that rank before
// K after it, plus those that ranked before K before it. K is the member's old entry: every
// shard counts it beside the counts of the new one, unless the member's aggregate did not
// change, and the rank after then counts the same.

// noteWritten keeps, of the aggregates a request staged (its undo log), how they stood
// before the step's first request that wrote them.
func (b *boardStep) noteWritten(u *undoLog) {
	for k, old := range u.aggs {
		if _, ok := b.written[k]; ok {
			continue
		}
		if b.written == nil {
			b.written = make(map[aggKey]aggVal, len(u.aggs))
		}
		if !old.had {
			old.v = aggVal{}
		}
		b.written[k] = old.v
	}
}

// changed returns the aggregate k as it stood before the step's events, and whether they
// changed it.
func (b *boardStep) changed(k aggKey) (aggVal, bool) {
	old, ok := b.written[k]
	return old, ok && old != b.aggs[k]
}

// setPriorKeys sets the old entries to count for the reads that ask for them whose aggregate
// the events changed and that had one.
func (b *boardStep) setPriorKeys() {
	b.priorKey, b.priorBefore = make([]shardindex.Key, len(b.reads)), nil
	for k, r := range b.reads {
		if old, ok := b.changed(b.readKeys[k]); ok && old.present && b.asksPrior[k] {
			b.priorKey[k] = shardindex.Key{Set: r.Set, Score: old.score, Sub: old.sub, At: old.at, Member: r.Member}
		}
	}
}

// priorKeys returns the old entries to count, in the order of their reads.
func (b *boardStep) priorKeys() []shardindex.Key {
	var keys []shardindex.Key
	for _, x := range b.priorKey {
		if x.Member != "" {
			keys = append(keys, x)
		}
	}
	return keys
}

// priorSet is what the events changed in one set: the entries before and after, each
// sorted as the board ranks them.
type priorSet struct{ before, after []laurel.Entry }

// previous returns the standing of read k before the step's events, once the index has
// answered it (its rank in the whole board); false when the member had none, or the read
// has no answer. sets holds the changes by set, made by priorSets. Every event of a member
// answers with its read's standing, worked out once.
func (b *boardStep) previous(k int, sets map[shardindex.Set]*priorSet) (laurel.Standing, bool) {
	if b.prior == nil {
		b.prior = make([]priorAnswer, len(b.reads))
	}
	if a := b.prior[k]; a.done {
		return a.standing, a.ok
	}
	st, ok := b.previousOf(k, sets)
	b.prior[k] = priorAnswer{st, ok, true}
	return st, ok
}

// priorAnswer is a read's previous standing, once worked out.
type priorAnswer struct {
	standing laurel.Standing
	ok, done bool
}

// previousOf works out previous.
func (b *boardStep) previousOf(k int, sets map[shardindex.Set]*priorSet) (laurel.Standing, bool) {
	en := b.read[k]
	if en.Rank == 0 || b.priorKey == nil {
		return laurel.Standing{}, false
	}
	r := b.reads[k]
	key := laurel.Entry{Member: r.Member, Score: en.Score, Sub: en.Sub, ReachedAt: en.At}
	before := en.Rank - 1
	if !b.asksPrior[k] {
		return laurel.Standing{}, false
	}
	if _, ok := b.changed(b.readKeys[k]); ok {
		x := b.priorKey[k]
		if x.Member == "" {
			return laurel.Standing{}, false // none
		}
		key.Score, key.Sub, key.ReachedAt, before = x.Score, x.Sub, x.At, b.priorBefore[k]
	}
	if cs := sets[r.Set]; cs != nil {
		before += countBefore(b.st.cfg.Ordering(), cs.before, key) - countBefore(b.st.cfg.Ordering(), cs.after, key)
	}
	return laurel.Standing{Rank: before + 1, Score: key.Score, Sub: key.Sub}, true
}

// priorSets gathers, by set of the index, the entries of the members whose aggregates the
// events changed, before and after (hidden members are in no set).
func (b *boardStep) priorSets(hidden map[string]bool) map[shardindex.Set]*priorSet {
	sets := make(map[shardindex.Set]*priorSet)
	for k, old := range b.written {
		cur := b.aggs[k]
		if old == cur || hidden[k.member] {
			continue
		}
		ws := b.st.window(k.win)
		if ws == nil {
			continue
		}
		set, ok := ws.indexSet(k.span)
		if !ok {
			continue
		}
		ps := sets[set]
		if ps == nil {
			ps = &priorSet{}
			sets[set] = ps
		}
		if old.present {
			ps.before = append(ps.before, laurel.Entry{Member: k.member, Score: old.score, Sub: old.sub, ReachedAt: old.at})
		}
		if cur.present {
			ps.after = append(ps.after, laurel.Entry{Member: k.member, Score: cur.score, Sub: cur.sub, ReachedAt: cur.at})
		}
	}
	order := b.st.cfg.Ordering()
	for _, ps := range sets {
		sortEntries := func(es []laurel.Entry) {
			slices.SortFunc(es, func(a, c laurel.Entry) int { return laurel.CompareEntries(order, a, c) })
		}
		sortEntries(ps.before)
		sortEntries(ps.after)
	}
	return sets
}

// countBefore counts the entries of sorted that rank before key.
func countBefore(o laurel.Ordering, sorted []laurel.Entry, key laurel.Entry) int {
	return sort.Search(len(sorted), func(i int) bool {
		e := &sorted[i]
		return laurel.CompareRanked(o, e.Key(), e.Member, key.Key(), key.Member) >= 0
	})
}
