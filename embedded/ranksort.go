package embedded

import (
	"cmp"
	"slices"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// radixSortMin is the fewest keys sortKeys sorts by radix: below it a comparison sort is as
// quick, and needs no second array.
const radixSortMin = 1 << 12

// sortKeys puts keys in the board's rank order, reading member ids only on full ties. Large
// sets (a span's tree built at Open or at a period's close: millions of keys) are sorted by
// radix on score, subscore and reached_at, then each run of equal triples by id: a comparison
// sort through a function was most of building a tree (docs/benchmarks.md, "Restart and
// replay"). On a board without a subscore every key's is 0, a digit the radix sort skips. The
// radix sort moves keys through a second array: scratch's, when it is large enough, else one
// made and left in scratch (when not nil) for the next sort.
func sortKeys(b *board, keys []rank.Key, scratch *[]rank.Key) {
	o := b.cfg.Ordering()
	if len(keys) < radixSortMin {
		slices.SortFunc(keys, func(x, y rank.Key) int {
			if x.Score != y.Score || x.Sub != y.Sub {
				if o.Better(x.Score, x.Sub, y.Score, y.Sub) {
					return -1
				}
				return 1
			}
			if x.At != y.At {
				return cmp.Compare(x.At, y.At)
			}
			return b.members.tie(x.Member, y.Member)
		})
		return
	}
	radixSortKeys(keys, o.Score == laurel.Desc, o.HasSub && o.Sub == laurel.Desc, scratch)
	tie := func(x, y rank.Key) int { return b.members.tie(x.Member, y.Member) }
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].Score == keys[i].Score && keys[j].Sub == keys[i].Sub && keys[j].At == keys[i].At {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(keys[i:j], tie)
		}
		i = j
	}
}

// radixKey maps a key's reached_at, subscore and score to three unsigned words whose order
// (score's word first, reached_at's last) is the rank order without ties: the sign bit
// flipped makes signed order unsigned, and a descending order is complemented.
func radixKey(k *rank.Key, desc, subDesc bool) [3]uint64 {
	score, sub := uint64(k.Score)^1<<63, uint64(k.Sub)^1<<63
	if desc {
		score = ^score
	}
	if subDesc {
		sub = ^sub
	}
	return [3]uint64{uint64(k.At) ^ 1<<63, sub, score}
}

