package embedded_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

const (
	hour = int64(3600_000)
	day  = 24 * hour
)

// testStore opens a store on dir (a new temporary one when empty) and closes it at cleanup.
func testStore(t testing.TB, dir string, c *laureltest.Clock) *embedded.Store {
	t.Helper()
	return testStoreWith(t, dir, embedded.Options{Now: c.Now})
}

// testStoreWith is testStore with options; it checks the store's invariants at cleanup.
func testStoreWith(t testing.TB, dir string, opts embedded.Options) *embedded.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	e, err := embedded.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Check(); err != nil && laurel.ErrorCode(err) != laurel.EUnavailable {
			t.Error(err)
		}
		e.Close()
	})
	return e
}

func putBoard(t testing.TB, e *embedded.Store, id string, spec laurel.BoardSpec) {
	t.Helper()
	if _, _, err := e.PutBoard(context.Background(), id, spec); err != nil {
		t.Fatalf("PutBoard %s: %v", id, err)
	}
}

func submit(t testing.TB, e *embedded.Store, evs ...laurel.Event) []laurel.EventResult {
	t.Helper()
	res, err := e.Submit(context.Background(), evs, laurel.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return res
}

func ptr[T any](v T) *T { return &v }

func at(t string) int64 {
	ms, err := laurel.ParseTime(t)
	if err != nil {
		panic(err)
	}
	return ms
}

// Seed 000: 5, 3, 3, 0, 1, 2, 4 solutions over the last seven days (today first) score 18 on
// last7d today, 14 tomorrow, 12 the day after, and nothing on the eighth day.
func TestRollingSevenDays(t *testing.T) {
	c := laureltest.NewClock("2026-11-16T12:00:00Z")
	dir := t.TempDir()
	e := testStore(t, dir, c)
	putBoard(t, e, "solvers", laurel.BoardSpec{Windows: []string{"last7d", "all"}, LateLimit: ptr("7d")})
	for i, n := range []int64{4, 2, 1, 0, 3, 3, 5} {
		if n > 0 {
			submit(t, e, laurel.Event{Board: "solvers", Member: "ada", Value: n, TS: at("2026-11-16T12:00:00Z") + int64(i)*day, HasTS: true})
		}
		c.Advance(time.Duration(day) * time.Millisecond)
	}
	c.Set("2026-11-22T18:00:00Z")
	score := func() (int64, bool) {
		m, err := e.Member(context.Background(), laurel.Query{Board: "solvers"}, "ada")
		if laurel.ErrorCode(err) == laurel.ENotFound {
			return 0, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return m.Entry.Score, true
	}
	for _, want := range []int64{18, 14, 12, 11, 11, 8, 5} {
		if got, ok := score(); !ok || got != want {
			t.Fatalf("at %s: score %d (present %v), want %d", laurel.FormatTime(c.Now()), got, ok, want)
		}
		c.Advance(time.Duration(day) * time.Millisecond)
	}
	if got, ok := score(); ok {
		t.Fatalf("on the eighth day: score %d, want not present", got)
	}
	// Past instants are exact too.
	m, err := e.Member(context.Background(), laurel.Query{Board: "solvers", At: at("2026-11-23T01:00:00Z"), HasAt: true}, "ada")
	if err != nil || m.Entry.Score != 14 {
		t.Fatalf("read at 2026-11-23: %+v, %v; want 14", m.Entry, err)
	}
}

func TestIdempotencyAndRetraction(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "fastest", laurel.BoardSpec{Order: ptr("asc"), Mode: ptr("best"), Windows: []string{"all", "day"}})
	ev := func(member string, v int64, id string) laurel.Event {
		return laurel.Event{Board: "fastest", Member: member, Value: v, ID: id}
	}
	submit(t, e, ev("ada", 50, "r1"), ev("ada", 42, "r2"), ev("bob", 45, "r3"))
	if r := submit(t, e, ev("ada", 42, "r2")); r[0].Status != laurel.StatusDuplicate || r[0].Entries["all"] != (laurel.Standing{Rank: 1, Score: 42}) {
		t.Fatalf("retry: %+v, want a duplicate with ada first at 42", r[0])
	}
	// The same id with other content is a conflict, and the batch it is in changes nothing.
	_, err := e.Submit(ctx, []laurel.Event{ev("cy", 10, "r9"), ev("ada", 41, "r2")}, laurel.SubmitOptions{})
	if laurel.ErrorCode(err) != laurel.EConflict {
		t.Fatalf("reused id: %v, want conflict", err)
	}
	if _, err := e.Member(ctx, laurel.Query{Board: "fastest"}, "cy"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("cy after a rejected batch: %v, want not_found", err)
	}
	// Retracting ada's best falls back to her next best, which now ranks after bob.
	if err := e.Retract(ctx, "fastest", "r2"); err != nil {
		t.Fatal(err)
	}
	p, err := e.Page(ctx, laurel.Query{Board: "fastest"}, 0, 10, laurel.ScoreRange{})
	if err != nil || len(p.Entries) != 2 || p.Entries[0].Member != "bob" || p.Entries[1].Score != 50 {
		t.Fatalf("after retraction: %+v, %v; want bob 45 then ada 50", p.Entries, err)
	}
	if err := e.Retract(ctx, "fastest", "r2"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("second retraction: %v, want not_found", err)
	}
	// A retracted id may be used again, and counts again.
	if r := submit(t, e, ev("ada", 40, "r2")); r[0].Status != laurel.StatusApplied || r[0].Entries["day"].Rank != 1 {
		t.Fatalf("reused retracted id: %+v", r[0])
	}
}

func TestClosedPeriodsKeepRanks(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-16T10:00:00Z") // a Monday
	dir := t.TempDir()
	e := testStore(t, dir, c)
	putBoard(t, e, "weekly", laurel.BoardSpec{Windows: []string{"week"}, LateLimit: ptr("1h"), Keep: ptr(1)})
	for i, m := range []string{"ada", "bob", "cy", "dee"} {
		submit(t, e, laurel.Event{Board: "weekly", Member: m, Value: int64(10 * (i + 1))})
	}
	c.Set("2026-11-23T00:30:00Z") // next week, last week still open for late events
	submit(t, e, laurel.Event{Board: "weekly", Member: "ada", Value: 100, TS: at("2026-11-22T23:59:00Z"), HasTS: true})
	c.Set("2026-11-23T01:00:00Z") // closed now
	_, err := e.Submit(ctx, []laurel.Event{{Board: "weekly", Member: "ada", Value: 1, TS: at("2026-11-22T23:59:59Z"), HasTS: true}}, laurel.SubmitOptions{})
	if laurel.ErrorCode(err) != laurel.ETooLate {
		t.Fatalf("event into a closed period: %v, want too_late", err)
	}
	last := laurel.Query{Board: "weekly", Period: "2026-11-16"}
	want := func(members ...string) {
		t.Helper()
		p, err := e.Page(ctx, last, 0, 10, laurel.ScoreRange{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, en := range p.Entries {
			if en.Rank != i+1 {
				t.Fatalf("rank %d at position %d", en.Rank, i+1)
			}
			got = append(got, en.Member)
		}
		if !p.Period.Closed || p.Total != len(members) || fmt.Sprint(got) != fmt.Sprint(members) {
			t.Fatalf("last week: %v (total %d, closed %v), want %v", got, p.Total, p.Period.Closed, members)
		}
	}
	want("ada", "dee", "cy", "bob")
	if err := e.Hide(ctx, "dee"); err != nil {
		t.Fatal(err)
	}
	want("ada", "cy", "bob")
	if m, err := e.Member(ctx, last, "bob"); err != nil || m.Entry.Rank != 3 {
		t.Fatalf("bob: %+v, %v; want rank 3", m, err)
	}
	if err := e.DeleteMember(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	want("cy", "bob")
	if err := e.Unhide(ctx, "dee"); err != nil {
		t.Fatal(err)
	}
	want("dee", "cy", "bob")
	// Restart: closed periods, hidden marks and deletions survive.
	e.Close()
	e = testStore(t, dir, c)
	want("dee", "cy", "bob")
	// keep 1: last week stays until two newer weeks have closed.
	c.Set("2026-11-30T01:00:00Z")
	want("dee", "cy", "bob")
	c.Set("2026-12-07T01:00:00Z")
	if _, err := e.Page(ctx, last, 0, 10, laurel.ScoreRange{}); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("a dropped period: %v, want not_found", err)
	}
}

// An import lifts late_limit but not a period's closing: closed periods never change.
func TestImportBypassesLateLimit(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "history", laurel.BoardSpec{Windows: []string{"all", "last7d"}, LateLimit: ptr("1h")})
	old := laurel.Event{Board: "history", Member: "ada", Value: 7, TS: at("2026-11-19T10:00:00Z"), HasTS: true}
	if _, err := e.Submit(ctx, []laurel.Event{old}, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.ETooLate {
		t.Fatalf("an old event: %v, want too_late", err)
	}
	if _, err := e.Submit(ctx, []laurel.Event{old}, laurel.SubmitOptions{Import: true}); err != nil {
		t.Fatalf("the same event imported: %v", err)
	}
	for _, w := range []string{"all", "last7d"} {
		if m, err := e.Member(ctx, laurel.Query{Board: "history", Window: w}, "ada"); err != nil || m.Entry.Score != 7 {
			t.Fatalf("%s after the import: %+v, %v", w, m, err)
		}
	}
	// A calendar period closes late_limit after its end, with data or not: an import into
	// yesterday is still too late.
	putBoard(t, e, "daily", laurel.BoardSpec{Windows: []string{"day"}, LateLimit: ptr("1h")})
	late := laurel.Event{Board: "daily", Member: "cy", Value: 1, TS: at("2026-11-21T12:00:00Z"), HasTS: true}
	if _, err := e.Submit(ctx, []laurel.Event{late}, laurel.SubmitOptions{Import: true}); laurel.ErrorCode(err) != laurel.ETooLate {
		t.Fatalf("an import into a closed period: %v, want too_late", err)
	}
}

// A batch is atomic for readers too: while groups of many batches are applied to memory in
// slices, with readers let in between, a reader sees each batch whole or not at all. Every
// batch here adds batchSize new members, so a total that is not a multiple of it would be a
// batch seen in part.
func TestBatchesAppearWhole(t *testing.T) {
	c := laureltest.NewClock("2026-11-16T12:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "week"}})
	const writers, batches, batchSize = 16, 20, 50
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range batches {
				evs := make([]laurel.Event, batchSize)
				for j := range evs {
					evs[j] = laurel.Event{Board: "b", Member: fmt.Sprintf("m%d-%d-%d", w, i, j), Value: int64(j)}
				}
				if _, err := e.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	reads := 0
	for {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		for _, window := range []string{"all", "week"} {
			p, err := e.Page(ctx, laurel.Query{Board: "b", Window: window}, 0, 1, laurel.ScoreRange{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Total%batchSize != 0 {
				t.Fatalf("window %s: a reader saw %d members: a batch in part", window, p.Total)
			}
		}
		reads++
		select {
		case <-done:
			p, err := e.Page(ctx, laurel.Query{Board: "b", Window: "all"}, 0, 1, laurel.ScoreRange{})
			if err != nil || p.Total != writers*batches*batchSize {
				t.Fatalf("at the end: total %d, %v; want %d", p.Total, err, writers*batches*batchSize)
			}
			t.Logf("%d reads while writing", reads)
			return
		default:
		}
	}
}

// An operation that fails after staging some of its writes leaves nothing of them to the
// operations committed with it: not its aggregates, not its ids, not what it staged of a
// rolling bucket it retired; one that succeeds keeps what it staged of one. Each group is made
// by holding the writer in a commit while its submits queue.
func TestFailedOperationInGroup(t *testing.T) {
	c := laureltest.NewClock("2026-11-16T12:00:00Z")
	dir := t.TempDir()
	var armed atomic.Bool
	var held, hold chan struct{}
	opts := embedded.Options{Now: c.Now, OnCommit: func(int, int, time.Duration) {
		if armed.CompareAndSwap(true, false) {
			close(held)
			<-hold
		}
	}}
	e := testStoreWith(t, dir, opts)
	ctx := context.Background()
	// group runs the submits as one group and returns their errors' codes.
	group := func(submits ...[]laurel.Event) []string {
		held, hold = make(chan struct{}), make(chan struct{})
		armed.Store(true)
		go e.Submit(ctx, []laurel.Event{{Board: "other", Member: "y", Value: 1}}, laurel.SubmitOptions{})
		<-held
		queued := e.Queued() // the other submit, should the writer be held in a commit before its
		errs := make([]chan error, len(submits))
		for i, evs := range submits {
			errs[i] = make(chan error, 1)
			go func() {
				_, err := e.Submit(ctx, evs, laurel.SubmitOptions{})
				errs[i] <- err
			}()
			for start := time.Now(); e.Queued() < queued+i+1; time.Sleep(time.Millisecond) {
				if time.Since(start) > 10*time.Second {
					t.Fatalf("submit %d never queued", i)
				}
			}
		}
		close(hold)
		codes := make([]string, len(submits))
		for i := range errs {
			codes[i] = laurel.ErrorCode(<-errs[i])
		}
		return codes
	}
	check := func(when string, score int64) {
		t.Helper()
		for _, w := range []string{"all", "last7d"} {
			m, err := e.Member(ctx, laurel.Query{Board: "r", Window: w}, "x")
			if err != nil || m.Entry.Score != score {
				t.Fatalf("%s: x in %s: %+v, %v; want a score of %d", when, w, m.Entry, err, score)
			}
			if _, err := e.Member(ctx, laurel.Query{Board: "r", Window: w}, "z"); laurel.ErrorCode(err) != laurel.ENotFound {
				t.Fatalf("%s: z in %s: %v, want not found", when, w, err)
			}
		}
	}
	restart := func() {
		e.Close()
		e = testStoreWith(t, dir, opts)
	}
	putBoard(t, e, "r", laurel.BoardSpec{Windows: []string{"all", "last7d"}, LateLimit: ptr("7d")})
	putBoard(t, e, "other", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, e, laurel.Event{Board: "r", Member: "x", Value: 1, ID: "first"})

	// b stages three events, the second of which starts today's bucket, and fails on its
	// fourth; c reuses b's first id and adds to the member b changed.
	yesterday := c.Now()
	c.Advance(time.Duration(day) * time.Millisecond)
	codes := group([]laurel.Event{{Board: "r", Member: "x", Value: 2, TS: yesterday, HasTS: true, ID: "a"}},
		[]laurel.Event{{Board: "r", Member: "x", Value: 4, TS: yesterday, HasTS: true, ID: "b"},
			{Board: "r", Member: "x", Value: 8, ID: "b2"},
			{Board: "r", Member: "z", Value: 32, ID: "b3"},
			{Board: "r", Member: "x", Value: 99, ID: "a"}}, // a conflict: a counted 2
		[]laurel.Event{{Board: "r", Member: "x", Value: 16, ID: "b"}})
	if !slices.Equal(codes, []string{"", laurel.EConflict, ""}) {
		t.Fatalf("the submits' errors: %q", codes)
	}
	check("after the group", 1+2+16)
	restart()
	check("after a restart", 1+2+16)

	// d starts today's bucket after adding to yesterday's, which a wrote to before it.
	yesterday = c.Now()
	c.Advance(time.Duration(day) * time.Millisecond)
	codes = group([]laurel.Event{{Board: "r", Member: "x", Value: 32, TS: yesterday, HasTS: true}},
		[]laurel.Event{{Board: "r", Member: "x", Value: 64, TS: yesterday, HasTS: true}, {Board: "r", Member: "x", Value: 128}})
	if !slices.Equal(codes, []string{"", ""}) {
		t.Fatalf("the submits' errors: %q", codes)
	}
	check("after the second group", 19+32+64+128)
	restart()
	check("after a second restart", 19+32+64+128)

	// f adds to the member e added to, then fails, the last in its group to change x: memory
	// holds e's change whole and nothing of f's.
	codes = group([]laurel.Event{{Board: "r", Member: "x", Value: 256}},
		[]laurel.Event{{Board: "r", Member: "x", Value: 512}, {Board: "r", Member: "x", Value: 99, ID: "a"}})
	if !slices.Equal(codes, []string{"", laurel.EConflict}) {
		t.Fatalf("the submits' errors: %q", codes)
	}
	check("after the third group", 243+256)
	restart()
	check("after a third restart", 243+256)
}

// TestPeriodsOfEmptiedSpans: periods emptied by retractions are listed alike before and after
// a restart: an open one that is not the current one not at all (memory kept its span until
// the restart and listed it with total 0, where a restarted store, and the scale-out store,
// did not list it).
func TestPeriodsOfEmptiedSpans(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := laureltest.NewClock("2026-11-22T10:30:00Z")
	e, err := embedded.Open(dir, embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "p", laurel.BoardSpec{Windows: []string{"hour", "day", "all"}, LateLimit: ptr("720h")})
	hour := time.Hour.Milliseconds()
	submit(t, e,
		laurel.Event{Board: "p", Member: "x", Value: 1, TS: clock.Now() - 8*24*hour, HasTS: true, ID: "old"},  // November 14
		laurel.Event{Board: "p", Member: "y", Value: 1, TS: clock.Now() - 50*hour, HasTS: true, ID: "closes"}, // November 20
		laurel.Event{Board: "p", Member: "z", Value: 1, TS: clock.Now() - 26*hour, HasTS: true, ID: "open"},   // November 21
		laurel.Event{Board: "p", Member: "z", Value: 1, TS: clock.Now() - 25*hour, HasTS: true})
	if err := e.Retract(ctx, "p", "old"); err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "p", laurel.BoardSpec{LateLimit: ptr("30h")}) // November 14 and 20 close
	for _, id := range []string{"closes", "open"} {
		if err := e.Retract(ctx, "p", id); err != nil {
			t.Fatal(err)
		}
	}
	list := func(e *embedded.Store, window string) string {
		t.Helper()
		ps, err := e.Periods(ctx, "p", window)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, p := range ps {
			if i > 0 && !p.Closed && p.Total == 0 {
				t.Errorf("%s: the open period %s is listed with no one in it", window, p.ID)
			}
			fmt.Fprintf(&b, "%s closed %v total %d; ", p.ID, p.Closed, p.Total)
		}
		return b.String()
	}
	before := map[string]string{"hour": list(e, "hour"), "day": list(e, "day")}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = embedded.Open(dir, embedded.Options{Now: clock.Now}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for window, was := range before {
		if now := list(e, window); now != was {
			t.Errorf("%s periods before a restart: %s\nafter: %s", window, was, now)
		}
	}
	t.Logf("day: %s", before["day"])
}
