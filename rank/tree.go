// Package rank is laurel's ordered index: an in-memory B+tree whose inner nodes know the size
// of each child's subtree, so that the rank of a key and the key at a rank each take one
// descent from the root, O(log n).
//
// Keys are small values stored inline in the nodes, 63 to a leaf: a leaf is one 1536-byte
// allocation and there is no pointer per entry for the garbage collector to trace.
//
// A Tree is not safe for concurrent use. Its read methods (Len, Has, Rank, At, Search, Seek,
// CursorAt and iteration with a Cursor) do not modify it, so any number of goroutines may read
// at once while no goroutine writes; every write (Insert, Delete, Update) must exclude all
// other access, and it invalidates every Cursor on the tree.
package rank

// Key orders one member of a ranking: by Score in the tree's direction, then by At ascending
// (whoever got there first ranks higher), then by member.
type Key struct {
	Score  int64  // the member's score
	At     int64  // when it reached that score (laurel's reached_at, in unix milliseconds)
	Member uint32 // the member's handle, interned once per board
}

// Options configure a Tree.
type Options struct {
	// Desc ranks higher scores first; by default lower scores rank first.
	Desc bool
	// Tie orders two different members whose Score and At are equal, returning a negative
	// number when a ranks first. laurel orders them by the bytes of their ids, which handles
	// do not follow. Nil orders by handle. It must be a strict total order on handles.
	Tie func(a, b uint32) int
}

const (
	leafMax  = 63 // with its header a leaf is 1536 bytes, one of Go's size classes
	leafMin  = leafMax / 2
	innerMax = 63 // 3032 bytes, in the 3072-byte size class
	innerMin = innerMax / 2
	// maxHeight bounds the number of inner levels: each inner node but the root has at
	// least innerMin children, so 12 levels hold far more than any int can count.
	maxHeight = 12
)

// A leaf holds keys in ascending order and links to its neighbours for iteration.
type leaf struct {
	n          int
	keys       [leafMax]Key
	prev, next *leaf
}

// An inner node routes to n children. For i ≥ 1, keys[i] is a lower bound of child i's keys
// that is greater than every key of child i−1; keys[0] is unused. counts[i] is the number of
// keys under child i. Children are inners when the node is more than one level above the
// leaves, and leaves when it is just above them.
type inner struct {
	n      int
	keys   [innerMax]Key
	counts [innerMax]int
	inners [innerMax]*inner
	leaves [innerMax]*leaf
}

// Tree is a counted B+tree of distinct Keys. The zero value is not usable; call New.
type Tree struct {
	flip   int64 // XORed into scores so that the stored order is always ascending
	tie    func(a, b uint32) int
	height int    // inner levels above the leaves; 0 when the root is a leaf
	root   *inner // when height > 0
	leaf   *leaf  // the root when height == 0
	first  *leaf  // leftmost leaf, for iteration from rank 1
	last   *leaf  // rightmost leaf
	len    int
}

// New returns an empty Tree.
func New(opts Options) *Tree {
	t := &Tree{tie: opts.Tie}
	if opts.Desc {
		// ^s reverses the order of int64 without overflow, unlike -s at math.MinInt64.
		t.flip = -1
	}
	t.leaf = &leaf{}
	t.first, t.last = t.leaf, t.leaf
	return t
}

// Len returns the number of keys.
func (t *Tree) Len() int { return t.len }

// stored converts a caller's key to the tree's ascending form, and back (XOR is its own inverse).
func (t *Tree) stored(k Key) Key {
	k.Score ^= t.flip
	return k
}

// less reports whether a ranks before b, both in stored form.
func (t *Tree) less(a, b Key) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	if a.At != b.At {
		return a.At < b.At
	}
	return t.memberLess(a.Member, b.Member)
}

// memberLess is apart from less, and not inlined, so that less stays small enough to inline:
// equal scores and times are the rare case.
//
//go:noinline
func (t *Tree) memberLess(a, b uint32) bool {
	if t.tie == nil || a == b {
		return a < b
	}
	return t.tie(a, b) < 0
}

