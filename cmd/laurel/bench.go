package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// runBench is `laurel bench`: a load generator that drives a running laurel over HTTP, and
// with -redis the equivalent plain Redis workload in the same run, and prints both with their
// ratios (docs/benchmarks.md). Writes are batches of value-1 events with ids on Zipf-skewed
// members; reads, running at the same time, are the top 100 with names.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	var c benchConfig
	fs.StringVar(&c.url, "url", "http://127.0.0.1:7300", "laurel to drive")
	fs.StringVar(&c.board, "board", "bench", "board to create (or reuse) and write to")
	fs.IntVar(&c.members, "members", 1_000_000, "members")
	fs.StringVar(&c.windows, "windows", "all,week,day,last7d", "windows of the board, comma-separated")
	fs.IntVar(&c.batch, "batch", 100, "events per request (Redis: commands per pipeline)")
	fs.IntVar(&c.writers, "writers", 16, "concurrent writers")
	fs.IntVar(&c.readers, "readers", 2, "concurrent readers of the top 100")
	fs.Float64Var(&c.readRate, "read-rate", 0, "top-100 reads per second of each reader, paced (0: each reads again as soon as answered)")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long to write and read, per system")
	fs.Float64Var(&c.zipf, "zipf", 1.1, "Zipf exponent (> 1) of member activity: higher is more skewed")
	fs.BoolVar(&c.preload, "preload", true, "first give every member one event and a name, so all of them are ranked")
	fs.BoolVar(&c.names, "names", false, "every event laurel takes carries its member's name, as from a client that does not track which names it sent (Redis's workloads set names only in the preload)")
	fs.BoolVar(&c.ranks, "ranks", false, "the writes ask for their ranks and where each member came from (ranks=true), as a game's end-of-run screen does")
	fs.Float64Var(&c.rate, "rate", 0, "events per second to send in all, paced (0: as fast as the system takes them)")
	fs.StringVar(&c.guard, "guard", "", `also run the same workload on a board with this guard (JSON, such as {"trusted": true, "rate": {"max": 100000, "interval": "10s"}, "gain": {"window": "all", "max": 1000000000}}), alternating with the board without, and print the ratios`)
	fs.BoolVar(&c.tags, "tags", false, `also run the same workload on a board whose events carry a tag ({"car":"kart-N"}), alternating with the board without, and print the ratios, memory per entry included`)
	fs.StringVar(&c.subscore, "subscore", "", `asc or desc: also run the same workload on a board with a subscore of that order whose events each carry one (1 to 5), alternating with the board without, and print the ratios, memory per entry included`)
	fs.IntVar(&c.rounds, "rounds", 2, "with -guard, -tags or -subscore: rounds of the two boards, alternating")
	redis := fs.String("redis", "", "also run the plain Redis workload against this address (host:port) and print ratios")
	fs.BoolVar(&c.mirror, "redis-mirror", false, "Redis does laurel's work per event: HSETNX of the id, ZINCRBY in one sorted set per window")
	fs.IntVar(&c.memberStreams, "member-streams", 0, "measure laurel twice, without and then with this many members' live streams open (the most active members'), and print the ratios")
	soakFor := fs.Duration("soak", 0, "laurel alone, for this long at a steady -rate, printing a line an -interval: events/s, write and read p99, resident set, live heap, open files, the store's tables and memtables (0: no soak)")
	interval := fs.Duration("interval", time.Minute, "with -soak, how long each interval of the report lasts")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.guard != "" && (*redis != "" || c.rounds < 1 || !json.Valid([]byte(c.guard))) {
		return usageError{fmt.Errorf("-guard takes a JSON object, -rounds ≥ 1, and no -redis")}
	}
	if c.tags && (*redis != "" || c.rounds < 1 || c.guard != "") {
		return usageError{fmt.Errorf("-tags takes -rounds ≥ 1, and no -redis or -guard")}
	}
	if c.subscore != "" && (c.subscore != "asc" && c.subscore != "desc" || *redis != "" || c.rounds < 1 || c.guard != "" || c.tags) {
		return usageError{fmt.Errorf("-subscore takes asc or desc, -rounds ≥ 1, and no -redis, -guard or -tags")}
	}
	if c.members < 1 || c.batch < 1 || c.batch > 1000 || c.writers < 1 || c.readers < 0 || c.zipf <= 1 || c.duration <= 0 || c.rate < 0 || c.readRate < 0 {
		return usageError{fmt.Errorf("need -members ≥ 1, -batch 1…1000, -writers ≥ 1, -readers ≥ 0, -zipf > 1, -duration > 0, -rate ≥ 0, -read-rate ≥ 0")}
	}
	if c.memberStreams < 0 || c.memberStreams > c.members || c.memberStreams > 0 && *redis != "" {
		return usageError{fmt.Errorf("need -member-streams 0…-members, and not with -redis")}
	}
	if *soakFor < 0 || (*soakFor > 0 && (*redis != "" || *interval <= 0 || c.rate == 0)) {
		return usageError{fmt.Errorf("-soak runs laurel alone at a steady pace: give it a duration, -rate > 0, -interval > 0, and no -redis")}
	}
	c.key = firstKey("LAUREL_ADMIN_KEY")
	c.run = strconv.FormatInt(time.Now().UnixNano(), 36)
	c.stderr = stderr

	if c.memberStreams > 0 {
		return runMemberStreams(ctx, newLaurelTarget(c), c, stdout)
	}
	if *soakFor > 0 {
		return soak(ctx, newLaurelTarget(c), c, *soakFor, *interval, stdout)
	}
	targets := []benchTarget{newLaurelTarget(c)}
	if c.guard != "" || c.tags || c.subscore != "" {
		// The second board, alternating with the first: guarded, taking tags, or ranking by
		// a subscore.
		other := c
		switch {
		case c.guard != "":
			other.board, other.guarded = c.board+"-guarded", true
		case c.tags:
			other.board, other.tagged = c.board+"-tagged", true
		default:
			other.board, other.subbed = c.board+"-subscore", true
		}
		targets = nil
		for range c.rounds {
			targets = append(targets, newLaurelTarget(c), newLaurelTarget(other))
		}
	}
	if *redis != "" {
		rt, err := newRedisTarget(*redis, c)
		if err != nil {
			return fmt.Errorf("redis at %s: %w", *redis, err)
		}
		defer rt.close()
		targets = append(targets, rt)
	}
	var results []benchResult
	for _, t := range targets {
		r, err := runTarget(ctx, t, c)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name(), err)
		}
		results = append(results, r)
	}
	printBench(stdout, c, results)
	return nil
}

