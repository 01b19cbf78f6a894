package embedded

import (
	"cmp"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// idFilter answers, for an event id, "the store surely holds no record of it", so that a new
// id — nearly every id a submit brings — costs no read of the store. Reading an id's record
// that is not there costs a walk through every level of Pebble (about 4 µs, a third of the
// writer's time before this filter); the filter costs a few cache misses.
//
// It is a Bloom filter over the keys of the id records, in blocks of one cache line. It never
// forgets a key (a retracted id's bits stay: its next use reads the store, and finds nothing),
// so it never answers "surely not" for a key the store holds; a "maybe" costs the read it
// saves otherwise.
//
// It grows by stages: when the last Bloom filter is full, one more takes new keys. Each full
// stage adds its own false answers (0.6%), so once the stored ids have been scanned the writer
// rebuilds it into one filter twice as large as its keys (rebuildIDs): a scan of the stored
// ids in the background, from iterators opened between groups, with the ids of the events
// not sealed yet, while every key added meanwhile goes to both. The false answers then stay
// between 0.05% and 0.6% whatever the store holds, at 1.5 to 3 bytes an id; each costs a
// lookup in every run of ids (idruns.go).
//
// Open starts it empty and not ready, adds the ids of the events in the log, and scans the
// ids already stored in the background; the writer adds each id it stages. So it also answers
// for the events not sealed yet, and the id check asks it before searching them (txn.idGet).
// Until the scan ends, every id is searched for and read from the store, as before.
type idFilter struct {
	seed  maphash.Seed
	first int // the capacity of the first Bloom filter, and of the least a rebuild makes

	mu      sync.Mutex
	blooms  []*blockedBloom // oldest first; the last takes new keys
	next    *blockedBloom   // the filter being rebuilt, which takes new keys too
	rebuild bool            // the last Bloom filter filled: the writer should rebuild
	rebuilt int             // rebuilds done, for tests
	ready   atomic.Bool
}

func newIDFilter(first int) *idFilter {
	return &idFilter{seed: maphash.MakeSeed(), first: cmp.Or(first, bloomFirst)}
}

// bloomFirst is the capacity, in keys, of a filter's first Bloom filter: 192 KiB.
const bloomFirst = 1 << 17

// add notes that the store may hold a record with key k.
func (f *idFilter) add(k []byte) {
	h := maphash.Bytes(f.seed, k)
	f.mu.Lock()
	f.addHash(h)
	f.mu.Unlock()
}

// addHashes adds keys by their hashes, under one lock (a scan's batches): to the filter's
// Bloom filters, or only to into when it is set (a rebuild's).
func (f *idFilter) addHashes(hs []uint64, into *blockedBloom) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hs {
		if into != nil {
			into.add(h)
		} else {
			f.addHash(h)
		}
	}
}

