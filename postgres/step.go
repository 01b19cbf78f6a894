package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// A step is one write: what it touches of its boards locked (locks.go), one transaction, and
// what it changed, which reaches the index once the transaction commits.
type step struct {
	e      *Store
	conn   *pgxpool.Conn
	tx     txConn // conn, in the step's transaction
	xid    string // the transaction's id, to ask what became of a commit cut off (outcome.go)
	now    int64
	boards map[string]*boardStep // every board locked, whole or in part; st is nil for one that does not exist
	hidden map[string]bool       // members whose hidden mark was read, and the mark
	early  bool                  // the locks go with the commit, before the index takes the step
	names  map[string]string     // profile names the commit writes
	// storedNames are the names the store holds of the members whose events carry one.
	storedNames map[string]string
	global      bool // a change that may show on any board: subscribers hear of it
	moved       bool // and one that may have moved any member's entries (not a name)
	ops         int  // the operations the step carries (a group's submits), for metrics
	// stamp marks the rows of the shards the step holds as left by it (aggcache.go); submit
	// says that the step is a group of submits, whose aggregates the node keeps.
	stamp  int64
	submit bool
	after  []func(context.Context) error // run once the step is in the index and its locks are gone, to its deadline
	// unlocked, when set, is called once the committed step's locks are gone, before after
	// (and, for an early step, before the index takes it).
	unlocked func()
}

// txConn is what a step asks of its connection, all within its transaction (which it begins
// and commits itself, so that beginning shares a round trip with the locks and the loads).
type txConn interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error)
}

// boardStep is what a step does to one board.
type boardStep struct {
	id      string
	st      *state // nil: no such board
	version int64  // the stamp of the board's state, in the store when the step began
	whole   bool   // the board and all its shards are locked; else only those of shards
	shards  map[int]*shardStep

	exists       bool // the store has the board's row
	stateChanged bool
	deleted      bool
	rebuild      bool  // the index of the board is built anew after the commit (an import, a reshard)
	seqFloor     int64 // for shards made in the step: the event numbers they give are above it

	aggs  map[aggKey]aggVal // aggregates read or written, as they stand in the step
	dirty map[aggKey]bool   // aggregates written
	// stored says, of the aggregates read (from the store, or the node's cache of it),
	// whether the store held a row of each: a submit's commit inserts those it did not
	// hold rather than upserting them.
	stored map[aggKey]bool
	// rows are the members' rows (memberrows.go) the step read or wrote elements of.
	rows   map[string]*memberRow
	events []newEvent // events to insert
	rates  rateCounts // of the board's rate rule (rate.go)
	drops  []shardindex.Set
	extra  []shardindex.Change // changes not from aggregates written (a hidden mark)
	reads  []shardindex.Read
	readAt map[string]int          // where each member's reads begin in reads
	ids    map[string]*storedEvent // ids read or used in the step; nil value: free
	read   []shardindex.Entry      // the answers to reads, once applied
	// readKeys are the aggregates the reads read; below the shards the index was found
	// below the store's versions at, when it read them.
	readKeys []aggKey
	below    []int
	// The standings before a submit's events (prior.go): written holds the aggregates its
	// requests wrote as they stood before them; priorKey the old entries of reads whose
	// aggregate changed (Member "": none), and priorBefore what the index counted before each.
	written     map[aggKey]aggVal
	asksPrior   []bool // per read
	priorKey    []shardindex.Key
	priorBefore []int
	prior       []priorAnswer // per read, once the step's answers are worked out
	undo        *undoLog      // while a request is staged: how to take it back
	// spareUndo is the last request's undo log, for the next one (begin).
	spareUndo *undoLog
}

// shardStep is what a step does to one shard of a board it locked.
type shardStep struct {
	version int64     // in the store when the step began, then after it
	seq     int64     // the last event sequence number the shard gave
	found   shardMark // the shard's row when the step began
	made    bool      // the shard's row is made in the step
	ranked  bool      // the shard's sets change: its index takes a step
}

