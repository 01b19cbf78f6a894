package embedded_test

// A crash test of the store's durability (docs/design.md: "An acknowledged write survives
// kill -9"): a child process writes at full speed and is killed with SIGKILL at a random
// moment, several times over, on the same directory. After each kill the test opens the store
// itself and checks that every acknowledged event and id is there, and nothing else.
//
//	go test ./embedded/ -run Crash -v                              # a fresh seed, printed
//	go test ./embedded/ -run Crash -v -crashseed=N -crashruns=M    # replay kill times
//
// Every fourth incarnation is not killed: its log's syncs start failing with EIO after the
// delay, as a failing disk's would, and the child must end by itself (Pebble cannot go on
// after a failed commit: laurel exits with status 2), answering none of the writes that
// failed. The check afterwards is the same.
//
// The child is this test binary re-executed with LAUREL_CRASH_CHILD set: TestCrash then runs
// the writer loop and never returns (it exits, or is killed). The child reports on stdout, one
// whole line per write so that a kill never leaves half a line: "ready" once its board exists,
// "sent <id> <member>" for each event before submitting it, and "ack <id>" after the submit
// returned without error.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
)

var (
	crashSeed = flag.Uint64("crashseed", 0, "TestCrash: seed of the kill times and the child's choices (0: from the clock)")
	crashRuns = flag.Int("crashruns", 4, "TestCrash: child incarnations, each killed at a random moment")
)

const (
	crashBoard      = "crash"
	crashMembers    = 50
	crashGoroutines = 16
	crashMaxBatch   = 20
)

var crashWindows = []string{"all", "day", "last7d"}

func crashMember(i int) string { return fmt.Sprintf("m%02d", i) }

func TestCrash(t *testing.T) {
	if inc := os.Getenv("LAUREL_CRASH_CHILD"); inc != "" {
		crashChild(inc, os.Getenv("LAUREL_CRASH_DIR"), os.Getenv("LAUREL_CRASH_SEED"))
		os.Exit(7) // unreachable: crashChild exits
	}
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("crash seed %d (replay with -crashseed=%d -crashruns=%d)", seed, seed, *crashRuns)
	rng := rand.New(rand.NewPCG(seed, 0xc4a5))
	dir := t.TempDir()
	st := &crashState{sent: map[string]string{}, acked: map[string]bool{}, present: map[string]bool{}}
	start := time.Now()
	for inc := 1; inc <= *crashRuns; inc++ {
		delay := time.Duration(150+rng.IntN(551)) * time.Millisecond
		sent0, acked0 := len(st.sent), len(st.acked)
		ioError := inc%4 == 0
		runCrashChild(t, dir, inc, rng.Uint64(), delay, ioError, st)
		how := "killed"
		if ioError {
			how = "I/O errors at sync"
		}
		t.Logf("incarnation %d: %s %v after ready; %d events sent, %d acked", inc, how, delay, len(st.sent)-sent0, len(st.acked)-acked0)
		verifyCrash(t, dir, inc, st)
		if t.Failed() {
			t.Fatalf("incarnation %d failed (seed %d)", inc, seed)
		}
	}
	t.Logf("%d incarnations, %d events in all, %v", *crashRuns, len(st.sent), time.Since(start).Round(time.Millisecond))
}

// crashState is what the parent knows, over all incarnations so far.
type crashState struct {
	sent    map[string]string // id → member: every event a child started to submit
	acked   map[string]bool   // ids whose submit returned without error
	present map[string]bool   // ids known to be in the store: acked, or confirmed by a verification
}

