package main

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/laureltest"
)

var faultsSeed = flag.Uint64("faults-seed", 0, "seed of TestScaleOutFaults (0: a new one)")

// TestScaleOutFaults runs three `laurel serve` nodes, processes of their own, on one
// PostgreSQL and a Redis of the test's own, and writes one board through all of them while
// faults come one after the other: a node killed with SIGKILL (and started again), every
// PostgreSQL session of the nodes terminated, Redis restarted empty, Redis flushed, `laurel
// rebuild` run. After each fault, once the writes it left in doubt are settled (sent again
// with their ids until they are answered), every read of every node — pages, members,
// around-me, lookups, hypothetical ranks, totals — must equal the brute-force model of the
// acknowledged events, the index repairing itself meanwhile (a read may answer 503, never
// something wrong). At the end, every acknowledged event sent again is a duplicate. It runs on
// a Redis, and on a Redis Cluster of three masters (where a restart is a flush of every
// master: a master restarted without its cluster configuration would leave the cluster).
func TestScaleOutFaults(t *testing.T) {
	if args := os.Getenv("LAUREL_TEST_NODE_ARGS"); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		os.Exit(run(ctx, strings.Split(args, "\x1f"), io.Discard, os.Stderr))
	}
	seed := *faultsSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -faults-seed=%d)", seed, seed)
	t.Run("redis", func(t *testing.T) {
		r := laureltest.NewPrivateRedis(t)
		runFaults(t, seed, []string{r.Addr}, func() { r.Kill(); r.Start() })
	})
	t.Run("cluster", func(t *testing.T) {
		c := laureltest.NewRedisCluster(t, 3)
		runFaults(t, seed, c.Addrs, nil)
	})
}

// faultNode is a `laurel serve` in a process of its own, on a port it keeps across restarts.
type faultNode struct {
	t    *testing.T
	args []string
	url  string
	cmd  *exec.Cmd
	log  *laureltest.Buffer
	svc  *lhttp.Client
	test string // the test that runs the node when its process starts; "": TestScaleOutFaults
}

func (n *faultNode) start() {
	n.t.Helper()
	n.cmd = exec.Command(os.Args[0], "-test.run=^"+cmp.Or(n.test, "TestScaleOutFaults")+"$")
	n.cmd.Env = append(os.Environ(), "LAUREL_TEST_NODE_ARGS="+strings.Join(n.args, "\x1f"))
	n.cmd.Stderr = n.log
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	laureltest.Within(n.t, 20*time.Second, "node "+n.url+" ready; its log:\n"+n.log.String(), func() bool { return readyz(n.url) == 200 })
}

// nodeLogs is the end of every node's log, for a failure to say what the nodes saw.
func nodeLogs(nodes []*faultNode) string {
	var b strings.Builder
	for i, n := range nodes {
		lines := strings.Split(strings.TrimSpace(n.log.String()), "\n")
		fmt.Fprintf(&b, "node %d (%s), its last log lines:\n  %s\n", i, n.url, strings.Join(lines[max(0, len(lines)-30):], "\n  "))
	}
	return b.String()
}

// kill ends the node at once, as a crash would.
func (n *faultNode) kill() {
	if n.cmd != nil {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		n.cmd = nil
	}
}

func (n *faultNode) stop() {
	if n.cmd != nil {
		n.cmd.Process.Signal(syscall.SIGTERM)
		n.cmd.Wait()
		n.cmd = nil
	}
}

// faultModel is what the nodes acknowledged: per member, the sum of its events' values and
// the latest of their times (mode sum), and every event with its batch.
type faultModel struct {
	mu      sync.Mutex
	score   map[string]int64
	at      map[string]int64
	acked   [][]laurel.Event
	pending [][]laurel.Event // answered with neither a result nor a refusal: maybe stored
	seen    map[string]bool  // ids stored
}

func (m *faultModel) ack(events []laurel.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acked = append(m.acked, events)
	for _, ev := range events {
		if m.seen[ev.ID] {
			continue
		}
		m.seen[ev.ID] = true
		m.score[ev.Member] += ev.Value
		m.at[ev.Member] = max(m.at[ev.Member], ev.TS)
	}
}

func (m *faultModel) ranking() *laurel.SortedRanking {
	var es []laurel.Entry
	for member, s := range m.score {
		es = append(es, laurel.Entry{Member: member, Score: s, ReachedAt: m.at[member]})
	}
	return laurel.NewSortedRanking(laurel.Ordering{}, es)
}