// runTarget sets t up and preloads it, reading what the members cost in memory, then measures
// it under load, with laurel's own view of its latencies over the run.
func runTarget(ctx context.Context, t benchTarget, c benchConfig) (benchResult, error) {
	if err := t.setup(ctx); err != nil {
		return benchResult{}, fmt.Errorf("setup: %w", err)
	}
	var mem footprint
	if c.preload {
		before, err := t.memory(ctx)
		if err != nil {
			return benchResult{}, fmt.Errorf("memory: %w", err)
		}
		if err := preload(ctx, t, c); err != nil {
			return benchResult{}, fmt.Errorf("preload: %w", err)
		}
		after, err := t.memory(ctx)
		if err != nil {
			return benchResult{}, fmt.Errorf("memory: %w", err)
		}
		mem = after.minus(before)
	}
	r, err := measureServer(ctx, t, c)
	r.mem = mem
	return r, err
}

// measureServer measures t under load, with the CPU the server and this load generator used
// over the run, and laurel's own view of its latencies.
func measureServer(ctx context.Context, t benchTarget, c benchConfig) (benchResult, error) {
	before, err := t.server(ctx)
	if err != nil {
		return benchResult{}, fmt.Errorf("server: %w", err)
	}
	own0 := ownCPU()
	r, err := measure(ctx, t, c)
	if err != nil {
		return benchResult{}, err
	}
	r.benchCPU = ownCPU() - own0
	after, err := t.server(ctx)
	if err != nil {
		return benchResult{}, fmt.Errorf("server: %w", err)
	}
	r.serverCPU, r.server = after.cpu-before.cpu, after.latencies.minus(before.latencies)
	return r, nil
}

// ownCPU is the CPU time this process, the load generator, has used so far.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type benchConfig struct {
	url, board, windows, key, run string
	members, batch                int
	writers, readers              int
	duration                      time.Duration
	zipf, rate, readRate          float64
	preload                       bool
	names                         bool   // laurel: every event carries its member's name
	ranks                         bool   // laurel: the writes ask for their standings
	mirror                        bool   // Redis: an id and a sorted set per window, not one set
	guard                         string // -guard: the guard of the second board, as JSON
	guarded                       bool   // this target's board has the guard
	tags                          bool   // -tags: the second board's events carry tags
	tagged                        bool   // this target's events carry tags
	subscore                      string // -subscore: the second board's subscore order
	subbed                        bool   // this target's board has a subscore, its events carry one
	rounds                        int
	memberStreams                 int // laurel, measured without, with this many member streams, and without
	round                         int // a soak's interval: its writers draw other members than the last's
	stderr                        io.Writer
}

