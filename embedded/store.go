// Package embedded is laurel on one machine: the rules of the root package over an in-memory
// ranked index (package rank) and a Pebble store on local disk.
//
// # How a write becomes durable and visible
//
// One goroutine, the writer, owns every change. It takes the operations waiting for it as a
// group, stages each one on top of the ones before it (an overlay: later events of the group
// see earlier ones, and a failed operation leaves no trace), writes the whole group as one
// record of the log with one fsync (the store's batch inside it, applied after it without a
// sync), and only then applies it to memory, under the lock that readers share (in slices
// that end where an operation does, so that readers wait for a fraction of a millisecond),
// and answers the callers. Pebble makes a batch readable before its fsync returns, so readers
// never read Pebble directly: they read a snapshot that the writer takes after each commit,
// together with the memory it describes. A read therefore never shows a write that a crash
// could still lose.
//
// # What lives where
//
// Pebble holds the truth (see keys.go): boards, every event (sealed into files keyed by
// sequence number once the log holds enough of them, eventlog.go) with the index of each
// member's events, ids, profiles, each member's aggregate in each rolling bucket, closed
// periods frozen with their ranks, and the aggregates of open calendar periods and all as of
// the last checkpoint (checkpoint.go). The log, a small Pebble store of its own, holds a
// record of each commit since the last seal. Memory holds, per board, the open spans (open
// calendar periods, all, each rolling window's current span): every present member's (score,
// reached_at) and a ranked tree of the members not hidden; each rolling window's newest
// bucket; and an index of the events since the last seal. A write reads no aggregate from
// Pebble unless its event falls in an older bucket. Closed periods are read from disk.
package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Now is the clock in unix milliseconds; nil is the system clock.
	Now func() int64
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// FS is the file system of the store; nil is the operating system's.
	FS vfs.FS
	// Existing refuses a directory that holds no store, rather than making one there (an
	// export names a store to read: a mistyped directory is an error, not an empty dump).
	Existing bool
	// CacheSize and MemTableSize size Pebble's block cache and memtable (bytes); zero picks
	// 32 and 64 MiB. Pebble holds up to two memtables at once.
	CacheSize, MemTableSize int64
	// ProfileCache is how many profiles (or their absence) memory keeps for reads; zero is
	// 65536.
	ProfileCache int
	// MaxGroup caps the events (or other operations) committed with one fsync; zero is 2048.
	// Readers wait for a slice of a group's apply at most (applySlice), not for a group.
	MaxGroup int
	// OnCommit, when set, is called by the writer after each fsync, before the group is
	// applied and answered: a hook at the durability boundary, for tests and metrics.
	OnCommit func(ops, bytes int, took time.Duration)
	// MinFreeDisk is the free space (bytes) below which writes are refused, so that Pebble
	// keeps room to flush and compact (disk.go); zero is 4 memtables and 2 of the log's, at least 64 MiB,
	// below zero turns the guard off.
	MinFreeDisk int64
	// MaxOpenFiles bounds the files Pebble keeps open, for the store and its log together (the
	// log takes 74 of them; the store at least as many); zero is Pebble's default (1000) for
	// the store.
	MaxOpenFiles int
	// CloseTimeout bounds how long Close waits for a commit in progress (a stalled disk);
	// zero is 10 s. What was acknowledged is durable either way.
	CloseTimeout time.Duration
	// CheckpointLag is how many events an aggregate of an open period, all or a newest bucket changed by a
	// submit may stay in memory only before it is written (checkpoint.go): the most events
	// Open replays after a crash, beyond the rest of their groups. Zero is 16384.
	CheckpointLag int
	// CheckpointFileMin is the size (bytes) from which the checkpoint file is written whole
	// again from memory, once it is also twice as large as when last written whole
	// (cpfile.go). Zero is 64 MiB.
	CheckpointFileMin int64
	// SealEvents is how many events the log holds before they are sealed into the store
	// (eventlog.go): what Open reads back from the log, and what memory indexes beyond the
	// store. Zero is 65536.
	SealEvents int
	// IDRunFanout is how many runs of sealed events' ids of one tier are merged into one of
	// the next (idruns.go): a lookup the id filter lets through reads up to IDRunFanout-1
	// runs a tier, and an id is written once a tier. Zero is 8.
	IDRunFanout int
	// LogMemTableSize is the memtable of the log (bytes). Zero is half MemTableSize.
	LogMemTableSize int64

	idFilterFirst int // the id filter's first capacity; zero is bloomFirst (tests set less)
}

