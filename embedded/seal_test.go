package embedded_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/laurel/laurel/embedded"
)

// TestSortRun: a seal's records go to a table in the order of their keys' bytes, equal keys
// in the order they came (the table keeps the last). The sort compares 8 bytes past the keys'
// shared prefix as a number first; keys that differ only after them, or in length within
// them, or in zero bytes, must still sort as bytes do.
func TestSortRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 5))
	for round := range 200 {
		prefix := []byte("N\x00board\x00")[:rng.IntN(9)]
		alphabet := []byte{0, 1, 'a', 'b', 0xff}
		var records [][2][]byte
		for i := range 1 + rng.IntN(300) {
			k := slices.Clone(prefix)
			for range rng.IntN(14) {
				k = append(k, alphabet[rng.IntN(len(alphabet))])
			}
			if len(records) > 0 && rng.IntN(8) == 0 { // a key again
				k = slices.Clone(records[rng.IntN(len(records))][0])
			}
			records = append(records, [2][]byte{k, {byte(i), byte(i >> 8)}})
		}
		want := slices.Clone(records)
		slices.SortStableFunc(want, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
		got := embedded.NewSortedRun(records).Sort()
		if !slices.EqualFunc(got, want, func(a, b [2][]byte) bool { return bytes.Equal(a[0], b[0]) && bytes.Equal(a[1], b[1]) }) {
			t.Fatalf("round %d: sorted\n%q\nwant\n%q", round, got, want)
		}
	}
}

// BenchmarkSortRun sorts a seal's member index: 65536 events of members drawn with laurel
// bench's skew from 1M. It times the sort alone, not the making of the run.
func BenchmarkSortRun(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 1_000_000-1)
	records := make([][2][]byte, 65536)
	for i := range records {
		k := fmt.Appendf(nil, "N\x00bench\x00m%07d\x00", zipf.Uint64())
		k = binary.BigEndian.AppendUint64(k, uint64(i))
		records[i] = [2][]byte{k, nil}
	}
	for b.Loop() {
		b.StopTimer()
		run := embedded.NewSortedRun(records)
		b.StartTimer()
		run.SortOnly()
	}
}