func runFaults(t *testing.T, seed uint64, redisAddrs []string, restartRedis func()) {
	store := laureltest.NewScaleOutStore(t)
	var b [4]byte
	crand.Read(b[:])
	app := "laurel_faults_" + hex.EncodeToString(b[:])
	dsn := store.DSN + "&application_name=" + app
	args := []string{"-postgres", dsn, "-redis", redisAddrs[0], "-redis-prefix", store.Prefix}
	var nodes []*faultNode
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		n := &faultNode{t: t, url: "http://" + addr, log: &laureltest.Buffer{},
			args: append([]string{"serve", "-addr", addr, "-data", t.TempDir(), "-maintenance", "100ms", "-request-timeout", "5s"}, args...)}
		n.svc = lhttp.NewClient(n.url)
		n.start()
		t.Cleanup(n.stop)
		nodes = append(nodes, n)
	}
	ctx := context.Background()
	if _, _, err := nodes[0].svc.PutBoard(ctx, "b", laurel.BoardSpec{Windows: []string{"all", "last24h"}}); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(seed, 7))
	model := &faultModel{score: map[string]int64{}, at: map[string]int64{}, seen: map[string]bool{}}
	members := make([]string, 240)
	for i := range members {
		members[i] = fmt.Sprintf("p%03d", i)
	}
	redisCLI := func(cmd ...string) {
		for _, a := range redisAddrs {
			_, port, _ := net.SplitHostPort(a)
			if out, err := exec.Command("redis-cli", append([]string{"-p", port}, cmd...)...).CombinedOutput(); err != nil {
				t.Fatalf("redis-cli %v on %s: %v\n%s", cmd, a, err, out)
			}
		}
	}
	if restartRedis == nil {
		restartRedis = func() { redisCLI("FLUSHALL") }
	}
	faults := []struct {
		name   string
		inject func()
		again  bool // once more after the writes: the reads find the index lost
	}{
		{"kill -9 a node", func() {
			n := nodes[rng.IntN(len(nodes))]
			n.kill()
			time.Sleep(300 * time.Millisecond) // the writers meet the dead node meanwhile
			n.start()
		}, false},
		{"pg_terminate_backend", func() {
			conn, err := pgx.Connect(ctx, laureltest.PostgresURL())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for range 5 {
				if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}, false},
		{"restart Redis", restartRedis, true},
		{"FLUSHALL", func() { redisCLI("FLUSHALL") }, true},
		{"laurel rebuild", func() {
			var stdout, stderr strings.Builder
			if code := run(ctx, append([]string{"rebuild"}, args...), &stdout, &stderr); code != 0 {
				t.Errorf("laurel rebuild during writes: exit %d\n%s%s", code, stdout.String(), stderr.String())
			}
		}, false},
	}
	var id int
	var idMu sync.Mutex
	nextID := func() string {
		idMu.Lock()
		defer idMu.Unlock()
		id++
		return "e" + strconv.Itoa(id)
	}
	for round, f := range faults {
		// Writers through every node, while the fault comes.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 6 {
			wrng := rand.New(rand.NewPCG(seed, uint64(round*100+w)))
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					events := make([]laurel.Event, 1+wrng.IntN(3))
					for i := range events {
						events[i] = laurel.Event{Board: "b", Member: members[wrng.IntN(len(members))], Value: 1 + wrng.Int64N(100),
							ID: nextID(), TS: time.Now().UnixMilli(), HasTS: true}
					}
					node := nodes[(w+k)%len(nodes)]
					submitFault(t, node.svc, events, model)
				}
			})
		}
		time.Sleep(400 * time.Millisecond)
		f.inject()
		time.Sleep(400 * time.Millisecond)
		close(stop)
		wg.Wait()
		doubt := settle(t, nodes, model)
		if f.again {
			f.inject()
		}
		retried := compareNodes(t, fmt.Sprintf("after %s (round %d)", f.name, round), nodes, model, rng, members)
		t.Logf("%s: %d batches in doubt settled, %d reads answered 503 first", f.name, doubt, retried)
	}
	// Every acknowledged event is stored: sent again, it is a duplicate.
	for _, events := range model.acked {
		res, err := nodes[0].svc.Submit(ctx, events, laurel.SubmitOptions{NoRanks: true})
		if err != nil {
			t.Fatalf("sending acknowledged events again: %v", err)
		}
		for i, r := range res {
			if r.Status != laurel.StatusDuplicate {
				t.Errorf("acknowledged event %s sent again: %q, want duplicate: it was lost", events[i].ID, r.Status)
			}
		}
	}
	t.Logf("%d batches acknowledged, %d events in the model", len(model.acked), len(model.seen))
}

// submitFault sends a batch and notes what became of it: acknowledged, or in doubt when the
// node could not answer (unavailable, or no answer at all). Any other answer is a failure.
func submitFault(t *testing.T, svc *lhttp.Client, events []laurel.Event, model *faultModel) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := svc.Submit(ctx, events, laurel.SubmitOptions{NoRanks: true})
	switch code := laurel.ErrorCode(err); {
	case err == nil:
		for i, r := range res {
			if r.Status != laurel.StatusApplied && r.Status != laurel.StatusDuplicate {
				t.Errorf("event %s: status %q", events[i].ID, r.Status)
			}
		}
		model.ack(events)
	case code == laurel.EUnavailable || code == laurel.EInternal && !isAPIError(err):
		model.mu.Lock()
		model.pending = append(model.pending, events)
		model.mu.Unlock()
	default:
		t.Errorf("a submit during faults: %v (code %s)", err, code)
	}
}