// Store is laurel's Service on the embedded store. Its methods are safe for concurrent use.
type Store struct {
	laurel.Reads // Page, Member, Around, Lookup, RankOf over Read

	db         *pebble.DB
	pebbleOpts *pebble.Options // as db was opened with, for the files a seal writes
	logDB      *pebble.DB      // the log (eventlog.go)
	dir        string
	opts       Options
	now        func() int64
	log        *slog.Logger

	// mu guards what readers see: boards, hidden and snap. Only the writer changes them,
	// holding mu for writing; it reads them without the lock.
	mu     sync.RWMutex
	boards map[string]*board
	hidden map[string]bool
	snap   *pebble.Snapshot
	// snapBehind is set while a group applied to memory is not in snap yet (apply): what is
	// read from snap then must not be cached.
	snapBehind bool

	profiles *profileCache
	spare    spareOverlays // the writer's overlays, emptied, for its next txns
	// helper applies half of a group's window changes beside the writer, which notes the
	// checkpoint marks each lane leaves in laneNotes (lanes.go). Started at the first use.
	helper    *laneHelper
	laneNotes [lanes][]dirtyNote
	tops      sync.Map      // topKey → *topView: the published tops (top.go)
	topGen    atomic.Uint64 // bumped by a change beyond single boards: older views are void
	ids       *idFilter     // which event ids the store surely does not hold (idfilter.go)
	loading   sync.WaitGroup
	releasing atomic.Bool // releaseCMemory is at work (cmemory.go)

	seq  uint64      // the last event sequence number; the writer's
	cp   checkpoints // what the store does not hold yet; the writer's
	cpf  cpFile      // the checkpoint file (cpfile.go); the writer's
	cpNo uint64      // the number of its last frame a commit made durable
	// rewriting is the rewrite of the checkpoint file in progress; nil when none is. Its
	// done answers once it is written. The writer's.
	rewriting *cpRewrite
	// bucketsFromFile counts the rolling windows whose current span Open made from the
	// checkpoint file's copy of their buckets (cpsection.go), not from the store's.
	bucketsFromFile atomic.Int32
	// moved are the key ranges of aggregates that Open moved from the store to the
	// checkpoint file (a store written before it, or imported), compacted away once it serves.
	moved   [][2][]byte
	history []pointRecord // history points waiting for the next commit; the writer's
	// pointChunks holds the history points' bytes; the writer's.
	pointChunks chunks
	recent      *recentEvents // the events since the last seal (eventlog.go)
	sealing     *recentEvents // the events of the seal in progress, or nil (seal.go)
	// sealedTo is the last sequence number of the last seal that ended: the store may hold
	// later ones already, still read from sealing until the writer ends the seal.
	sealedTo uint64
	logNo    uint64 // the number of the log's last record; the writer's
	// sealingLog is the number of the log's last record of the events being sealed.
	sealingLog uint64
	// logBytes and sealingBytes are the bytes logged since the last seal and for the seal in
	// progress: about what a seal writes, which the disk must have room for.
	logBytes, sealingBytes uint64
	logRecord              []byte    // the writer's buffer for a commit's log record
	sealRetry              time.Time // when a seal the disk had no room for is tried again
	// sealDone answers once the seal in progress is done; nil when none is. The writer's.
	sealDone chan error
	// idRuns are the runs of the sealed events' ids, oldest first; idMerging is the merge of
	// some of them under way, with the events of their sequence numbers, or nil;
	// sealedDeletes counts the deletions of sealed ids and events staged, which void a merge
	// under way (idruns.go). The writer's.
	idRuns        []idRun
	idMerging     *idMerge
	sealedDeletes uint64
	pending       atomic.Int64 // history points not yet readable: queued, or staged in a commit not yet visible

	// exports counts the exports reading their own snapshots of the store, which must be
	// closed before it is. Only the writer adds to it.
	exports sync.WaitGroup
	// exporting is how many exports run now: a merge leaves the sealed events in place
	// meanwhile (idruns.go). Only the writer adds to it.
	exporting atomic.Int32

	watchers laurel.Watchers

	// recMu orders the swaps of records (records.go); recClosed is set by Close.
	recMu     sync.RWMutex
	recClosed bool

	ops     chan *op
	stop    chan struct{}
	stopped chan struct{}
	failed  atomic.Pointer[error] // set by the writer when the store fails; every later write gets it
	once    sync.Once

	disk       diskGuard
	committing atomic.Int64 // when the commit in progress began (unix ns); 0 between commits
}