func (f *idFilter) addHash(h uint64) {
	n := len(f.blooms)
	if n == 0 || f.blooms[n-1].full() {
		capacity := f.first
		if n > 0 && !f.ready.Load() {
			capacity = 4 * f.blooms[n-1].capacity // the scan at Open: as many as it finds
		} else if n > 0 {
			// Until the rebuild, which takes every key, a small stage takes the new ones.
			capacity = max(f.first, f.blooms[n-1].capacity/8)
			f.rebuild = true
		}
		f.blooms = append(f.blooms, newBlockedBloom(capacity))
	}
	f.blooms[len(f.blooms)-1].add(h)
	if f.next != nil {
		f.next.add(h)
	}
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

// load adds every id record db holds, then makes the filter ready, and asks for a rebuild if
// it took more than one Bloom filter. It stops early, leaving the filter not ready, when stop
// is closed or the scan fails (the store is closing): the filter then only ever answers
// "maybe".
func (f *idFilter) load(db *pebble.DB, stop <-chan struct{}) error {
	its, err := idIters(db)
	if err != nil {
		return err
	}
	done, err := f.scan(its, nil, stop)
	if err != nil || !done {
		return err
	}
	f.mu.Lock()
	f.rebuild = len(f.blooms) > 1
	f.mu.Unlock()
	f.ready.Store(true)
	return nil
}

// idIters opens iterators over the id records: those under I, and those of runs. Each sees
// the store as it was when opened, whatever is ingested or excised since (a merge of runs):
// a snapshot would not, as an excision takes its keys from snapshots too.
func idIters(db *pebble.DB) ([]*pebble.Iterator, error) {
	var its []*pebble.Iterator
	for _, tag := range []byte{tagID, tagIDRun} {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
		if err != nil {
			for _, it := range its {
				it.Close()
			}
			return nil, err
		}
		its = append(its, it)
	}
	return its, nil
}

// scan adds the keys of the id records its iterators (idIters) read, in batches, and closes
// them: those under I as they are, those of runs by the key they would have under I
// (idruns.go); to the filter's Bloom filters, or only to into when it is set. It reports
// whether it read them all: not when stop closed.
func (f *idFilter) scan(its []*pebble.Iterator, into *blockedBloom, stop <-chan struct{}) (done bool, err error) {
	defer func() {
		for _, it := range its {
			err = cmp.Or(err, it.Close())
		}
	}()
	batch := make([]uint64, 0, 4096)
	var buf []byte
	for _, it := range its {
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			if k[0] == tagIDRun {
				buf = idKeyOfRun(buf[:0], k)
				k = buf
			}
			batch = append(batch, maphash.Bytes(f.seed, k))
			if len(batch) == cap(batch) {
				f.addHashes(batch, into)
				batch = batch[:0]
				select {
				case <-stop:
					return false, nil
				default:
				}
			}
		}
		if err := it.Error(); err != nil {
			return false, err
		}
	}
	f.addHashes(batch, into)
	return true, nil
}

// rebuildIDs starts, in the writer between groups, the rebuild of the id filter into one Bloom
// filter when it asked for one. Every id with a record is then stored in what the iterators it
// opens read, or in the events not sealed yet (their seal ends in the writer), which it adds;
// every id staged from now on goes to the new filter as it is added.
func (s *Store) rebuildIDs() {
	f := s.ids
	if s.broken() || s.stopping() || !f.ready.Load() {
		return
	}
	f.mu.Lock()
	if !f.rebuild || f.next != nil {
		f.mu.Unlock()
		return
	}
	n := 0
	for _, b := range f.blooms {
		n += b.n
	}
	next := newBlockedBloom(max(f.first, 2*n))
	f.next = next
	f.mu.Unlock()
	var hs []uint64
	s.eachUnsealedID(func(k []byte, _ string, _ event) error {
		hs = append(hs, maphash.Bytes(f.seed, k))
		return nil
	})
	f.addHashes(hs, next)
	its, err := idIters(s.db)
	start := time.Now()
	s.loading.Go(func() {
		inBackground()
		done := false
		if err == nil {
			done, err = f.scan(its, next, s.stop)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.next = nil
		if err != nil || !done {
			if err != nil {
				s.log.Warn("rebuilding the event id filter failed; it keeps growing by stages", "err", err)
			}
			f.rebuild = false // asked again when its last stage fills
			return
		}
		f.blooms, f.rebuild = []*blockedBloom{next}, next.full()
		f.rebuilt++
		s.log.Debug("rebuilt the event id filter", "ids", next.n, "bytes", 8*len(next.words), "took", time.Since(start))
	})
}

// eachUnsealedID calls fn, in the writer, with the key of the id record of each event not
// sealed yet that has an id (those since the last seal, and those being sealed), until fn
// fails. The key, the board and the event's strings are valid only during the call.
func (s *Store) eachUnsealedID(fn func(k []byte, board string, ev event) error) error {
	var k []byte
	for _, r := range []*recentEvents{s.recent, s.sealing} {
		if r == nil {
			continue
		}
		for i := range r.list {
			if r.list[i].idh == 0 {
				continue
			}
			board, ev := r.view(int32(i))
			k = appendKey(k[:0], tagID, board, ev.id)
			if err := fn(k, board, ev); err != nil {
				return err
			}
		}
	}
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
