package laurel_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// lifeCase is a calendar window of a board whose late_limit and keep changed once, at t0,
// from late1/keep1 to those of b; the marks are what the change left.
type lifeCase struct {
	b            laurel.Board
	w            laurel.Window
	late1, late2 int64 // ms
	keep1        int
	t0, now      int64
	m            laurel.Marks
}

func (c lifeCase) String() string {
	return fmt.Sprintf("%s %s late %d→%d keep %d→%d change %s now %s", c.b.Timezone, c.w, c.late1, c.late2, c.keep1, c.b.Keep,
		time.UnixMilli(c.t0).UTC().Format(time.RFC3339), time.UnixMilli(c.now).UTC().Format(time.RFC3339))
}

func newLifeCase(t *testing.T, rng *rand.Rand) lifeCase {
	t.Helper()
	zones := []string{"UTC", "America/New_York", "Australia/Lord_Howe"}
	windows := []string{"hour", "day", "week", "month"}
	lates := []string{"1m", "90s", "1h", "25h", "7d", "40d"}
	board := func(late string, keep int) laurel.Board {
		z, k := zones[rng.IntN(len(zones))], keep
		spec := laurel.BoardSpec{Windows: []string{windows[rng.IntN(len(windows))]}, Timezone: &z, LateLimit: &late, Keep: &k}
		b, err := spec.Apply("b", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b1 := board(lates[rng.IntN(len(lates))], rng.IntN(4))
	b2 := b1
	b2.LateLimit = board(lates[rng.IntN(len(lates))], 0).LateLimit
	b2.Keep = rng.IntN(4)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	t0 := base + rng.Int64N(330*24*3600*1000) // through both DST changes of each zone
	now := t0 + rng.Int64N(60*24*3600*1000)
	c := lifeCase{b: b2, w: b1.Windows[0], late1: b1.LateLimit.Milliseconds(), late2: b2.LateLimit.Milliseconds(), keep1: b1.Keep, t0: t0, now: now}
	c.m = laurel.NoMarks
	if rng.IntN(3) > 0 { // the board changed at t0
		c.m = laurel.NoMarks.After(&b1, c.w, t0)
	} else {
		c.late1, c.keep1, c.t0 = c.late2, c.b.Keep, now
	}
	return c
}

// closed is the model's rule, from the board's history: a period closes late_limit after its
// end, and what closed under the earlier late_limit stays closed.
func (c lifeCase) closed(p laurel.Period) bool {
	end := p.End.UnixMilli()
	return end+c.late1 <= c.t0 || end+c.late2 <= c.now
}

// dropped is the model's rule: a closed period is dropped once more than keep newer periods
// have closed, and what was dropped under the earlier keep stays dropped.
func (c lifeCase) dropped(p laurel.Period) bool {
	cal := c.b.Calendar()
	newerClosed := func(closed func(laurel.Period) bool) int {
		n := 0
		for q := cal.NextPeriod(c.w, p); closed(q) && n < 100; q = cal.NextPeriod(c.w, q) {
			n++
		}
		return n
	}
	before := newerClosed(func(q laurel.Period) bool { return q.End.UnixMilli()+c.late1 <= c.t0 })
	return before > c.keep1 || newerClosed(c.closed) > c.b.Keep
}

// TestLifecycle checks Closing, Kept and PeriodClosed against the model's rules counted out
// period by period, for boards whose late_limit and keep changed, in zones with DST.
func TestLifecycle(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 5))
	for range 3000 {
		c := newLifeCase(t, rng)
		cal := c.b.Calendar()
		// Some periods around now, oldest first: those with data are open until they close.
		p := cal.PeriodAt(c.w, time.UnixMilli(c.now))
		for range 3 + c.b.Keep + c.keep1 {
			p = cal.PrevPeriod(c.w, p)
		}
		var periods []laurel.Period
		for range 8 + c.b.Keep + c.keep1 {
			periods = append(periods, p)
			p = cal.NextPeriod(c.w, p)
		}
		var open []laurel.Span
		for _, p := range periods {
			sp := laurel.Span{Start: p.Start.UnixMilli(), End: p.End.UnixMilli()}
			if got, want := c.m.PeriodClosed(&c.b, sp, c.now), c.closed(p); got != want {
				t.Fatalf("%v: period %s closed %v, want %v", c, p.ID, got, want)
			}
			if rng.IntN(2) == 0 {
				open = append(open, sp)
			}
		}
		wantClosing := 0
		for _, sp := range open {
			if !c.closed(cal.PeriodAt(c.w, time.UnixMilli(sp.Start))) {
				break
			}
			wantClosing++
		}
		if got := laurel.Closing(&c.b, c.m, open, c.now); got != wantClosing {
			t.Fatalf("%v: open %v: Closing %d, want %d", c, open, got, wantClosing)
		}

		// Every closed period, newest first: Kept keeps those not dropped.
		var closed []laurel.Span
		for _, p := range slices.Backward(periods) {
			if c.closed(p) {
				closed = append(closed, laurel.Span{Start: p.Start.UnixMilli(), End: p.End.UnixMilli()})
			}
		}
		n, dropAt := laurel.Kept(&c.b, c.w, c.m, closed, c.now)
		want := 0
		for want < len(closed) && !c.dropped(cal.PeriodAt(c.w, time.UnixMilli(closed[want].Start))) {
			want++
		}
		if n != want {
			t.Fatalf("%v: closed %v: Kept %d, want %d", c, closed, n, want)
		}
		if n == 0 {
			if dropAt != laurel.NoTime {
				t.Fatalf("%v: nothing kept, dropped at %d", c, dropAt)
			}
			continue
		}
		// The oldest kept is dropped when the keep+1st newer period closes.
		q := cal.PeriodAt(c.w, time.UnixMilli(closed[n-1].Start))
		for range c.b.Keep + 1 {
			q = cal.NextPeriod(c.w, q)
		}
		if wantAt := q.End.UnixMilli() + c.late2; dropAt != wantAt {
			t.Fatalf("%v: oldest kept %v dropped at %d, want %d", c, closed[n-1], dropAt, wantAt)
		}
		if dropAt <= c.now {
			t.Fatalf("%v: a kept period is due to be dropped already", c)
		}
	}
}