// benchTarget is a system under load: laurel over HTTP, or plain Redis.
type benchTarget interface {
	name() string
	setup(ctx context.Context) error
	// load writes one event (Redis: one score) and a name for each of members.
	load(ctx context.Context, members []int) error
	// writer returns what writer w calls to write its batch n: a value-1 event with an id for
	// each of members (Redis: ZINCRBY). ctx bounds every call; calls are never concurrent.
	writer(ctx context.Context, w int) func(n int, members []int) error
	// reader returns what one reader calls to read the top 100 with names.
	reader(ctx context.Context) func() error
	// memory returns what the system holds in memory now.
	memory(ctx context.Context) (footprint, error)
	// server returns what the server says of itself so far.
	server(ctx context.Context) (serverView, error)
}

// serverView is what a server says of itself, read before and after a run.
type serverView struct {
	cpu       time.Duration   // the CPU time it has used, all its threads, user and system
	latencies serverLatencies // laurel's request histograms (none for Redis)
}

// footprint is what a system holds in memory, read before the preload and after it: the
// difference is what the members cost.
type footprint struct {
	// data is laurel's live Go heap, read right after a collection (what it keeps for the
	// board, profiles included); for Redis, the sorted set's MEMORY USAGE (names not included).
	data int64
	// all is everything the server holds: laurel's resident set (the Go runtime's headroom,
	// Pebble's memtables and cache); Redis's used_memory (names' hashes included; its resident
	// set would not grow when the allocator reuses an earlier run's pages).
	all int64
	// resident is the resident set: laurel's (as all), Redis's used_memory_rss, which is
	// what a Redis of its own, fresh for the run, makes a user provision.
	resident int64
	// entries is the number of ranked entries: in every window's current period for laurel,
	// in the sorted set for Redis.
	entries int64
}

func (f footprint) minus(g footprint) footprint {
	return footprint{data: f.data - g.data, all: f.all - g.all, resident: f.resident - g.resident, entries: f.entries - g.entries}
}

// known reports whether the footprint says something per entry: not when the preload's
// members were all on the board already.
func (f footprint) known() bool { return f.entries > 0 }

func (f footprint) residentPerEntry() float64 { return float64(f.resident) / float64(f.entries) }

func (f footprint) perEntry() (data, all float64) {
	return float64(f.data) / float64(f.entries), float64(f.all) / float64(f.entries)
}

func memberID(i int) string { return "player-" + strconv.Itoa(i) }

// preload gives every member one event and a name.
func preload(ctx context.Context, t benchTarget, c benchConfig) error {
	bar := newProgress(c.stderr, t.name()+": loading members", int64(c.members), false)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	errs := make(chan error, c.writers)
	for range c.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(1000)) - 1000
				if lo >= c.members || ctx.Err() != nil {
					return
				}
				hi := min(lo+1000, c.members)
				ms := make([]int, 0, hi-lo)
				for i := lo; i < hi; i++ {
					ms = append(ms, i)
				}
				if err := t.load(ctx, ms); err != nil {
					errs <- err
					return
				}
				bar.Add(len(ms))
			}
		}()
	}
	wg.Wait()
	bar.Finish()
	close(errs)
	return <-errs
}

// benchResult is what one system did.
type benchResult struct {
	name          string
	events        int
	took          time.Duration
	writes, reads []time.Duration // latency of each write request and each top-100 read
	mem           footprint       // what the preload's members cost
	server        serverLatencies // laurel's own view of its latencies during the run
	// The CPU time the server and the load generator used during the run. Where the two
	// share a machine's cores, events/s measures both; CPU an event measures the server.
	serverCPU, benchCPU time.Duration
}

func (r benchResult) rate() float64 { return float64(r.events) / r.took.Seconds() }

// cpuPerEvent is d per event of the run, in microseconds.
func (r benchResult) cpuPerEvent(d time.Duration) float64 {
	return float64(d) / 1e3 / float64(max(r.events, 1))
}

