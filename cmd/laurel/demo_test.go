package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestDemo runs `laurel demo` as a newcomer would: it prints a URL where the page and three
// boards with a week of history are, scores keep coming in on their own, and Ctrl-C stops it
// and removes its data.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, w := io.Pipe()
	var stderr laureltest.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"demo", "-addr", "127.0.0.1:0", "-rate", "20", "-seed", "7"}, w, &stderr)
		w.Close()
	}()
	lines := bufio.NewScanner(out)
	url := regexp.MustCompile(`open (http://[^ ]+)/ in a browser`)
	var base string
	for lines.Scan() {
		if m := url.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("no URL printed; stderr:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, out)

	status, body := do(t, "GET", base+"/v1/boards", "")
	boards, _ := body["boards"].([]any)
	if status != http.StatusOK || len(boards) != 3 {
		t.Fatalf("boards: %d %v", status, body)
	}
	// A week of play is there already: the weekly board has last week too.
	_, body = do(t, "GET", base+"/v1/boards/weekly/periods", "")
	if periods, _ := body["periods"].([]any); len(periods) < 2 {
		t.Fatalf("weekly periods: %v", body)
	}
	// The lap board's past days are closed, and their fastest rewarded.
	_, body = do(t, "GET", base+"/v1/boards/laps/periods?window=day", "")
	periods, _ := body["periods"].([]any)
	var closed string
	for _, p := range periods {
		if p.(map[string]any)["closed"] == true {
			closed = p.(map[string]any)["id"].(string)
			break
		}
	}
	if closed == "" {
		t.Fatalf("no closed day on the lap board: %v", body)
	}
	if status, body := do(t, "GET", base+"/v1/boards/laps/periods/"+closed+"/results?window=day", ""); status != http.StatusOK ||
		body["rewarded"].(float64) < 1 || body["rewarded"].(float64) > 3 {
		t.Fatalf("results of %s: %d %v", closed, status, body)
	}
	total := func() float64 {
		_, body := do(t, "GET", base+"/v1/boards/points?window=all", "")
		cur, _ := body["current"].(map[string]any)
		all, _ := cur["all"].(map[string]any)
		n, _ := all["total"].(float64)
		return n
	}
	score := func() float64 {
		_, body := do(t, "GET", base+"/v1/boards/points/entries?window=all&limit=1000", "")
		sum := 0.0
		entries, _ := body["entries"].([]any)
		for _, e := range entries {
			sum += e.(map[string]any)["score"].(float64)
		}
		return sum
	}
	if total() == 0 {
		t.Fatal("the points board is empty")
	}
	before := score()
	for deadline := time.Now().Add(10 * time.Second); score() == before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no new scores within 10 s")
		}
	}

	// The players score through the API: the server counts their events, as the admin
	// console's ingest figure shows. A handler counts its events once the store has answered
	// it, so a reader may see a score a moment before the count: look again for a while.
	applied := regexp.MustCompile(`(?m)^laurel_events_applied_total (\S+)$`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := applied.FindSubmatch(metrics)
		if m != nil && string(m[1]) != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("/metrics counts no applied events while the demo plays: %q", m)
			break
		}
	}

	// The page a newcomer opens is there.
	if resp, err := http.Get(base + "/boards/points"); err != nil || resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("the board page: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("demo exited %d; stderr:\n%s", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop")
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "laurel-demo-*"))
	if len(left) > 0 {
		t.Fatalf("the demo left its data behind: %v", left)
	}
	if s := stderr.String(); strings.Contains(s, "level=ERROR") {
		t.Fatalf("errors logged:\n%s", s)
	}
}

// TestDemoPastWeekLateOnASunday: the demo's made-up past reaches into last week whenever the
// demo starts, late on a Sunday included, for every seed tried: the weekly board shows last
// week beside this one.
func TestDemoPastWeekLateOnASunday(t *testing.T) {
	sunday := time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)
	for seed := range uint64(20) {
		store, err := embedded.Open(t.TempDir(), embedded.Options{Now: func() int64 { return sunday.UnixMilli() }})
		if err != nil {
			t.Fatal(err)
		}
		sim := newSimulation(store, seed)
		sim.now = func() time.Time { return sunday }
		if err := sim.setUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		periods, err := store.Periods(context.Background(), "weekly", "week")
		store.Close()
		if err != nil {
			t.Fatal(err)
		}
		lastWeek := false
		for _, p := range periods {
			lastWeek = lastWeek || p.ID == "2026-11-16" && p.Total > 0
		}
		if !lastWeek {
			t.Fatalf("seed %d: the weekly board's periods at %s: %+v; want last week with players", seed, sunday, periods)
		}
	}
}