// TestRollTo: where a rolling window moves, the buckets that leave and those that enter are
// exactly the difference between its old and its new span.
func TestRollTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 6))
	for range 2000 {
		z := []string{"UTC", "America/New_York", "Australia/Lord_Howe"}[rng.IntN(3)]
		name := []string{"last7d", "last1d", "last3h", "last30d"}[rng.IntN(4)]
		spec := laurel.BoardSpec{Windows: []string{name}, Timezone: &z}
		b, err := spec.Apply("b", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		w, cal := b.Windows[0], b.Calendar()
		then := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + rng.Int64N(330*24*3600*1000)
		now := then + rng.Int64N(40*24*3600*1000)
		s, e := cal.Span(w, time.UnixMilli(then))
		from := laurel.Span{Start: s.UnixMilli(), End: e.UnixMilli()}
		s, e = cal.Span(w, time.UnixMilli(now))
		to := laurel.Span{Start: s.UnixMilli(), End: e.UnixMilli()}
		r, ok := b.RollTo(w, from, now)
		if ok != (from != to) || ok && (r.From != from || r.To != to) {
			t.Fatalf("%s %s: roll from %v at %d: %+v %v, want to %v", z, name, from, now, r, ok, to)
		}
		if !ok || r.Whole != (to.Start >= from.End) {
			if ok && r.Whole != (to.Start >= from.End) {
				t.Fatalf("%s %s: %+v: whole %v", z, name, r, r.Whole)
			}
			continue
		}
		if r.Whole {
			continue
		}
		buckets := func(sp laurel.Span) map[int64]int64 { // start → end
			out := map[int64]int64{}
			for t := sp.Start; t < sp.End; {
				bs, be := cal.Bucket(w, time.UnixMilli(t))
				out[bs.UnixMilli()] = be.UnixMilli()
				t = be.UnixMilli()
			}
			return out
		}
		old, cur := buckets(from), buckets(to)
		for bs, be := range old {
			_, stays := cur[bs]
			if got := r.Leaving.Holds(bs, be); got == stays {
				t.Fatalf("%s %s: %+v: bucket %d leaving %v, in the new span %v", z, name, r, bs, got, stays)
			}
		}
		for bs, be := range cur {
			_, was := old[bs]
			if got := r.Entering.Holds(bs, be); got == was {
				t.Fatalf("%s %s: %+v: bucket %d entering %v, in the old span %v", z, name, r, bs, got, was)
			}
		}
	}
}

