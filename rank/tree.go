// Package rank is laurel's ordered index: an in-memory B+tree whose inner nodes know the size
// of each child's subtree, so that the rank of a key and the key at a rank each take one
// descent from the root, O(log n).
//
// Keys are small values stored inline in the nodes, up to 82 to a leaf, column by column, with
// no pointer per entry for the garbage collector to trace. A tree whose owner keeps its
// members' times (Options.TimeOf) stores none in its leaves: a key takes 12 bytes, a leaf one
// 1024-byte allocation; otherwise 20 bytes. A tree that ranks by subscores (Options.Sub) and
// asks its owner for them (Options.SubOf) stores none in its leaves either; one that does not
// rank by them stores nothing of them. A tree holds at most MaxLen keys.
//
// A Tree is not safe for concurrent use. Its read methods (Len, Has, Rank, At, Search, Seek,
// CursorAt and iteration with a Cursor) do not modify it, so any number of goroutines may read
// at once while no goroutine writes; every write (Insert, Delete, Update) must exclude all
// other access, and it invalidates every Cursor on the tree.
package rank

// Key orders one member of a ranking: by Score in the tree's direction, then by Sub in its
// own (in a tree with Options.Sub), then by At ascending (whoever got there first ranks
// higher), then by member.
type Key struct {
	Score int64 // the member's score
	// Sub is the member's subscore in a tree with Options.Sub. A tree without it ignores
	// Sub: its keys read back with 0.
	Sub    int64
	At     int64  // when it reached that score (laurel's reached_at, in unix milliseconds)
	Member uint32 // the member's handle, interned once per board
}

// Options configure a Tree.
type Options struct {
	// Desc ranks higher scores first; by default lower scores rank first.
	Desc bool
	// Sub ranks keys whose scores are equal by Key.Sub before their times: lower first, or
	// higher first with SubDesc.
	Sub, SubDesc bool
	// Tie orders two different members whose Score and At are equal, returning a negative
	// number when a ranks first. laurel orders them by the bytes of their ids, which handles
	// do not follow. Nil orders by handle. It must be a strict total order on handles.
	Tie func(a, b uint32) int
	// TimeOf, when set, gives the At of member's key, and the tree, which then holds at most
	// one key per member, does not store times in its leaves (keys.go): 8 bytes a key fewer.
	// The owner keeps every member's key anyway, to find it again. TimeOf must answer with
	// the time of the key the tree holds, or, during an Insert, of the key inserted: the
	// owner changes a member's time after the Delete of its old key and before the Insert of
	// its new one.
	TimeOf func(member uint32) int64
	// SubOf, which a tree with Sub and TimeOf needs, gives the Sub of member's key as TimeOf
	// gives its At, under the same rules: the tree does not store subscores in its leaves
	// either. Without TimeOf it is not asked.
	SubOf func(member uint32) int64
}

// A leaf holds keys in ascending order and links to its neighbours for iteration.
type leaf struct {
	n          int
	keys       keys
	prev, next *leaf
}

// newLeaf returns an empty leaf, with room for its keys' times unless the tree asks TimeOf.
func (t *Tree) newLeaf() *leaf {
	l := &leaf{}
	if t.timeOf == nil {
		l.keys.col = &columns{}
		if t.hasSub {
			l.keys.col.sub = new([fanout]int64)
		}
	}
	return l
}

// An inner node routes to n children. For i ≥ 1, key i is a lower bound of child i's keys
// that ranks after every key of child i−1; key 0 is unused. counts[i] is the number of keys
// under child i. Children are inners when the node is more than one level above the leaves,
// and leaves when it is just above them.
type inner struct {
	n      int
	keys   keys
	cols   columns       // the keys' times and subscores: keys.col points here
	counts [fanout]int32 // a tree holds fewer than 2^31 keys (Insert)
	inners [fanout]*inner
	leaves [fanout]*leaf
}

// newInner returns an empty inner node, with room for its keys' subscores in a tree that
// ranks by them.
func (t *Tree) newInner() *inner {
	n := &inner{}
	n.keys.col = &n.cols
	if t.hasSub {
		n.cols.sub = new([fanout]int64)
	}
	return n
}

