// Package postgres is laurel's scale-out store: the rules of the root package over a
// PostgreSQL store, which keeps the truth, and a shardindex.Index (package redis), which ranks.
// The store keeps no state of its own, so any number of them, on any number of machines,
// serve one database pair.
//
// # How a write becomes durable and visible
//
// A board's members are split into shards (shardindex.ShardOf). A write locks the shards it
// touches (a session advisory lock per shard, always taken in one order; locks.go), or the
// whole board when it changes the board's state, stages its changes in one PostgreSQL
// transaction, commits it, applies what changed in the rankings to the index as one step per
// shard, and only then unlocks and answers. So each shard's steps reach the index in the order
// they were committed, the index never shows what the store could still lose, and writes to
// different shards of one board run in parallel, on one store or many. Every step carries the
// shard's version, counted in the store too: a step lost in a crash between the commit and
// the index is noticed by the next write, the next read that finds no state, or the store's
// maintenance, and the shard's index (or the board's) is rebuilt from the store.
//
// # How a read is answered
//
// The index holds, with each board's sets, the board's state: its configuration, which
// periods are open, which closed ones are kept, and the next instant the board has work
// (a period to close, a rolling bucket to leave). A read takes the state from the index,
// catches the board up first if that instant has passed, and reads the board's set of the
// span it wants in one script, which checks that every shard follows that state. Closed
// periods are read from the store, frozen with their ranks; a rolling window at a past
// instant is computed from its buckets.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Now is the clock in unix milliseconds; nil is the system clock. Every store serving one
	// database should run on the same (synchronized) clock.
	Now func() int64
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// MaxConns caps the store's connections to PostgreSQL; zero is 32. A write holds one for
	// as long as it holds its boards' locks.
	MaxConns int32
	// Maintenance is how often the store catches up boards whose time has come and checks
	// that the index is at the store's version; zero is one second, negative never.
	Maintenance time.Duration
	// OnCommit, when set, is called after each step's commit with the operations (submits,
	// or 1) it carried and how long the commit took (its writes and the commit, which go
	// in one round trip): for metrics.
	OnCommit func(ops int, took time.Duration)
	// Shards is how many shards the boards created (or imported) get; zero is
	// DefaultShards. Reshard changes a board's.
	Shards int
	// CachedAggregates caps the aggregates the store keeps in memory from its own submits, so
	// that its next submits to the same shards need not read them (aggcache.go); zero is
	// DefaultCachedAggregates, negative keeps none.
	CachedAggregates int

	noStamps bool // commit as a version before stamps did (tests)
}

// DefaultCachedAggregates is how many aggregates a store keeps when Options do not say:
// about 170 MB, at some 160 bytes an entry (key, value, map slot and the member's string).
const DefaultCachedAggregates = 1 << 20

// DefaultShards is the shard count of a board when Options do not say (docs/decisions.md,
// "Sharded boards"): enough for four nodes to write one board at once, few enough that a read
// asks four parts of the index rather than one.
const DefaultShards = 4

// Store is laurel's Service on PostgreSQL and an index. Its methods are safe for concurrent
// use.
type Store struct {
	laurel.Reads // Page, Member, Around, Lookup, RankOf over Read

	pool  *pgxpool.Pool
	index shardindex.Index
	now   func() int64
	log   *slog.Logger
	ns    string // the schema: boards of other schemas lock apart
	opts  Options

	states stateCache
	seen   boardMap[seenState] // what reads last found in the index (resolveAhead)
	// shardCounts is each board's shard count, so that a write knows which locks to take
	// without asking the database first; a count is checked once the locks are held.
	shardCounts boardMap[int]
	lagging     struct {
		mu sync.Mutex
		m  map[string]lagging // by board, from the last maintenance pass
	}
	// missed holds the boards whose index missed a step this node committed, each with the
	// number of its last miss, until a repair that began after that miss ends (its own lock:
	// a step that notes one must not wait for a repair).
	missed struct {
		mu     sync.Mutex
		boards map[string]uint64
		misses uint64
		any    atomic.Bool // boards is not empty: what a read looks at first
	}
	submits submits
	aggs    aggCache

	watchers laurel.Watchers
	unsub    func()

	stop chan struct{}
	done chan struct{}
	once sync.Once

	down        atomic.Bool   // the last probe found PostgreSQL or the index not answering
	historyLost atomic.Uint64 // history points given up (recordHistory)
}

var (
	_ laurel.Service = (*Store)(nil)
	_ laurel.Records = (*Store)(nil)
)

