package rank

import (
	"errors"
	"fmt"
)

// Check verifies the tree's invariants and returns the first violation found: keys in strict
// order; every separator a lower bound of its child and above its left sibling; every count the
// size of its subtree; every node but the root at least half full; all leaves at one depth;
// the leaf chain in order and complete; Len the number of keys. It visits every node, so it
// is for tests and diagnostics, not for a hot path.
func (t *Tree) Check() error {
	c := checker{t: t}
	var size int
	if t.height == 0 {
		if t.root != nil || t.leaf == nil {
			return errors.New("rank: height 0 but the root is not a leaf")
		}
		size = c.leaf(t.leaf, nil, nil, true)
	} else {
		if t.leaf != nil || t.root == nil {
			return errors.New("rank: height > 0 but the root is not an inner node")
		}
		if t.root.n < 2 {
			return fmt.Errorf("rank: the root has %d children", t.root.n)
		}
		size = c.inner(t.root, t.height, nil, nil, true)
	}
	if c.err != nil {
		return c.err
	}
	if size != t.len {
		return fmt.Errorf("rank: Len is %d but the tree holds %d keys", t.len, size)
	}
	if c.prev != t.last || (c.prev != nil && c.prev.next != nil) {
		return errors.New("rank: the last leaf is not the end of the leaf chain")
	}
	return nil
}

// checker walks the tree left to right, remembering the last leaf and key it saw.
type checker struct {
	t       *Tree
	prev    *leaf
	lastKey *Key
	err     error
}

func (c *checker) fail(format string, args ...any) int {
	if c.err == nil {
		c.err = fmt.Errorf("rank: "+format, args...)
	}
	return 0
}

// inner checks n, at the given height, whose keys must lie in [lo, hi) (nil: unbounded), and
// returns the number of keys under it.
func (c *checker) inner(n *inner, height int, lo, hi *Key, root bool) int {
	if n.n > fanout || (!root && n.n < minFill) {
		return c.fail("inner node with %d children", n.n)
	}
	size := 0
	for i := range n.n {
		clo, chi := lo, hi
		if i > 0 {
			sep := c.t.key(&n.keys, i)
			clo = &sep
			if lo != nil && c.t.keyLess(sep, *lo) {
				return c.fail("separator %+v below its node's lower bound %+v", sep, *lo)
			}
			if i > 1 && !c.t.keyLess(c.t.key(&n.keys, i-1), sep) {
				return c.fail("separators out of order: %+v then %+v", c.t.key(&n.keys, i-1), sep)
			}
		}
		if i+1 < n.n {
			next := c.t.key(&n.keys, i+1)
			chi = &next
		}
		var got int
		if height == 1 {
			if n.inners[i] != nil || n.leaves[i] == nil {
				return c.fail("child %d of a node above the leaves is not a leaf", i)
			}
			got = c.leaf(n.leaves[i], clo, chi, false)
		} else {
			if n.leaves[i] != nil || n.inners[i] == nil {
				return c.fail("child %d of a node at height %d is not an inner node", i, height)
			}
			got = c.inner(n.inners[i], height-1, clo, chi, false)
		}
		if c.err != nil {
			return 0
		}
		if got != int(n.counts[i]) {
			return c.fail("count %d for a child holding %d keys", n.counts[i], got)
		}
		size += got
	}
	for i := n.n; i < fanout; i++ {
		if n.inners[i] != nil || n.leaves[i] != nil {
			return c.fail("unused child slot %d still points to a node", i)
		}
	}
	return size
}

// leaf checks l, whose keys must lie in [lo, hi), and its place in the leaf chain.
func (c *checker) leaf(l *leaf, lo, hi *Key, root bool) int {
	if l.n > fanout || (!root && l.n < minFill) {
		return c.fail("leaf with %d keys", l.n)
	}
	if l.prev != c.prev || (c.prev == nil && c.t.first != l) || (c.prev != nil && c.prev.next != l) {
		return c.fail("leaf chain broken")
	}
	for i := range l.n {
		k := c.t.key(&l.keys, i)
		if c.lastKey != nil && !c.t.keyLess(*c.lastKey, k) {
			return c.fail("keys out of order: %+v then %+v", *c.lastKey, k)
		}
		if lo != nil && c.t.keyLess(k, *lo) {
			return c.fail("key %+v below its leaf's lower bound %+v", k, *lo)
		}
		if hi != nil && !c.t.keyLess(k, *hi) {
			return c.fail("key %+v not below the next leaf's lower bound %+v", k, *hi)
		}
		c.lastKey = &k
	}
	c.prev = l
	return l.n
}