// readStandings asks for member's standings in the current span of every window at now,
// once the step is in the index, and its standings before the step's events too when prior
// is set, and returns where they begin in b.reads (window j's at the start plus j). A member
// is read once a step however many of its events the step holds: every one of them answers
// with the same standings, so the index ranks and counts each member once.
func (b *boardStep) readStandings(member string, now int64, prior bool) int {
	if at, ok := b.readAt[member]; ok {
		for j := range b.st.Windows {
			b.asksPrior[at+j] = b.asksPrior[at+j] || prior
		}
		return at
	}
	if b.readAt == nil {
		b.readAt = make(map[string]int)
	}
	at := len(b.reads)
	b.readAt[member] = at
	for j := range b.st.Windows {
		ws := &b.st.Windows[j]
		span := b.currentSpanOf(ws, now)
		set, _ := ws.indexSet(span)
		b.reads = append(b.reads, shardindex.Read{Set: set, Member: member})
		b.readKeys = append(b.readKeys, aggKey{ws.Name, span, member})
		b.asksPrior = append(b.asksPrior, prior)
	}
	return at
}

// currentSpanOf is the span of the aggregates of ws's period current at now.
func (b *boardStep) currentSpanOf(ws *windowState, now int64) int64 {
	if ws.w.IsRolling() {
		return currentSpan
	}
	span, _ := b.st.cfg.Calendar().SpanOf(ws.w, now)
	return span
}

// shardOf returns the shard of a board that holds member; the step must have locked it.
func (b *boardStep) shardOf(member string) (int, *shardStep, error) {
	i := shardindex.ShardOf(member, b.st.shards())
	sh := b.shards[i]
	if sh == nil {
		return 0, nil, fmt.Errorf("postgres: board %q: shard %d of member %q is not locked", b.id, i, member)
	}
	return i, sh, nil
}

// undoLog records what staging one request of a group changes in a board's step, so that a
// request that fails leaves the others' staging as it was.
type undoLog struct {
	aggs         map[aggKey]undoAgg
	ids          map[string]undoID
	events       int
	seqs         map[int]int64
	stateChanged bool
	opened       []openedSpan
	rates        map[string]int // how many times each member had staged (rate.go)
}

type undoAgg struct {
	v          aggVal
	had, dirty bool
}

type undoID struct {
	ev  *storedEvent
	had bool
}

type openedSpan struct {
	ws    *windowState
	start int64
}

// begin starts recording what the next request changes, in the undo log the request before
// used, emptied: made anew for each request, its maps grew again each time.
func (s *step) begin() {
	for _, b := range s.boards {
		u := b.spareUndo
		if u == nil {
			u = &undoLog{aggs: make(map[aggKey]undoAgg), ids: make(map[string]undoID), seqs: make(map[int]int64, len(b.shards)), rates: make(map[string]int)}
		} else {
			b.spareUndo = nil
			clear(u.aggs)
			clear(u.ids)
			clear(u.seqs)
			clear(u.rates)
		}
		for i, sh := range b.shards {
			u.seqs[i] = sh.seq
		}
		u.events, u.stateChanged, u.opened = len(b.events), b.stateChanged, u.opened[:0]
		b.undo = u
	}
}

// keep accepts what the request changed.
func (s *step) keep() {
	for _, b := range s.boards {
		if s.submit && b.undo != nil {
			b.noteWritten(b.undo)
		}
		b.undo, b.spareUndo = nil, b.undo
	}
}

// rollback takes back what the request changed.
func (s *step) rollback() {
	for _, b := range s.boards {
		u := b.undo
		if u == nil {
			continue
		}
		b.undo, b.spareUndo = nil, u
		for k, old := range u.aggs {
			if old.had {
				b.aggs[k] = old.v
			} else {
				delete(b.aggs, k)
			}
			if old.dirty {
				b.dirty[k] = true
			} else {
				delete(b.dirty, k)
			}
		}
		for id, old := range u.ids {
			if old.had {
				b.ids[id] = old.ev
			} else {
				delete(b.ids, id)
			}
		}
		b.events, b.stateChanged = b.events[:u.events], u.stateChanged
		for m, n := range u.rates {
			b.rates.staged[m] = b.rates.staged[m][:n]
		}
		for i, seq := range u.seqs {
			b.shards[i].seq = seq
		}
		for _, o := range u.opened {
			o.ws.Open = slices.DeleteFunc(o.ws.Open, func(sp laurel.Span) bool { return sp.Start == o.start })
		}
	}
}

