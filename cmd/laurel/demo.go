package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	lhttp "github.com/laurel/laurel/http"
)

// runDemo is `laurel demo`: the server on a temporary store with three boards and players who
// keep scoring (seed 002's background job), until stopped. It prints the URL to open.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	addr := fs.String("addr", "127.0.0.1:7300", "address to listen on (loopback: the demo has no keys)")
	rate := fs.Float64("rate", 4, "scores per second")
	seed := fs.Uint64("seed", 0, "seed of the simulated players, to play the same game again; 0: a new one, printed at start")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	if err := checkAddr(*addr); err != nil {
		return usageError{fmt.Errorf("-addr: %w", err)}
	}
	if !loopback(*addr) {
		return usageError{fmt.Errorf("the demo has no keys: refusing to listen on %s, which is not a loopback address", *addr)}
	}
	if *rate <= 0 {
		return usageError{fmt.Errorf("-rate must be above 0")}
	}
	dir, err := os.MkdirTemp("", "laurel-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	log := warnings(stderr)
	srv, err := listen(*addr, lhttp.Config{Logger: log}, nil, descriptors().conns, log)
	if err != nil {
		return err
	}
	if err := srv.open(dir, embedded.Options{}); err != nil {
		return err
	}
	sim := newSimulation(srv.store, *seed)
	if err := sim.setUp(ctx); err != nil {
		srv.http.Close()
		srv.store.Close()
		return err
	}
	fmt.Fprintf(stdout, "laurel demo: open %s/ in a browser (Ctrl-C stops it; the data goes with it)\n", srv.url)
	fmt.Fprintf(stdout, "  boards: %s/v1/boards\n", srv.url)
	fmt.Fprintf(stdout, "  the same game again: %s\n", replayCommand(os.Args[0], args, *seed))

	// From now on the players score through the API, as a game's server would: what the
	// server counts (/metrics, the admin console's ingest) is their play.
	sim.svc = lhttp.NewClient(srv.url)
	simDone := make(chan struct{})
	simCtx, stopSim := context.WithCancel(ctx)
	go func() {
		defer close(simDone)
		sim.play(simCtx, *rate, log)
	}()
	err = srv.wait(ctx)
	stopSim()
	<-simDone
	return err
}

// The demo's boards: one score feeds the rolling and the weekly board at once (a
// cross-board batch, like seed 002's groups); lap times go to a best-time board. An 8-day
// late_limit keeps the periods of the made-up past week open for it (setUp then closes the
// lap board's past days, and rewards them).
var demoBoards = []struct {
	id   string
	spec laurel.BoardSpec
}{
	{"points", laurel.BoardSpec{Windows: []string{"last7d", "day", "all"}, LateLimit: ptr("8d"), Title: ptr("Points, last 7 days")}},
	{"weekly", laurel.BoardSpec{Windows: []string{"week", "all"}, LateLimit: ptr("8d"), Title: ptr("Points this week")}},
	{"laps", laurel.BoardSpec{Order: ptr("asc"), Mode: ptr("best"), Windows: []string{"week", "day", "all"}, LateLimit: ptr("8d"),
		Title: ptr("Fastest lap"), Metadata: []byte(`{"unit": "ms"}`)}},
}

var demoPlayers = []string{
	"Ada", "Bjørn", "Chiara", "Dmitri", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jun",
	"Kofi", "Lena", "Mateo", "Nia", "Oskar", "Priya", "Quinn", "Rafa", "Sana", "Tomás",
	"Uma", "Viktor", "Wen", "Ximena", "Yusuf", "Zoe",
}

// simulation is the players: each has a skill that sets how often it scores and how fast its
// laps are.
type simulation struct {
	svc   laurel.Service
	rng   *rand.Rand
	skill []float64
	n     int              // events sent, for ids
	now   func() time.Time // the made-up past ends here
}

