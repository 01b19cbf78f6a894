package laureltest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// Nodes opens the nodes of a store under test on the test's clock: one for the embedded
// store, several over one database for the scale-out store, each writing as any other.
type Nodes func(t testing.TB, now func() int64) []laurel.Service

// Guard is the model test of a board's guard (docs/design.md, "Guards"), one subtest per
// rule: random submits, retries and retractions on the nodes nodes opens, each decided by a
// model of the rule recomputed from the counted events, with every window's ranking compared
// after each; then bursts of concurrent submits to one member through every node at once,
// of which exactly as many are taken as the rule allows. Half the boards are trusted too, and
// a quarter of the submits and retries come as from a member token: a trusted board refuses
// them all, retries included. Each rule runs twice: refusing, and holding (the events that
// break it are stored and counted, their members hidden and their flags opened in the same
// write, and the admin unhides members at times).
func Guard(t *testing.T, nodes Nodes) {
	for _, kind := range []string{"rate", "gain", "jump"} {
		t.Run(kind, func(t *testing.T) { guardModel(t, nodes, kind, false) })
		t.Run(kind+"/hold", func(t *testing.T) { guardModel(t, nodes, kind, true) })
	}
}

var guardWindows = []string{"all", "hour", "last2h", "day"}

// gEvent is an event the model counts.
type gEvent struct {
	member    string
	value, ts int64
	id        string
	retracted bool
}

type guardTest struct {
	t     *testing.T
	rng   *rand.Rand
	clock atomic.Int64
	nodes []laurel.Service
	board laurel.Board
	kind  string
	hold  bool
	rule  *laurel.GuardRule // gain's or jump's
	rate  *laurel.RateRule
	// hidden are the members held (or hidden) now; flagged, the events each member's open
	// flag names.
	hidden  map[string]bool
	flagged map[string]int
	events  []*gEvent // counted and retracted, in arrival order
	nextID  int
	stats   map[string]int
}

func guardModel(t *testing.T, nodes Nodes, kind string, hold bool) {
	seed := Seed(t)
	g := &guardTest{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x51)), kind: kind, hold: hold, stats: map[string]int{},
		hidden: map[string]bool{}, flagged: map[string]int{}}
	start, _ := laurel.ParseTime(oracleStarts[g.rng.IntN(len(oracleStarts))])
	g.clock.Store(start + g.rng.Int64N(86_400_000))
	g.nodes = nodes(t, g.clock.Load)
	spec := g.spec()
	info, _, err := g.nodes[0].PutBoard(context.Background(), "g", spec)
	if err != nil {
		t.Fatalf("put board: %v", err)
	}
	g.board = info.Board
	t.Logf("board %s: mode %s, order %s, rule %s %+v%+v, trusted %v", laurel.FormatTime(g.clock.Load()), g.board.Mode, g.board.Order, kind, g.rule, g.rate, g.board.Guard.Trusted)
	ops := 150
	if testing.Short() {
		ops = 60
	}
	for op := 0; op < ops; op++ {
		g.clock.Add(g.rng.Int64N(20 * 60_000))
		switch r := g.rng.IntN(10); {
		case r < 7:
			g.submit(op)
		case r < 8:
			g.retry(op)
		case r < 9 && g.hold && g.rng.IntN(2) == 0:
			g.unhide(op)
		case r < 9:
			g.retract(op)
		default:
			if kind != "jump" {
				g.burst(op)
			}
		}
		g.compare(op)
	}
	t.Logf("%v", g.stats)
	checkStore(t, g.nodes[0])
}