// setID notes the counted event that holds an id.
func (b *boardStep) setID(id string, ev *storedEvent) {
	if b.undo != nil {
		if _, ok := b.undo.ids[id]; !ok {
			old, had := b.ids[id]
			b.undo.ids[id] = undoID{old, had}
		}
	}
	b.ids[id] = ev
}

// open notes that the calendar period [start, end) of ws has data. That changes the board's
// state, which only a step holding the whole board may do.
func (b *boardStep) open(ws *windowState, start, end int64) error {
	if ws.openAt(start) {
		return nil
	}
	if !b.whole {
		return &needWhole{b.id}
	}
	ws.addOpen(start, end)
	b.stateChanged = true
	if b.undo != nil {
		b.undo.opened = append(b.undo.opened, openedSpan{ws, start})
	}
	return nil
}

type aggKey struct {
	win    string
	span   int64
	member string
}

// aggVal is an aggregate as the store keeps it; sub is 0 on a board without a subscore.
type aggVal struct {
	score, sub, at int64
	present        bool
}

func (v aggVal) agg() laurel.Agg {
	if !v.present {
		return laurel.Agg{}
	}
	return laurel.Agg{Score: v.score, Sub: v.sub, At: v.at, Count: 1}
}

func valOf(a laurel.Agg) aggVal { return aggVal{a.Score, a.Sub, a.At, a.Present()} }

type newEvent struct {
	seq            int64
	member         string
	value, sub, ts int64
	id             string
	tag            *string // compact JSON; nil for none
}

// storedEvent is an event with an id as the store has it.
type storedEvent struct {
	seq            int64
	member         string
	value, sub, ts int64
}

// write runs fn as one step over targets: it locks them, runs fn in a transaction, commits,
// brings the index along, and unlocks. It starts again, with more locked, when fn needs a
// whole board it holds in part, and with the right locks when a board's shard count changed.
func (s *Store) write(ctx context.Context, targets []target, fn func(ctx context.Context, w *step) error) error {
	var err error
	for range maxStarts {
		err = s.runStep(ctx, targets, fn)
		var whole *needWhole
		switch {
		case errors.As(err, &whole):
			for i := range targets {
				if targets[i].board == whole.board {
					targets[i].whole = true
				}
			}
		case !errors.Is(err, errShardsChanged):
			return s.unavailable("write", err)
		}
	}
	// Its board kept changing under it (reshards one after the other): the write stored
	// nothing, and may be sent again.
	s.log.Warn("a write kept starting again", "err", err)
	return laurel.Errorf(laurel.EUnavailable, "the board's shards kept changing while it was written; try again")
}

