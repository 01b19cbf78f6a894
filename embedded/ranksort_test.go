package embedded_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/rank"
)

// TestSortKeys: the keys a tree is built from come out in rank order, as a comparison of
// score, subscore, reached_at and id puts them, in both orders, with no subscore or one of
// either order, for sets small and large (sorted by radix from radixSortMin keys): negative
// and huge scores, subscores and times, keys that differ only in one byte of any, and runs of
// full ties broken by id; through one scratch array reused, as Open's sorts are.
func TestSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	m := embedded.NewMembers()
	const members = 50_000
	for i := range members {
		m.Intern("m" + strconv.Itoa(rng.IntN(1e9)) + "-" + strconv.Itoa(i))
	}
	values := []func() int64{
		func() int64 { return rng.Int64N(5) },                                              // full ties by the thousand
		func() int64 { return rng.Int64() - rng.Int64() },                                  // any sign, any byte
		func() int64 { return 1_800_000_000_000 + rng.Int64N(7*86_400_000) },               // a week's times
		func() int64 { return int64(rng.Uint64()) >> (rng.IntN(64)) << (rng.IntN(8) * 8) }, // one byte differs
	}
	var scratch []rank.Key
	desc, asc := laurel.Desc, laurel.Asc
	for _, order := range []laurel.Order{laurel.Desc, laurel.Asc} {
		for _, sub := range []*laurel.Order{nil, &desc, &asc} {
			for _, n := range []int{0, 1, 7, 4095, 4096, 4097, 40_000} {
				score, at, subOf := values[rng.IntN(len(values))], values[rng.IntN(len(values))], values[rng.IntN(len(values))]
				keys := make([]rank.Key, n)
				for i := range keys {
					keys[i] = rank.Key{Score: score(), At: at(), Member: uint32(rng.IntN(members))}
					if sub != nil {
						keys[i].Sub = subOf()
					}
				}
				want := slices.Clone(keys)
				slices.SortFunc(want, func(x, y rank.Key) int {
					c := cmp.Compare(x.Score, y.Score)
					if order == laurel.Desc {
						c = -c
					}
					if c == 0 && sub != nil {
						if c = cmp.Compare(x.Sub, y.Sub); *sub == laurel.Desc {
							c = -c
						}
					}
					if c == 0 {
						c = cmp.Compare(x.At, y.At)
					}
					if c == 0 {
						c = strings.Compare(m.Name(x.Member), m.Name(y.Member))
					}
					return c
				})
				if sub == nil {
					flat := slices.Clone(keys)
					embedded.SortFlatKeys(order, m, flat)
					if !slices.Equal(flat, want) {
						t.Fatalf("order %v, %d keys: the flat keys Open sorts come out otherwise", order, n)
					}
				}
				embedded.SortKeys(order, sub, m, keys, &scratch)
				for i := range keys {
					if keys[i] != want[i] { // a member drawn twice with equal pairs: equal keys

						t.Fatalf("order %v, subscore %v, %d keys: key %d is %+v, want %+v", order, sub, n, i, keys[i], want[i])
					}
				}
			}
		}
	}
}