// lowerBound returns the position of the first key of l that is not less than k.
func (t *Tree) lowerBound(l *leaf, k Key) int {
	lo, hi := 0, l.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		// less(l.keys[mid], k), written out: the compiler does not inline it here.
		if m := &l.keys[mid]; m.Score < k.Score || m.Score == k.Score &&
			(m.At < k.At || m.At == k.At && t.memberLess(m.Member, k.Member)) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// child returns the index of the child of n whose range holds k.
func (t *Tree) child(n *inner, k Key) int {
	lo, hi := 1, n.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		// less(k, n.keys[mid]), written out.
		if m := &n.keys[mid]; k.Score < m.Score || k.Score == m.Score &&
			(k.At < m.At || k.At == m.At && t.memberLess(k.Member, m.Member)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo - 1
}

// step is one inner node on the way down and the child taken there.
type step struct {
	n *inner
	i int
}

// path is the route from the root to a leaf.
type path struct {
	steps [maxHeight]step
	depth int
}

// before returns the number of keys in the subtrees left of the route.
func (p *path) before() int {
	total := 0
	for _, s := range p.steps[:p.depth] {
		for _, c := range s.n.counts[:s.i] {
			total += c
		}
	}
	return total
}

// descend walks to the leaf where the stored key k belongs, recording the route in p, and
// returns that leaf and the position of k's lower bound in it.
func (t *Tree) descend(k Key, p *path) (*leaf, int) {
	p.depth = 0
	if t.height == 0 {
		return t.leaf, t.lowerBound(t.leaf, k)
	}
	n := t.root
	for h := t.height; ; h-- {
		i := t.child(n, k)
		p.steps[p.depth] = step{n, i}
		p.depth++
		if h == 1 {
			l := n.leaves[i]
			return l, t.lowerBound(l, k)
		}
		n = n.inners[i]
	}
}

// Has reports whether k is in the tree.
func (t *Tree) Has(k Key) bool {
	k = t.stored(k)
	var p path
	l, i := t.descend(k, &p)
	return i < l.n && l.keys[i] == k
}

// Rank returns the 1-based position of k, and false when k is not in the tree.
func (t *Tree) Rank(k Key) (int, bool) {
	k = t.stored(k)
	var p path
	l, i := t.descend(k, &p)
	if i == l.n || l.keys[i] != k {
		return 0, false
	}
	return p.before() + i + 1, true
}

// At returns the key at 1-based position r, and false when r is out of 1…Len.
func (t *Tree) At(r int) (Key, bool) {
	c := t.CursorAt(r)
	if !c.Valid() {
		return Key{}, false
	}
	return c.Key(), true
}

// leafAt returns the leaf holding the key at 0-based position i < t.len, and its index there.
func (t *Tree) leafAt(i int) (*leaf, int) {
	if t.height == 0 {
		return t.leaf, i
	}
	n := t.root
	for h := t.height; ; h-- {
		c := 0
		for i >= n.counts[c] {
			i -= n.counts[c]
			c++
		}
		if h == 1 {
			return n.leaves[c], i
		}
		n = n.inners[c]
	}
}

// Insert adds k and reports whether it was not already there.
func (t *Tree) Insert(k Key) bool {
	k = t.stored(k)
	var p path
	l, i := t.descend(k, &p)
	if i < l.n && l.keys[i] == k {
		return false
	}
	t.len++
	for _, s := range p.steps[:p.depth] {
		s.n.counts[s.i]++
	}
	if l.n < leafMax {
		copy(l.keys[i+1:l.n+1], l.keys[i:l.n])
		l.keys[i] = k
		l.n++
		return true
	}
	t.splitLeaf(l, i, k, &p)
	return true
}

// splitLeaf inserts k at position i of the full leaf l by moving its upper half to a new
// leaf, then links the new leaf into the parent, splitting inner nodes up the path as needed.
func (t *Tree) splitLeaf(l *leaf, i int, k Key, p *path) {
	r := &leaf{prev: l, next: l.next}
	if l.next != nil {
		l.next.prev = r
	} else {
		t.last = r
	}
	l.next = r

	// Of the leafMax+1 keys, the left leaf keeps half and the right takes the rest.
	keep := (leafMax + 1) / 2
	if i < keep {
		r.n = copy(r.keys[:], l.keys[keep-1:l.n])
		copy(l.keys[i+1:keep], l.keys[i:keep-1])
		l.keys[i] = k
	} else {
		r.n = copy(r.keys[:], l.keys[keep:i])
		r.keys[r.n] = k
		r.n++
		r.n += copy(r.keys[r.n:], l.keys[i:l.n])
	}
	l.n = keep

	if p.depth == 0 {
		t.growRoot(r.keys[0], l.n, r.n)
		t.root.leaves[0], t.root.leaves[1] = l, r
		return
	}
	s := p.steps[p.depth-1]
	s.n.counts[s.i] = l.n
	t.addChild(p, p.depth-1, r.keys[0], r.n, nil, r)
}

// addChild inserts a child right of the one the route took at level d, with its lower bound
// sep and its count, splitting that node and its ancestors when they are full.
func (t *Tree) addChild(p *path, d int, sep Key, count int, in *inner, lf *leaf) {
	for {
		n, at := p.steps[d].n, p.steps[d].i+1
		if n.n < innerMax {
			n.insertAt(at, sep, count, in, lf)
			return
		}
		// Split n: the right half moves to a new node whose lower bound goes up a level.
		r := &inner{}
		keep := (innerMax + 1) / 2
		if at <= keep {
			r.n = moveChildren(r, 0, n, keep, n.n)
			n.n = keep
			n.insertAt(at, sep, count, in, lf)
		} else {
			r.n = moveChildren(r, 0, n, keep+1, n.n)
			n.n = keep + 1
			r.insertAt(at-keep-1, sep, count, in, lf)
		}
		up := r.keys[0]
		if d == 0 {
			t.growRoot(up, n.total(), r.total())
			t.root.inners[0], t.root.inners[1] = n, r
			return
		}
		parent := p.steps[d-1]
		parent.n.counts[parent.i] = n.total()
		sep, count, in, lf = up, r.total(), r, nil
		d--
	}
}

// growRoot puts a new root with two children above the current one; the caller sets the
// children.
func (t *Tree) growRoot(sep Key, left, right int) {
	t.root = &inner{n: 2}
	t.root.keys[1] = sep
	t.root.counts[0], t.root.counts[1] = left, right
	t.height++
	t.leaf = nil
}

// insertAt puts a child at index i of n, which has room for it.
func (n *inner) insertAt(i int, sep Key, count int, in *inner, lf *leaf) {
	copy(n.keys[i+1:n.n+1], n.keys[i:n.n])
	copy(n.counts[i+1:n.n+1], n.counts[i:n.n])
	copy(n.inners[i+1:n.n+1], n.inners[i:n.n])
	copy(n.leaves[i+1:n.n+1], n.leaves[i:n.n])
	n.keys[i], n.counts[i], n.inners[i], n.leaves[i] = sep, count, in, lf
	n.n++
}

// removeAt takes child i out of n, clearing the freed slot so it holds no pointers.
func (n *inner) removeAt(i int) {
	copy(n.keys[i:], n.keys[i+1:n.n])
	copy(n.counts[i:], n.counts[i+1:n.n])
	copy(n.inners[i:], n.inners[i+1:n.n])
	copy(n.leaves[i:], n.leaves[i+1:n.n])
	n.n--
	n.inners[n.n], n.leaves[n.n] = nil, nil
}

// moveChildren copies children from…to of src into dst starting at index at, clears them in
// src, and returns the number moved.
func moveChildren(dst *inner, at int, src *inner, from, to int) int {
	copy(dst.keys[at:], src.keys[from:to])
	copy(dst.counts[at:], src.counts[from:to])
	copy(dst.inners[at:], src.inners[from:to])
	copy(dst.leaves[at:], src.leaves[from:to])
	clear(src.inners[from:to])
	clear(src.leaves[from:to])
	return to - from
}

// total returns the number of keys under n.
func (n *inner) total() int {
	sum := 0
	for _, c := range n.counts[:n.n] {
		sum += c
	}
	return sum
}

// Delete removes k and reports whether it was there.
func (t *Tree) Delete(k Key) bool {
	k = t.stored(k)
	var p path
	l, i := t.descend(k, &p)
	if i == l.n || l.keys[i] != k {
		return false
	}
	t.len--
	for _, s := range p.steps[:p.depth] {
		s.n.counts[s.i]--
	}
	copy(l.keys[i:], l.keys[i+1:l.n])
	l.n--
	if l.n < leafMin && p.depth > 0 {
		t.rebalanceLeaf(l, &p)
	}
	return true
}

// Update replaces old by new, as Delete then Insert, and reports whether old was there; when
// it was not, nothing changes. new must not be in the tree already, unless it equals old.
func (t *Tree) Update(old, new Key) bool {
	if old == new {
		return t.Has(old)
	}
	if !t.Delete(old) {
		return false
	}
	t.Insert(new)
	return true
}

// rebalanceLeaf refills the underfull leaf l from a sibling, or merges it with one.
func (t *Tree) rebalanceLeaf(l *leaf, p *path) {
	s := p.steps[p.depth-1]
	n, i := s.n, s.i
	if i > 0 {
		left := n.leaves[i-1]
		if left.n > leafMin {
			// Borrow the left sibling's greatest key; it becomes l's lower bound.
			copy(l.keys[1:l.n+1], l.keys[:l.n])
			l.keys[0] = left.keys[left.n-1]
			l.n++
			left.n--
			n.keys[i] = l.keys[0]
			n.counts[i-1]--
			n.counts[i]++
			return
		}
		t.mergeLeaves(left, l, n, i)
	} else {
		right := n.leaves[1]
		if right.n > leafMin {
			l.keys[l.n] = right.keys[0]
			l.n++
			copy(right.keys[:], right.keys[1:right.n])
			right.n--
			n.keys[1] = right.keys[0]
			n.counts[0]++
			n.counts[1]--
			return
		}
		t.mergeLeaves(l, right, n, 1)
	}
	t.rebalanceInner(p, p.depth-1)
}

// mergeLeaves moves all of r, child i of n, into l, child i−1, and unlinks r.
func (t *Tree) mergeLeaves(l, r *leaf, n *inner, i int) {
	l.n += copy(l.keys[l.n:], r.keys[:r.n])
	l.next = r.next
	if r.next != nil {
		r.next.prev = l
	} else {
		t.last = l
	}
	n.counts[i-1] += n.counts[i]
	n.removeAt(i)
}

// rebalanceInner restores the fill of the inner node at level d of the route after it lost
// a child, walking up as merges cascade, and lowers the root when it is left with one child.
func (t *Tree) rebalanceInner(p *path, d int) {
	for ; d > 0; d-- {
		n := p.steps[d].n
		if n.n >= innerMin {
			return
		}
		parent, i := p.steps[d-1].n, p.steps[d-1].i
		if i > 0 {
			left := parent.inners[i-1]
			if left.n > innerMin {
				// Rotate left's last child through the parent into n.
				n.insertAt(0, Key{}, left.counts[left.n-1], left.inners[left.n-1], left.leaves[left.n-1])
				n.keys[1] = parent.keys[i]
				parent.keys[i] = left.keys[left.n-1]
				parent.counts[i-1] -= n.counts[0]
				parent.counts[i] += n.counts[0]
				left.removeAt(left.n - 1)
				return
			}
			mergeInners(left, n, parent, i)
		} else {
			right := parent.inners[1]
			if right.n > innerMin {
				n.insertAt(n.n, parent.keys[1], right.counts[0], right.inners[0], right.leaves[0])
				parent.keys[1] = right.keys[1]
				parent.counts[0] += right.counts[0]
				parent.counts[1] -= right.counts[0]
				right.removeAt(0)
				return
			}
			mergeInners(n, right, parent, 1)
		}
	}
	if t.root.n == 1 {
		t.lowerRoot()
	}
}

// mergeInners moves all children of r, child i of parent, into l, child i−1; the parent's
// lower bound for r becomes the lower bound of r's first child within l.
func mergeInners(l, r, parent *inner, i int) {
	at := l.n
	l.n += moveChildren(l, at, r, 0, r.n)
	l.keys[at] = parent.keys[i]
	parent.counts[i-1] += parent.counts[i]
	parent.removeAt(i)
}

// lowerRoot replaces a root that has one child by that child.
func (t *Tree) lowerRoot() {
	t.height--
	if t.height == 0 {
		t.leaf = t.root.leaves[0]
		t.root = nil
		return
	}
	t.root = t.root.inners[0]
}

// Search returns a cursor at the first key whose Score and At do not rank before score and
// at, whatever its member; past the last key when there is none. Its Rank is then the rank
// that a new member reaching score at that instant would get, if it ranks after the members
// that tie with it. Search(s, math.MinInt64) finds the first key with score s or worse.
func (t *Tree) Search(score, at int64) Cursor {
	score ^= t.flip
	before := func(k Key) bool { return k.Score < score || (k.Score == score && k.At < at) }
	r := 0
	l := t.leaf
	if t.height > 0 {
		n := t.root
		for h := t.height; ; h-- {
			// The child to take is the last whose lower bound ranks before (score, at): keys
			// equal to the target may begin in the middle of it.
			lo, hi := 1, n.n
			for lo < hi {
				mid := int(uint(lo+hi) >> 1)
				if before(n.keys[mid]) {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			c := lo - 1
			for _, cnt := range n.counts[:c] {
				r += cnt
			}
			if h == 1 {
				l = n.leaves[c]
				break
			}
			n = n.inners[c]
		}
	}
	lo, hi := 0, l.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if before(l.keys[mid]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return t.cursor(l, lo, r+lo+1)
}

// Seek returns a cursor at the first key not less than k, or past the last key.
func (t *Tree) Seek(k Key) Cursor {
	var p path
	l, i := t.descend(t.stored(k), &p)
	return t.cursor(l, i, p.before()+i+1)
}

// CursorAt returns a cursor at the key of 1-based rank r; it is not Valid when r is out of
// 1…Len.
func (t *Tree) CursorAt(r int) Cursor {
	if r < 1 || r > t.len {
		return Cursor{t: t, rank: r}
	}
	l, i := t.leafAt(r - 1)
	return Cursor{t: t, leaf: l, i: i, rank: r}
}

// cursor returns a cursor at position i of l, moving to the next leaf when i is past l's end.
func (t *Tree) cursor(l *leaf, i, rank int) Cursor {
	if i == l.n {
		l, i = l.next, 0
	}
	return Cursor{t: t, leaf: l, i: i, rank: rank}
}
