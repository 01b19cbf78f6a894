package rank

import "fmt"

// Load returns a Tree holding keys, which must already be in rank order with no duplicates.
// It builds the tree bottom-up in O(n), with leaves and inner nodes as full as the fill rules
// allow, which is how recovery rebuilds millions of entries quickly and compactly.
func Load(opts Options, keys []Key) (*Tree, error) {
	return LoadFunc(opts, len(keys), func(i int) Key { return keys[i] })
}

// LoadFunc is Load of the n keys key(0), key(1)…: for a caller that keeps its keys in a form
// of its own (narrower than Key, say), so as not to hold them twice.
func LoadFunc(opts Options, n int, key func(i int) Key) (*Tree, error) {
	t := New(opts)
	if n == 0 {
		return t, nil
	}
	if n > MaxLen {
		return nil, fmt.Errorf("rank: Load: %d keys, more than a tree holds (%d)", n, MaxLen)
	}
	prev := key(0)
	for i := 1; i < n; i++ {
		k := key(i)
		if !t.keyLess(t.stored(prev), t.stored(k)) {
			return nil, fmt.Errorf("rank: Load: key %d (%+v) does not rank after key %d (%+v)", i, k, i-1, prev)
		}
		prev = k
	}
	t.len = n

	leaves := make([]*leaf, groups(n, fanout))
	lower := make([]Key, len(leaves))
	counts := make([]int32, len(leaves))
	start := 0
	for g := range leaves {
		end := groupEnd(n, len(leaves), g)
		l := t.newLeaf()
		for j := start; j < end; j++ {
			l.keys.set(j-start, t.stored(key(j)))
		}
		l.n = end - start
		if g > 0 {
			l.prev = leaves[g-1]
			leaves[g-1].next = l
		}
		leaves[g], lower[g], counts[g] = l, t.key(&l.keys, 0), int32(l.n)
		start = end
	}
	t.first, t.last = leaves[0], leaves[len(leaves)-1]
	if len(leaves) == 1 {
		t.leaf = leaves[0]
		return t, nil
	}

	// Each level groups the nodes below it, until one node is left: the root.
	var level []*inner
	for t.height = 1; ; t.height++ {
		parents := make([]*inner, groups(len(counts), fanout))
		start := 0
		for g := range parents {
			end := groupEnd(len(counts), len(parents), g)
			n := t.newInner()
			n.n = end - start
			for j, k := range lower[start:end] {
				n.keys.set(j, k)
			}
			copy(n.counts[:], counts[start:end])
			if t.height == 1 {
				copy(n.leaves[:], leaves[start:end])
			} else {
				copy(n.inners[:], level[start:end])
			}
			parents[g] = n
			lower[g], counts[g] = t.key(&n.keys, 0), n.total()
			start = end
		}
		level, lower, counts = parents, lower[:len(parents)], counts[:len(parents)]
		if len(level) == 1 {
			t.root, t.leaf = level[0], nil
			return t, nil
		}
	}
}

// groups returns how many nodes of at most max entries hold n entries.
func groups(n, max int) int { return (n + max - 1) / max }

// groupEnd returns the end of group g when n entries are spread evenly over count groups, so
// that no group is less than half full.
func groupEnd(n, count, g int) int { return (g + 1) * n / count }