// runStep is one try of write, without the mapping of PostgreSQL's failures.
func (s *Store) runStep(ctx context.Context, targets []target, fn func(ctx context.Context, w *step) error) error {
	boards := make([]string, 0, len(targets))
	for _, t := range targets {
		boards = append(boards, t.board)
	}
	counts, err := s.counts(ctx, boards)
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	keys, tries := s.lockKeys(targets, counts)
	// A step that writes shards only (no target whole, no board to make) holds its locks for
	// its transaction alone: they go with its commit, and its changes reach the index after,
	// in the order of the shards' versions (applyIndex). One that changes a board as a whole
	// holds them, for its session, until the index has taken its step.
	early := !slices.ContainsFunc(targets, func(t target) bool { return t.whole || counts[t.board] == 0 })
	lock, try := "pg_advisory_lock", "pg_try_advisory_lock"
	if early {
		lock, try = "pg_advisory_xact_lock", "pg_try_advisory_xact_lock"
	}
	locked := false
	defer func() {
		if locked {
			// Unlock whatever happened to the step's context; a connection that cannot
			// unlock is closed, which unlocks.
			if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock_all()"); err != nil {
				conn.Conn().Close(context.WithoutCancel(ctx))
			}
		}
		conn.Release()
	}()
	// One round trip begins the transaction, takes the locks, in the order of the array (a
	// function scan keeps it), tries the others, and reads the rows of the boards and shards.
	w := &step{e: s, conn: conn, tx: conn, now: s.now(), stamp: newStamp(), early: early, boards: make(map[string]*boardStep), hidden: make(map[string]bool)}
	var batch pgx.Batch
	batch.Queue("BEGIN")
	batch.Queue("SELECT "+lock+"(k) FROM unnest($1::bigint[]) AS k", keys)
	if len(tries) > 0 {
		batch.Queue("SELECT k FROM unnest($1::bigint[]) AS k WHERE "+try+"(k)", tries)
	}
	batch.Queue("SELECT pg_current_xact_id()::text")
	load := w.queueLoad(&batch, targets, counts)
	br := conn.SendBatch(ctx, &batch)
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	var got []int64
	if err == nil && len(tries) > 0 {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			got, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
	}
	if err == nil {
		err = br.QueryRow().Scan(&w.xid)
	}
	if err != nil {
		br.Close()
		conn.Conn().Close(context.WithoutCancel(ctx)) // it may hold the locks taken so far
		return fmt.Errorf("postgres: lock: %w", err)
	}
	locked = !early
	committed := false
	defer func() {
		if !committed {
			conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	err = load(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if len(got) < len(tries) {
		w.dropUnheld(keys, got)
	}
	if err := fn(ctx, w); err != nil {
		return err
	}
	start := time.Now()
	if err := w.commit(ctx); err != nil {
		var lost *errCommitLost
		if !errors.As(err, &lost) {
			return err
		}
		committed = true // nothing to roll back on a connection gone
		if landed, err := s.commitOutcome(ctx, w.xid, err); !landed {
			return err
		}
		// It landed, and its locks went with its connection: its changes reach the index
		// as an early step's do, in the order of the shards' versions.
		locked, early, w.early = false, true, true
	}
	committed = true
	if w.submit {
		s.aggs.keep(w.boards, w.stamp)
	} else {
		s.aggs.drop(w.boards)
	}
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(max(w.ops, 1), time.Since(start))
	}
	// Committed: from here on the step happened, whatever fails; the index follows, or a
	// later step, read or maintenance rebuilds it.
	// So an error now would tell the caller a stored write failed (and a client that retries
	// without ids would count it twice): it is logged, and the write succeeds.
	// It keeps to the step's deadline, if it has one, or a moment more (a step that waited
	// long for its locks would otherwise leave every index step to a rebuild): an index that
	// does not answer by then leaves the writes answered without ranks.
	ictx, cancel := laurel.AfterWrite(ctx, indexGrace)
	defer cancel()
	if early && w.unlocked != nil {
		w.unlocked()
	}
	ids := slices.Sorted(maps.Keys(w.boards))
	for i, id := range ids {
		if err := w.applyIndex(ictx, w.boards[id]); err != nil {
			// The index is behind on this board and on those the step had yet to give it:
			// the next read of each on this node, or the maintenance pass, rebuilds it.
			// Without the step's reads there are no ranks to answer with.
			s.log.Error("the index missed a committed step; it will be rebuilt", "boards", ids[i:], "err", err)
			for _, lost := range ids[i:] {
				s.missedStep(lost)
			}
			return nil
		}
	}
	// The step is in the store and the index: the locks go before what is left, which
	// other writes of the shards need not wait for.
	if locked {
		locked = false
		if _, err := conn.Exec(ictx, "SELECT pg_advisory_unlock_all()"); err != nil {
			// A connection that cannot unlock is closed, which unlocks; the step's ranks and
			// history points do not need it.
			conn.Conn().Close(ictx)
			s.log.Warn("a committed step's connection was lost as it unlocked; closed", "err", err)
		}
		if w.unlocked != nil {
			w.unlocked()
		}
	}
	if w.global {
		if err := s.index.Publish(ictx, w.moved); err != nil {
			s.log.Error("publish a change", "err", err)
		}
	}
	for _, f := range w.after {
		if err := f(ictx); err != nil {
			s.log.Error("after a committed step", "err", err)
		}
	}
	return nil
}

// indexGrace is how long a committed step may still give the index, its deadline past.
const indexGrace = time.Second

// later is the later of two instants.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// queueLoad adds to batch the reads of the rows of the boards and of the shards the step
// locks, and returns what reads their answers and checks that the locks were taken by the
// boards' shard counts.
func (s *step) queueLoad(batch *pgx.Batch, targets []target, counts map[string]int) func(pgx.BatchResults) error {
	ids := make([]string, 0, len(targets))
	var boards []string
	var shards []int32
	for _, t := range targets {
		b := &boardStep{id: t.board, whole: t.whole || counts[t.board] == 0, shards: make(map[int]*shardStep),
			aggs: make(map[aggKey]aggVal), dirty: make(map[aggKey]bool), stored: make(map[aggKey]bool), ids: make(map[string]*storedEvent)}
		s.boards[t.board] = b
		ids = append(ids, t.board)
		n := counts[t.board]
		if b.whole {
			for i := range n {
				b.shards[i] = new(shardStep)
			}
		} else {
			for _, m := range slices.Concat(t.members, t.maybe) {
				b.shards[shardindex.ShardOf(m, n)] = new(shardStep)
			}
		}
		for i := range b.shards {
			boards, shards = append(boards, b.id), append(shards, int32(i))
		}
	}
	batch.Queue("SELECT id, state, version FROM laurel_boards WHERE id = ANY($1)", ids)
	batch.Queue(`SELECT s.board, s.shard, s.version, s.stamp, s.seq FROM unnest($1::text[], $2::int[]) AS k(board, shard)
		JOIN laurel_shards s ON s.board = k.board AND s.shard = k.shard`, boards, shards)
	return func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: load boards: %w", err)
		}
		for rows.Next() {
			var id string
			var raw []byte
			var version int64
			if err := rows.Scan(&id, &raw, &version); err != nil {
				rows.Close()
				return err
			}
			st, err := s.e.states.parse(id, raw)
			if err != nil {
				rows.Close()
				return fmt.Errorf("postgres: board %s: %w", id, err)
			}
			b := s.boards[id]
			b.st, b.version, b.exists = st.clone(), version, true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, b := range s.boards {
			n := 0
			if b.st != nil {
				n = b.st.shards()
			}
			if n == 0 {
				s.e.shardCounts.forget(b.id)
			} else {
				s.e.shardCounts.put(b.id, n)
			}
			if n != counts[b.id] {
				return errShardsChanged
			}
		}
		rows, err = br.Query()
		if err != nil {
			return fmt.Errorf("postgres: load shards: %w", err)
		}
		defer rows.Close()
		found := 0
		for rows.Next() {
			var id string
			var i int32
			var version, stamp, seq int64
			if err := rows.Scan(&id, &i, &version, &stamp, &seq); err != nil {
				return err
			}
			sh := s.boards[id].shards[int(i)]
			sh.version, sh.seq, sh.found = version, seq, shardMark{stamp, version, seq}
			found++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if found != len(shards) {
			// A reshard committed between the two reads (each sees its own snapshot): start
			// again under the new count.
			return fmt.Errorf("postgres: load shards: %d of %d shards have a row: %w", found, len(shards), errShardsChanged)
		}
		return nil
	}
}

// dropUnheld leaves out of the step the shards it holds no lock of — neither among keys
// (sorted), which it waited for, nor among got, which it tried and took. Their rows were read
// with the others, and go unused.
func (s *step) dropUnheld(keys, got []int64) {
	for _, b := range s.boards {
		if b.whole {
			continue
		}
		for i := range b.shards {
			k := shardLockKey(s.e.ns, b.id, i)
			if _, held := slices.BinarySearch(keys, k); !held && !slices.Contains(got, k) {
				delete(b.shards, i)
			}
		}
	}
}

// makeShards gives a board created in the step (or resharded) its shards: rows of their own,
// numbering events above b.seqFloor.
func (b *boardStep) makeShards() {
	n := int64(b.st.shards())
	clear(b.shards)
	for i := range n {
		// The first number of shard i is the least above the floor that is i+1 modulo n.
		first := b.seqFloor + 1 + ((i-b.seqFloor)%n+n)%n
		b.shards[int(i)] = &shardStep{seq: first - n, made: true}
	}
}

// board returns a locked board; ENotFound when it does not exist.
func (s *step) board(id string) (*boardStep, error) {
	b := s.boards[id]
	if b == nil || b.st == nil {
		return nil, laurel.ErrNoBoard(id)
	}
	return b, nil
}

// get returns a member's aggregate in a span, from the step or the store.
func (s *step) get(ctx context.Context, b *boardStep, k aggKey) (aggVal, error) {
	if v, ok := b.aggs[k]; ok {
		return v, nil
	}
	if err := s.prefetch(ctx, b, []aggKey{k}); err != nil {
		return aggVal{}, err
	}
	return b.aggs[k], nil
}

// cached sets in b, for a step of submits, the aggregates of keys that the node kept from its
// own (aggcache.go), and returns the others.
func (s *step) cached(b *boardStep, keys []aggKey) []aggKey {
	if !s.submit {
		return keys
	}
	return s.e.aggs.fill(b, keys)
}

// reads are reads of a step that share one round trip: each queued query comes with what
// takes its answer.
type reads struct {
	batch pgx.Batch
	take  []func(pgx.BatchResults) error
}

func (r *reads) queue(sql string, args []any, take func(pgx.BatchResults) error) {
	r.batch.Queue(sql, args...)
	r.take = append(r.take, take)
}

// run sends the reads and takes their answers.
func (r *reads) run(ctx context.Context, s *step) error {
	if len(r.take) == 0 {
		return nil
	}
	br := s.tx.SendBatch(ctx, &r.batch)
	for _, take := range r.take {
		if err := take(br); err != nil {
			br.Close()
			return err
		}
	}
	return br.Close()
}

// prefetch reads the aggregates of keys the step has not read yet, in one query.
func (s *step) prefetch(ctx context.Context, b *boardStep, keys []aggKey) error {
	var r reads
	s.queueAggs(&r, b, keys)
	return r.run(ctx, s)
}

// queueAggs queues the read of prefetch: of buckets by key, of other aggregates their
// members' rows, whole.
func (s *step) queueAggs(r *reads, b *boardStep, keys []aggKey) {
	var wins, members, rows []string
	var spans []int64
	for _, k := range s.cached(b, keys) {
		if _, ok := b.aggs[k]; ok {
			continue
		}
		b.aggs[k], b.stored[k] = aggVal{}, false
		switch {
		case bucket(k):
			wins, spans, members = append(wins, k.win), append(spans, k.span), append(members, k.member)
		case !b.rowOf(k.member).loaded:
			rows = append(rows, k.member)
			b.rows[k.member].loaded = true // asked once
		}
	}
	if len(rows) > 0 {
		s.queueRows(r, b, rows)
	}
	if len(wins) == 0 {
		return
	}
	sql, hasSub := readAggsSQL, b.st.cfg.Subscore != nil
	if hasSub {
		sql = readAggsSubSQL
	}
	r.queue(sql, []any{b.id, wins, spans, members}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: read aggregates: %w", err)
		}
		defer rows.Close()
		dest := make([]any, 5, 6)
		for rows.Next() {
			var k aggKey
			v := aggVal{present: true}
			dest[0], dest[1], dest[2], dest[3], dest[4] = &k.win, &k.span, &k.member, &v.score, &v.at
			if hasSub {
				dest = append(dest[:5], &v.sub)
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			b.aggs[k], b.stored[k] = v, true
		}
		return rows.Err()
	})
}

