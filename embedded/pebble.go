package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// openStore opens (or creates) the Pebble store in dir. Bloom filters make the common
// "is this event id new?" read cheap: it nearly always misses.
//
// The store is written far more than it is read (reads are of ids, old buckets and closed
// periods; ranks are in memory), and Pebble's flushes keep every version of a key, so a
// hot member's aggregate rewritten by each checkpoint reaches L0 each time: compactions were
// a third of the CPU. The base level holds four times Pebble's default bytes, and level 0
// many more files (below): fewer, larger compactions that meet more versions of a key and
// drop them (docs/benchmarks-log.md, "Compactions").
//
// Pebble reserves the memory of its memtables (the active one and one being flushed) out of
// the block cache: a cache no larger than two memtables caches nothing at all, and every read
// goes to the file. So the cache is sized cacheSize beyond them.
//
// Each seal ingests its member index as a file whose keys fall among those of every seal
// before (keyed by member), so it lands in level 0, and each compaction of level 0 rewrites
// all the earlier seals' index with it: at 1M members a quarter of the server's CPU (the ids
// avoid it in runs of their own: idruns.go). Level 0 is compacted at 32 sublevels (stopping
// writes at 128), so that a compaction takes in four times as many seals for each rewrite of
// what is below. And a new
// store writes tables of rows (Pebble's v4 format), not its newer columns, which cost more to
// write per key than our point reads and scans gain from them (docs/benchmarks-log.md, "Level 0
// and the seals' index"). A store made by an earlier version keeps its format.
// logOpenFiles is what the log's Pebble may keep open (openLog): the least Pebble works with,
// 64 tables and 10 other files; its tables are few, emptied by every seal.
const logOpenFiles = 74

// MinOpenFiles is the fewest files the store keeps open, its log's and its own: a smaller
// Options.MaxOpenFiles is exceeded.
const MinOpenFiles = 2 * logOpenFiles

// storeOpenFiles is what the store's own Pebble may keep open of Options.MaxOpenFiles, the
// budget of both: the rest once the log has its share.
func storeOpenFiles(budget int) int {
	if budget <= 0 {
		return 0 // Pebble's default
	}
	return max(budget-logOpenFiles, logOpenFiles)
}

// openStore opens a Pebble store in dir with opts, keeping at most maxOpenFiles open (zero:
// Pebble's default).
func openStore(dir string, opts Options, maxOpenFiles int) (*pebble.DB, *pebble.Options, error) {
	if opts.Existing {
		// Looked for before Open, which would make the directory and its lock file.
		if desc, err := pebble.Peek(dir, opts.FS); err != nil || !desc.Exists {
			return nil, nil, errors.New("no laurel store there")
		}
	}
	watch := newOpenWatch()
	o := &pebble.Options{
		CacheSize:          opts.CacheSize + 2*opts.MemTableSize,
		MemTableSize:       uint64(opts.MemTableSize),
		FormatMajorVersion: pebble.FormatNewest,
		FS:                 opts.FS,
		Logger:             pebbleLogger{opts.Logger, watch},
		MaxOpenFiles:       maxOpenFiles,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	o.FormatMajorVersion = pebble.FormatFlushableIngestExcises // Pebble never lowers a store's format
	o.L0CompactionThreshold = 32
	o.L0CompactionFileThreshold = 1000
	o.L0StopWritesThreshold = 128
	o.LBaseMaxBytes = 256 << 20
	if opts.Logger.Enabled(context.Background(), slog.LevelDebug) {
		// Flushes, compactions, ingestions and files made and deleted, each with its sizes
		// and duration: what an operator needs to see why a store's disk or CPU is busy
		// (how level 0 came to be compacted at 32 sublevels). Off unless asked for: some
		// of the messages are built with the store's locks held.
		l := pebble.MakeLoggingEventListener(o.Logger)
		o.EventListener = &l
	}
	o.EnsureDefaults()
	db, err := openOrFull(dir, o, watch)
	return db, o, err
}

// openOrFull is pebble.Open, except on a disk that is full, where it returns a DiskFullError.
// Open writes the memtables it replays from the write-ahead log into tables, and waits for
// that flush, which Pebble retries for ever when the disk is full: a server started on a full
// disk answered "recovering" for ever, and export hung ignoring SIGTERM. And a write Pebble
// cannot retry (a new MANIFEST) is fatal to it: the process crashed. So while Open runs, an
// error of either kind that is a lack of space ends the open: a retried flush goes on
// retrying (should space be freed, the store it opens is closed), a fatal one stops its
// goroutine for good. Either way the directory stays locked until the process exits, which
// the caller is expected to do; the store is as after a crash.
func openOrFull(dir string, o *pebble.Options, w *openWatch) (*pebble.DB, error) {
	background := o.EventListener.BackgroundError
	o.EventListener.BackgroundError = func(err error) {
		background(err)
		w.noSpace(err)
	}
	type opened struct {
		db  *pebble.DB
		err error
	}
	done := make(chan opened, 1)
	go func() {
		db, err := pebble.Open(dir, o)
		done <- opened{db, err}
	}()
	select {
	case r := <-done:
		w.over.Store(true)
		if r.err != nil && noSpace(r.err) {
			return nil, &DiskFullError{Dir: dir, Err: r.err}
		}
		return r.db, r.err
	case err := <-w.full:
		w.over.Store(true)
		go func() {
			if r := <-done; r.db != nil {
				r.db.Close()
			}
		}()
		return nil, &DiskFullError{Dir: dir, Err: err}
	}
}

// openWatch is what openOrFull learns from Pebble's errors while it opens a store.
type openWatch struct {
	over atomic.Bool // Open has returned: errors are the store's again
	full chan error  // the first lack of space met while opening
}

func newOpenWatch() *openWatch { return &openWatch{full: make(chan error, 1)} }

// noSpace reports whether err, met while opening, is a lack of space, and tells openOrFull.
func (w *openWatch) noSpace(err error) bool {
	if w == nil || w.over.Load() || !noSpace(err) {
		return false
	}
	select {
	case w.full <- err:
	default:
	}
	return true
}

func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), syscall.ENOSPC.Error())
}