var (
	_ laurel.Service = (*Store)(nil)
	_ laurel.Records = (*Store)(nil)
)

// Open opens the store in dir, creating it if needed, and recovers everything it holds
// before returning: the store it returns serves complete ranks from the first call.
func Open(dir string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	db, pebbleOpts, err := openStore(dir, opts, storeOpenFiles(opts.MaxOpenFiles))
	if err != nil {
		return nil, heldError(opts.FS, dir, err)
	}
	noteHolder(opts.FS, dir)
	logDB, err := openLog(dir, opts)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: open the log of %s: %w", dir, err)
	}
	if err := removeSealing(opts.FS, dir); err != nil {
		db.Close()
		logDB.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	e := &Store{
		db: db, pebbleOpts: pebbleOpts, logDB: logDB, dir: dir, opts: opts, now: opts.Now, log: opts.Logger,
		recent: newRecentEvents(opts.SealEvents),
		boards: make(map[string]*board), hidden: make(map[string]bool), profiles: newProfileCache(opts.ProfileCache),
		ids: newIDFilter(opts.idFilterFirst),
		ops: make(chan *op, 4096), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	e.Reads = laurel.Reads{Reader: e}
	e.disk = diskGuard{e: e, dir: dir, reserve: uint64(max(opts.MinFreeDisk, 0))}
	start := time.Now()
	closeAll := func() {
		if e.snap != nil {
			e.snap.Close()
		}
		db.Close()
		logDB.Close()
	}
	if err := e.recover(); err != nil {
		closeAll()
		return nil, fmt.Errorf("embedded: recover %s: %w", dir, err)
	}
	e.snap = db.NewSnapshot()
	if err := e.recoverTags(); err != nil {
		closeAll()
		return nil, fmt.Errorf("embedded: recover the tags of %s: %w", dir, err)
	}
	for _, b := range e.boards {
		if b.rate, err = e.loadRate(&b.cfg, e.now()); err != nil {
			closeAll()
			return nil, fmt.Errorf("embedded: recover %s: the times of board %s's events: %w", dir, b.cfg.ID, err)
		}
	}
	if err := e.recoverHistory(); err != nil {
		closeAll()
		return nil, fmt.Errorf("embedded: recover the rank history of %s: %w", dir, err)
	}
	// Close what closed while the store was down, before anyone reads.
	if err := e.advance(e.now()); err != nil {
		closeAll()
		return nil, fmt.Errorf("embedded: recover %s: %w", dir, err)
	}
	e.log.Info("store recovered", "dir", dir, "boards", len(e.boards), "took", time.Since(start))
	e.loading.Go(func() {
		start := time.Now()
		if err := e.ids.load(db, e.stop); err != nil {
			e.log.Warn("scanning the stored event ids; each id will be read from the store", "err", err)
		} else if e.ids.ready.Load() {
			e.log.Info("event id filter ready", "bytes", e.ids.bytes(), "took", time.Since(start))
		}
	})
	if len(e.moved) > 0 {
		e.loading.Go(e.compactMoved)
	}
	go e.loop()
	return e, nil
}

// withDefaults fills in the zero fields of o.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CacheSize == 0 {
		o.CacheSize = 32 << 20
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 64 << 20
	}
	if o.ProfileCache == 0 {
		o.ProfileCache = 1 << 16
	}
	if o.MaxGroup == 0 {
		o.MaxGroup = 2048
	}
	if o.IDRunFanout < 2 {
		o.IDRunFanout = 8
	}
	if o.LogMemTableSize == 0 {
		o.LogMemTableSize = o.MemTableSize / 2
	}
	if o.MinFreeDisk == 0 {
		o.MinFreeDisk = max(4*o.MemTableSize+2*o.LogMemTableSize, 64<<20)
	}
	if o.CheckpointLag == 0 {
		o.CheckpointLag = 1 << 14
	}
	if o.SealEvents == 0 {
		o.SealEvents = 1 << 16
	}
	if o.CloseTimeout == 0 {
		o.CloseTimeout = 10 * time.Second
	}
	if o.CheckpointFileMin == 0 {
		o.CheckpointFileMin = 64 << 20
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	return o
}

