package embedded

import "github.com/cockroachdb/pebble/v2"

// Hooks for the black-box tests of package embedded_test, compiled only with them.

// IDFilterReady reports whether the store's event id filter has scanned the stored ids, so
// that a test can tell which way a duplicate was found.
func (e *Store) IDFilterReady() bool { return e.ids.ready.Load() }

// IDFilter is the store's event id filter, alone.
type IDFilter struct{ f *idFilter }

// NewIDFilter returns an empty, ready filter.
func NewIDFilter() IDFilter {
	f := newIDFilter()
	f.ready.Store(true)
	return IDFilter{f}
}

func (f IDFilter) Add(k []byte)         { f.f.add(k) }
func (f IDFilter) Absent(k []byte) bool { return f.f.absent(k) }
func (f IDFilter) Bytes() int           { return f.f.bytes() }

// TopHeld reports whether a published top of the board's window holds now (top.go).
func (e *Store) TopHeld(board, window string) bool {
	found, _ := e.tops.Load(topKey{board, window})
	v, _ := found.(*topView)
	return v != nil && v.gen == e.topGen.Load() && e.now() < v.until
}

// WrittenBytes is what the store's Pebble instances have written to tables so far, by
// flushes and compactions: the main store's and the log's.
func (e *Store) WrittenBytes() (store, log uint64) {
	written := func(db interface{ Metrics() *pebble.Metrics }) uint64 {
		t := db.Metrics().Total()
		return t.TableBytesFlushed + t.TableBytesCompacted
	}
	return written(e.db), written(e.logDB)
}
