package embedded_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
)

// clock is a settable test clock in unix ms.
type clock struct{ ms atomic.Int64 }

func newClock(t string) *clock {
	c := &clock{}
	c.set(t)
	return c
}

func (c *clock) now() int64 { return c.ms.Load() }

func (c *clock) set(t string) {
	ms, err := laurel.ParseTime(t)
	if err != nil {
		panic(err)
	}
	c.ms.Store(ms)
}

func (c *clock) add(ms int64) { c.ms.Add(ms) }

const (
	hour = int64(3600_000)
	day  = 24 * hour
)

// testEngine opens an engine on dir (a new temporary one when empty) and closes it at cleanup.
func testEngine(t testing.TB, dir string, c *clock) *embedded.Engine {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	e, err := embedded.Open(dir, embedded.Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func putBoard(t testing.TB, e *embedded.Engine, id string, spec laurel.BoardSpec) {
	t.Helper()
	if _, _, err := e.PutBoard(context.Background(), id, spec); err != nil {
		t.Fatalf("PutBoard %s: %v", id, err)
	}
}

func submit(t testing.TB, e *embedded.Engine, evs ...laurel.Event) []laurel.EventResult {
	t.Helper()
	res, err := e.Submit(context.Background(), evs, laurel.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return res
}

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
	c := newClock("2026-11-16T12:00:00Z")
	dir := t.TempDir()
	e := testEngine(t, dir, c)
	putBoard(t, e, "solvers", laurel.BoardSpec{Windows: []string{"last7d", "all"}, LateLimit: ptr("7d")})
	for i, n := range []int64{4, 2, 1, 0, 3, 3, 5} {
		if n > 0 {
			submit(t, e, laurel.Event{Board: "solvers", Member: "ada", Value: n, TS: at("2026-11-16T12:00:00Z") + int64(i)*day, HasTS: true})
		}
		c.add(day)
	}
	c.set("2026-11-22T18:00:00Z")
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
			t.Fatalf("at %s: score %d (present %v), want %d", laurel.FormatTime(c.now()), got, ok, want)
		}
		c.add(day)
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
