package embedded

import "github.com/cockroachdb/pebble/v2"

// Footprint is what the store's two Pebble databases hold now, its own and its log's: what an
// operator watches beside the process's resident memory and open files, since Pebble's
// memtables and block cache live outside the Go heap (cgo's allocator), and a count of tables
// that only grows is compaction falling behind.
type Footprint struct {
	Store, Log PebbleFootprint
	// IDFilter is the bytes of the event id filter (idfilter.go), on the Go heap: it holds
	// every event id ever stored, at 1.5 to 3 bytes an id, so it grows as long as events with
	// ids come in — the price of answering every id ever used without a read.
	IDFilter int64
}

// PebbleFootprint is one Pebble database's share of the footprint.
type PebbleFootprint struct {
	// Tables is the number of tables in the database's levels.
	Tables int64
	// MemTables is the bytes of its memtables, flushable batches and those waiting to be
	// freed or reused: what it holds in memory beside its cache.
	MemTables int64
	// BlockCache is the bytes its block cache holds.
	BlockCache int64
}

// Footprint reads the footprint of the store's databases now.
func (s *Store) Footprint() Footprint {
	return Footprint{Store: pebbleFootprint(s.db), Log: pebbleFootprint(s.logDB), IDFilter: int64(s.ids.bytes())}
}

func pebbleFootprint(db *pebble.DB) PebbleFootprint {
	m := db.Metrics()
	var f PebbleFootprint
	for _, l := range m.Levels {
		f.Tables += l.TablesCount
	}
	f.MemTables = int64(m.MemTable.Size + m.MemTable.ZombieSize)
	f.BlockCache = m.BlockCache.Size
	return f
}