// set writes a member's aggregate in a span.
func (b *boardStep) set(k aggKey, v aggVal) {
	if !v.present {
		v = aggVal{}
	}
	if b.undo != nil {
		if _, ok := b.undo.aggs[k]; !ok {
			old, had := b.aggs[k]
			b.undo.aggs[k] = undoAgg{old, had, b.dirty[k]}
		}
	}
	b.aggs[k] = v
	b.dirty[k] = true
	if !bucket(k) {
		b.rowOf(k.member).add(k)
	}
}

// readHidden learns which of members are hidden.
func (s *step) readHidden(ctx context.Context, members []string) error {
	var r reads
	s.queueHidden(&r, members)
	return r.run(ctx, s)
}

// queueHidden queues the read of readHidden.
func (s *step) queueHidden(r *reads, members []string) {
	var ask []string
	for _, m := range members {
		if _, ok := s.hidden[m]; !ok {
			ask = append(ask, m)
			s.hidden[m] = false
		}
	}
	if len(ask) == 0 {
		return
	}
	r.queue("SELECT member FROM laurel_hidden WHERE member = ANY($1)", []any{ask}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: read hidden marks: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var m string
			if err := rows.Scan(&m); err != nil {
				return err
			}
			s.hidden[m] = true
		}
		return rows.Err()
	})
}