// runCrashChild starts incarnation inc of the child on dir, kills it delay after it is ready
// (or, with ioError, makes its syncs fail then and waits for it to end), and records what it
// reported in st.
func runCrashChild(t *testing.T, dir string, inc int, seed uint64, delay time.Duration, ioError bool, st *crashState) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"LAUREL_CRASH_CHILD="+strconv.Itoa(inc),
		"LAUREL_CRASH_DIR="+dir,
		"LAUREL_CRASH_SEED="+strconv.FormatUint(seed, 10))
	if ioError {
		cmd.Env = append(cmd.Env, "LAUREL_CRASH_EIO_AFTER="+delay.String())
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	// The reader owns st until eof is closed.
	ready, eof := make(chan struct{}), make(chan struct{})
	var readErr error
	go func() {
		defer close(eof)
		readErr = readCrashChild(stdout, ready, st)
	}()
	fail := func(format string, args ...any) {
		cmd.Process.Kill()
		<-eof
		cmd.Wait()
		killed = true
		t.Fatalf("incarnation %d: %s\nchild stderr:\n%s", inc, fmt.Sprintf(format, args...), stderr.String())
	}
	select {
	case <-ready:
	case <-eof:
		fail("the child ended before it was ready")
	case <-time.After(30 * time.Second):
		fail("the child was not ready after 30s")
	}
	if ioError {
		select {
		case <-eof:
		case <-time.After(delay + 30*time.Second):
			fail("the child went on for 30 s after its disk failed")
		}
		werr := cmd.Wait()
		killed = true
		var exit *exec.ExitError
		// The writer's panic (status 2) races its writers, which may see the store stopped
		// first and exit on that (status 4): either way the child ended by itself, failing.
		// Pebble panics with the I/O error itself when it meets it rotating its log rather
		// than committing (seen once in CI).
		died := strings.Contains(stderr.String(), "fatal commit error") || strings.Contains(stderr.String(), "panic: syscall.Errno(5)")
		ended := errors.As(werr, &exit) && (exit.ExitCode() == 2 && died ||
			exit.ExitCode() == 4 && strings.Contains(stderr.String(), "shutting down"))
		if readErr != nil || !ended {
			t.Fatalf("incarnation %d: after I/O errors the child ended with %v (read error %v), want Pebble's panic on the I/O error (status 2) or a write refused as the store stopped (4)\nchild stderr:\n%.2000s", inc, werr, readErr, stderr.String())
		}
		return
	}
	select {
	case <-time.After(delay):
	case <-eof:
		fail("the child ended before it was killed (read error: %v)", readErr)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("incarnation %d: kill: %v", inc, err)
	}
	<-eof
	werr := cmd.Wait()
	killed = true
	if readErr != nil {
		t.Fatalf("incarnation %d: reading the child: %v\nchild stderr:\n%s", inc, readErr, stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(werr, &exit) || exit.ExitCode() != -1 || !strings.Contains(exit.String(), "killed") {
		t.Fatalf("incarnation %d: the child ended with %v, want killed\nchild stderr:\n%s", inc, werr, stderr.String())
	}
}

// readCrashChild records the child's report in st until its stdout closes.
func readCrashChild(r io.Reader, ready chan struct{}, st *crashState) error {
	br := bufio.NewReaderSize(r, 1<<16)
	isReady := false
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			if line != "" {
				return fmt.Errorf("a partial line %q: the child's lines are not atomic", line)
			}
			return nil
		}
		if err != nil {
			return err
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "ready":
			if !isReady {
				isReady = true
				close(ready)
			}
		case len(f) == 3 && f[0] == "sent":
			if _, dup := st.sent[f[1]]; dup {
				return fmt.Errorf("id %s sent twice", f[1])
			}
			st.sent[f[1]] = f[2]
		case len(f) == 2 && f[0] == "ack":
			if _, ok := st.sent[f[1]]; !ok {
				return fmt.Errorf("id %s acked but never sent", f[1])
			}
			st.acked[f[1]] = true
			st.present[f[1]] = true
		default:
			// The testing package's own output (none is expected without -test.v).
		}
	}
}

