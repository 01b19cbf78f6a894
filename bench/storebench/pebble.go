package main

import (
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

type pebbleStore struct{ db *pebble.DB }

// openPebble uses the settings laurel would: bloom filters (the "is this event
// id new?" read nearly always misses), a 64 MiB memtable and block cache.
func openPebble(dir string) (store, error) {
	cache := pebble.NewCache(64 << 20)
	defer cache.Unref()
	o := &pebble.Options{
		Cache:              cache,
		MemTableSize:       64 << 20,
		FormatMajorVersion: pebble.FormatNewest,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, o)
	return &pebbleStore{db}, err
}

func (s *pebbleStore) put(keys, vals [][]byte, sync bool) error {
	b := s.db.NewBatch()
	defer b.Close()
	for i := range keys {
		if err := b.Set(keys[i], vals[i], nil); err != nil {
			return err
		}
	}
	return b.Commit(&pebble.WriteOptions{Sync: sync})
}

func (s *pebbleStore) scan(prefix []byte, fn func([]byte)) error {
	o := &pebble.IterOptions{}
	if prefix != nil {
		o.LowerBound, o.UpperBound = prefix, append(prefix[:len(prefix):len(prefix)], 0xff)
	}
	it, err := s.db.NewIter(o)
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		fn(v)
	}
	return it.Close()
}

func (s *pebbleStore) close() error { return s.db.Close() }

// settle waits (a minute at most) until no flush or compaction has run for
// half a second, so a point is not slowed by the debt of the one before it.
// (Metrics' EstimatedDebt is no guide: it stays above zero while Pebble sees
// no reason to compact.)
func (s *pebbleStore) settle(flush bool) {
	if flush {
		s.db.Flush()
	}
	quiet := 0
	for deadline := time.Now().Add(time.Minute); quiet < 5 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if m := s.db.Metrics(); m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

func (s *pebbleStore) variants() []variant {
	return []variant{
		{"own batch per write, Sync (Pebble groups the fsyncs)", func(c int, d time.Duration, m int) result {
			// Reads go to the DB, not the batch: two writes to one member race.
			// The lost-update count shows what laurel would need per-key locks for.
			return closedLoop(c, d, m, func(w *write) error {
				b := s.db.NewBatch()
				defer b.Close()
				if err := w.apply(pebbleKV{s.db, b}); err != nil {
					return err
				}
				return b.Commit(pebble.Sync)
			})
		}},
		{"our group commit, one Sync batch per group", func(c int, d time.Duration, m int) result {
			return runGroup(c, d, m, func(ws []*write) func() error {
				b, err := s.applyGroup(ws)
				if err == nil {
					err = b.Commit(pebble.Sync)
				}
				return done(closeAfter(b, err))
			})
		}},
		{"our group commit, pipelined (ApplyNoSyncWait)", func(c int, d time.Duration, m int) result {
			// A group is visible once applied, before its fsync: the writer
			// builds the next group on it while the acker waits for the sync.
			return runGroup(c, d, m, func(ws []*write) func() error {
				b, err := s.applyGroup(ws)
				if err == nil {
					err = s.db.ApplyNoSyncWait(b, pebble.Sync)
				}
				if err != nil {
					return done(closeAfter(b, err))
				}
				return func() error { return closeAfter(b, b.SyncWait()) }
			})
		}},
	}
}

// applyGroup applies writes to an indexed batch, so each write reads what the
// writes before it in the group wrote.
func (s *pebbleStore) applyGroup(ws []*write) (*pebble.Batch, error) {
	b := s.db.NewIndexedBatch()
	for _, w := range ws {
		if err := w.apply(pebbleKV{b, b}); err != nil {
			return b, err
		}
	}
	return b, nil
}

func closeAfter(b *pebble.Batch, err error) error {
	b.Close()
	return err
}

type pebbleKV struct {
	r interface {
		Get([]byte) ([]byte, io.Closer, error)
	}
	b *pebble.Batch
}

func (k pebbleKV) get(key []byte) ([]byte, bool, error) {
	v, c, err := k.r.Get(key)
	if err == pebble.ErrNotFound {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	v = append([]byte(nil), v...) // valid only until c.Close
	return v, true, c.Close()
}

func (k pebbleKV) set(key, val []byte) error { return k.b.Set(key, val, nil) }