// Tree is a counted B+tree of distinct Keys. The zero value is not usable; call New.
type Tree struct {
	flip    int64 // XORed into scores so that the stored order is always ascending
	subFlip int64 // and into subscores
	hasSub  bool  // Options.Sub
	tie     func(a, b uint32) int
	timeOf  func(member uint32) int64 // Options.TimeOf
	subOf   func(member uint32) int64 // Options.SubOf, when Sub and TimeOf are set
	height  int                       // inner levels above the leaves; 0 when the root is a leaf
	root    *inner                    // when height > 0
	leaf    *leaf                     // the root when height == 0
	first   *leaf                     // leftmost leaf, for iteration from rank 1
	last    *leaf                     // rightmost leaf
	len     int
}

// New returns an empty Tree.
func New(opts Options) *Tree {
	t := &Tree{tie: opts.Tie, timeOf: opts.TimeOf, hasSub: opts.Sub}
	if opts.Desc {
		// ^s reverses the order of int64 without overflow, unlike -s at math.MinInt64.
		t.flip = -1
	}
	if opts.Sub {
		if opts.SubDesc {
			t.subFlip = -1
		}
		if opts.TimeOf != nil {
			if opts.SubOf == nil {
				panic("rank: a tree with Sub and TimeOf needs SubOf")
			}
			t.subOf = opts.SubOf
		}
	}
	t.leaf = t.newLeaf()
	t.first, t.last = t.leaf, t.leaf
	return t
}

// Len returns the number of keys.
func (t *Tree) Len() int { return t.len }

// stored converts a caller's key to the tree's ascending form, and back (XOR is its own
// inverse). A tree without subscores keeps none: they read back as 0.
func (t *Tree) stored(k Key) Key {
	k.Score ^= t.flip
	if t.hasSub {
		k.Sub ^= t.subFlip
	} else {
		k.Sub = 0
	}
	return k
}

// step is one inner node on the way down and the child taken there.
type step struct {
	n *inner
	i int
}

// path is the route from the root to a leaf.
type path struct {
	steps [maxDepth]step
	depth int
}

// before returns the number of keys in the subtrees left of the route. At each node it adds
// up the counts on the shorter side of the child taken, subtracting from the node's total
// when that is the right side: half the memory to read, on average.
func (t *Tree) before(p *path) int {
	sum, total := 0, t.len
	for _, s := range p.steps[:p.depth] {
		if s.i <= s.n.n/2 {
			for _, c := range s.n.counts[:s.i] {
				sum += int(c)
			}
		} else {
			left := total
			for _, c := range s.n.counts[s.i:s.n.n] {
				left -= int(c)
			}
			sum += left
		}
		total = int(s.n.counts[s.i])
	}
	return sum
}

// descend walks to the leaf where the stored key k belongs, recording the route in p, and
// returns that leaf, the position of k's lower bound in it, and whether k is there.
func (t *Tree) descend(k Key, p *path) (*leaf, int, bool) {
	p.depth = 0
	l := t.leaf
	if t.height > 0 {
		n := t.root
		for h := t.height; ; h-- {
			// The child to take is the last whose lower bound does not rank after k.
			i := t.upperBound(&n.keys, 1, n.n, k) - 1
			p.steps[p.depth] = step{n, i}
			p.depth++
			if h == 1 {
				l = n.leaves[i]
				break
			}
			n = n.inners[i]
		}
	}
	i, found := t.leafFind(&l.keys, l.n, k)
	return l, i, found
}

// Has reports whether k is in the tree.
func (t *Tree) Has(k Key) bool {
	var p path
	_, _, found := t.descend(t.stored(k), &p)
	return found
}

// Rank returns the 1-based position of k, and false when k is not in the tree.
func (t *Tree) Rank(k Key) (int, bool) {
	var p path
	_, i, found := t.descend(t.stored(k), &p)
	if !found {
		return 0, false
	}
	return t.before(&p) + i + 1, true
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
	n, total := t.root, t.len
	for h := t.height; ; h-- {
		var c int
		if i < total/2 {
			for c = 0; i >= int(n.counts[c]); c++ {
				i -= int(n.counts[c])
			}
		} else {
			// From the right end, for positions in the upper half: fewer counts to read.
			rest := total - i // keys from position i to the end of n
			for c = n.n - 1; rest > int(n.counts[c]); c-- {
				rest -= int(n.counts[c])
			}
			i = int(n.counts[c]) - rest
		}
		if h == 1 {
			return n.leaves[c], i
		}
		n, total = n.inners[c], int(n.counts[c])
	}
}

