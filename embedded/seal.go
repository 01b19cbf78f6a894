package embedded

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Sealing moves the events since the last seal from the log to the store (eventlog.go).

// sealedValue encodes a sealed event: the event and its history point.
func sealedValue(re *recentEvent) []byte {
	b := appendEvent(make([]byte, 0, 48+len(re.point)), re.board, &re.event)
	return append(b, re.point...)
}

// decodeSealed decodes a sealed event and its history point (nil when it has none).
func decodeSealed(seq uint64, v []byte) (board string, ev event, point []byte, err error) {
	ev.seq = seq
	board, point, err = readEvent(v, &ev)
	if len(point) == 0 {
		point = nil
	}
	return board, ev, point, err
}

// erasure names what an operation erases: events the seal that commits it leaves out.
type erasure struct {
	boards  map[string]bool
	members map[string]bool // board 0 member
}

func (x *erasure) erases(re *recentEvent) bool {
	return x != nil && (x.boards[re.board] || x.members[pairKey(re.board, re.member)])
}

func (x *erasure) empty() bool { return x == nil || len(x.boards)+len(x.members) == 0 }

// Seals run in two ways. When the log holds SealEvents events, the writer freezes them
// (sealing) and a goroutine of their own seals them while the writer goes on with new ones
// (startSeal, sealFrozen, finishSeal): the id check and History read the frozen events
// until the store shows them sealed. An operation that erases events (a deleted member or
// board) seals at once, in the writer, leaving the erased events out (seal). Operations that
// read events from the store wait for a seal in progress first (waitSeal).
//
// Either way, the sealed file goes into the store first (ingested: durable when Ingest
// returns), then one commit stores the member index and ids of its events, and the last
// sequence number sealed; then the log's records up to it are dropped. A crash before the
// commit leaves the events in the log (Open drops the ingested copies); after it, records
// that Open knows are sealed.

// startSeal freezes the events since the last seal and starts sealing them. Their history
// points are committed first: every event sealed has its point.
func (e *Store) startSeal() {
	tx := e.newTxn(e.now())
	e.stageHistory(tx)
	e.commit(tx, nil)
	if e.broken() {
		return
	}
	frozen := e.recent
	e.mu.Lock()
	e.sealing, e.recent = frozen, newRecentEvents()
	e.mu.Unlock()
	last := frozen.list[len(frozen.list)-1].seq
	e.sealingLog = e.logNo // the log's records through it hold the frozen events
	done := make(chan error, 1)
	e.sealDone = done
	go func() { done <- e.sealFrozen(frozen, last) }()
}

// sealFrozen seals the frozen events through last, outside the writer.
func (e *Store) sealFrozen(frozen *recentEvents, last uint64) error {
	start := time.Now()
	events := make([]*recentEvent, len(frozen.list))
	for i := range frozen.list {
		events[i] = &frozen.list[i]
	}
	batch := e.db.NewBatch()
	defer batch.Close()
	if err := e.sealInto(batch, events, last); err != nil {
		return err
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return err
	}
	e.log.Debug("sealed events", "events", len(events), "through", last, "took", time.Since(start))
	return nil
}

// finishSeal ends the seal in progress, in the writer: readers see the sealed events in the
// store from now on, and the log's sealed records go.
func (e *Store) finishSeal(err error) {
	e.sealDone = nil
	if err != nil {
		e.fail(fmt.Errorf("embedded: sealing events: %w", err))
		return // the events stay in the log and frozen in memory: nothing is lost
	}
	last := e.sealing.list[len(e.sealing.list)-1].seq
	e.mu.Lock()
	e.snap.Close()
	e.snap = e.db.NewSnapshot()
	e.sealing, e.sealedTo = nil, last
	e.mu.Unlock()
	e.dropLog(e.sealingLog)
}

// waitSeal waits for the seal in progress, if any, and ends it.
func (e *Store) waitSeal() {
	if e.sealDone != nil {
		e.finishSeal(<-e.sealDone)
	}
}