func newSimulation(svc laurel.Service, seed uint64) *simulation {
	s := &simulation{svc: svc, rng: rand.New(rand.NewPCG(seed, 0x1a0e1)), now: time.Now}
	for range demoPlayers {
		s.skill = append(s.skill, 0.3+s.rng.Float64())
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// setUp creates the boards and the players' last week, so that every window has a story.
func (s *simulation) setUp(ctx context.Context) error {
	for _, b := range demoBoards {
		if _, _, err := s.svc.PutBoard(ctx, b.id, b.spec); err != nil {
			return err
		}
	}
	// One play at a time and in time order, so that the rank histories tell how it went. The
	// plays span seven days and a half, within the boards' late_limit of eight, so that last
	// week has half a day of them at least, even late on a Sunday (with seven days, then, it
	// had minutes, and often no play: the weekly board showed no last week).
	now := s.now()
	times := make([]time.Time, 400)
	for i := range times {
		times[i] = now.Add(-time.Duration(s.rng.Int64N(int64(7*24*time.Hour + 12*time.Hour))))
	}
	slices.SortFunc(times, time.Time.Compare)
	for _, ts := range times {
		if _, err := s.svc.Submit(ctx, s.play1(ts), laurel.SubmitOptions{NoRanks: true}); err != nil {
			return err
		}
	}
	// The week is in: the lap board now takes laps a minute late at most, which closes its past
	// days, and rewards each day's three fastest — the page shows yesterday's results.
	_, _, err := s.svc.PutBoard(ctx, "laps", laurel.BoardSpec{LateLimit: ptr("1m"), Rewards: laurel.Rewards{
		{Window: "day", Ranks: []int{1, 1}, Reward: []byte(`{"trophy": "gold"}`)},
		{Window: "day", Ranks: []int{2, 3}, Reward: []byte(`{"trophy": "silver"}`)}}})
	return err
}

// play1 is one thing a player did at ts: a score on the points boards, sometimes a lap.
func (s *simulation) play1(ts time.Time) []laurel.Event {
	p := s.pick()
	member := fmt.Sprintf("p%02d", p)
	name := demoPlayers[p]
	s.n++
	id := fmt.Sprintf("demo-%d", s.n)
	pts := int64(1 + s.rng.IntN(int(3+6*s.skill[p])))
	evs := []laurel.Event{
		{Board: "points", Member: member, Value: pts, TS: ts.UnixMilli(), HasTS: true, ID: id, Name: &name},
		{Board: "weekly", Member: member, Value: pts, TS: ts.UnixMilli(), HasTS: true, ID: id},
	}
	if s.rng.IntN(3) == 0 {
		lap := int64(62_000 - 9_000*s.skill[p] + s.rng.NormFloat64()*2_500)
		evs = append(evs, laurel.Event{Board: "laps", Member: member, Value: lap, TS: ts.UnixMilli(), HasTS: true, ID: id})
	}
	return evs
}

// pick chooses a player, the more skilled more often.
func (s *simulation) pick() int {
	total := 0.0
	for _, k := range s.skill {
		total += k * k
	}
	x := s.rng.Float64() * total
	for i, k := range s.skill {
		if x -= k * k; x < 0 {
			return i
		}
	}
	return len(s.skill) - 1
}

// play sends rate scores a second until ctx ends.
func (s *simulation) play(ctx context.Context, rate float64, log *slog.Logger) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if _, err := s.svc.Submit(ctx, s.play1(now), laurel.SubmitOptions{NoRanks: true}); err != nil && ctx.Err() == nil {
				log.Warn("demo: a score was refused", "err", err)
			}
		}
	}
}

// replayCommand is the command that plays the same game again: the one the user ran (program
// as it was called, then demo and its flags), with -seed added when it had none.
func replayCommand(program string, args []string, seed uint64) string {
	if goRunBinary(program) {
		wd, _ := os.Getwd()
		build, _ := debug.ReadBuildInfo()
		program = goRunCommand(wd, build)
	} else {
		program = shellQuote(program)
	}
	words := []string{program, "demo"}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	if !slices.ContainsFunc(args, seedFlag.MatchString) {
		words = append(words, "-seed", strconv.FormatUint(seed, 10))
	}
	return strings.Join(words, " ")
}

var seedFlag = regexp.MustCompile(`^--?seed(=|$)`)

// goRunBinary reports whether program is a binary `go run` built: one in a temporary
// go-build directory, or, from Go 1.24 on, in the build cache. Nobody can type it again.
var goRunBinary = regexp.MustCompile(`(^|/)go-build[0-9]+/b[0-9]+/exe/[^/]+$|(^|/)[0-9a-f]{64}-d/[^/]+$`).MatchString

// goRunCommand is `go run` of this command's package as one types it in wd: relative to wd
// within the module's checkout (go run ./cmd/laurel from its root), by its import path outside.
func goRunCommand(wd string, build *debug.BuildInfo) string {
	pkg := "github.com/laurel/laurel/cmd/laurel"
	if build == nil || build.Path == "" {
		return "go run " + pkg
	}
	pkg = build.Path
	for dir := wd; dir != ""; dir = parentDir(dir) {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			continue
		}
		if !regexp.MustCompile(`(?m)^module\s+` + regexp.QuoteMeta(build.Main.Path) + `\s*$`).Match(mod) {
			break // another module: the import path finds the package
		}
		rel, err := filepath.Rel(wd, filepath.Join(dir, strings.TrimPrefix(pkg, build.Main.Path)))
		if err != nil {
			break
		}
		if rel = filepath.ToSlash(rel); rel != "." && !strings.HasPrefix(rel, "../") {
			rel = "./" + rel
		}
		return "go run " + shellQuote(rel)
	}
	if v := build.Main.Version; v != "" && v != "(devel)" {
		pkg += "@" + v
	}
	return "go run " + pkg
}

// parentDir is dir's parent, or "" at the root.
func parentDir(dir string) string {
	if p := filepath.Dir(dir); p != dir {
		return p
	}
	return ""
}

// shellQuote quotes a word for a POSIX shell when it needs quoting.
func shellQuote(w string) string {
	if w != "" && !strings.ContainsFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