// verifyCrash opens the store left by a killed child and checks it against st: every acked
// event is counted, no event is counted that was not sent, and every id is there exactly
// when its event is counted. It ends with every sent id present (resubmitting the ones the
// store did not have), so that the next incarnation starts from an exactly known state.
func verifyCrash(t *testing.T, dir string, inc int, st *crashState) {
	t.Helper()
	ctx := context.Background()
	e, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatalf("incarnation %d: open after the kill: %v", inc, err)
	}
	defer func() {
		if err := e.Check(); err != nil {
			t.Errorf("incarnation %d: after the checks: %v", inc, err)
		}
		if err := e.Close(); err != nil {
			t.Errorf("incarnation %d: close: %v", inc, err)
		}
	}()

	sentBy := map[string]int{}    // member → events sent
	presentBy := map[string]int{} // member → events known present
	for id, m := range st.sent {
		sentBy[m]++
		if st.present[id] {
			presentBy[m]++
		}
	}

	// 1. Scores lie between what was acknowledged and what was sent.
	before := crashScores(t, e, inc)
	for i := range crashMembers {
		m := crashMember(i)
		s, ok := before[m]
		if presentBy[m] > 0 && !ok {
			t.Errorf("incarnation %d: member %s with %d acknowledged events is not on the board", inc, m, presentBy[m])
		}
		if s < int64(presentBy[m]) || s > int64(sentBy[m]) {
			t.Errorf("incarnation %d: member %s scores %d, want %d (acknowledged) to %d (sent)", inc, m, s, presentBy[m], sentBy[m])
		}
	}

	// 1b. Every counted event left its history point, the last ones before the kill
	// included. A point holds the standing after its event's group, so events of one group
	// share a score: newest first, the points score s, then never more.
	for m, sc := range before {
		pts, err := e.History(ctx, crashBoard, "all", m, laurel.MaxHistoryLimit)
		if err != nil {
			t.Fatalf("incarnation %d: History %s: %v", inc, m, err)
		}
		if want := min(sc, laurel.MaxHistoryLimit); int64(len(pts)) != want {
			t.Errorf("incarnation %d: member %s scores %d with %d history points, want %d", inc, m, sc, len(pts), want)
			continue
		}
		if pts[0].Score != sc || !slices.IsSortedFunc(pts, func(a, b laurel.HistoryPoint) int { return cmp.Compare(b.Score, a.Score) }) {
			t.Errorf("incarnation %d: member %s scores %d; its history, newest first: %v", inc, m, sc, pts[:min(len(pts), 5)])
		}
	}

	// 2. Every id known present is a duplicate; every other sent id is a duplicate exactly
	// when its event was committed before the kill. Either way it is present afterwards.
	var known, unknown []string
	for id := range st.sent {
		if st.present[id] {
			known = append(known, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	slices.Sort(known)
	slices.Sort(unknown)
	dupBy := map[string]int{} // member → ids that were in the store before the resubmits
	lost, committed, absent := 0, 0, 0
	resubmit := func(ids []string, mustBeThere bool) {
		for len(ids) > 0 {
			n := min(len(ids), laurel.MaxBatch)
			evs := make([]laurel.Event, n)
			for i, id := range ids[:n] {
				evs[i] = laurel.Event{Board: crashBoard, Member: st.sent[id], Value: 1, ID: id}
			}
			res, err := e.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true})
			if err != nil {
				t.Fatalf("incarnation %d: resubmit: %v", inc, err)
			}
			if len(res) != n {
				t.Fatalf("incarnation %d: resubmit of %d events: %d results", inc, n, len(res))
			}
			for i, r := range res {
				id := ids[i]
				switch r.Status {
				case laurel.StatusDuplicate:
					dupBy[st.sent[id]]++
					if !mustBeThere {
						committed++
					}
				case laurel.StatusApplied:
					if mustBeThere {
						lost++
						if lost <= 10 {
							t.Errorf("incarnation %d: acknowledged id %s (member %s) was lost: resubmitting it applied", inc, id, st.sent[id])
						}
					} else {
						absent++
					}
				default:
					t.Fatalf("incarnation %d: resubmit of %s: status %q", inc, id, r.Status)
				}
				st.present[id] = true
			}
			ids = ids[n:]
		}
	}
	resubmit(known, true)
	resubmit(unknown, false)
	if lost > 0 {
		t.Errorf("incarnation %d: %d of %d acknowledged ids were lost", inc, lost, len(known))
	}

	// 3. Nothing else: before the resubmits, each member's score was exactly the number of its
	// ids the store held; after them, exactly the number of its events sent.
	for i := range crashMembers {
		m := crashMember(i)
		if before[m] != int64(dupBy[m]) {
			t.Errorf("incarnation %d: member %s scored %d after recovery, but the store held %d of its ids", inc, m, before[m], dupBy[m])
		}
	}
	after := crashScores(t, e, inc)
	var sum int64
	for i := range crashMembers {
		m := crashMember(i)
		sum += after[m]
		if after[m] != int64(sentBy[m]) {
			t.Errorf("incarnation %d: member %s scores %d after the resubmits, want %d (every event sent)", inc, m, after[m], sentBy[m])
		}
	}
	if sum != int64(len(st.sent)) || len(st.present) != len(st.sent) {
		t.Errorf("incarnation %d: scores sum to %d with %d ids present, want %d", inc, sum, len(st.present), len(st.sent))
	}
	t.Logf("incarnation %d: recovered; %d ids acked or confirmed earlier, %d of them lost; %d unacked ids: %d committed before the kill, %d not",
		inc, len(known), lost, len(unknown), committed, absent)
}

