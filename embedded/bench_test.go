package embedded_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// The benchmarks follow issue 3: a sum board with four windows (all, week, day, last7d) and
// event ids, at -members members (1M by default).
var (
	benchMembers = flag.Int("members", 1_000_000, "members loaded before the engine benchmarks")
	benchLag     = flag.Int("checkpoint-lag", 0, "the store's CheckpointLag in the engine benchmarks (0: its default)")
	benchTags    = flag.Bool("tags", false, `every event loaded carries a tag, {"car":"kart-N"} with N of 16`)
	benchZipf    = flag.Float64("zipf", 0, "Zipf exponent (> 1) of member activity, as laurel bench's -zipf (0: the milder u³ of the figures recorded before this flag)")
	benchGuard   = flag.String("guard", "", "the guard of the engine benchmarks' board, as JSON (none by default)")
	benchSub     = flag.String("subscore", "", "asc or desc: the engine benchmarks' board has a subscore of that order, and every event carries one (1 to 1000 loaded, 1 to 5 ingested)")
)

var benchSpec = laurel.BoardSpec{Windows: []string{"all", "week", "day", "last7d"}}

// benchBoard returns the engine benchmarks' board, with the subscore -subscore asks for.
func benchBoard() laurel.BoardSpec {
	spec := benchSpec
	if *benchSub != "" {
		spec.Subscore = benchSub
	}
	return spec
}

// withSub gives ev a subscore from 1 to n when -subscore asks for one.
func withSub(ev *laurel.Event, i, n int) {
	if *benchSub != "" {
		ev.Sub, ev.HasSub = int64(i%n+1), true
	}
}

func memberName(i int) string { return "player-" + strconv.Itoa(i) }

// loadBoard submits one event per member, 1000 to a batch, spread over the last few days.
func loadBoard(tb testing.TB, e *embedded.Store, board string, members int, now int64) {
	tb.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]laurel.Event, 0, laurel.MaxBatch)
	for i := 0; i < members; i++ {
		batch = append(batch, laurel.Event{Board: board, Member: memberName(i), Value: rng.Int64N(10_000),
			TS: now - rng.Int64N(20*hour), HasTS: true, ID: "load-" + strconv.Itoa(i)})
		if *benchTags {
			batch[len(batch)-1].Tag = json.RawMessage(`{"car":"kart-` + strconv.Itoa(i%16) + `"}`)
		}
		withSub(&batch[len(batch)-1], rng.IntN(1000), 1000)
		if len(batch) == cap(batch) || i == members-1 {
			if _, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true}); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// rss returns the process's resident memory in bytes, from /proc (0 where there is none).
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkMemory reports the Go heap the store holds per (member, window) entry, and the
// growth of the process's resident memory per entry, which also counts Pebble's memtables and
// block cache (kept outside the Go heap when cgo is on) and memory the Go runtime holds.
func BenchmarkMemory(b *testing.B) {
	for range b.N {
		c := &laureltest.Clock{}
		c.Set(laurel.FormatTime(time.Now().UnixMilli()))
		before, rssBefore := heapInUse(), rss()
		e, err := embedded.Open(b.TempDir(), embedded.Options{Now: c.Now, CheckpointLag: *benchLag})
		if err != nil {
			b.Fatal(err)
		}
		putBoard(b, e, "bench", benchBoard())
		loadBoard(b, e, "bench", *benchMembers, c.Now())
		after, rssAfter := heapInUse(), rss()
		entries := float64(*benchMembers * len(benchSpec.Windows))
		b.ReportMetric(float64(after-before)/entries, "heap-B/entry")
		b.ReportMetric(float64(rssAfter-rssBefore)/entries, "rss-B/entry")
		e.Close()
	}
}