// Open connects to the PostgreSQL database at dsn (a URL or key=value string; a search_path
// parameter selects the schema), brings its schema up to date, and returns a store ranking
// with index.
func Open(ctx context.Context, dsn string, index shardindex.Index, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = 32
	}
	if opts.Maintenance == 0 {
		opts.Maintenance = time.Second
	}
	if opts.Shards == 0 {
		opts.Shards = DefaultShards
	}
	if opts.Shards < 1 || opts.Shards > MaxShards {
		return nil, fmt.Errorf("postgres: %d shards: a board has 1 to %d", opts.Shards, MaxShards)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg.MaxConns = opts.MaxConns
	// A write holds its boards' locks on its session. If the machine of a store dies
	// holding them, the server must notice the dead connection in seconds, not after the
	// system's two hours of TCP keepalive.
	//
	// A prepared statement is planned once per connection, not at each run: left to choose,
	// PostgreSQL plans the write path's statements anew at every run, as their array
	// arguments make a plan for the arguments look cheaper than the generic one (10% of its
	// CPU under single-event writes, docs/benchmarks.md). TestKeyLookupPlans checks that the
	// generic plans probe the indexes.
	for k, v := range map[string]string{"plan_cache_mode": "force_generic_plan", "tcp_keepalives_idle": "15", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3"} {
		if _, ok := cfg.ConnConfig.RuntimeParams[k]; !ok {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	e := &Store{pool: pool, index: index, now: opts.Now, log: opts.Logger, opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	e.Reads = laurel.Reads{Reader: e}
	e.aggs.max = max(opts.CachedAggregates, 0)
	if opts.CachedAggregates == 0 {
		e.aggs.max = DefaultCachedAggregates
	}
	var ns *string // NULL when no schema of the search_path exists
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&ns); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if ns == nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: no schema of the search_path (%s) exists; create it first (CREATE SCHEMA …)", cfg.ConnConfig.RuntimeParams["search_path"])
	}
	e.ns = *ns
	if err := migrate(ctx, pool, e.ns); err != nil {
		pool.Close()
		return nil, err
	}
	if e.unsub, err = index.Subscribe(e.changed); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: subscribe to the index: %w", err)
	}
	go e.maintain(opts.Maintenance)
	return e, nil
}

// CatchUpLagging catches up every board whose index is behind the store's versions: steps a
// node committed and died (kill -9) before giving to the index, which reads would miss — and
// windows disagree on — until a maintenance pass found them. A server calls it before it
// serves, so that it is not ready until then. (catchUp first waits a moment for steps on
// their way from live nodes.) A board whose index holds nothing of it (Redis restarted empty)
// is left to its first read, which rebuilds it, as a whole store could take long.
func (s *Store) CatchUpLagging(ctx context.Context) error {
	boards, err := s.boardVersions(ctx)
	if err != nil {
		return err
	}
	for _, b := range boards {
		view, err := s.indexView(ctx, b.id, len(b.versions))
		if err != nil {
			return err
		}
		if view.ok && view.below(b.stamp, b.versions) {
			if err := s.catchUp(ctx, b.id); err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
				return err
			}
		}
	}
	return nil
}

// boardVersion is a board's row as the store has it: its state, stamped, and its shards'
// versions.
type boardVersion struct {
	id       string
	stamp    int64
	state    []byte
	versions []int64
}

