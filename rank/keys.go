package rank

// fanout is the capacity of every node: as many keys as fill a leaf's size class. A leaf of 82
// keys with its header is 1016 bytes, in Go's 1024-byte size class (and 656 more for its times
// in a tree without TimeOf); an inner node, whose counts of keys are 32 bits (so MaxLen), is
// 3296 bytes, in the 3456-byte class. At 75 a leaf left 92 bytes of its class unused: 1.2 of
// the 17 bytes a key of a tree built by random inserts.
const (
	fanout   = 82
	minFill  = fanout / 2 // every node but the root holds at least this many
	maxDepth = 12         // inner levels: far more than fanout/2 to the 12th keys
)

// MaxLen is the most keys a tree holds: 2^31−1, as a Redis sorted set holds 2^32−1.
const MaxLen = 1<<31 - 1

// keys stores up to fanout keys column by column: a search compares scores, 8 bytes apart,
// and reads times and members only on ties.
//
// Inner nodes keep their keys' times (a separator is a copy of a key that may have changed
// since). Leaves of a tree with Options.TimeOf do not: a leaf key is its member's entry, whose
// time the owner holds anyway, so it takes 12 bytes instead of 20. Without TimeOf, leaves
// keep their times in an array of their own.
//
// Subscores (Options.Sub) are kept the same way, and only in trees that rank by them: inner
// nodes keep copies beside their times, leaves ask Options.SubOf with TimeOf, or keep them
// beside their times without. Both hang off the one pointer col, so that a leaf stays 1016
// bytes and, with the 8-byte header Go puts before an object of more than 512 bytes that
// holds pointers, fills the 1024-byte size class (one pointer more took it to 1152: 12% more
// bytes a key).
type keys struct {
	score  [fanout]int64
	member [fanout]uint32
	col    *columns // nil: ask Options.TimeOf (and SubOf)
}

// columns are the times and subscores of a node's keys, where the node keeps them: in every
// inner node, and in the leaves of a tree without TimeOf.
type columns struct {
	at  [fanout]int64
	sub *[fanout]int64 // in stored form; nil in a tree without subscores
}

// atOf returns the time of key i.
func (t *Tree) atOf(ks *keys, i int) int64 {
	if ks.col != nil {
		return ks.col.at[i]
	}
	return t.timeOf(ks.member[i])
}

// subAt returns the subscore of key i in stored form: 0 in a tree without subscores.
func (t *Tree) subAt(ks *keys, i int) int64 {
	if c := ks.col; c != nil {
		if c.sub != nil {
			return c.sub[i]
		}
		return 0
	}
	if t.subOf != nil {
		return t.subOf(ks.member[i]) ^ t.subFlip
	}
	return 0
}

// key returns key i of ks, in stored form.
func (t *Tree) key(ks *keys, i int) Key {
	return Key{Score: ks.score[i], Sub: t.subAt(ks, i), At: t.atOf(ks, i), Member: ks.member[i]}
}

// get returns key i of a node that keeps its times and subscores: an inner node.
func (ks *keys) get(i int) Key {
	k := Key{Score: ks.score[i], At: ks.col.at[i], Member: ks.member[i]}
	if ks.col.sub != nil {
		k.Sub = ks.col.sub[i]
	}
	return k
}

func (ks *keys) set(i int, k Key) {
	ks.score[i], ks.member[i] = k.Score, k.Member
	if c := ks.col; c != nil {
		c.at[i] = k.At
		if c.sub != nil {
			c.sub[i] = k.Sub
		}
	}
}

// copyKeys copies src[from:to] to dst[at:], like the built-in copy; src and dst may be the
// same array and the ranges may overlap. Both are inner nodes, or leaves of one tree.
func copyKeys(dst *keys, at int, src *keys, from, to int) {
	copy(dst.score[at:], src.score[from:to])
	if c := dst.col; c != nil {
		copy(c.at[at:], src.col.at[from:to])
		if c.sub != nil {
			copy(c.sub[at:], src.col.sub[from:to])
		}
	}
	copy(dst.member[at:], src.member[from:to])
}

// insertKey opens a slot at i in the first n keys and puts k there.
func (ks *keys) insertKey(i, n int, k Key) {
	copyKeys(ks, i+1, ks, i, n)
	ks.set(i, k)
}