// TestDemoYesterdayClosedEarlyInTheDay: started half an hour into a day, the demo's lap board
// has yesterday closed and rewarded, as the README says (with a late_limit of an hour it
// stayed open until one o'clock, and its results answered 409).
func TestDemoYesterdayClosedEarlyInTheDay(t *testing.T) {
	early := time.Date(2026, 11, 30, 0, 30, 0, 0, time.UTC)
	store, err := embedded.Open(t.TempDir(), embedded.Options{Now: func() int64 { return early.UnixMilli() }})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sim := newSimulation(store, 1)
	sim.now = func() time.Time { return early }
	if err := sim.setUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	periods, err := store.Periods(context.Background(), "laps", "day")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range periods {
		if p.ID == "2026-11-29" {
			if !p.Closed {
				t.Fatalf("at %s, yesterday on the lap board: %+v; want it closed", early, p)
			}
			return
		}
	}
	t.Fatalf("at %s, the lap board's days: %+v; want yesterday", early, periods)
}

// TestReplayCommand: the demo's line to play the same game again is the command the user ran,
// with the seed: the program as called, a `go run` of the package as typed where the user is
// when the program is a binary go run built (no command to type again), the flags given.
func TestReplayCommand(t *testing.T) {
	for _, c := range []struct {
		program string
		args    []string
		want    string
	}{
		{"laurel", nil, "laurel demo -seed 7"},
		{"./laurel", []string{"-rate", "10"}, "./laurel demo -rate 10 -seed 7"},
		{"/usr/local/bin/laurel", []string{"-addr", "127.0.0.1:7400"}, "/usr/local/bin/laurel demo -addr 127.0.0.1:7400 -seed 7"},
		{"/opt/my games/laurel", []string{"-rate", "it's"}, `'/opt/my games/laurel' demo -rate 'it'\''s' -seed 7`},
		{"laurel", []string{"-seed", "7"}, "laurel demo -seed 7"},
		{"laurel", []string{"--seed=7", "-rate", "2"}, "laurel demo --seed=7 -rate 2"},
		{"laurel", []string{"-seeds"}, "laurel demo -seeds -seed 7"},
	} {
		if got := replayCommand(c.program, c.args, 7); got != c.want {
			t.Errorf("%s demo %s: %q, want %q", c.program, strings.Join(c.args, " "), got, c.want)
		}
	}

	for program, want := range map[string]bool{
		"/tmp/go-build1161823568/b001/exe/laurel":                                                            true, // go run's first build
		"/root/.cache/go-build/49/497d4e1d57e69c087af7dca65e88fd94895f7cf329ce3575f0bce3c06c17a6ba-d/laurel": true, // and the cached one
		"/tmp/go-build1161823568/b001/laurel.test":                                                           false,
		"/usr/local/bin/laurel":                                                                              false,
		"laurel":                                                                                             false,
	} {
		if goRunBinary(program) != want {
			t.Errorf("goRunBinary(%q) = %v", program, !want)
		}
	}

	// go run, as typed from where the user is.
	root := t.TempDir()
	for _, dir := range []string{"cmd/laurel", "docs", "game"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/laurel/laurel\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(root, "game", "go.mod"), []byte("module example.com/game\n"), 0o644)
	build := func(version string) *debug.BuildInfo {
		return &debug.BuildInfo{Path: "github.com/laurel/laurel/cmd/laurel", Main: debug.Module{Path: "github.com/laurel/laurel", Version: version}}
	}
	for _, c := range []struct {
		wd, version, want string
	}{
		{root, "(devel)", "go run ./cmd/laurel"},
		{filepath.Join(root, "cmd", "laurel"), "(devel)", "go run ."},
		{filepath.Join(root, "docs"), "(devel)", "go run ../cmd/laurel"},
		{filepath.Join(root, "game"), "(devel)", "go run github.com/laurel/laurel/cmd/laurel"}, // another module
		{t.TempDir(), "v1.2.0", "go run github.com/laurel/laurel/cmd/laurel@v1.2.0"},           // no module
	} {
		if got := goRunCommand(c.wd, build(c.version)); got != c.want {
			t.Errorf("in %s: %q, want %q", c.wd, got, c.want)
		}
	}
}