// rawFsyncRate measures appends of 64 bytes followed by fdatasync on a file in dir: what one
// durable write costs on this disk, the reference the ingest figures are divided by.
func rawFsyncRate(tb testing.TB, dir string, d time.Duration) float64 {
	f, err := os.Create(filepath.Join(dir, "fsync-reference"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		if _, err := f.Write(buf); err != nil {
			tb.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}

// benchEngine opens a store with the board loaded, shared by the benchmarks of one run.
var shared struct {
	once sync.Once
	e    *embedded.Store
	// What the writer's OnCommit hook saw: commits, the operations they carried, and the
	// time spent committing.
	commits, ops, syncNanos, bytes atomic.Int64
	dir                            string
	c                              *laureltest.Clock
}

func sharedEngine(b *testing.B) *embedded.Store {
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "laurel-bench-")
		if err != nil {
			b.Fatal(err)
		}
		shared.dir = dir
		shared.c = &laureltest.Clock{}
		shared.c.Set(laurel.FormatTime(time.Now().UnixMilli()))
		e, err := embedded.Open(dir, embedded.Options{Now: shared.c.Now, CheckpointLag: *benchLag, OnCommit: func(ops, bytes int, took time.Duration) {
			shared.commits.Add(1)
			shared.bytes.Add(int64(bytes))
			shared.ops.Add(int64(ops))
			shared.syncNanos.Add(int64(took))
		}})
		if err != nil {
			b.Fatal(err)
		}
		spec := benchBoard()
		if *benchGuard != "" {
			if err := json.Unmarshal([]byte(*benchGuard), &spec.Guard); err != nil {
				b.Fatalf("-guard: %v", err)
			}
		}
		putBoard(b, e, "bench", spec)
		start := time.Now()
		loadBoard(b, e, "bench", *benchMembers, shared.c.Now())
		b.Logf("loaded %d members in %v", *benchMembers, time.Since(start))
		shared.e = e
	})
	return shared.e
}

// BenchmarkIngest submits events with ids from 64 writers, each waiting for its batch to be
// durable: single events (the latency-bound case) and batches of 100 (laurel bench's
// default), and reports events/s, the ratio to raw fsyncs/s on the same disk, and the bytes
// committed per event.
func BenchmarkIngest(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchIngest(b, batch) })
	}
}

