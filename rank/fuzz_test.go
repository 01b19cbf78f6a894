package rank_test

import (
	"testing"

	"github.com/laurel/laurel/rank"
)

// FuzzTree drives a tree and the oracle with operations decoded from the fuzzer's bytes, three
// to an operation: the kind, then two bytes from which the key is taken. Keys come from a
// small space so that ties, repeated inserts and deletes of absent keys are frequent.
func FuzzTree(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 3, 4, 1, 1, 2, 3, 0, 0})
	f.Add(make([]byte, 3*300))
	grow := make([]byte, 0, 3*500)
	for i := range 500 {
		grow = append(grow, 0, byte(i), byte(i>>8))
	}
	f.Add(grow)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range []int{1, 2, 4, 6, 7, 8} { // desc, desc-tie, desc-timeof, and three with subscores
			opts, times := withTimes(configs[cfg].opts, configs[cfg].timeOf)
			tr := newTree(t, opts)
			o := &oracle{opts: configs[cfg].opts}
			for i := 0; i+3 <= len(data); i += 3 {
				v := uint16(data[i+1]) | uint16(data[i+2])<<8
				k := rank.Key{Score: int64(v%37) - 18, At: int64(v / 37 % 3), Member: uint32(v % 601)}
				if configs[cfg].opts.Sub {
					k.Sub = int64(v/111%3) - 1
				}
				switch data[i] % 7 {
				case 0, 1:
					if times != nil {
						if _, ok := times[k.Member]; ok {
							continue // with TimeOf, one key per member
						}
						times[k.Member] = k
					}
					if got, want := tr.Insert(k), o.insert(k); got != want {
						t.Fatalf("Insert(%+v) = %v, want %v", k, got, want)
					}
				case 2:
					got, want := tr.Delete(k), o.delete(k)
					if got != want {
						t.Fatalf("Delete(%+v) = %v, want %v", k, got, want)
					}
					if want && times != nil {
						delete(times, k.Member)
					}
				case 3:
					idx, found := o.find(k)
					if r, ok := tr.Rank(k); ok != found || (ok && r != idx+1) {
						t.Fatalf("Rank(%+v) = %d, %v; want %d, %v", k, r, ok, idx+1, found)
					}
				case 4:
					r := int(v)%(len(o.keys)+2) - 1 + 1
					got, ok := tr.At(r)
					if want := r >= 1 && r <= len(o.keys); ok != want || (ok && got != o.keys[r-1]) {
						t.Fatalf("At(%d) = %+v, %v", r, got, ok)
					}
				case 5:
					if c, want := tr.Search(k), o.search(k)+1; c.Rank() != want {
						t.Fatalf("Search(%+v).Rank() = %d, want %d", k, c.Rank(), want)
					}
				case 6:
					// A key present moves to k's score and time, as a member's score changes.
					if len(o.keys) == 0 {
						continue
					}
					old := o.keys[int(v)%len(o.keys)]
					k.Member = old.Member
					if _, clash := o.find(k); clash && k != old {
						continue
					}
					o.delete(old)
					o.insert(k)
					placed, found := tr.Replace(old, k)
					if !found {
						t.Fatalf("Replace(%+v, %+v) did not find the old key", old, k)
					}
					if times != nil {
						times[k.Member] = k
					}
					if !placed && !tr.Insert(k) {
						t.Fatalf("Insert(%+v) after Replace = false", k)
					}
				}
			}
			if err := tr.Check(); err != nil {
				t.Fatal(err)
			}
			h := harness{t: t, tr: tr, o: o}
			h.compareAll()
		}
	})
}