// Close stops the writer after the operations already queued and closes the store. When the
// writer does not stop within CloseTimeout (its disk stalls), Close gives up and returns an
// error, leaving Pebble open: everything acknowledged is durable already, and the process
// can exit. Later calls do nothing.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		select {
		case <-s.stopped:
		case <-time.After(s.opts.CloseTimeout):
			err = fmt.Errorf("embedded: the writer did not stop within %v (a commit is stalled: is the disk full?); what was acknowledged is durable", s.opts.CloseTimeout)
			s.log.Error("closing the store", "err", err)
			return
		}
		if s.helper != nil {
			s.helper.stop() // the writer, its only user, has stopped
		}
		s.recMu.Lock()
		s.recClosed = true
		s.recMu.Unlock()
		s.exports.Wait() // they stop at their next record, and close their snapshots
		s.loading.Wait() // the id scan stops at its next batch
		s.mu.Lock()
		defer s.mu.Unlock()
		s.snap.Close()
		s.snap = nil
		dropHolder(s.opts.FS, s.dir)
		err = s.db.Close()
		if lerr := s.logDB.Close(); err == nil {
			err = lerr
		}
		if cerr := s.cpf.close(); err == nil {
			err = cerr
		}
	})
	return err
}

// An op is one operation for the writer.
type op struct {
	// exclusive ops are committed alone: they read the store (a member's events, a board's
	// events), which does not show the rest of a group until it commits.
	exclusive bool
	// seals is set on exclusive ops that erase events: they commit with a seal that leaves
	// the erased events out (seal.go).
	seals bool
	// run stages the operation in tx; on error nothing it staged is kept.
	run func(tx *txn) error
	// finish runs after the group is applied, under the read lock: it reads results.
	finish func()
	// memOnly is set when finish reads memory alone: it then runs while Pebble applies the
	// group's batch to the store, not after.
	memOnly bool
	// weight is how much the operation counts towards a group's size: its events, or 1.
	weight int
	err    error
	done   chan struct{}
	state  atomic.Int32 // opQueued, then opTaken by the writer or opWithdrawn by its caller
}

const (
	opQueued int32 = iota
	opTaken
	opWithdrawn
)

var errClosed = laurel.Errorf(laurel.EUnavailable, "the store is shutting down")

// do hands o to the writer and waits until it is durable and applied, or failed.
func (s *Store) do(ctx context.Context, o *op) error {
	if o.run != nil && s.stalled() {
		return errStalled
	}
	o.done = make(chan struct{})
	select {
	case s.ops <- o:
	case <-s.stop:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// An operation the writer has not taken yet can be withdrawn when its caller gives up:
	// it will never run. Once taken it will be committed or fail, and its caller waits for
	// which, so that the answer is true. An operation queued as the writer stopped never runs.
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		if o.state.CompareAndSwap(opQueued, opWithdrawn) {
			return ctx.Err()
		}
		<-o.done
		return o.err
	case <-s.stopped:
		select {
		case <-o.done:
			return o.err
		default:
			return errClosed
		}
	}
}