func benchIngest(b *testing.B, batch int) {
	e := sharedEngine(b)
	ref := rawFsyncRate(b, shared.dir, time.Second)
	const writers = 64
	var next atomic.Int64
	commits0, ops0, sync0, bytes0 := shared.commits.Load(), shared.ops.Load(), shared.syncNanos.Load(), shared.bytes.Load()
	store0, log0 := e.WrittenBytes()
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member := members(rand.New(rand.NewPCG(uint64(w), 7)), *benchMembers)
			for {
				taken := next.Add(int64(batch)) // the events written once this batch is
				if taken > int64(b.N) {
					break
				}
				evs := make([]laurel.Event, batch)
				for i := range evs {
					evs[i] = laurel.Event{Board: "bench", Member: memberName(member()), Value: 1,
						ID: "ingest-" + strconv.FormatInt(eventSeq.Add(1), 10)}
					withSub(&evs[i], int(taken)+i, 5)
				}
				if _, err := e.Submit(context.Background(), evs, laurel.SubmitOptions{}); err != nil {
					b.Error(err)
					return
				}
				// Time moves, a millisecond every 100 events, as a server's clock does under
				// this load: on a clock that stood still every event after the preload tied
				// on time, and the trees ordered the ties by comparing member ids.
				if taken/100 > (taken-int64(batch))/100 {
					shared.c.Advance(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	rate := float64(b.N) / time.Since(start).Seconds()
	// On a machine the benchmark saturates, CPU time an event says more than events/s: it is
	// what the store costs, less the noise of neighbours. Its writers' share is small.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-µs/event")
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(ref, "fsyncs/s")
	b.ReportMetric(rate/ref, "x-fsync")
	commits := shared.commits.Load() - commits0
	b.ReportMetric(float64(shared.ops.Load()-ops0)/float64(commits), "ops/commit")
	b.ReportMetric(float64(shared.syncNanos.Load()-sync0)/float64(commits)/1e3, "µs/commit")
	b.ReportMetric(float64(shared.bytes.Load()-bytes0)/float64(b.N), "B/event") // committed: what the log and memtables take in
	store, log := e.WrittenBytes()
	b.ReportMetric(float64(store-store0)/float64(b.N), "store-table-B/event") // flushed and compacted: the write amplification's cost
	b.ReportMetric(float64(log-log0)/float64(b.N), "log-table-B/event")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// eventSeq numbers the benchmarks' event ids, unique across runs of a benchmark.
var eventSeq atomic.Int64

// members returns a source of member indexes with skewed activity, for one goroutine: a few
// members are very active. With -zipf, as laurel bench draws them; else u³, which is milder
// (with -members 300000, a member's aggregates are rarely changed twice within the
// checkpoint lag, so the aggregates written behind are written about once an event).
func members(rng *rand.Rand, n int) func() int {
	if *benchZipf > 1 {
		z := rand.NewZipf(rng, *benchZipf, 1, uint64(n-1))
		return func() int { return int(z.Uint64()) }
	}
	return func() int {
		u := rng.Float64()
		return min(int(float64(n)*u*u*u), n-1)
	}
}

// BenchmarkReadsUnderWrites measures reads while 64 writers ingest: a top-100 page, a
// member's rank and around-me (radius 5), reporting p50 and p99 latency.
func BenchmarkReadsUnderWrites(b *testing.B) {
	e := sharedEngine(b)
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member := members(rand.New(rand.NewPCG(uint64(w), 9)), *benchMembers)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ev := laurel.Event{Board: "bench", Member: memberName(member()), Value: 1,
					ID: "rw-" + strconv.FormatInt(eventSeq.Add(1), 10)}
				if _, err := e.Submit(ctx, []laurel.Event{ev}, laurel.SubmitOptions{NoRanks: true}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	q := laurel.Query{Board: "bench", Window: "all"}
	reads := []struct {
		name string
		fn   func(rng *rand.Rand) error
	}{
		{"page100", func(*rand.Rand) error { _, err := e.Page(ctx, q, 0, 100, laurel.ScoreRange{}); return err }},
		{"rank", func(rng *rand.Rand) error {
			_, err := e.Member(ctx, q, memberName(rng.IntN(*benchMembers)))
			return err
		}},
		{"around", func(rng *rand.Rand) error {
			_, err := e.Around(ctx, q, memberName(rng.IntN(*benchMembers)), 5)
			return err
		}},
	}
	for _, r := range reads {
		b.Run(r.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				t := time.Now()
				if err := r.fn(rng); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkRestart reports how long Open takes to recover -restart-members members × four
// windows (2.5M: 10M entries).
var (
	restartMembers = flag.Int("restart-members", 2_500_000, "members for BenchmarkRestart")
	restartDir     = flag.String("restart-dir", "", "BenchmarkRestart's store: loaded there unless an earlier run left one, and kept (empty: a temporary one)")
)

func BenchmarkRestart(b *testing.B) {
	dir := *restartDir
	if dir == "" {
		dir = b.TempDir()
	}
	c := &laureltest.Clock{}
	c.Set(laurel.FormatTime(time.Now().UnixMilli()))
	if m, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*")); len(m) == 0 {
		e, err := embedded.Open(dir, embedded.Options{Now: c.Now})
		if err != nil {
			b.Fatal(err)
		}
		putBoard(b, e, "bench", benchBoard())
		loadBoard(b, e, "bench", *restartMembers, c.Now())
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		e, err := embedded.Open(dir, embedded.Options{Now: c.Now})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/open")
		info, err := e.Board(context.Background(), "bench")
		if err != nil || info.Current["all"].Total != *restartMembers {
			b.Fatalf("after restart: %+v, %v", info.Current, err)
		}
		b.StopTimer()
		e.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(*restartMembers*len(benchSpec.Windows)), "entries")
}

// BenchmarkReplay reports what a restart after a crash adds to BenchmarkRestart's recovery:
// the power fails (Pebble's crashable in-memory file system, what was synced kept) after
// -checkpoint-lag events (16384 by default) written to -members members in batches of 100,
// none of whose aggregates of open periods and all were checkpointed; Open replays them.
func BenchmarkReplay(b *testing.B) {
	lag := *benchLag
	if lag == 0 {
		lag = 1 << 14
	}
	fs := vfs.NewCrashableMem()
	c := &laureltest.Clock{}
	c.Set(laurel.FormatTime(time.Now().UnixMilli()))
	opts := embedded.Options{Now: c.Now, FS: fs, CheckpointLag: lag + 1}
	e, err := embedded.Open("/db", opts)
	if err != nil {
		b.Fatal(err)
	}
	putBoard(b, e, "bench", benchBoard())
	loadBoard(b, e, "bench", *benchMembers, c.Now())
	e.Close() // clean: the load is checkpointed
	if e, err = embedded.Open("/db", opts); err != nil {
		b.Fatal(err)
	}
	member := members(rand.New(rand.NewPCG(1, 2)), *benchMembers)
	for i := 0; i < lag; i += 100 {
		evs := make([]laurel.Event, 100)
		for j := range evs {
			evs[j] = laurel.Event{Board: "bench", Member: memberName(member()), Value: 1, ID: "replay-" + strconv.Itoa(i+j)}
		}
		if _, err := e.Submit(context.Background(), evs, laurel.SubmitOptions{NoRanks: true}); err != nil {
			b.Fatal(err)
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	e.Close()
	b.ResetTimer()
	for range b.N {
		// Each open starts from the crash: the store that replays stores what it replayed,
		// so a second open of the same files would replay nothing. It opens a plain copy:
		// the crashable file system copies a whole file at each of its syncs, which a disk
		// does not (the checkpoint file is some 450 MB here).
		b.StopTimer()
		opts.FS = copyFS(b, crashed, vfs.NewMem(), "/")
		b.StartTimer()
		start := time.Now()
		r, err := embedded.Open("/db", opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/open")
		b.StopTimer()
		r.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(lag), "events-replayed")
	b.ReportMetric(float64(*benchMembers*len(benchSpec.Windows)), "entries")
}

// copyFS copies the files under dir of src into dst, and returns dst.
func copyFS(b *testing.B, src, dst vfs.FS, dir string) vfs.FS {
	names, err := src.List(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		path := src.PathJoin(dir, name)
		info, err := src.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		if info.IsDir() {
			if err := dst.MkdirAll(path, 0o755); err != nil {
				b.Fatal(err)
			}
			copyFS(b, src, dst, path)
			continue
		}
		if err := vfs.CopyAcrossFS(src, path, dst, path); err != nil {
			b.Fatal(err)
		}
	}
	return dst
}

// BenchmarkRetry measures the id check of events sent again long after they were sealed: a
// store of -members events with ids (a seal every 65536, their ids in runs merged by eight),
// then batches of 100 of them sent again, drawn uniformly, each a duplicate. Each id passes
// the id filter and is searched for among the sealed ids (but for the few since the last
// seal, found in memory). Reported: CPU µs an event.
func BenchmarkRetry(b *testing.B) {
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	dir := b.TempDir()
	e, err := embedded.Open(dir, embedded.Options{Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := e.PutBoard(ctx, "retry", laurel.BoardSpec{Windows: []string{"all"}}); err != nil {
		b.Fatal(err)
	}
	n := *benchMembers
	event := func(i int) laurel.Event {
		return laurel.Event{Board: "retry", Member: memberName(i % 10_000), Value: int64(1 + i%7), ID: "retry-" + strconv.Itoa(i)}
	}
	batch := make([]laurel.Event, 0, laurel.MaxBatch)
	for i := range n {
		if batch = append(batch, event(i)); len(batch) == cap(batch) || i == n-1 {
			if _, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true}); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	// Closed and opened again: the merges under way are done, and the id filter is read back.
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if e, err = embedded.Open(dir, embedded.Options{Now: c.Now}); err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for deadline := time.Now().Add(time.Minute); !e.IDFilterReady(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the id filter did not finish its scan in a minute")
		}
	}
	rng := rand.New(rand.NewPCG(1, 9))
	cpu0 := cpuTime()
	b.ResetTimer()
	for done := 0; done < b.N; done += 100 {
		batch = batch[:0]
		for range min(100, b.N-done) {
			batch = append(batch, event(rng.IntN(n)))
		}
		res, err := e.Submit(ctx, batch, laurel.SubmitOptions{NoRanks: true})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Status != laurel.StatusDuplicate {
				b.Fatalf("an event sent again: %s", r.Status)
			}
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-µs/event")
}

// BenchmarkDistribution reads histograms of the all window of -members members (each an
// O(buckets · log n) search of the span's counted tree), each against the top-100 read of the
// same board timed in the same run: ×top100 is the ratio of their times.
//
//	go test ./embedded -run '^$' -bench Distribution -benchtime 2000x
func BenchmarkDistribution(b *testing.B) {
	e := sharedEngine(b)
	ctx := context.Background()
	q := laurel.Query{Board: "bench", Window: "all"}
	top100 := func() {
		if p, err := e.Page(ctx, q, 0, 100, laurel.ScoreRange{}); err != nil || len(p.Entries) != 100 {
			b.Fatal(err)
		}
	}
	b.Run("top100", func(b *testing.B) {
		for b.Loop() {
			top100()
		}
	})
	for _, h := range []laurel.Histogram{{Buckets: 10}, {Buckets: 100}, {Buckets: 1000}, {Edges: []int64{0, 10, 100, 1000, 10_000}}} {
		name := fmt.Sprintf("buckets=%d", h.Buckets)
		if h.Edges != nil {
			name = fmt.Sprintf("edges=%d", len(h.Edges))
		}
		b.Run(name, func(b *testing.B) {
			var read, ref time.Duration
			for b.Loop() {
				t := time.Now()
				d, err := e.Distribution(ctx, q, h)
				read += time.Since(t)
				if err != nil || d.Total != *benchMembers {
					b.Fatal(d.Total, err)
				}
				t = time.Now()
				top100()
				ref += time.Since(t)
			}
			b.ReportMetric(float64(read.Nanoseconds())/float64(b.N)/1000, "µs/read")
			b.ReportMetric(float64(read)/float64(ref), "×top100")
		})
	}
}
