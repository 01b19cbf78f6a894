package embedded

import (
	"cmp"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// idFilter answers, for an event id, "the store surely holds no record of it", so that a new
// id — nearly every id a submit brings — costs no read of the store. Reading an id's record
// that is not there costs a walk through every level of Pebble (about 4 µs, a third of the
// writer's time before this filter); the filter costs a few cache misses.
//
// It is a Bloom filter over the keys of the id records, in blocks of one cache line, grown by
// adding a filter four times as large as the last when the last is full. It never forgets a
// key (a retracted id's bits stay: its next use reads the store, and finds nothing), so it
// never answers "surely not" for a key the store holds; a "maybe" costs the read it saves
// otherwise, about one new id in a hundred.
//
// Open starts it empty and not ready, adds the ids of the events in the log, and scans the
// ids already stored in the background; the writer adds each id it stages. So it also answers
// for the events not sealed yet, and the id check asks it before searching them (txn.idGet).
// Until the scan ends, every id is searched for and read from the store, as before. Memory:
// 12 bits an id (1.5 bytes), for as many ids as the store holds.
type idFilter struct {
	seed maphash.Seed

	mu     sync.Mutex
	blooms []*blockedBloom // oldest first; the last takes new keys
	ready  atomic.Bool
}

func newIDFilter() *idFilter { return &idFilter{seed: maphash.MakeSeed()} }

// bloomFirst is the capacity, in keys, of a filter's first Bloom filter: 192 KiB.
const bloomFirst = 1 << 17

// add notes that the store may hold a record with key k.
func (f *idFilter) add(k []byte) {
	h := maphash.Bytes(f.seed, k)
	f.mu.Lock()
	f.addHash(h)
	f.mu.Unlock()
}

// addHashes adds keys by their hashes, under one lock (the background scan's batches).
func (f *idFilter) addHashes(hs []uint64) {
	f.mu.Lock()
	for _, h := range hs {
		f.addHash(h)
	}
	f.mu.Unlock()
}

func (f *idFilter) addHash(h uint64) {
	n := len(f.blooms)
	if n == 0 || f.blooms[n-1].full() {
		capacity := bloomFirst
		if n > 0 {
			capacity = 4 * f.blooms[n-1].capacity
		}
		f.blooms = append(f.blooms, newBlockedBloom(capacity))
	}
	f.blooms[len(f.blooms)-1].add(h)
}

// absent reports whether the store surely holds no record with key k: false until the scan of
// the stored ids has ended.
func (f *idFilter) absent(k []byte) bool {
	if !f.ready.Load() {
		return false
	}
	h := maphash.Bytes(f.seed, k)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.blooms {
		if b.has(h) {
			return false
		}
	}
	return true
}

// bytes is the filter's memory.
func (f *idFilter) bytes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.blooms {
		n += 8 * len(b.words)
	}
	return n
}

// load adds every id record db holds, in batches, then makes the filter ready: those under I
// as they are, those of runs by the key they would have under I (idruns.go). It stops early,
// leaving the filter not ready, when stop is closed or the scan fails (the store is closing):
// the filter then only ever answers "maybe".
func (f *idFilter) load(db *pebble.DB, stop <-chan struct{}) error {
	batch := make([]uint64, 0, 4096)
	var buf []byte
	for _, tag := range []byte{tagID, tagIDRun} {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			if tag == tagIDRun {
				buf = idKeyOfRun(buf[:0], k)
				k = buf
			}
			batch = append(batch, maphash.Bytes(f.seed, k))
			if len(batch) == cap(batch) {
				f.addHashes(batch)
				batch = batch[:0]
				select {
				case <-stop:
					return it.Close()
				default:
				}
			}
		}
		if err := cmp.Or(it.Error(), it.Close()); err != nil {
			return err
		}
	}
	f.addHashes(batch)
	f.ready.Store(true)
	return nil
}

// blockedBloom is a blocked Bloom filter: each key sets bloomProbes bits of one 512-bit block,
// chosen by its hash, so a lookup touches one cache line. At 12 bits a key, about 0.6% of the
// keys it has not seen are reported as seen.
type blockedBloom struct {
	words    []uint64
	blocks   uint64
	capacity int
	n        int
}

const (
	bloomBitsPerKey = 12
	bloomProbes     = 8
	bloomBlockWords = 8 // 512 bits
)

func newBlockedBloom(capacity int) *blockedBloom {
	blocks := (capacity*bloomBitsPerKey + 511) / 512
	return &blockedBloom{words: make([]uint64, blocks*bloomBlockWords), blocks: uint64(blocks), capacity: capacity}
}

func (b *blockedBloom) full() bool { return b.n >= b.capacity }

// block returns the index of h's block's first word, and the two hashes that choose its
// bits (double hashing). The block comes from a remix of h, so that keys sharing a block do
// not share the bits that pick their probes.
func (b *blockedBloom) block(h uint64) (base int, h1, h2 uint32) {
	hi, _ := bits.Mul64(h*0x9e3779b97f4a7c15, b.blocks)
	return int(hi) * bloomBlockWords, uint32(h), uint32(h>>32) | 1
}

func (b *blockedBloom) add(h uint64) {
	base, h1, h2 := b.block(h)
	for i := range uint32(bloomProbes) {
		p := (h1 + i*h2) & 511
		b.words[base+int(p>>6)] |= 1 << (p & 63)
	}
	b.n++
}

func (b *blockedBloom) has(h uint64) bool {
	base, h1, h2 := b.block(h)
	for i := range uint32(bloomProbes) {
		p := (h1 + i*h2) & 511
		if b.words[base+int(p>>6)]&(1<<(p&63)) == 0 {
			return false
		}
	}
	return true
}