// spec makes the board: a random order, the rule's mode, its rule on a random window.
func (g *guardTest) spec() laurel.BoardSpec {
	rng := g.rng
	order, mode := []string{"desc", "asc"}[rng.IntN(2)], "sum"
	rule := &laurel.GuardRuleSpec{Window: guardWindows[rng.IntN(len(guardWindows))]}
	if g.hold {
		rule.Action = ptr("hold")
	}
	guard := &laurel.GuardSpec{Trusted: ptr(rng.IntN(2) == 0)}
	switch g.kind {
	case "rate": // some hours of events, a few of a member's in each interval
		guard.Rate = &laurel.RateSpec{Max: ptr(2 + rng.Int64N(5)), Interval: []string{"10m", "30m", "1h", "2h"}[rng.IntN(4)], Action: rule.Action}
	case "gain":
		rule.Max = ptr(5 + rng.Int64N(25))
		guard.Gain = rule
	case "jump":
		mode = "best"
		if rng.IntN(3) > 0 {
			rule.Amount = ptr(rng.Int64N(15))
		}
		if rule.Amount == nil || rng.IntN(2) == 0 {
			rule.Percent = ptr(5 + rng.Int64N(50))
		}
		guard.Jump = rule
	}
	spec := laurel.BoardSpec{Order: &order, Mode: &mode, Windows: guardWindows, LateLimit: ptr("6h"), Guard: guard}
	b, err := spec.Apply("g", nil, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	g.rule, g.rate = map[string]*laurel.GuardRule{"gain": b.Guard.Gain, "jump": b.Guard.Jump}[g.kind], b.Guard.Rate
	return spec
}

func (g *guardTest) node() laurel.Service { return g.nodes[g.rng.IntN(len(g.nodes))] }

func (g *guardTest) value() int64 {
	switch g.kind {
	case "gain": // mostly gains, some losses, the board's way
		v := g.rng.Int64N(12)
		if g.rng.IntN(3) == 0 {
			v = -v
		}
		if g.board.Order == laurel.Asc {
			v = -v
		}
		return v
	case "jump":
		return 40 + g.rng.Int64N(60)
	}
	return g.rng.Int64N(100)
}

// submit sends a batch of new events, and a retry of a counted one among them at times: the
// model refuses it whole at its first event that breaks the rule.
func (g *guardTest) submit(op int) {
	now := g.clock.Load()
	var batch []laurel.Event
	var staged []*gEvent
	for range 1 + g.rng.IntN(4) {
		ev := &gEvent{member: fmt.Sprintf("m%d", g.rng.IntN(3)), value: g.value(), ts: now}
		in := laurel.Event{Board: "g", Member: ev.member, Value: ev.value}
		if g.rng.IntN(2) == 0 {
			g.nextID++
			ev.id, ev.ts = fmt.Sprintf("e%d", g.nextID), now-g.rng.Int64N(3*3_600_000)
			in.ID, in.TS, in.HasTS = ev.id, ev.ts, true
		}
		batch, staged = append(batch, in), append(staged, ev)
	}
	if old := g.counted(); len(old) > 0 && g.rng.IntN(4) == 0 && old[0].id != "" {
		ev := old[0]
		at := g.rng.IntN(len(batch) + 1)
		batch = slices.Insert(batch, at, laurel.Event{Board: "g", Member: ev.member, Value: ev.value, ID: ev.id, TS: ev.ts, HasTS: true})
		staged = slices.Insert(staged, at, nil) // a duplicate: not judged, not counted again
	}
	want := -1
	var field string
	var taken []*gEvent
	held := make([]bool, len(staged))
	for i, ev := range staged {
		if ev == nil {
			continue
		}
		if f := g.breaks(ev, taken, now); f != "" {
			if g.hold {
				held[i] = true
			} else {
				want, field = i, f
				break
			}
		}
		taken = append(taken, ev)
	}
	token := g.rng.IntN(4) == 0
	res, err := g.node().Submit(context.Background(), batch, laurel.SubmitOptions{MemberToken: token})
	if token && g.board.Guard.Trusted {
		g.refusedToken(op, err)
		return
	}
	if want >= 0 {
		var le *laurel.Error
		if wantField := fmt.Sprintf("events[%d].%s", want, field); !errors.As(err, &le) || le.Code != laurel.EGuardRefused || le.Field != wantField {
			g.t.Fatalf("op %d at %s: submit %+v: %v; want guard_refused at %s", op, laurel.FormatTime(now), batch, err, wantField)
		}
		g.stats["refused"]++
		return
	}
	if err != nil {
		g.t.Fatalf("op %d at %s: submit %+v: %v; the rule allows it", op, laurel.FormatTime(now), batch, err)
	}
	g.stats["taken"]++
	g.events = append(g.events, taken...)
	for i, h := range held {
		if h != (res[i].Flag != "") {
			g.t.Fatalf("op %d at %s: submit %+v: event %d's flag %q; the model holds it: %v", op, laurel.FormatTime(now), batch, i, res[i].Flag, h)
		}
		if h {
			g.hidden[staged[i].member] = true
			g.flagged[staged[i].member]++
			g.stats["held"]++
		}
	}
}

// unhide puts a held member back, as an admin would; its flag stays open, and takes the
// member's next held events.
func (g *guardTest) unhide(op int) {
	for m := range g.hidden {
		if err := g.node().Unhide(context.Background(), m); err != nil {
			g.t.Fatalf("op %d: unhide %s: %v", op, m, err)
		}
		delete(g.hidden, m)
		g.stats["unhidden"]++
		return
	}
}

// retry sends a counted event again alone: a duplicate, whatever the rule would say now.
func (g *guardTest) retry(op int) {
	old := g.counted()
	if len(old) == 0 || old[len(old)-1].id == "" {
		return
	}
	ev := old[len(old)-1]
	token := g.rng.IntN(4) == 0
	res, err := g.node().Submit(context.Background(), []laurel.Event{{Board: "g", Member: ev.member, Value: ev.value, ID: ev.id, TS: ev.ts, HasTS: true}}, laurel.SubmitOptions{MemberToken: token})
	if token && g.board.Guard.Trusted {
		g.refusedToken(op, err)
		return
	}
	if err != nil || res[0].Status != laurel.StatusDuplicate {
		g.t.Fatalf("op %d: retry of %s: %+v, %v; want a duplicate", op, ev.id, res, err)
	}
}

// refusedToken checks the answer to a member token's submit on a trusted board.
func (g *guardTest) refusedToken(op int, err error) {
	var le *laurel.Error
	if !errors.As(err, &le) || le.Code != laurel.EPermissionDenied || le.Field != "events[0].board" {
		g.t.Fatalf("op %d: a member token's submit to a trusted board: %v; want permission_denied at events[0].board", op, err)
	}
	g.stats["token refused"]++
}

func (g *guardTest) retract(op int) {
	for _, ev := range g.counted() {
		if ev.id != "" && g.rng.IntN(3) == 0 {
			if err := g.node().Retract(context.Background(), "g", ev.id); err != nil {
				g.t.Fatalf("op %d: retract %s: %v", op, ev.id, err)
			}
			ev.retracted = true
			return
		}
	}
}

// burst sends one event each from many goroutines at once, on every node, all of one member
// and value at the same instant: exactly as many are taken as the rule has room for.
func (g *guardTest) burst(op int) {
	now := g.clock.Load()
	member := fmt.Sprintf("m%d", g.rng.IntN(3))
	value := g.value()
	if g.kind == "gain" {
		value = 1
		if g.board.Order == laurel.Asc {
			value = -1
		}
	}
	room := 0
	var taken []*gEvent
	for {
		ev := &gEvent{member: member, value: value, ts: now}
		if g.breaks(ev, taken, now) != "" {
			break
		}
		taken = append(taken, ev)
		if room++; room > 20 {
			return // far from the limit: a burst would show nothing
		}
	}
	n := room + 1 + g.rng.IntN(4)
	var wg sync.WaitGroup
	var ok, refused, held atomic.Int64
	errs := make(chan error, n)
	for i := range n {
		node := g.nodes[i%len(g.nodes)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := node.Submit(context.Background(), []laurel.Event{{Board: "g", Member: member, Value: value}}, laurel.SubmitOptions{NoRanks: true})
			switch laurel.ErrorCode(err) {
			case "":
				if res[0].Flag != "" {
					held.Add(1)
				} else {
					ok.Add(1)
				}
			case laurel.EGuardRefused:
				refused.Add(1)
			default:
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.t.Fatalf("op %d: burst: %v", op, err)
	}
	if ok.Load() != int64(room) || g.hold && held.Load() != int64(n-room) {
		g.t.Fatalf("op %d at %s: a burst of %d events of %s (value %d) through %d nodes: %d taken, %d refused, %d held; the rule has room for %d",
			op, laurel.FormatTime(now), n, member, value, len(g.nodes), ok.Load(), refused.Load(), held.Load(), room)
	}
	g.stats["bursts"]++
	g.stats["burst events refused"] += int(refused.Load())
	g.events = append(g.events, taken...)
	if g.hold {
		for range n - room {
			g.events = append(g.events, &gEvent{member: member, value: value, ts: now})
		}
		g.hidden[member] = true
		g.flagged[member] += n - room
		g.stats["burst events held"] += n - room
	}
}

func (g *guardTest) counted() []*gEvent {
	var out []*gEvent
	for _, ev := range g.events {
		if !ev.retracted {
			out = append(out, ev)
		}
	}
	return out
}

// breaks returns the field of the error of ev under the rule, with the events of its batch
// taken before it, at now; "" when it breaks none. The span is the one ev enters in the
// rule's window: its period or all; for a rolling window, its span at now when that holds
// ev's bucket, else the bucket.
func (g *guardTest) breaks(ev *gEvent, batch []*gEvent, now int64) string {
	if g.kind == "rate" { // the member's events in the interval that ends at ev's time
		n := 0
		for _, x := range append(g.counted(), batch...) {
			if x.member == ev.member && x.ts > ev.ts-g.rate.Interval.Milliseconds() && x.ts <= ev.ts {
				n++
			}
		}
		if n >= g.rate.Max {
			return "ts"
		}
		return ""
	}
	cal := g.board.Calendar()
	w := g.rule.Window
	in := func(ts int64) bool { return true }
	switch {
	case w.IsRolling():
		s, e := cal.Span(w, time.UnixMilli(now))
		bs, be := cal.SpanOf(w, ev.ts)
		if bs >= s.UnixMilli() && be <= e.UnixMilli() {
			bs, be = s.UnixMilli(), e.UnixMilli()
		}
		in = func(ts int64) bool { return ts >= bs && ts < be }
	case w.IsCalendar():
		ps := cal.PeriodAt(w, time.UnixMilli(ev.ts)).Start.UnixMilli()
		in = func(ts int64) bool { return cal.PeriodAt(w, time.UnixMilli(ts)).Start.UnixMilli() == ps }
	}
	var prior []int64
	for _, x := range append(g.counted(), batch...) {
		if x.member == ev.member && in(x.ts) {
			prior = append(prior, x.value)
		}
	}
	better := func(a, b int64) bool {
		return g.board.Order == laurel.Desc && a > b || g.board.Order == laurel.Asc && a < b
	}
	abs := func(x int64) int64 { return max(x, -x) }
	switch g.kind {
	case "gain":
		sum := ev.value
		for _, v := range prior {
			sum += v
		}
		if better(ev.value, 0) && (g.board.Order == laurel.Desc && sum > g.rule.Max || g.board.Order == laurel.Asc && sum < -g.rule.Max) {
			return "value"
		}
	case "jump":
		if len(prior) == 0 {
			return ""
		}
		best := prior[0]
		for _, v := range prior {
			if better(v, best) {
				best = v
			}
		}
		diff := abs(ev.value - best)
		if better(ev.value, best) && (g.rule.Max >= 0 && diff > g.rule.Max || g.rule.Percent > 0 && diff*100 > abs(best)*g.rule.Percent) {
			return "value"
		}
	}
	return ""
}

// compare checks every window's ranking at now against the model's: the members and their
// scores, from the counted events.
func (g *guardTest) compare(op int) {
	now := g.clock.Load()
	cal := g.board.Calendar()
	for _, w := range g.board.Windows {
		s, e := cal.Span(w, time.UnixMilli(now))
		want := map[string]int64{}
		type last struct{ ts, at int64 }
		lasts := map[string]last{}
		for i, ev := range g.counted() {
			if w.Kind != laurel.WindowAll && (ev.ts < s.UnixMilli() || ev.ts >= e.UnixMilli()) {
				continue
			}
			cur, ok := want[ev.member]
			switch {
			case !ok:
				want[ev.member] = ev.value
				lasts[ev.member] = last{ev.ts, int64(i)}
			case g.board.Mode == laurel.Sum:
				want[ev.member] = cur + ev.value
			case g.board.Mode == laurel.Best:
				if g.board.Order.Better(ev.value, cur) {
					want[ev.member] = ev.value
				}
			case g.board.Mode == laurel.Last:
				if ev.ts >= lasts[ev.member].ts {
					want[ev.member] = ev.value
					lasts[ev.member] = last{ev.ts, int64(i)}
				}
			}
		}
		q := laurel.Query{Board: "g", Window: w.String(), At: now, HasAt: true}
		page, err := g.node().Page(context.Background(), q, 0, 100, laurel.ScoreRange{})
		if err != nil {
			g.t.Fatalf("op %d: page of %s: %v", op, w, err)
		}
		for m := range g.hidden {
			delete(want, m)
		}
		got := map[string]int64{}
		for _, en := range page.Entries {
			got[en.Member] = en.Score
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			g.t.Fatalf("op %d at %s: window %s holds %v, want %v", op, laurel.FormatTime(now), w, got, want)
		}
	}
	g.compareFlags(op)
}

// compareFlags checks the open flags against the model's: one a member held, naming each
// event held since it opened.
func (g *guardTest) compareFlags(op int) {
	got := map[string]int{}
	rec := g.node().(laurel.Records)
	err := laurel.EachRecord(context.Background(), rec, laurel.FlagKind, "", "", func(r laurel.Record) (bool, error) {
		f, err := laurel.DecodeFlag(r.Value)
		if err != nil {
			return false, err
		}
		if f.State == laurel.FlagOpen && f.Board == "g" {
			if _, dup := got[f.Member]; dup {
				g.t.Fatalf("op %d: two open flags of %s", op, f.Member)
			}
			got[f.Member] = len(f.Events)
		}
		return true, nil
	})
	if err != nil {
		g.t.Fatalf("op %d: flags: %v", op, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(g.flagged) {
		g.t.Fatalf("op %d: open flags name %v events, want %v", op, got, g.flagged)
	}
	for m := range g.hidden {
		if p, err := g.node().Profile(context.Background(), m); err != nil || !p.Hidden {
			g.t.Fatalf("op %d: %s held: profile %+v, %v; want hidden", op, m, p, err)
		}
	}
}

// checkStore runs the store's check of its own invariants, when it has one: hides in the
// writes that held, among others, leave its rankings whole.
func checkStore(t *testing.T, s laurel.Service) {
	var err error
	switch s := s.(type) {
	case interface{ Check() error }:
		err = s.Check()
	case interface{ Check(context.Context) error }:
		err = s.Check(context.Background())
	}
	if err != nil {
		t.Fatalf("the store's check: %v", err)
	}
}
