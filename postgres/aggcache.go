package postgres

import (
	"math/rand/v2"
	"sync"

	"github.com/laurel/laurel/shardindex"
)

// aggCache keeps the aggregates a node's submits read and wrote, by board and shard — the
// members' rows whole (memberrows.go) and the rolling buckets one by one — so that its next
// submit to the same shards reads them from memory instead of PostgreSQL. A row counts as
// many entries as it has aggregates.
//
// Every committed step writes a stamp of its own (a random number) into the rows of the
// shards it holds (step.commit). After a submit's commit, the node keeps the aggregates of
// each shard it held under that step's stamp, with the shard's version and last event number.
// A later step finds the stamp it loads with the shard's locks equal to the kept one only if
// no other step — of another node, or another kind of this node's (a retraction, a deletion,
// an import, a board-wide step) — has committed to the shard since: then every kept aggregate
// is what the store holds, absent ones included. Any other stamp makes the shard's kept
// aggregates useless, and they are dropped at the next submit's commit. The version and event
// number are compared too, for nodes of a version before stamps, which leave the stamp as it
// is: their submits move the event number, and their other changes of ranked aggregates the
// version (docs/operations.md still asks not to mix them).
type aggCache struct {
	mu      sync.Mutex
	max     int // entries kept in all; 0 keeps none
	entries int
	shards  map[shardRef]*shardAggs
}

type shardRef struct {
	board string
	shard int
}

type shardAggs struct {
	mark shardMark         // the shard's row, as the step that left these aggregates wrote it
	aggs map[aggKey]aggVal // rolling buckets
	rows map[string]cachedRow
}

// cachedRow is a member's row (memberrows.go) as the store holds it.
type cachedRow struct {
	stored bool
	elems  []rowElem
}

// size is what a row counts against the cache's max: its aggregates, or one when it has none.
func (r cachedRow) size() int { return max(len(r.elems), 1) }

// size counts the entries of a shard's aggregates.
func (sa *shardAggs) size() int {
	n := len(sa.aggs)
	for _, r := range sa.rows {
		n += r.size()
	}
	return n
}

// shardMark is what a shard's row says of the last step that committed to it: its stamp, the
// shard's version and its last event number.
type shardMark struct{ stamp, version, seq int64 }

// newStamp returns a stamp for a step: random, so that no two steps of any nodes share one,
// and never 0, the stamp of rows no step has stamped.
func newStamp() int64 {
	for {
		if v := rand.Int64(); v != 0 {
			return v
		}
	}
}

// fill sets in b the aggregates of keys it keeps for the shards as b loaded them, and returns
// the keys neither b nor it has. A step of a whole board takes none: it may have changed
// aggregates by statements of its own (advance.go) before it reads.
func (c *aggCache) fill(b *boardStep, keys []aggKey) []aggKey {
	if c.max == 0 || len(keys) == 0 || b.whole {
		return keys
	}
	n := b.st.shards()
	c.mu.Lock()
	defer c.mu.Unlock()
	miss := keys[:0:0]
	for _, k := range keys {
		if _, ok := b.aggs[k]; ok {
			continue
		}
		i := shardindex.ShardOf(k.member, n)
		sa, sh := c.shards[shardRef{b.id, i}], b.shards[i]
		if sa != nil && sh != nil && sa.mark == sh.found {
			if bucket(k) {
				if v, ok := sa.aggs[k]; ok {
					b.aggs[k], b.stored[k] = v, v.present
					continue
				}
			} else if r := b.rows[k.member]; r != nil && r.loaded {
				miss = append(miss, k) // absent from a row read: queueAggs knows it absent
				continue
			} else if cr, ok := sa.rows[k.member]; ok {
				b.takeRow(k.member, cr.stored, cr.elems)
				if _, ok := b.aggs[k]; !ok {
					b.aggs[k], b.stored[k] = aggVal{}, false
				}
				continue
			}
		}
		miss = append(miss, k)
	}
	return miss
}

// keep records, after the commit of a submit stamped stamp, the aggregates of the boards'
// shards it held: those kept under the stamps it loaded, and what it read and wrote.
func (c *aggCache) keep(boards map[string]*boardStep, stamp int64) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shards == nil {
		c.shards = make(map[shardRef]*shardAggs)
	}
	for _, b := range boards {
		if b.st == nil || b.deleted || b.whole || b.rebuild {
			c.dropBoard(b)
			continue
		}
		n := b.st.shards()
		for i, sh := range b.shards {
			ref := shardRef{b.id, i}
			sa := c.shards[ref]
			if sa == nil || sa.mark != sh.found {
				if sa != nil {
					c.entries -= sa.size()
				}
				sa = &shardAggs{aggs: make(map[aggKey]aggVal)}
				c.shards[ref] = sa
			}
			sa.mark = shardMark{stamp, sh.version, sh.seq}
		}
		for k, v := range b.aggs {
			if !bucket(k) {
				continue
			}
			sa := c.shards[shardRef{b.id, shardindex.ShardOf(k.member, n)}]
			if sa == nil { // not a shard the step held: none of its writes
				continue
			}
			old, had := sa.aggs[k]
			if had && old == v { // filled from here, and unchanged
				continue
			}
			if !had {
				c.entries++
			}
			sa.aggs[k] = v
		}
		for m, r := range b.rows {
			sa := c.shards[shardRef{b.id, shardindex.ShardOf(m, n)}]
			if sa == nil || !r.loaded {
				continue
			}
			if sa.rows == nil {
				sa.rows = make(map[string]cachedRow)
			}
			cr := cachedRow{r.stored, r.elems}
			if !r.written {
				cr.elems = b.elems(m)
			}
			if old, had := sa.rows[m]; had {
				c.entries -= old.size()
			}
			c.entries += cr.size()
			sa.rows[m] = cr
		}
	}
	c.evict()
}

// drop forgets what the cache keeps of the boards: a step that is not a submit changed them.
func (c *aggCache) drop(boards map[string]*boardStep) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range boards {
		c.dropBoard(b)
	}
}

func (c *aggCache) dropBoard(b *boardStep) {
	for ref, sa := range c.shards {
		if ref.board == b.id {
			c.entries -= sa.size()
			delete(c.shards, ref)
		}
	}
}

// evict drops entries, in the maps' own (random) order, until the cache holds at most max.
func (c *aggCache) evict() {
	for ref, sa := range c.shards {
		if c.entries <= c.max {
			return
		}
		for k := range sa.aggs {
			if c.entries <= c.max {
				break
			}
			delete(sa.aggs, k)
			c.entries--
		}
		for m, r := range sa.rows {
			if c.entries <= c.max {
				break
			}
			delete(sa.rows, m)
			c.entries -= r.size()
		}
		if len(sa.aggs) == 0 && len(sa.rows) == 0 {
			delete(c.shards, ref)
		}
	}
}
