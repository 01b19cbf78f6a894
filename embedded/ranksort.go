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