// TestPlan: which source answers a read of a calendar window, at every stage of a period's
// life, and of a rolling window at its current span and at another instant.
func TestPlan(t *testing.T) {
	day := "day"
	late, keep := "1h", 1
	spec := laurel.BoardSpec{Windows: []string{day, "last7d", "all"}, LateLimit: &late, Keep: &keep}
	b, err := spec.Apply("b", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) int64 { return mustTime(t, s).UnixMilli() }
	span := func(from, to string) laurel.Span { return laurel.Span{Start: at(from), End: at(to)} }
	now := at("2026-11-24T00:30:00Z") // the 23rd ended half an hour ago: still open
	open := []laurel.Span{span("2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z"), span("2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z")}
	closed := []laurel.Span{span("2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z")} // the 22nd had no data
	read := func(q laurel.Query) (laurel.ReadPlan, error) {
		res, err := b.Resolve(q, now)
		if err != nil {
			t.Fatal(err)
		}
		var o []laurel.Span
		if res.Window.IsRolling() {
			o = []laurel.Span{span("2026-11-18T00:00:00Z", "2026-11-25T00:00:00Z")}
		} else if res.Window.IsCalendar() {
			o = open
		}
		return laurel.Plan(&b, res, laurel.NoMarks, o, closed, now)
	}
	for _, tc := range []struct {
		q      laurel.Query
		source laurel.Source
		closed bool
		code   string
	}{
		{laurel.Query{Window: "day"}, laurel.FromOpen, false, ""},
		{laurel.Query{Window: "day", Period: "2026-11-23"}, laurel.FromOpen, false, ""},
		{laurel.Query{Window: "day", Period: "2026-11-22"}, laurel.FromNothing, true, ""},
		{laurel.Query{Window: "day", Period: "2026-11-21"}, laurel.FromClosed, true, ""},
		{laurel.Query{Window: "day", Period: "2026-11-20"}, 0, false, laurel.ENotFound}, // keep 1: two newer closed
		{laurel.Query{Window: "day", Period: "2026-11-26"}, laurel.FromNothing, false, ""},
		{laurel.Query{Window: "last7d"}, laurel.FromOpen, false, ""},
		{laurel.Query{Window: "last7d", At: at("2026-11-20T12:00:00Z"), HasAt: true}, laurel.FromBuckets, false, ""},
		{laurel.Query{Window: "all"}, laurel.FromOpen, false, ""},
	} {
		p, err := read(tc.q)
		if laurel.ErrorCode(err) != tc.code || err == nil && (p.Source != tc.source || p.Period.Closed != tc.closed) {
			t.Errorf("%+v: %+v, %v; want source %d closed %v, code %q", tc.q, p, err, tc.source, tc.closed, tc.code)
		}
	}
	p, err := read(laurel.Query{Window: "day", Period: "2026-11-21"})
	if err != nil || closed[p.Closed].Start != at("2026-11-21T00:00:00Z") {
		t.Errorf("the closed period read: %+v, %v", p, err)
	}

	cur := b.CurrentPeriod(b.Windows[0], now)
	cur.Total = 7
	list, err := laurel.PeriodList(&b, b.Windows[0], cur, open, closed,
		func(i int) int { return 10 + i }, func(i int) int { return 20 + i })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list {
		got = append(got, fmt.Sprintf("%s/%v/%d", p.ID, p.Closed, p.Total))
	}
	if want := []string{"2026-11-24/false/11", "2026-11-23/false/10", "2026-11-21/true/20"}; !slices.Equal(got, want) {
		t.Errorf("periods %v, want %v", got, want)
	}
	if _, err := laurel.PeriodList(&b, b.Windows[1], cur, open, closed, nil, nil); laurel.ErrorCode(err) != laurel.EInvalid {
		t.Errorf("periods of a rolling window: %v", err)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