// lessOnTie reports whether the key at i ranks before k when their scores are equal. It is
// out of line so that the searches stay tight: equal scores are the rare case.
//
//go:noinline
func (t *Tree) lessOnTie(ks *keys, i int, k Key) bool {
	if t.hasSub {
		if s := t.subAt(ks, i); s != k.Sub {
			return s < k.Sub
		}
	}
	if a := t.atOf(ks, i); a != k.At {
		return a < k.At
	}
	return t.memberLess(ks.member[i], k.Member)
}

// greaterOnTie reports whether k ranks before the key at i when their scores are equal.
//
//go:noinline
func (t *Tree) greaterOnTie(ks *keys, i int, k Key) bool {
	if t.hasSub {
		if s := t.subAt(ks, i); s != k.Sub {
			return s > k.Sub
		}
	}
	if a := t.atOf(ks, i); a != k.At {
		return a > k.At
	}
	return t.memberLess(k.Member, ks.member[i])
}

// memberLess breaks ties between members.
func (t *Tree) memberLess(a, b uint32) bool {
	if t.tie == nil || a == b {
		return a < b
	}
	return t.tie(a, b) < 0
}

// scoreRange returns [lo, hi): the keys among the first n of ks whose score is s, comparing
// scores alone.
func scoreRange(ks *keys, n int, s int64) (lo, hi int) {
	lo, hi = 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ks.score[mid] < s {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	end := n
	for i := lo; i < end; {
		mid := int(uint(i+end) >> 1)
		if ks.score[mid] == s {
			i = mid + 1
		} else {
			end = mid
		}
	}
	return lo, end
}

// leafFind returns the index of the stored key k among the first n keys of a leaf and true,
// or the index where k would go and false. It reads times only among the keys whose score
// ties with k's: a present key is found there by its member (one time read, its own, to
// confirm it), and a new key's place among them is tried at their end first, where a key
// with the latest time goes (in sum mode, nearly every new key). In a tree with TimeOf a time
// read is a lookup in its owner's memory, likely a cache miss: boards with low scores tie by
// the thousand, and this is most of what a write's descents cost there.
func (t *Tree) leafFind(ks *keys, n int, k Key) (int, bool) {
	lo, hi := scoreRange(ks, n, k.Score)
	for j := lo; j < hi; j++ {
		if ks.member[j] == k.Member && t.atOf(ks, j) == k.At && (!t.hasSub || t.subAt(ks, j) == k.Sub) {
			return j, true
		}
	}
	switch {
	case lo == hi:
		return lo, false
	case t.lessOnTie(ks, hi-1, k):
		return hi, false
	}
	return t.lowerBound(ks, lo, hi-1, k), false
}

// lowerBound returns the first index in [lo, hi) whose key does not rank before k, or hi.
func (t *Tree) lowerBound(ks *keys, lo, hi int, k Key) int {
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s := ks.score[mid]; s < k.Score || s == k.Score && t.lessOnTie(ks, mid, k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// upperBound returns the first index in [lo, hi) whose key ranks after k, or hi.
func (t *Tree) upperBound(ks *keys, lo, hi int, k Key) int {
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s := ks.score[mid]; s > k.Score || s == k.Score && t.greaterOnTie(ks, mid, k) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// searchBound returns the first index in [lo, hi) whose score, subscore and time do not rank
// before k's, whatever the member, or hi; k is in stored form.
func (t *Tree) searchBound(ks *keys, lo, hi int, k Key) int {
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s := ks.score[mid]; s < k.Score || s == k.Score && t.beforeOnTie(ks, mid, k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// beforeOnTie reports whether the key at i ranks before k's subscore and time when their
// scores are equal, whatever the members: Search's order.
//
//go:noinline
func (t *Tree) beforeOnTie(ks *keys, i int, k Key) bool {
	if t.hasSub {
		if s := t.subAt(ks, i); s != k.Sub {
			return s < k.Sub
		}
	}
	return t.atOf(ks, i) < k.At
}

// keyLess reports whether a ranks before b, both in stored form: less, for keys not in nodes.
func (t *Tree) keyLess(a, b Key) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	if t.hasSub && a.Sub != b.Sub {
		return a.Sub < b.Sub
	}
	if a.At != b.At {
		return a.At < b.At
	}
	return t.memberLess(a.Member, b.Member)
}
