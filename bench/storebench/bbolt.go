package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

var bucket = []byte("laurel")

type boltStore struct {
	db             *bolt.DB
	noFreelistSync bool
}

// openBolt returns an opener. noFreelistSync keeps the freelist out of every
// commit, but then Open rebuilds it by reading every page of the file
// (-stores bbolt-nofreelistsync measures it). The map freelist allocates in
// O(1) from a large freelist. A large initial mmap avoids remapping, which
// blocks readers, as the file grows.
func openBolt(noFreelistSync bool) func(dir string) (store, error) {
	return func(dir string) (store, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "laurel.db")
		if err := prewarm(path); err != nil {
			return nil, err
		}
		db, err := bolt.Open(path, 0o644, &bolt.Options{
			NoFreelistSync:  noFreelistSync,
			FreelistType:    bolt.FreelistMapType,
			InitialMmapSize: 8 << 30,
		})
		if err != nil {
			return nil, err
		}
		err = db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(bucket)
			return err
		})
		return &boltStore{db, noFreelistSync}, err
	}
}

// prewarm reads the file once, sequentially, into the page cache. bbolt
// advises the kernel that its mmap is read at random, so a cold ordered scan
// would fault in one 4 KiB page at a time: 20 s for 10M records here.
func prewarm(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, bufio.NewReaderSize(f, 1<<20))
	return err
}

func (s *boltStore) put(keys, vals [][]byte, sync bool) error {
	s.db.NoSync = !sync
	defer func() { s.db.NoSync = false }()
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for i := range keys {
			if err := b.Put(keys[i], vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *boltStore) scan(prefix []byte, fn func([]byte)) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			fn(v)
		}
		return nil
	})
}

func (s *boltStore) close() error { return s.db.Close() }
func (s *boltStore) settle(bool)  {} // nothing runs in the background

func (s *boltStore) variants() []variant {
	vs := []variant{
		{"our group commit, one Update per group", func(c int, d time.Duration, m int) result {
			return runGroup(c, d, m, func(ws []*write) func() error {
				return done(s.db.Update(func(tx *bolt.Tx) error {
					for _, w := range ws {
						if err := w.apply(boltKV{tx.Bucket(bucket)}); err != nil {
							return err
						}
					}
					return nil
				}))
			})
		}},
	}
	if s.noFreelistSync { // the commit path is all this setting changes
		return vs
	}
	return append(vs, variant{"db.Batch (defaults: 1000 writes or 10 ms)", func(c int, d time.Duration, m int) result {
		return closedLoop(c, d, m, func(w *write) error {
			return s.db.Batch(func(tx *bolt.Tx) error { return w.apply(boltKV{tx.Bucket(bucket)}) })
		})
	}})
}

type boltKV struct{ b *bolt.Bucket }

func (k boltKV) get(key []byte) ([]byte, bool, error) {
	v := k.b.Get(key)
	return v, v != nil, nil
}

func (k boltKV) set(key, val []byte) error { return k.b.Put(key, val) }