// commit writes what the step staged to the store — names, events, aggregates, the rows of
// the shards that changed, and the board's row when its state did — and commits, in one round
// trip: should a write fail, PostgreSQL skips the rest of the batch, COMMIT included, and the
// transaction is rolled back.
func (s *step) commit(ctx context.Context) error {
	var batch pgx.Batch
	s.queueNamesWrite(&batch)
	for _, b := range s.boards {
		if b.deleted || b.st == nil {
			continue
		}
		// A board without a subscore writes no subscore: its rows hold NULL, which costs a
		// row no byte (migrations/006_subscore.sql), by the statements of before.
		hasSub := b.st.cfg.Subscore != nil
		if len(b.events) > 0 {
			var seqs, values, times, subs []int64
			var members, ids []string
			var tags []*string
			for _, ev := range b.events {
				seqs, members, values, times, ids, tags = append(seqs, ev.seq), append(members, ev.member), append(values, ev.value), append(times, ev.ts), append(ids, ev.id), append(tags, ev.tag)
				if hasSub {
					subs = append(subs, ev.sub)
				}
			}
			if hasSub {
				batch.Queue(insertEventsSubSQL, b.id, seqs, members, values, times, ids, tags, subs)
			} else {
				batch.Queue(insertEventsSQL, b.id, seqs, members, values, times, ids, tags)
			}
		}
		put, add := aggRows{hasSub: hasSub}, aggRows{hasSub: hasSub}
		var delW, delM []string
		var delS []int64
		var touched, rows []string
		seen := make(map[string]bool)
		for k := range b.dirty {
			touched = append(touched, k.member)
			if !bucket(k) {
				if !seen[k.member] {
					seen[k.member] = true
					rows = append(rows, k.member)
				}
				continue
			}
			v := b.aggs[k]
			stored, read := b.stored[k]
			switch {
			case !v.present:
				delW, delS, delM = append(delW, k.win), append(delS, k.span), append(delM, k.member)
			case s.submit && read && !stored:
				add.append(k, v)
			default:
				put.append(k, v)
			}
		}
		add.queue(&batch, insertAggsSQL, insertAggsSubSQL, b.id)
		put.queue(&batch, upsertAggsSQL, upsertAggsSubSQL, b.id)
		if len(delW) > 0 {
			batch.Queue(deleteAggsSQL, b.id, delW, delS, delM)
		}
		if err := s.queueRowWrites(ctx, &batch, b, rows); err != nil {
			return err
		}
		if err := s.readHidden(ctx, touched); err != nil {
			return err
		}
		s.versions(b)
		if !b.exists {
			batch.Queue("INSERT INTO laurel_boards (id, state, version) VALUES ($1, $2, $3)", b.id, b.st.encode(), b.version)
		} else if b.stateChanged {
			batch.Queue("UPDATE laurel_boards SET state = $2, version = $3 WHERE id = $1", b.id, b.st.encode(), b.version)
		}
		// Every shard held is stamped, changed or not: its aggregates may have changed
		// without a step of its sets in the index (aggcache.go).
		var made, held []int32
		var madeV, madeSeq, heldV, heldSeq []int64
		for i, sh := range b.shards {
			if sh.made {
				made, madeV, madeSeq = append(made, int32(i)), append(madeV, sh.version), append(madeSeq, sh.seq)
			} else {
				held, heldV, heldSeq = append(held, int32(i)), append(heldV, sh.version), append(heldSeq, sh.seq)
			}
		}
		var stamp any = s.stamp
		if s.e.opts.noStamps {
			stamp = nil // as a version before stamps: the row keeps the one it has
		}
		if len(made) > 0 {
			batch.Queue("DELETE FROM laurel_shards WHERE board = $1", b.id)
			batch.Queue(`INSERT INTO laurel_shards (board, shard, version, stamp, seq)
				SELECT $1, k.shard, k.version, coalesce($5::bigint, 0), k.seq FROM unnest($2::int[], $3::bigint[], $4::bigint[]) AS k(shard, version, seq)`,
				b.id, made, madeV, madeSeq, stamp)
		}
		if len(held) > 0 {
			batch.Queue(`UPDATE laurel_shards s SET version = k.version, stamp = coalesce($5::bigint, s.stamp), seq = k.seq
				FROM unnest($2::int[], $3::bigint[], $4::bigint[]) AS k(shard, version, seq)
				WHERE s.board = $1 AND s.shard = k.shard`, b.id, held, heldV, heldSeq, stamp)
		}
	}
	writes := batch.Len()
	batch.Queue("COMMIT")
	br := s.tx.SendBatch(ctx, &batch)
	err := func() error {
		for range writes {
			if _, err := br.Exec(); err != nil {
				return commitFailed(err)
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return commitFailed(err)
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("postgres: commit: %s", tag) // rolled back
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = commitFailed(cerr)
	}
	if duplicate(err) {
		// A row the node had kept as absent (insertAggsSQL): the next step reads the store.
		s.e.aggs.drop(s.boards)
	}
	return err
}

// insertEventsSQL writes the events of board $1 a step staged; insertEventsSubSQL, on a board
// with a subscore, with their subscores.
const (
	insertEventsSQL = `INSERT INTO laurel_events (board, seq, member, value, ts, id, tag)
		SELECT $1, k.seq, k.member, k.value, k.ts, NULLIF(k.id, ''), k.tag
		FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[]) AS k(seq, member, value, ts, id, tag)`
	insertEventsSubSQL = `INSERT INTO laurel_events (board, seq, member, value, ts, id, tag, sub)
		SELECT $1, k.seq, k.member, k.value, k.ts, NULLIF(k.id, ''), k.tag, k.sub
		FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::bigint[]) AS k(seq, member, value, ts, id, tag, sub)`
)

// insertAggsSQL writes aggregates of board $1 that the store has no row of; upsertAggsSQL,
// those it may have. A plain insert costs PostgreSQL less than one that checks for conflicts
// (docs/benchmarks.md), and a row the step did not expect fails the step rather than
// being overwritten. The Sub forms write the subscores ($7) of a board that has one.
const (
	insertAggsSQL = `INSERT INTO laurel_aggs (board, win, span, member, score, at)
		SELECT $1, k.win, k.span, k.member, k.score, k.at
		FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[]) AS k(win, span, member, score, at)`
	upsertAggsSQL = insertAggsSQL + `
		ON CONFLICT (board, win, span, member) DO UPDATE SET score = excluded.score, at = excluded.at`
	insertAggsSubSQL = `INSERT INTO laurel_aggs (board, win, span, member, score, at, sub)
		SELECT $1, k.win, k.span, k.member, k.score, k.at, k.sub
		FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[]) AS k(win, span, member, score, at, sub)`
	upsertAggsSubSQL = insertAggsSubSQL + `
		ON CONFLICT (board, win, span, member) DO UPDATE SET score = excluded.score, at = excluded.at, sub = excluded.sub`
)

// aggRows are aggregates to write, as the arrays of insertAggsSQL; subs only on a board with
// a subscore (hasSub).
type aggRows struct {
	hasSub             bool
	wins, members      []string
	spans, scores, ats []int64
	subs               []int64
}

// queue queues the write of the rows of board, if any, by sql or, on a board with a
// subscore, by subSQL.
func (r *aggRows) queue(batch *pgx.Batch, sql, subSQL, board string) {
	switch {
	case len(r.wins) == 0:
	case r.hasSub:
		batch.Queue(subSQL, board, r.wins, r.spans, r.members, r.scores, r.ats, r.subs)
	default:
		batch.Queue(sql, board, r.wins, r.spans, r.members, r.scores, r.ats)
	}
}

func (r *aggRows) append(k aggKey, v aggVal) {
	r.wins, r.spans, r.members = append(r.wins, k.win), append(r.spans, k.span), append(r.members, k.member)
	r.scores, r.ats = append(r.scores, v.score), append(r.ats, v.at)
	if r.hasSub {
		r.subs = append(r.subs, v.sub)
	}
}

// versions decides which shards of a board take a step in the index, and their versions and
// the board's stamp afterwards. A change of the board's state is a step of every shard: shard
// 0 records the state, stamped with its new version, and every other shard that stamp, so
// that reads of the old state find every shard changed.
func (s *step) versions(b *boardStep) {
	if b.stateChanged {
		b.st.updateDeadline()
		for _, sh := range b.shards {
			sh.ranked = true
		}
	}
	for k := range b.dirty {
		if ws := b.st.window(k.win); ws != nil {
			if _, ok := ws.indexSet(k.span); ok {
				b.shards[shardindex.ShardOf(k.member, b.st.shards())].ranked = true
			}
		}
	}
	for _, c := range b.extra {
		b.shards[shardindex.ShardOf(c.Member, b.st.shards())].ranked = true
	}
	for _, sh := range b.shards {
		if sh.ranked {
			sh.version++
		}
	}
	if b.stateChanged {
		b.version = b.shards[0].version
	}
}
