package embedded

import (
	"sync"
	"time"

	"github.com/laurel/laurel"
)

// A full disk must not hang the store. Pebble, out of space, retries its flushes for ever
// and stalls every commit behind them, so the store keeps a reserve: it refuses writes while
// the disk holding it has less free space than MinFreeDisk, leaving Pebble room to flush and
// compact what it holds, and takes writes again by itself once space is freed. Should a commit
// stall all the same (the disk fills from elsewhere, or hangs), the store refuses new writes
// promptly rather than queueing them behind it. In both states Failed reports true, so that
// /readyz takes the server out of service, and reads of what is durable go on.

// diskCheckEvery bounds how often the free space is asked for: once per group at most.
const diskCheckEvery = 100 * time.Millisecond

// stallAfter is how long a commit may take before the store calls itself stalled.
const stallAfter = 5 * time.Second

// diskGuard knows whether the store's disk has room for writes.
type diskGuard struct {
	e       *Store
	dir     string
	reserve uint64

	mu      sync.Mutex
	checked time.Time
	avail   uint64 // the free bytes found by the last check
	low     bool   // avail < reserve
}

// full reports whether the disk has less free space than the reserve, asking the file system
// at most every diskCheckEvery. It logs when the answer changes.
func (g *diskGuard) full() bool {
	if g.reserve == 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Since(g.checked) < diskCheckEvery {
		return g.low
	}
	g.checked = time.Now()
	u, err := g.e.opts.FS.GetDiskUsage(g.dir)
	if err != nil {
		return false // a file system that cannot tell (in memory): nothing to guard
	}
	g.avail = u.AvailBytes
	low := u.AvailBytes < g.reserve
	if g.low != low {
		g.low = low
		if low {
			g.e.log.Error("the disk is nearly full: refusing writes until space is freed", "dir", g.dir, "free_mib", u.AvailBytes>>20, "reserve_mib", g.reserve>>20)
		} else {
			g.e.log.Info("the disk has room again: taking writes", "dir", g.dir, "free_mib", u.AvailBytes>>20)
		}
	}
	return low
}

// room reports whether the disk has need bytes free beyond the reserve, asking the file system
// now (one that cannot tell, in memory, has room).
func (g *diskGuard) room(need uint64) bool {
	if g.reserve == 0 {
		return true
	}
	u, err := g.e.opts.FS.GetDiskUsage(g.dir)
	return err != nil || u.AvailBytes >= g.reserve+need
}

// refusal is the error a write gets while the disk is full.
func (g *diskGuard) refusal() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return laurel.Errorf(laurel.EUnavailable, "the disk holding the store is full (%d MiB free, %d MiB kept in reserve); nothing was stored; writes resume once space is freed", g.avail>>20, g.reserve>>20)
}

// stalled reports whether the commit in progress has taken longer than stallAfter.
func (s *Store) stalled() bool {
	start := s.committing.Load()
	return start != 0 && time.Since(time.Unix(0, start)) > stallAfter
}

var errStalled = laurel.Errorf(laurel.EUnavailable, "the store's disk has not completed a write for over 5 s; nothing was stored; try again later")