// radixSortKeys sorts keys by score, subscore and reached_at (radixKey), stably, a byte at a
// time from the lowest, skipping the bytes every key shares (most of them: scores are small,
// reached_at values near each other, and subscores all 0 on most boards), through scratch
// (sortKeys).
func radixSortKeys(keys []rank.Key, desc, subDesc bool, scratch *[]rank.Key) {
	if len(keys) < 2 {
		return
	}
	// digit d is byte d%8 of word d/8: reached_at's, the subscore's, the score's.
	w0 := radixKey(&keys[0], desc, subDesc)
	var differ [3]uint64
	for i := range keys {
		w := radixKey(&keys[i], desc, subDesc)
		for j := range w {
			differ[j] |= w[j] ^ w0[j]
		}
	}
	var digits []int
	for d := range 24 {
		if byte(differ[d/8]>>(8*(d%8))) != 0 {
			digits = append(digits, d)
		}
	}
	if len(digits) == 0 {
		return
	}
	counts := make([][256]int, len(digits))
	for i := range keys {
		w := radixKey(&keys[i], desc, subDesc)
		for j, d := range digits {
			counts[j][byte(w[d/8]>>(8*(d%8)))]++
		}
	}
	var dst []rank.Key
	if scratch != nil && cap(*scratch) >= len(keys) {
		dst = (*scratch)[:len(keys)]
	} else {
		dst = make([]rank.Key, len(keys))
		if scratch != nil {
			*scratch = dst
		}
	}
	src := keys
	for j, d := range digits {
		c := &counts[j]
		sum := 0
		for v := range c {
			c[v], sum = sum, sum+c[v]
		}
		shift, word := 8*(d%8), d/8
		for i := range src {
			v := byte(radixKey(&src[i], desc, subDesc)[word] >> shift)
			dst[c[v]] = src[i]
			c[v]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}

// flatKey is a tree's key as Open sorts it for a board without a subscore: 24 bytes where a
// rank.Key, with its subscore, takes 32, in arrays as large as the largest span (two a core).
type flatKey struct {
	score, at int64
	member    uint32
}

// loadFlatTree builds the tree of sp, a span of b, which has no subscore, from keys, which it
// sorts (through scratch: sortFlatKeys); sp holds their aggregates.
func loadFlatTree(b *board, sp *span, keys []flatKey, scratch *[]flatKey) *rank.Tree {
	sortFlatKeys(b, keys, scratch)
	t, err := rank.LoadFunc(b.treeOptions(sp), len(keys), func(i int) rank.Key {
		k := &keys[i]
		return rank.Key{Score: k.score, At: k.at, Member: k.member}
	})
	if err != nil {
		panic("embedded: " + err.Error())
	}
	return t
}

// sortFlatKeys is sortKeys for a board without a subscore, over flat keys: by radix on score
// and reached_at, then each run of equal pairs by id.
func sortFlatKeys(b *board, keys []flatKey, scratch *[]flatKey) {
	desc := b.cfg.Order == laurel.Desc
	if len(keys) < radixSortMin {
		slices.SortFunc(keys, func(x, y flatKey) int {
			if x.score != y.score {
				if (x.score > y.score) == desc {
					return -1
				}
				return 1
			}
			if x.at != y.at {
				return cmp.Compare(x.at, y.at)
			}
			return b.members.tie(x.member, y.member)
		})
		return
	}
	radixSortFlat(keys, desc, scratch)
	tie := func(x, y flatKey) int { return b.members.tie(x.member, y.member) }
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j].score == keys[i].score && keys[j].at == keys[i].at {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(keys[i:j], tie)
		}
		i = j
	}
}

// flatRadix maps a flat key's score and reached_at to two unsigned words whose order (score's
// word first) is the rank order without ties, as radixKey does.
func flatRadix(k *flatKey, desc bool) (score, at uint64) {
	score = uint64(k.score) ^ 1<<63
	if desc {
		score = ^score
	}
	return score, uint64(k.at) ^ 1<<63
}

// radixSortFlat is radixSortKeys over flat keys: two words, not three.
func radixSortFlat(keys []flatKey, desc bool, scratch *[]flatKey) {
	if len(keys) < 2 {
		return
	}
	// digit d is byte d of reached_at for d < 8, byte d-8 of the score after.
	s0, a0 := flatRadix(&keys[0], desc)
	var differ [2]uint64
	for i := range keys {
		s, a := flatRadix(&keys[i], desc)
		differ[0] |= a ^ a0
		differ[1] |= s ^ s0
	}
	var digits []int
	for d := range 16 {
		if byte(differ[d/8]>>(8*(d%8))) != 0 {
			digits = append(digits, d)
		}
	}
	if len(digits) == 0 {
		return
	}
	counts := make([][256]int, len(digits))
	for i := range keys {
		s, a := flatRadix(&keys[i], desc)
		w := [2]uint64{a, s}
		for j, d := range digits {
			counts[j][byte(w[d/8]>>(8*(d%8)))]++
		}
	}
	var dst []flatKey
	if scratch != nil && cap(*scratch) >= len(keys) {
		dst = (*scratch)[:len(keys)]
	} else {
		dst = make([]flatKey, len(keys))
		if scratch != nil {
			*scratch = dst
		}
	}
	src := keys
	for j, d := range digits {
		c := &counts[j]
		sum := 0
		for v := range c {
			c[v], sum = sum, sum+c[v]
		}
		shift, word := 8*(d%8), d/8
		for i := range src {
			s, a := flatRadix(&src[i], desc)
			w := a
			if word == 1 {
				w = s
			}
			v := byte(w >> shift)
			dst[c[v]] = src[i]
			c[v]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