// boardVersions reads every board's row and its shards' versions.
func (s *Store) boardVersions(ctx context.Context) ([]boardVersion, error) {
	rows, err := s.pool.Query(ctx, `SELECT b.id, b.version, b.state, array_agg(s.version ORDER BY s.shard)
		FROM laurel_boards b JOIN laurel_shards s ON s.board = b.id GROUP BY b.id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (boardVersion, error) {
		var x boardVersion
		err := r.Scan(&x.id, &x.stamp, &x.state, &x.versions)
		return x, err
	})
}

// Close stops the store's maintenance and closes its connections. Later calls do nothing.
func (s *Store) Close() error {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.unsub()
		s.pool.Close()
	})
	return nil
}

//go:embed migrations/*.sql
var migrations embed.FS

// migrate applies the migrations the database lacks, in order, each in a transaction, under
// a lock so that stores starting together migrate once.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Release()
	key := lockKey(schema, "\x00migrate")
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS laurel_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		var done bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM laurel_migrations WHERE name = $1)", base).Scan(&done); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		if done {
			continue
		}
		sql, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO laurel_migrations (name) VALUES ($1)", base)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", base, err)
		}
	}
	return nil
}

// maintain catches up boards whose time has come and repairs boards whose index missed a
// step, every period, so that reads rarely wait for either.
func (s *Store) maintain(period time.Duration) {
	defer close(s.done)
	if period < 0 {
		<-s.stop
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	// Boards whose step this node saw lost are repaired sooner, as soon as both backends
	// answer (or by this node's next read of them, first): other nodes' reads miss what the
	// step wrote until then.
	lost := time.NewTicker(min(period, missedEvery))
	defer lost.Stop()
	for {
		pass := s.Maintain
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-lost.C:
			if !s.missed.any.Load() {
				continue
			}
			pass = s.repairMissed
		}
		if !s.probe() {
			continue // nothing to maintain without both backends
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*period)
		if err := pass(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("maintenance", "err", err)
		}
		cancel()
	}
}

// missedEvery is how often a node looks to repair the boards whose step it saw lost.
const missedEvery = 100 * time.Millisecond

// repairMissed rebuilds the index of the boards whose step this node saw lost, at once: a
// catch-up would first wait a second for the step to arrive, which it never does. A board
// that fails is kept for the next try.
func (s *Store) repairMissed(ctx context.Context) error {
	s.missed.mu.Lock()
	missed := maps.Clone(s.missed.boards)
	s.missed.mu.Unlock()
	var first error
	for id, miss := range missed {
		first = cmp.Or(first, s.repair(ctx, id, miss))
	}
	return first
}

// repairIfMissed rebuilds board's index first when this node saw a step of it lost, so that
// a read on the node that acknowledged a write never misses it (the maintenance pass would
// repair it within missedEvery, but a read may come sooner).
func (s *Store) repairIfMissed(ctx context.Context, board string) error {
	if !s.missed.any.Load() {
		return nil
	}
	s.missed.mu.Lock()
	miss, ok := s.missed.boards[board]
	s.missed.mu.Unlock()
	if !ok {
		return nil
	}
	return s.repair(ctx, board, miss)
}

// repair rebuilds board's index and forgets its misses up to miss: one noted since, during
// the rebuild, may not be in what it read, and waits for the next repair.
func (s *Store) repair(ctx context.Context, board string, miss uint64) error {
	if err := s.Rebuild(ctx, board); err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
		return err
	}
	s.missed.mu.Lock()
	defer s.missed.mu.Unlock()
	if s.missed.boards[board] == miss {
		delete(s.missed.boards, board)
		s.missed.any.Store(len(s.missed.boards) > 0)
	}
	return nil
}

// Maintain checks every board once, as the store does every Options.Maintenance: it catches
// up the boards whose time has come and rebuilds the index of those whose index is not at
// the store's version (a step lost between a commit and the index, or an index that lost its
// data).
func (s *Store) Maintain(ctx context.Context) error {
	read := time.Now()
	boards, err := s.boardVersions(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	s.lagging.mu.Lock()
	defer s.lagging.mu.Unlock()
	last := s.lagging.m
	s.lagging.m = make(map[string]lagging)
	// The boards whose step this node saw lost first, at once. A board that fails is left
	// for the next pass; the others are still seen to (one board's failure held back the
	// repair of every other).
	first := s.repairMissed(ctx)
	for _, b := range boards {
		st, err := s.states.parse(b.id, b.state)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		view, err := s.indexView(ctx, b.id, len(b.versions))
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		// The index takes each step just after the store commits it: an index behind the
		// versions just read is most often one on its way (a step another node lost, this
		// node cannot tell from one). It is repaired when it is still behind, a pass later,
		// the versions that pass read — once they were read indexWait ago: a step on its way
		// reaches the index by then, or never does.
		behind, wait := !view.ok, indexWait
		if view.below(b.stamp, b.versions) {
			// A lag found under another shard count (a reshard since) tells nothing yet.
			prev, ok := last[b.id]
			if ok && len(prev.versions) == len(b.versions) && view.below(prev.stamp, prev.versions) {
				behind, wait = true, max(0, indexWait-time.Since(prev.read))
			}
			s.lagging.m[b.id] = lagging{b.stamp, b.versions, read}
		}
		if behind || st.due(now) {
			delete(s.lagging.m, b.id)
			if err := s.catchUpWithin(ctx, b.id, wait); err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
				first = cmp.Or(first, err)
			}
		}
	}
	return first
}

// missedStep notes that the index missed a step of board this node committed: repairMissed
// rebuilds it, without waiting to see whether the step is on its way.
func (s *Store) missedStep(board string) {
	s.missed.mu.Lock()
	defer s.missed.mu.Unlock()
	if s.missed.boards == nil {
		s.missed.boards = make(map[string]uint64)
	}
	s.missed.misses++
	s.missed.boards[board] = s.missed.misses
	s.missed.any.Store(true)
}

// lagging is what a maintenance pass found the index behind: the store's versions it read.
type lagging struct {
	stamp    int64
	versions []int64
	read     time.Time // when they were read
}