// loop is the writer.
func (s *Store) loop() {
	defer close(s.stopped)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.resetTimer(timer)
		var group []*op
		select {
		case o := <-s.ops:
			group = append(group, o)
		case err := <-s.sealDone:
			s.finishSeal(err)
			continue
		case err := <-s.rewriteDone():
			s.finishRewrite(err)
			continue
		case err := <-s.idMergeDone():
			s.finishIDMerge(err)
			continue
		case <-timer.C:
		case <-s.stop:
			s.waitSeal() // what it cannot seal stays in the log
			if s.idMerging != nil {
				s.finishIDMerge(<-s.idMerging.done)
			}
			if s.rewriting != nil {
				s.finishRewrite(<-s.rewriting.done)
			}
			// Finish what was queued before the stop; do answers anything queued later.
			if group = s.gather(nil); len(group) > 0 {
				s.runGroup(group)
			}
			if !s.broken() {
				// The history points still pending, and every aggregate: a clean stop
				// leaves nothing to replay.
				tx := s.newTxn(s.now())
				s.stageHistory(tx)
				s.checkpoint(tx, true)
				s.commit(tx, nil)
			}
			return
		}
		group = s.gather(group)
		s.runGroup(group)
	}
}

// gather adds to group what is queued. The callers answered by the last commit are waking up
// to send their next writes as this runs, so when the queue is empty it yields once and looks
// again, until a look finds nothing new: bigger groups share one fsync.
func (s *Store) gather(group []*op) []*op {
	size := 0
	for _, o := range group {
		size += max(o.weight, 1)
	}
	take := func() bool {
		select {
		case o := <-s.ops:
			group = append(group, o)
			size += max(o.weight, 1)
			return true
		default:
			return false
		}
	}
	for size < s.opts.MaxGroup {
		if !take() {
			runtime.Gosched()
			if !take() {
				break
			}
		}
	}
	return group
}