// Insert adds k and reports whether it was not already there.
func (t *Tree) Insert(k Key) bool {
	k = t.stored(k)
	var p path
	l, i, found := t.descend(k, &p)
	if found {
		return false
	}
	if t.len == MaxLen {
		panic("rank: Insert into a tree of MaxLen keys")
	}
	t.len++
	for _, s := range p.steps[:p.depth] {
		s.n.counts[s.i]++
	}
	if l.n < fanout {
		l.keys.insertKey(i, l.n, k)
		l.n++
		return true
	}
	if p.depth > 0 && t.spill(l, i, k, &p) {
		return true
	}
	t.splitLeaf(l, i, k, &p)
	return true
}

// spill inserts k at position i of the full leaf l by passing l's first or last key to a
// sibling that has room, and reports whether one had. Splitting only when both neighbours are
// full keeps leaves about 80% full instead of 70%: memory is the budget that binds first.
func (t *Tree) spill(l *leaf, i int, k Key, p *path) bool {
	s := p.steps[p.depth-1]
	n, c := s.n, s.i
	if c > 0 && n.leaves[c-1].n < fanout {
		left := n.leaves[c-1]
		if i == 0 {
			left.keys.set(left.n, k) // k ranks after all of left: it was routed here
		} else {
			left.keys.set(left.n, t.key(&l.keys, 0))
			copyKeys(&l.keys, 0, &l.keys, 1, i)
			l.keys.set(i-1, k)
		}
		left.n++
		n.keys.set(c, t.key(&l.keys, 0))
		n.counts[c-1]++
		n.counts[c]--
		return true
	}
	if c+1 < n.n && n.leaves[c+1].n < fanout {
		right := n.leaves[c+1]
		if i == l.n {
			right.keys.insertKey(0, right.n, k) // k ranks before all of right
		} else {
			right.keys.insertKey(0, right.n, t.key(&l.keys, l.n-1))
			l.keys.insertKey(i, l.n-1, k)
		}
		right.n++
		n.keys.set(c+1, t.key(&right.keys, 0))
		n.counts[c]--
		n.counts[c+1]++
		return true
	}
	return false
}

// splitLeaf inserts k at position i of the full leaf l by moving its upper half to a new
// leaf, then links the new leaf into the parent, splitting inner nodes up the path as needed.
func (t *Tree) splitLeaf(l *leaf, i int, k Key, p *path) {
	r := t.newLeaf()
	r.prev, r.next = l, l.next
	if l.next != nil {
		l.next.prev = r
	} else {
		t.last = r
	}
	l.next = r

	// Of the fanout+1 keys, the left leaf keeps half and the right takes the rest.
	keep := (fanout + 1) / 2
	if i < keep {
		copyKeys(&r.keys, 0, &l.keys, keep-1, l.n)
		l.keys.insertKey(i, keep-1, k)
	} else {
		copyKeys(&r.keys, 0, &l.keys, keep, l.n)
		r.keys.insertKey(i-keep, l.n-keep, k)
	}
	r.n = fanout + 1 - keep
	l.n = keep

	if p.depth == 0 {
		t.growRoot(t.key(&r.keys, 0), int32(l.n), int32(r.n))
		t.root.leaves[0], t.root.leaves[1] = l, r
		return
	}
	s := p.steps[p.depth-1]
	s.n.counts[s.i] = int32(l.n)
	t.addChild(p, p.depth-1, t.key(&r.keys, 0), int32(r.n), nil, r)
}