// isAPIError reports whether err is an error the API answered with, rather than a request
// that got no answer (a node killed, a connection refused).
func isAPIError(err error) bool {
	var e *laurel.Error
	return errors.As(err, &e)
}

// settle sends the batches in doubt again, through any node, until each is answered: then
// whatever the first try did, each event is stored once.
func settle(t *testing.T, nodes []*faultNode, model *faultModel) int {
	t.Helper()
	model.mu.Lock()
	pending := model.pending
	model.pending = nil
	model.mu.Unlock()
	for k, events := range pending {
		deadline := time.Now().Add(20 * time.Second)
		for try := 0; ; try++ {
			res, err := nodes[(k+try)%len(nodes)].svc.Submit(context.Background(), events, laurel.SubmitOptions{NoRanks: true})
			if err == nil && len(res) == len(events) {
				model.ack(events)
				break
			}
			if code := laurel.ErrorCode(err); code != laurel.EUnavailable && code != laurel.EInternal || time.Now().After(deadline) {
				t.Fatalf("settling a batch in doubt: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return len(pending)
}

// compareNodes compares the reads of every node with the model. A read may answer 503 while
// the index repairs itself; it is asked again, for up to 20 s. It returns how many reads did.
func compareNodes(t *testing.T, when string, nodes []*faultNode, model *faultModel, rng *rand.Rand, members []string) int {
	t.Helper()
	ctx := t.Context()
	want := model.ranking()
	total, _ := want.Total(ctx)
	retried := 0
	read := func(what string, fn func() error) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for try := 0; ; try++ {
			err := fn()
			if err == nil {
				if try > 0 {
					retried++
				}
				return
			}
			if laurel.ErrorCode(err) != laurel.EUnavailable || time.Now().After(deadline) {
				t.Fatalf("%s: %s: %v\n%s", when, what, err, nodeLogs(nodes))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, n := range nodes {
		ctx := context.Background()
		for _, window := range []string{"all", "last24h"} {
			q := laurel.Query{Board: "b", Window: window}
			where := fmt.Sprintf("node %d, %s", i, window)
			for offset := 0; offset <= total; offset += 100 {
				read(where+" page", func() error {
					p, err := n.svc.Page(ctx, q, offset, 100, laurel.ScoreRange{})
					if err != nil {
						return err
					}
					w, wt, _ := laurel.PageOf(ctx, want, laurel.Ordering{}, offset, 100, laurel.ScoreRange{})
					if p.Total != wt || !laureltest.SameEntries(p.Entries, w) {
						t.Fatalf("%s: %s: page at %d: total %d, %v\nwant %d, %v", when, where, offset, p.Total, p.Entries, wt, w)
					}
					return nil
				})
			}
			m := members[rng.IntN(len(members))]
			read(where+" around", func() error {
				p, err := n.svc.Around(ctx, q, m, 3)
				w, _, werr := laurel.AroundOf(ctx, want, "b", window, m, 3)
				if laurel.ErrorCode(err) == laurel.ENotFound && werr != nil {
					return nil
				}
				if err != nil {
					return err
				}
				if !laureltest.SameEntries(p.Entries, w) {
					t.Fatalf("%s: %s: around %s: %v\nwant %v", when, where, m, p.Entries, w)
				}
				return nil
			})
			ask := []string{members[rng.IntN(len(members))], members[rng.IntN(len(members))], "nobody"}
			read(where+" lookup", func() error {
				p, err := n.svc.Lookup(ctx, q, ask)
				if err != nil {
					return err
				}
				if w, _, _ := laurel.LookupOf(ctx, want, ask); !laureltest.SameEntries(p.Entries, w) {
					t.Fatalf("%s: %s: lookup %v: %v\nwant %v", when, where, ask, p.Entries, w)
				}
				return nil
			})
			score := rng.Int64N(400)
			read(where+" rank", func() error {
				r, tt, err := n.svc.RankOf(ctx, q, score, 0)
				if err != nil {
					return err
				}
				// A hypothetical rank reached now ranks after every entry with that score.
				wr, _ := want.Search(ctx, laurel.Key{Score: score, At: time.Now().UnixMilli() + 1})
				if tt != total || r != wr {
					t.Fatalf("%s: %s: rank of %d: %d of %d, want %d of %d", when, where, score, r, tt, wr, total)
				}
				return nil
			})
		}
		read(fmt.Sprintf("node %d board", i), func() error {
			info, err := n.svc.Board(ctx, "b")
			if err != nil {
				return err
			}
			if got := info.Current["all"].Total; got != total {
				t.Fatalf("%s: node %d: the board's total %d, want %d", when, i, got, total)
			}
			return nil
		})
	}
	return retried
}