// resetTimer arms the writer's timer for the next instant a board has work to do: a period
// to close or a rolling bucket to leave.
func (s *Store) resetTimer(t *time.Timer) {
	next := int64(noTime)
	for _, b := range s.boards {
		if b.deadline != noTime && (next == noTime || b.deadline < next) {
			next = b.deadline
		}
	}
	d := time.Hour
	if next != noTime {
		d = min(d, time.Duration(max(next-s.now(), 0)+1)*time.Millisecond)
	}
	if len(s.history) > 0 {
		d = min(d, historyDelay)
	}
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

func (s *Store) runGroup(group []*op) {
	now := s.now()
	if !s.broken() {
		if err := s.advance(now); err != nil {
			s.fail(err)
		}
	}
	tx := s.newTxn(now)
	for _, o := range group {
		tx.sizeHint += max(o.weight, 1) * overlayPerEvent
	}
	if !s.broken() {
		s.stageFirst(tx)
	}
	full := s.disk.full()
	var staged []*op
	for _, o := range group {
		if !o.state.CompareAndSwap(opQueued, opTaken) {
			continue // withdrawn: its caller was answered
		}
		if s.broken() {
			o.err = s.failedError()
			close(o.done)
			continue
		}
		if full && o.run != nil {
			o.err = s.disk.refusal()
			close(o.done)
			continue
		}
		if o.run == nil { // a reader waiting for the clock to be caught up (done above) or for history
			staged = append(staged, o)
			continue
		}
		if o.exclusive {
			s.commit(tx, staged)
			staged = nil
			tx = s.newTxn(now)
			if err := s.waitSeal(); err != nil { // it reads events from the store
				o.err = err
				close(o.done)
				continue
			}
			// The points of the events just committed go first in the batch, so that a
			// retraction or deletion in it removes them too.
			s.stageFirst(tx)
		}
		child := tx.child()
		child.exclusive = o.exclusive
		if err := o.run(child); err != nil {
			o.err = err
			child.undo()
			child.batch.Close()
		} else {
			child.mergeInto(tx)
		}
		child.release()
		staged = append(staged, o)
		if o.exclusive {
			if o.seals && o.err == nil {
				s.seal(tx, staged)
				s.maybeMergeIDs()
			} else {
				s.commit(tx, staged)
			}
			staged = nil
			tx = s.newTxn(now)
		}
	}
	s.commit(tx, staged)
	s.maybeSeal()
	s.maybeRewriteCheckpoints(now)
	s.rebuildIDs()
}

// stageFirst stages what a group's txn holds before its operations: the history points
// pending and the aggregates a checkpoint writes, so that the operations' own writes win,
// and starts writing the checkpoint's frame while they stage.
func (s *Store) stageFirst(tx *txn) {
	s.stageHistory(tx)
	s.checkpoint(tx, false)
	s.startCheckpoints(tx)
}

// commit makes tx durable, applies it to memory and answers ops. A commit that logs (events,
// history points) writes one record of the log, with the store's batch in it, and one fsync;
// the store then applies the batch without one (Open applies it again if a crash took it).
// Other commits sync the store's batch itself.
func (s *Store) commit(tx *txn, ops []*op) {
	defer tx.discard()
	if err := s.writeCheckpoints(tx); err != nil {
		s.failOps(fmt.Errorf("embedded: commit: the checkpoint file: %w", err), ops)
		return
	}
	if tx.seq != s.seq {
		// The last sequence number taken, once per group.
		tx.set([]byte{tagSeq}, appendU64(nil, tx.seq))
	}
	start := time.Now()
	size := 0
	s.committing.Store(start.UnixNano())
	var err error
	var applied chan error // the store's batch, applied beside memory's
	if len(tx.logged) > 0 || len(tx.points) > 0 {
		// One durable write: the log's record, with the store's batch in it, which Pebble
		// then takes on another goroutine while the writer applies the group to memory.
		n := s.logNo + 1
		tx.set([]byte{tagApplied}, appendU64(nil, n))
		rec := appendLogRecord(s.logRecord[:0], tx.now, tx.logged, tx.points, tx.batch.Repr())
		if cap(rec) <= maxLogBuffer {
			s.logRecord = rec // Pebble copies what it is given: the buffer serves the next commit
		}
		size = len(rec)
		if err = s.logDB.Set(logKey(n), rec, pebble.Sync); err == nil {
			s.logNo, s.logBytes = n, s.logBytes+uint64(len(rec))
			applied = make(chan error, 1)
			go func() { applied <- tx.batch.Commit(pebble.NoSync) }()
		}
	} else if !tx.batch.Empty() {
		size = tx.batch.Len()
		err = tx.batch.Commit(pebble.Sync)
	}
	if applied == nil {
		s.committing.Store(0)
	} else {
		// Until Pebble takes the batch: a write stall there stalls the commit as much.
		defer s.committing.Store(0)
	}
	if err != nil {
		s.failOps(fmt.Errorf("embedded: commit: %w", err), ops)
		return
	}
	if size > 0 && s.opts.OnCommit != nil {
		s.opts.OnCommit(len(ops), size, time.Since(start))
	}
	s.seq = tx.seq
	// A submit's finish reads memory alone: it runs while Pebble applies a logged commit's
	// batch (apply calls it then), or after an unlogged commit's.
	beside := func() { s.finishOps(ops, true) }
	if err := s.apply(tx, applied, beside); err != nil {
		s.failOps(fmt.Errorf("embedded: commit: %w", err), ops)
		return
	}
	if tx.afterCommit != nil {
		tx.afterCommit()
	}
	if applied == nil {
		beside()
	}
	s.finishOps(ops, false)
	// Watchers hear of the commit before its writers are answered, so a change a client has
	// been told of is never missing from what watchers were told.
	s.notify(tx)
	for _, o := range ops {
		close(o.done)
	}
}

// maxLogBuffer is the largest buffer of a log record the writer keeps for the next one: a
// group of the most events takes some 700 KiB, an import's more.
const maxLogBuffer = 4 << 20

// finishOps runs the finish of each op that succeeded and whose memOnly is memOnly, under
// the read lock.
func (s *Store) finishOps(ops []*op, memOnly bool) {
	if len(ops) == 0 {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, o := range ops {
		if o.err == nil && o.finish != nil && o.memOnly == memOnly {
			o.finish()
		}
	}
}

// applySlice is how many changes to memory the writer makes before it lets waiting readers
// in: about 100 events in four windows, a fraction of a millisecond.
const applySlice = 400

// apply makes tx's changes to memory, which is durable, under the write lock. A large group
// is applied in slices, each ending where an operation does, and readers waiting for the lock
// read between slices: they may see some operations of the group before others, each whole,
// as if they had been committed apart, but never a part of one.
//
// The snapshot readers read the store from is published first when the store's batch was
// committed before (a commit that logs nothing). A logged commit's batch is applied by Pebble
// beside this (applied answers once it is), and the snapshot published at the end: what a
// reader reads between slices from the store is then the group before's, which memory's
// reads of this group never need (a submit changes in the store only its buckets of rolling
// windows, read at other instants from the snapshot alone, and profiles, which the profile
// cache has from the group's apply on). The writer calls beside meanwhile, once memory
// holds the whole group.
func (s *Store) apply(tx *txn, applied <-chan error, beside func()) error {
	s.mu.Lock()
	if applied == nil && !tx.batch.Empty() {
		s.snap.Close()
		s.snap = s.db.NewSnapshot()
	}
	s.snapBehind = applied != nil
	from := 0
	for _, end := range append(tx.breaks, len(tx.after)) {
		if end-from < applySlice && end < len(tx.after) {
			continue
		}
		s.applySlice(tx.after[from:end])
		from = end
		if end < len(tx.after) {
			s.mu.Unlock()
			s.mu.Lock()
		}
	}
	if applied != nil {
		s.mu.Unlock()
		beside()
		err := <-applied
		s.mu.Lock()
		if err != nil {
			s.snapBehind = false // the store failed: nothing will be cached from it
			s.mu.Unlock()
			return err
		}
		s.snap.Close()
		s.snap = s.db.NewSnapshot()
		s.snapBehind = false
	}
	defer s.mu.Unlock()
	for _, f := range tx.published {
		f()
	}
	s.pending.Add(-int64(tx.historyPoints))
	for b := range tx.touched {
		b.updateDeadline()
	}
	s.publishTops(tx)
	return nil
}

func (s *Store) fail(err error) {
	if s.failed.CompareAndSwap(nil, &err) {
		s.log.Error("store failed; refusing writes", "err", err)
	}
}

// Failed reports whether the store refuses writes: it has failed (until a restart), its disk
// is full (until space is freed) or a commit has stalled. The server should then be taken
// out of service; its /readyz says so.
func (s *Store) Failed() bool { return s.broken() || s.disk.full() || s.stalled() }

// broken reports whether the store has failed: every write is refused until a restart.
func (s *Store) broken() bool { return s.failed.Load() != nil }

// advance closes the periods and moves the rolling windows of every board whose deadline has
// passed, as one commit of its own.
func (s *Store) advance(now int64) error {
	tx := s.newTxn(now)
	for _, b := range s.boards {
		if b.deadline != noTime && b.deadline <= now {
			// The closings change ranks: the points pending go first, as they were (after
			// the first board, there are none left to stage).
			s.stageHistory(tx)
			if err := s.advanceBoard(tx, b); err != nil {
				tx.discard()
				return err
			}
		}
	}
	if len(tx.after) == 0 && tx.batch.Empty() {
		tx.discard()
		return nil
	}
	s.commit(tx, nil)
	if err := s.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// catchUp makes sure memory is current at now before a read: when a period should have
// closed or a rolling bucket left, it asks the writer to do it and waits.
func (s *Store) catchUp(ctx context.Context, b *board, now int64) error {
	s.mu.RLock()
	due := b.deadline != noTime && b.deadline <= now
	s.mu.RUnlock()
	if !due {
		return nil
	}
	return s.do(ctx, &op{})
}

// lookupBoard returns the board with id, under the caller's read lock.
func (s *Store) lookupBoard(id string) (*board, error) {
	b := s.boards[id]
	if b == nil {
		if err := laurel.ValidateBoardID(id); err != nil {
			return nil, err
		}
		return nil, laurel.ErrNoBoard(id)
	}
	return b, nil
}