// crashScores reads every member's all-time score (absent: 0, not in the map) and checks that
// the page of the board agrees with the member reads and that the last7d window, which holds
// every event of the test, agrees with all.
func crashScores(t *testing.T, e *embedded.Store, inc int) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	scores := map[string]int64{}
	for i := range crashMembers {
		m := crashMember(i)
		me, err := e.Member(ctx, laurel.Query{Board: crashBoard, Window: "all"}, m)
		if laurel.ErrorCode(err) == laurel.ENotFound {
			continue
		}
		if err != nil {
			t.Fatalf("incarnation %d: Member %s: %v", inc, m, err)
		}
		scores[m] = me.Entry.Score
		roll, err := e.Member(ctx, laurel.Query{Board: crashBoard, Window: "last7d"}, m)
		if err != nil || roll.Entry.Score != me.Entry.Score {
			t.Errorf("incarnation %d: member %s: last7d %d (%v), all %d", inc, m, roll.Entry.Score, err, me.Entry.Score)
		}
	}
	p, err := e.Page(ctx, laurel.Query{Board: crashBoard, Window: "all"}, 0, laurel.MaxPageLimit, laurel.ScoreRange{})
	if err != nil {
		t.Fatalf("incarnation %d: Page: %v", inc, err)
	}
	if p.Total != len(scores) || len(p.Entries) != len(scores) {
		t.Errorf("incarnation %d: page total %d with %d entries, member reads found %d", inc, p.Total, len(p.Entries), len(scores))
	}
	for _, en := range p.Entries {
		if s, ok := scores[en.Member]; !ok || s != en.Score {
			t.Errorf("incarnation %d: page has %s at %d, member read %d (present %v)", inc, en.Member, en.Score, s, ok)
		}
	}
	return scores
}

// crashChild is the child: it writes events at full speed on dir until it is killed.
func crashChild(inc, dir, seedText string) {
	die := func(code int, format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crash child %s: %s\n", inc, fmt.Sprintf(format, args...))
		os.Exit(code)
	}
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if err != nil || dir == "" {
		die(2, "bad environment: dir %q seed %q", dir, seedText)
	}
	ctx := context.Background()
	// Seals a few times a second, and runs of their ids merged two to four at a time, so that
	// kills land in seals and in merges too.
	opts := embedded.Options{SealEvents: 1000 + int(seed%3000), IDRunFanout: 2 + int(seed/7%3)}
	var failAfter time.Duration // counted from ready, as the parent's kill is
	fs := newFaultFS()
	if after := os.Getenv("LAUREL_CRASH_EIO_AFTER"); after != "" {
		if failAfter, err = time.ParseDuration(after); err != nil {
			die(2, "bad LAUREL_CRASH_EIO_AFTER %q", after)
		}
		opts.FS = fs
	}
	e, err := embedded.Open(dir, opts)
	if err != nil {
		die(2, "open: %v", err)
	}
	if _, _, err := e.PutBoard(ctx, crashBoard, laurel.BoardSpec{Windows: crashWindows, Mode: ptr("sum")}); err != nil {
		die(2, "PutBoard: %v", err)
	}
	var mu sync.Mutex
	// out writes whole lines with one write(2) each time (under PIPE_BUF, so a kill never
	// splits it), and in the order of the calls.
	out := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := os.Stdout.Write(b); err != nil {
			die(3, "stdout: %v", err) // the parent is gone
		}
	}
	out([]byte("ready\n"))
	if failAfter > 0 {
		time.AfterFunc(failAfter, func() { fs.fail.Store(true) })
	}
	for g := range crashGoroutines {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			var sent, acks []byte
			for n := 0; ; {
				k := 1 + rng.IntN(crashMaxBatch)
				evs := make([]laurel.Event, k)
				sent, acks = sent[:0], acks[:0]
				for i := range evs {
					n++
					evs[i] = laurel.Event{Board: crashBoard, Member: crashMember(rng.IntN(crashMembers)), Value: 1,
						ID: fmt.Sprintf("c%s-g%d-%d", inc, g, n)}
					sent = fmt.Appendf(sent, "sent %s %s\n", evs[i].ID, evs[i].Member)
					acks = fmt.Appendf(acks, "ack %s\n", evs[i].ID)
				}
				out(sent)
				res, err := e.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: g%2 == 1})
				if err != nil {
					die(4, "Submit: %v", err)
				}
				if len(res) != k {
					die(5, "Submit of %d events: %d results", k, len(res))
				}
				for i, r := range res {
					if r.Status != laurel.StatusApplied || r.ID != evs[i].ID {
						die(5, "Submit: result %d is %+v for id %s, want applied", i, r, evs[i].ID)
					}
				}
				out(acks)
			}
		}()
	}
	// The parent kills us long before this; if it is gone without doing so, do not linger.
	time.Sleep(2 * time.Minute)
	die(6, "not killed after 2 minutes")
}