// addChild inserts a child right of the one the route took at level d, with its lower bound
// sep and its count, splitting that node and its ancestors when they are full.
func (t *Tree) addChild(p *path, d int, sep Key, count int32, in *inner, lf *leaf) {
	for {
		n, at := p.steps[d].n, p.steps[d].i+1
		if n.n < fanout {
			n.insertAt(at, sep, count, in, lf)
			return
		}
		// Split n: the right half moves to a new node whose lower bound goes up a level.
		r := t.newInner()
		keep := (fanout + 1) / 2
		if at <= keep {
			r.n = moveChildren(r, 0, n, keep, n.n)
			n.n = keep
			n.insertAt(at, sep, count, in, lf)
		} else {
			r.n = moveChildren(r, 0, n, keep+1, n.n)
			n.n = keep + 1
			r.insertAt(at-keep-1, sep, count, in, lf)
		}
		up := t.key(&r.keys, 0)
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
func (t *Tree) growRoot(sep Key, left, right int32) {
	t.root = t.newInner()
	t.root.n = 2
	t.root.keys.set(1, sep)
	t.root.counts[0], t.root.counts[1] = left, right
	t.height++
	t.leaf = nil
}

// insertAt puts a child at index i of n, which has room for it.
func (n *inner) insertAt(i int, sep Key, count int32, in *inner, lf *leaf) {
	n.keys.insertKey(i, n.n, sep)
	copy(n.counts[i+1:n.n+1], n.counts[i:n.n])
	copy(n.inners[i+1:n.n+1], n.inners[i:n.n])
	copy(n.leaves[i+1:n.n+1], n.leaves[i:n.n])
	n.counts[i], n.inners[i], n.leaves[i] = count, in, lf
	n.n++
}

// removeAt takes child i out of n, clearing the freed slot so it holds no pointers.
func (n *inner) removeAt(i int) {
	copyKeys(&n.keys, i, &n.keys, i+1, n.n)
	copy(n.counts[i:], n.counts[i+1:n.n])
	copy(n.inners[i:], n.inners[i+1:n.n])
	copy(n.leaves[i:], n.leaves[i+1:n.n])
	n.n--
	n.inners[n.n], n.leaves[n.n] = nil, nil
}

// moveChildren copies children from…to of src into dst starting at index at, clears them in
// src, and returns the number moved.
func moveChildren(dst *inner, at int, src *inner, from, to int) int {
	copyKeys(&dst.keys, at, &src.keys, from, to)
	copy(dst.counts[at:], src.counts[from:to])
	copy(dst.inners[at:], src.inners[from:to])
	copy(dst.leaves[at:], src.leaves[from:to])
	clear(src.inners[from:to])
	clear(src.leaves[from:to])
	return to - from
}

// total returns the number of keys under n.
func (n *inner) total() int32 {
	var sum int32
	for _, c := range n.counts[:n.n] {
		sum += c
	}
	return sum
}

// Delete removes k and reports whether it was there.
func (t *Tree) Delete(k Key) bool {
	k = t.stored(k)
	var p path
	l, i, found := t.descend(k, &p)
	if !found {
		return false
	}
	t.deleteAt(l, i, &p)
	return true
}

// deleteAt removes key i of the leaf l, which p leads to.
func (t *Tree) deleteAt(l *leaf, i int, p *path) {
	t.len--
	for _, s := range p.steps[:p.depth] {
		s.n.counts[s.i]--
	}
	copyKeys(&l.keys, i, &l.keys, i+1, l.n)
	l.n--
	if l.n < minFill && p.depth > 0 {
		t.rebalanceLeaf(l, p)
	}
}

// Replace removes old and, when new falls strictly between two other keys of old's leaf,
// puts new in its place there, reporting placed. That is what most score changes of an
// active member are: a small step past a few neighbours. The move then costs one descent
// and a shift within the leaf, and no count or bound above the leaf changes. Otherwise old
// is only deleted, as by Delete, and the caller inserts new: in a tree with TimeOf, after
// changing the member's time, which must be old's during the call. found reports whether
// old was there; when it was not, nothing changes. new must not be in the tree, unless it
// equals old.
func (t *Tree) Replace(old, new Key) (placed, found bool) {
	old, new = t.stored(old), t.stored(new)
	var p path
	l, i, found := t.descend(old, &p)
	if !found {
		return false, false
	}
	j, clash := t.leafFind(&l.keys, l.n, new) // old is still at i, with its own time
	switch {
	case clash && j == i: // new equals old
		return true, true
	case !clash:
		to := j // new's place once old is out
		if j > i {
			to--
		}
		if p.depth == 0 || to > 0 && to < l.n-1 {
			if to > i {
				copyKeys(&l.keys, i, &l.keys, i+1, to+1)
			} else {
				copyKeys(&l.keys, to+1, &l.keys, to, i)
			}
			l.keys.set(to, new)
			return true, true
		}
	}
	t.deleteAt(l, i, &p)
	return false, true
}

// Update replaces old by new, as Delete then Insert, and reports whether old was there; when
// it was not, nothing changes. new must not be in the tree already, unless it equals old. In a
// tree with TimeOf, new has old's time: the owner changes a time between Delete and Insert.
func (t *Tree) Update(old, new Key) bool {
	if t.timeOf != nil && old.At != new.At {
		panic("rank: Update cannot change a key's time in a tree with TimeOf: Delete, change the time, Insert")
	}
	if t.subOf != nil && old.Sub != new.Sub {
		panic("rank: Update cannot change a key's subscore in a tree with SubOf: Delete, change it, Insert")
	}
	placed, found := t.Replace(old, new)
	if found && !placed {
		t.Insert(new)
	}
	return found
}

// rebalanceLeaf refills the underfull leaf l from a sibling, or merges it with one.
func (t *Tree) rebalanceLeaf(l *leaf, p *path) {
	s := p.steps[p.depth-1]
	n, i := s.n, s.i
	if i > 0 {
		left := n.leaves[i-1]
		if left.n > minFill {
			// Borrow the left sibling's greatest key; it becomes l's lower bound.
			left.n--
			l.keys.insertKey(0, l.n, t.key(&left.keys, left.n))
			l.n++
			n.keys.set(i, t.key(&l.keys, 0))
			n.counts[i-1]--
			n.counts[i]++
			return
		}
		t.mergeLeaves(left, l, n, i)
	} else {
		right := n.leaves[1]
		if right.n > minFill {
			l.keys.set(l.n, t.key(&right.keys, 0))
			l.n++
			copyKeys(&right.keys, 0, &right.keys, 1, right.n)
			right.n--
			n.keys.set(1, t.key(&right.keys, 0))
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
	copyKeys(&l.keys, l.n, &r.keys, 0, r.n)
	l.n += r.n
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
		if n.n >= minFill {
			return
		}
		parent, i := p.steps[d-1].n, p.steps[d-1].i
		if i > 0 {
			left := parent.inners[i-1]
			if left.n > minFill {
				// Rotate left's last child through the parent into n.
				last := left.n - 1
				n.insertAt(0, Key{}, left.counts[last], left.inners[last], left.leaves[last])
				n.keys.set(1, t.key(&parent.keys, i))
				parent.keys.set(i, t.key(&left.keys, last))
				parent.counts[i-1] -= n.counts[0]
				parent.counts[i] += n.counts[0]
				left.removeAt(last)
				return
			}
			mergeInners(left, n, parent, i)
		} else {
			right := parent.inners[1]
			if right.n > minFill {
				n.insertAt(n.n, t.key(&parent.keys, 1), right.counts[0], right.inners[0], right.leaves[0])
				parent.keys.set(1, t.key(&right.keys, 1))
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
	l.keys.set(at, parent.keys.get(i))
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

// Search returns a cursor at the first key whose Score, Sub and At do not rank before k's,
// whatever its member (k.Member is not read); past the last key when there is none. Its Rank
// is then the rank that a new member reaching k's score and subscore at that instant would
// get, if it ranks after the members that tie with it. Search(Key{Score: s, Sub: best, At:
// math.MinInt64}) finds the first key with score s or worse, best being the subscore that
// ranks first (any in a tree without subscores).
func (t *Tree) Search(k Key) Cursor {
	k = t.stored(k)
	var p path
	l := t.leaf
	if t.height > 0 {
		n := t.root
		for h := t.height; ; h-- {
			// The child to take is the last whose lower bound ranks before (score, at):
			// keys equal to the target may begin in the middle of it.
			i := t.searchBound(&n.keys, 1, n.n, k) - 1
			p.steps[p.depth] = step{n, i}
			p.depth++
			if h == 1 {
				l = n.leaves[i]
				break
			}
			n = n.inners[i]
		}
	}
	i := t.searchBound(&l.keys, 0, l.n, k)
	return t.cursor(l, i, t.before(&p)+i+1)
}

// Seek returns a cursor at the first key not less than k, or past the last key.
func (t *Tree) Seek(k Key) Cursor {
	var p path
	l, i, _ := t.descend(t.stored(k), &p)
	return t.cursor(l, i, t.before(&p)+i+1)
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