// DiskFullError is Open's (and Import's) answer when the disk holding the store has no room
// for what opening it must write.
type DiskFullError struct {
	Dir string
	Err error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("the disk holding %s is full: opening the store must write to it (%v); free space, then start again", e.Dir, e.Err)
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// pebbleLogger sends Pebble's messages to the store's log: its routine ones at debug level.
type pebbleLogger struct {
	log     *slog.Logger
	opening *openWatch // nil: no open watched
}

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

// Errorf logs an error under a message that is its format's constant part, the whole of it
// in "detail": a failure Pebble retries (a flush on a full disk, thousands a second) differs
// each time by a file's number, and the server's log summarises repeats by their message.
func (l pebbleLogger) Errorf(format string, args ...any) {
	msg, _, _ := strings.Cut(format, "%")
	l.log.Error("pebble: "+strings.TrimRight(msg, ": "), "detail", fmt.Sprintf(format, args...))
}

// Fatalf stops the goroutine: Pebble cannot go on from where it is. Out of space while a
// store opens, it waits for the process to exit (openOrFull); otherwise it panics.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf("pebble: "+format, args...)
	l.log.Error(msg)
	if l.opening.noSpace(errors.New(msg)) {
		select {}
	}
	panic(msg)
}

// get returns a copy of the value at k, and whether there is one.
func get(r pebble.Reader, k []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// pointReader reads many single keys through one iterator: Pebble's Get builds an iterator
// over every level at each call, most of what a read costs when the keys are many (a
// replay's, some 30 µs each against a few). Its seeks still consult the tables' bloom
// filters (the whole key is the prefix), so keys that are absent stay cheap.
type pointReader struct{ it *pebble.Iterator }

func newPointReader(r pebble.Reader) (*pointReader, error) {
	it, err := r.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &pointReader{it}, nil
}

// get returns the value at k, valid until the next call, and whether there is one.
func (pr *pointReader) get(k []byte) ([]byte, bool, error) {
	if !pr.it.SeekPrefixGE(k) {
		return nil, false, pr.it.Error()
	}
	v, err := pr.it.ValueAndErr()
	return v, err == nil, err
}

func (pr *pointReader) close() error { return pr.it.Close() }

// scan calls fn for each record with lower ≤ key < upper, in key order. fn must not keep k
// or v: they are valid only during the call.
func scan(r pebble.Reader, lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), v)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// scanKeys calls fn for each key with lower ≤ key < upper, in order, valid only during the
// call; values are not read.
func scanKeys(r pebble.Reader, lower, upper []byte, fn func(k []byte)) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		fn(it.Key())
	}
	return it.Close()
}

// scanPrefix scans every record whose key begins with p.
func scanPrefix(r pebble.Reader, p []byte, fn func(k, v []byte) error) error {
	return scan(r, p, upper(p), fn)
}