// measure runs the writers and readers against t for the configured duration.
func measure(ctx context.Context, t benchTarget, c benchConfig) (benchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	bar := newProgress(c.stderr, t.name()+": writing and reading, seconds", int64(c.duration/time.Second), false)
	go func() {
		for range time.Tick(time.Second) {
			if ctx.Err() != nil {
				return
			}
			bar.Add(1)
		}
	}()
	var (
		mu     sync.Mutex
		res    = benchResult{name: t.name()}
		wg     sync.WaitGroup
		failed error
	)
	fail := func(err error) {
		mu.Lock()
		if failed == nil && ctx.Err() == nil {
			failed = err
		}
		mu.Unlock()
		cancel()
	}
	start := time.Now()
	var batches atomic.Int64 // with -rate, batch k is due at start + k·batch/rate
	// Readers start once a batch is written: without -preload the board starts empty, and an
	// empty top 100 is an error.
	written := make(chan struct{})
	var once sync.Once
	for w := range c.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z := mrand.NewZipf(mrand.New(mrand.NewSource(int64(c.round)<<32|int64(w)+1)), c.zipf, 1, uint64(c.members-1))
			write := t.writer(ctx, w)
			ms := make([]int, c.batch)
			var lat []time.Duration
			events := 0
			for n := 0; ctx.Err() == nil; n++ {
				if c.rate > 0 && !waitUntil(ctx, paced(start, batches.Add(1)-1, c.rate/float64(c.batch))) {
					break
				}
				for i := range ms {
					ms[i] = int(z.Uint64())
				}
				t0 := time.Now()
				if err := write(n, ms); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					break
				}
				lat = append(lat, time.Since(t0))
				events += len(ms)
				once.Do(func() { close(written) })
			}
			mu.Lock()
			res.writes = append(res.writes, lat...)
			res.events += events
			mu.Unlock()
		}()
	}
	for range c.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			top100 := t.reader(ctx)
			select {
			case <-written:
			case <-ctx.Done():
			}
			var lat []time.Duration
			begin := time.Now()
			for n := 0; ctx.Err() == nil; n++ {
				if c.readRate > 0 && !waitUntil(ctx, paced(begin, int64(n), c.readRate)) {
					break
				}
				t0 := time.Now()
				if err := top100(); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					break
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.reads = append(res.reads, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.took = time.Since(start)
	bar.Finish()
	return res, failed
}

// paced returns when the k-th of a series at perSecond a second, from start, is due: one
// that falls behind goes at once.
func paced(start time.Time, k int64, perSecond float64) time.Time {
	return start.Add(time.Duration(float64(k) / perSecond * float64(time.Second)))
}

// waitUntil waits until due, and reports whether ctx is still live.
func waitUntil(ctx context.Context, due time.Time) bool {
	select {
	case <-time.After(time.Until(due)):
	case <-ctx.Done():
	}
	return ctx.Err() == nil
}

func quantile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

// pace says how the writers send.
func pace(c benchConfig) string {
	if c.rate > 0 {
		return fmt.Sprintf("paced at %.0f events/s", c.rate)
	}
	return "as fast as taken"
}

func printBench(w io.Writer, c benchConfig, rs []benchResult) {
	readPace := "each as fast as answered"
	if c.readRate > 0 {
		readPace = fmt.Sprintf("each paced at %.0f a second", c.readRate)
	}
	redisRan := slices.ContainsFunc(rs, func(r benchResult) bool { return r.name == "redis" }) // not a second board's rounds
	redis := ""
	if redisRan {
		redis = "; Redis: one sorted set"
		if c.mirror {
			redis = "; Redis: an id and a sorted set per window (-redis-mirror)"
		}
	}
	fmt.Fprintf(w, "members %d, windows %s, batch %d, writers %d (%s), readers %d (%s), %s each, zipf %.2f%s\n\n",
		c.members, c.windows, c.batch, c.writers, pace(c), c.readers, readPace, c.duration, c.zipf, redis)
	fmt.Fprintf(w, "%-8s %12s %28s %10s %28s %22s\n", "system", "events/s", "write ms p50/p99/p999", "reads/s", "top-100 ms p50/p99/p999", "CPU µs/event srv/gen")
	for _, r := range rs {
		fmt.Fprintf(w, "%-8s %12.0f %28s %10.0f %28s %22s\n", r.name, r.rate(),
			ms(quantile(r.writes, .5))+" / "+ms(quantile(r.writes, .99))+" / "+ms(quantile(r.writes, .999)),
			float64(len(r.reads))/r.took.Seconds(),
			ms(quantile(r.reads, .5))+" / "+ms(quantile(r.reads, .99))+" / "+ms(quantile(r.reads, .999)),
			fmt.Sprintf("%.2f / %.2f", r.cpuPerEvent(r.serverCPU), r.cpuPerEvent(r.benchCPU)))
	}
	fmt.Fprintf(w, "(CPU: of the server, all its threads, and of this load generator, over the run, readers' included)\n")
	if s := rs[0].server; s.writes.count > 0 {
		fmt.Fprintf(w, "\nlaurel's own view (its request histograms, from routing a request to its answer written):\n"+
			"write p99 ≤ %s ms, top-100 p99 ≤ %s ms\n", s.writes.quantile(.99), s.reads.quantile(.99))
	}
	if rs[0].mem.known() {
		fmt.Fprintf(w, "\n%-8s %16s %16s %12s\n", "system", "B/entry (data)", "B/entry (all)", "entries")
		for _, r := range rs {
			if r.mem.entries == 0 {
				continue // a round after the first: the members were there already
			}
			data, all := r.mem.perEntry()
			fmt.Fprintf(w, "%-8s %16.1f %16.1f %12d\n", r.name, data, all, r.mem.entries)
		}
		if redisRan {
			fmt.Fprintf(w, "(data: laurel's live heap, everything it keeps for the board and names; Redis's sorted set.\n"+
				" all: laurel's resident set; Redis's used_memory, names included)\n")
		} else {
			fmt.Fprintf(w, "(data: laurel's live heap, everything it keeps for the board and names; all: its resident set)\n")
		}
	}
	if c.guard != "" || c.tags || c.subscore != "" {
		switch {
		case c.guard != "":
			fmt.Fprintf(w, "\nguard %s\n", c.guard)
		case c.tags:
			fmt.Fprintf(w, "\ntags: every event of the second board carries one\n")
		default:
			fmt.Fprintf(w, "\nsubscore %s: the second board has one, and every event of it carries one\n", c.subscore)
		}
		for i := 0; i+1 < len(rs); i += 2 {
			l, g := rs[i], rs[i+1]
			fmt.Fprintf(w, "round %d, %s / laurel: events/s %.2f, server CPU an event %.2f\n", i/2+1, g.name,
				g.rate()/l.rate(), g.cpuPerEvent(g.serverCPU)/l.cpuPerEvent(l.serverCPU))
		}
		if l, g := rs[0], rs[1]; (c.tags || c.subscore != "") && l.mem.known() && g.mem.known() {
			ld, _ := l.mem.perEntry()
			gd, _ := g.mem.perEntry()
			fmt.Fprintf(w, "%s / laurel: memory per entry %.2f (%.1f B / %.1f B)\n", g.name, gd/ld, gd, ld)
		}
		return
	}
	if len(rs) == 2 {
		l, r := rs[0], rs[1]
		ratio := func(a, b time.Duration) string {
			if b == 0 {
				return "-"
			}
			return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
		}
		fmt.Fprintf(w, "\nlaurel / redis: events/s %.2f, write p99 %s, top-100 p99 %s\n",
			l.rate()/r.rate(), ratio(quantile(l.writes, .99), quantile(r.writes, .99)), ratio(quantile(l.reads, .99), quantile(r.reads, .99)))
		if l.serverCPU > 0 && r.serverCPU > 0 {
			fmt.Fprintf(w, "laurel / redis: server CPU an event %.2f (events/s the server's CPU alone allows: %.2f)\n",
				l.cpuPerEvent(l.serverCPU)/r.cpuPerEvent(r.serverCPU), r.cpuPerEvent(r.serverCPU)/l.cpuPerEvent(l.serverCPU))
		}
		if l.mem.known() && r.mem.known() {
			ld, lr := l.mem.perEntry()
			rd, rr := r.mem.perEntry()
			fmt.Fprintf(w, "laurel / redis: memory per entry %.2f (all %.2f)\n", ld/rd, lr/rr)
			fmt.Fprintf(w, "laurel / redis: resident per entry %.2f (%.1f B / %.1f B, Redis's used_memory_rss: a Redis of its own, fresh)\n",
				l.mem.residentPerEntry()/r.mem.residentPerEntry(), l.mem.residentPerEntry(), r.mem.residentPerEntry())
		}
	}
}

// firstKey returns the first key of a comma-separated list in the environment.
func firstKey(name string) string {
	if keys, _ := keyList(os.Getenv(name)); len(keys) > 0 {
		return keys[0]
	}
	return ""
}