// seal commits tx together with the sealing of the events since the last seal, less those
// tx erases, in the writer. Every event sealed has its history point: the caller has staged
// the points pending in tx (they go to the store with their events, not to the log).
func (e *Store) seal(tx *txn, ops []*op) {
	for _, p := range tx.points {
		e.recent.setPoint(p.seq, p.point)
	}
	tx.points = nil
	var kept []*recentEvent
	for i := range e.recent.list {
		if re := &e.recent.list[i]; !tx.erase.erases(re) {
			kept = append(kept, re)
		}
	}
	last := e.seq
	if n := len(e.recent.list); n > 0 {
		last = max(last, e.recent.list[n-1].seq)
	}
	if err := e.sealInto(tx.batch, kept, last); err != nil {
		e.failOps(fmt.Errorf("embedded: sealing %d events: %w", len(kept), err), ops)
		tx.batch.Close()
		return
	}
	tx.onCommit(nil, func() { e.recent, e.sealedTo = newRecentEvents(), last })
	logged := e.logNo // the seal's commit logs nothing
	tx.afterCommit = func() { e.dropLog(logged) }
	e.commit(tx, ops)
}

// sealInto ingests the file of the events, and stages in batch their member index, their ids
// and the last sequence number sealed, in key order (cheaper to insert).
func (e *Store) sealInto(batch *pebble.Batch, events []*recentEvent, last uint64) error {
	if err := e.ingestSealed(events); err != nil {
		return err
	}
	index := make([][]byte, 0, len(events))
	ids := make(map[string]*recentEvent)
	for _, re := range events {
		index = append(index, eventsKey(re.board, re.member, re.seq))
		if re.id != "" && re.flags&flagRetracted == 0 {
			ids[string(key(tagID, re.board, re.id))] = re
		}
	}
	slices.SortFunc(index, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	for _, k := range index {
		if err := batch.Set(k, nil, nil); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ids)) {
		// The filter has every id the store holds (Open rebuilt some of these from the log,
		// and did not tell it).
		e.ids.add([]byte(k))
		if err := batch.Set([]byte(k), ids[k].encodeID(), nil); err != nil {
			return err
		}
	}
	return batch.Set([]byte{tagSealedTo}, appendU64(nil, last), nil)
}

// dropLog deletes the log's records through number n, sealed now: without a sync, since Open
// knows them for sealed if they come back.
func (e *Store) dropLog(n uint64) {
	if err := e.logDB.DeleteRange(logKey(0), logKey(n+1), pebble.NoSync); err != nil {
		e.fail(err)
	}
}

// ingestSealed writes the events to one sorted file and hands it to the store.
func (e *Store) ingestSealed(events []*recentEvent) error {
	if len(events) == 0 {
		return nil
	}
	fs := e.opts.FS
	path := fs.PathJoin(e.dir, fmt.Sprintf("sealing-%016x.sst", events[0].seq))
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), e.pebbleOpts.MakeWriterOptions(6, e.db.TableFormat()))
	for _, re := range events {
		if err := w.Set(sealedKey(re.seq, re.board), sealedValue(re)); err != nil {
			w.Close()
			fs.Remove(path)
			return err
		}
	}
	if err := w.Close(); err != nil {
		fs.Remove(path)
		return err
	}
	// Ingest links the file into the store and removes it; it is ours to remove on failure
	// (and Open's, after a crash: removeSealing).
	if err := e.db.Ingest(context.Background(), []string{path}); err != nil {
		fs.Remove(path)
		return err
	}
	return nil
}

// removeSealing removes the files of seals that a crash cut short before their ingestion.
func removeSealing(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.HasPrefix(name, "sealing-") && strings.HasSuffix(name, ".sst") {
			if err := fs.Remove(fs.PathJoin(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// failOps answers ops with err, after the store failed with it.
func (e *Store) failOps(err error, ops []*op) {
	e.fail(err)
	for _, o := range ops {
		if o.err == nil {
			o.err = err
		}
		close(o.done)
	}
}
