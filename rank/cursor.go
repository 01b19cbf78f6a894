package rank

import "iter"

// Cursor is a position in a Tree for walking it in rank order from a rank (CursorAt) or a key
// (Seek, Search). Moving costs O(1) amortized. Any write to the tree invalidates it.
type Cursor struct {
	t    *Tree
	leaf *leaf // nil when the cursor is off either end
	i    int
	rank int
}

// Valid reports whether the cursor is at a key.
func (c *Cursor) Valid() bool { return c.leaf != nil }

// Key returns the key at the cursor, which must be Valid.
func (c *Cursor) Key() Key { return c.t.stored(c.t.key(&c.leaf.keys, c.i)) }

// Rank returns the 1-based rank of the cursor's position. Past the last key it is Len()+1,
// the rank a key inserted there would take.
func (c *Cursor) Rank() int { return c.rank }

// Next moves to the key of the next rank.
func (c *Cursor) Next() {
	if c.leaf == nil {
		return
	}
	c.rank++
	if c.i++; c.i == c.leaf.n {
		c.leaf, c.i = c.leaf.next, 0
	}
}

// Prev moves to the key of the previous rank.
func (c *Cursor) Prev() {
	if c.leaf == nil {
		// Past the end, Prev steps back onto the last key: a Search that found nothing
		// better-or-equal can still walk backwards from there.
		if c.rank == c.t.len+1 && c.t.len > 0 {
			c.leaf, c.i, c.rank = c.t.last, c.t.last.n-1, c.t.len
		}
		return
	}
	c.rank--
	if c.i--; c.i < 0 {
		c.leaf = c.leaf.prev
		if c.leaf != nil {
			c.i = c.leaf.n - 1
		}
	}
}

// Forward yields the rank and key at the cursor and at every following rank.
func (c Cursor) Forward() iter.Seq2[int, Key] {
	return func(yield func(int, Key) bool) {
		for ; c.Valid(); c.Next() {
			if !yield(c.rank, c.Key()) {
				return
			}
		}
	}
}

// Backward yields the rank and key at the cursor and at every preceding rank.
func (c Cursor) Backward() iter.Seq2[int, Key] {
	return func(yield func(int, Key) bool) {
		for ; c.Valid(); c.Prev() {
			if !yield(c.rank, c.Key()) {
				return
			}
		}
	}
}
