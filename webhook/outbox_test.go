package webhook_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/webhook"
)

// countingPeriods is a store that counts its Periods reads.
type countingPeriods struct {
	*embedded.Store
	n int
}

func (c *countingPeriods) Periods(ctx context.Context, board, window string) ([]laurel.PeriodInfo, error) {
	c.n++
	return c.Store.Periods(ctx, board, window)
}

// testHooks are the hooks of the records rec and the boards of svc, on clock, their
// deliveries' bodies in plain JSON.
func testHooks(rec laurel.Records, svc laurel.Service, clock *laureltest.Clock) *webhook.Outbox {
	return &webhook.Outbox{Records: rec, Service: svc, Now: clock.Now, Encode: func(p laurel.ResultsPart) ([]byte, error) { return json.Marshal(p) }}
}

// openRewarded opens an embedded store on clock, closed when the test ends, and returns the
// spec of a board whose days close late_limit after they end and reward their first.
func openRewarded(t *testing.T, clock *laureltest.Clock, lateLimit string) (*embedded.Store, laurel.BoardSpec) {
	s, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, laurel.BoardSpec{Windows: []string{"day"}, LateLimit: ptr(lateLimit),
		Rewards: laurel.Rewards{{Window: "day", Ranks: []int{1, 1}, Reward: json.RawMessage(`{}`)}}}
}

// TestCollectLooksAgainWhenAPeriodMayHaveClosed: Collect reads a window's periods again only
// once a period of it may have closed (its close instant, or a minute on), and still makes a
// period's deliveries at the instant it closes.
func TestCollectLooksAgainWhenAPeriodMayHaveClosed(t *testing.T) {
	clock := &laureltest.Clock{}
	clock.Set("2026-11-02T10:00:00Z")
	s, spec := openRewarded(t, clock, "1h")
	ctx := context.Background()
	if _, _, err := s.PutBoard(ctx, "b", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, []laurel.Event{{Board: "b", Member: "ann", Value: 1}}, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	store := &countingPeriods{Store: s}
	hs := testHooks(s, store, clock)
	if _, _, err := hs.Put(ctx, "h", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/h"), Secret: ptr("0123456789abcdef")}); err != nil {
		t.Fatal(err)
	}
	store.n = 0 // the hook's making read them once, to fix where it starts
	collect := func(want, reads int) {
		t.Helper()
		made, err := hs.Collect(ctx)
		if err != nil || made != want || store.n != reads {
			t.Fatalf("Collect at %s: made %d, %v, after %d reads of periods; want %d after %d", laurel.FormatTime(clock.Now()), made, err, store.n, want, reads)
		}
	}
	collect(0, 1)
	for range 59 { // a pass a second for a minute: nothing can close before then
		clock.Advance(time.Second)
		collect(0, 1)
	}
	clock.Advance(time.Second)
	collect(0, 2)
	clock.Set("2026-11-03T00:59:59Z")
	collect(0, 3)
	clock.Set("2026-11-03T01:00:00Z") // the day closes: at once, not a minute on
	collect(1, 4)
	collect(0, 4)
}

// TestHookHearsPeriodsALateLimitCloses: a hook is told of the periods that close after it is
// created, including one still open then that a shorter late_limit closes at once, though its
// end lies before the hook; and not of one closed before the hook. A delivery or a hook that
// is not there is not found, naming which (the API's field).
func TestHookHearsPeriodsALateLimitCloses(t *testing.T) {
	clock := &laureltest.Clock{}
	s, spec := openRewarded(t, clock, "24h")
	ctx := context.Background()
	clock.Set("2026-10-31T12:00:00Z")
	if _, _, err := s.PutBoard(ctx, "b", spec); err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{"2026-10-31T12:00:00Z", "2026-11-01T12:00:00Z"} {
		clock.Set(at)
		if _, err := s.Submit(ctx, []laurel.Event{{Board: "b", Member: "ann", Value: 1}}, laurel.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set("2026-11-02T10:00:00Z") // October 31 has closed; November 1 closes at midnight
	hs := testHooks(s, s, clock)
	if _, _, err := hs.Put(ctx, "h", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/h"), Secret: ptr("0123456789abcdef")}); err != nil {
		t.Fatal(err)
	}
	collect := func(want int) {
		t.Helper()
		if made, err := hs.Collect(ctx); err != nil || made != want {
			t.Fatalf("Collect at %s: made %d, %v; want %d", laurel.FormatTime(clock.Now()), made, err, want)
		}
	}
	collect(0)
	clock.Advance(time.Second)
	spec.LateLimit = ptr("1s")
	if _, _, err := s.PutBoard(ctx, "b", spec); err != nil { // November 1 closes now
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // Collect reads the boards again
	collect(1)
	if _, err := hs.Delivery(ctx, "h", "h:b:day:2026-11-01:1"); err != nil {
		t.Errorf("November 1, closed after the hook: %v", err)
	}
	if _, err := hs.Delivery(ctx, "h", "h:b:day:2026-10-31:1"); laurel.ErrorCode(err) != laurel.ENotFound || err.(*laurel.Error).Field != "delivery" {
		t.Errorf("October 31, closed before the hook: %v, want not found, of the delivery", err)
	}
	if _, err := hs.Hook(ctx, "nohook"); laurel.ErrorCode(err) != laurel.ENotFound || err.(*laurel.Error).Field != "hook" {
		t.Errorf("a hook that is not there: %v, want not found, of the hook", err)
	}

	// A board made after the hook, with an event of the day before, whose late_limit then
	// shortens before Collect first sees the board: that day closed after the hook was made.
	spec.LateLimit = ptr("24h")
	if _, _, err := s.PutBoard(ctx, "c", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, []laurel.Event{{Board: "c", Member: "ann", Value: 1, TS: clock.Now() - 12*time.Hour.Milliseconds(), HasTS: true}}, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	spec.LateLimit = ptr("1s")
	if _, _, err := s.PutBoard(ctx, "c", spec); err != nil { // November 1 closes now
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	collect(1)
	if _, err := hs.Delivery(ctx, "h", "h:c:day:2026-11-01:1"); err != nil {
		t.Errorf("November 1 of a board made after the hook, closed after it: %v", err)
	}
}

// TestHookNotToldOfWhatClosedBeforeIt: a period that closed before the hook was made is not
// its business even once a longer late_limit puts that close after the hook's making (it
// was reckoned from the late_limit of the day); and a period that closes holding no one
// (its one event retracted) makes no delivery: it has no results to tell.
func TestHookNotToldOfWhatClosedBeforeIt(t *testing.T) {
	clock := &laureltest.Clock{}
	clock.Set("2026-11-02T10:00:00Z")
	s, spec := openRewarded(t, clock, "720h")
	ctx := context.Background()
	if _, _, err := s.PutBoard(ctx, "g", spec); err != nil {
		t.Fatal(err)
	}
	day := time.Duration(24 * time.Hour).Milliseconds()
	evs := []laurel.Event{
		{Board: "g", Member: "ann", Value: 1, TS: clock.Now() - 3*day, HasTS: true},           // October 30
		{Board: "g", Member: "ben", Value: 1, TS: clock.Now() - 2*day, HasTS: true, ID: "e1"}, // October 31, retracted
		{Board: "g", Member: "cy", Value: 1, TS: clock.Now() - day, HasTS: true},              // November 1
	}
	if _, err := s.Submit(ctx, evs, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Retract(ctx, "g", "e1"); err != nil {
		t.Fatal(err)
	}
	// October 30 closes (58 h past its end), and stays closed when late_limit grows back.
	spec.LateLimit = ptr("50h")
	if _, _, err := s.PutBoard(ctx, "g", spec); err != nil {
		t.Fatal(err)
	}
	spec.LateLimit = ptr("720h")
	if _, _, err := s.PutBoard(ctx, "g", spec); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	hs := testHooks(s, s, clock)
	if _, _, err := hs.Put(ctx, "h", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/h"), Secret: ptr("0123456789abcdef")}); err != nil {
		t.Fatal(err)
	}
	collect := func(want ...string) {
		t.Helper()
		made, err := hs.Collect(ctx)
		ds, derr := hs.Deliveries(ctx, "h", "", "", 10)
		var got []string
		for _, d := range ds {
			got = append(got, d.Period)
		}
		if err != nil || derr != nil || made != len(want) || !slices.Equal(got, want) {
			t.Fatalf("Collect at %s: made %d, %v, %v; deliveries of %q, want %q", laurel.FormatTime(clock.Now()), made, err, derr, got, want)
		}
	}
	collect() // October 30 closed before the hook
	clock.Advance(time.Second)
	spec.LateLimit = ptr("1s") // October 31 and November 1 close now, after the hook
	if _, _, err := s.PutBoard(ctx, "g", spec); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // Collect reads the boards again
	collect("2026-11-01")      // October 31 holds no one
}

// TestHookToldOfABoardMadeAgain: a board deleted and made again under its id is told of
// from its first period, and a period of the same name as one the old board was told of gets
// a delivery of its own, under an id of its own (it got none: the old one's id was taken as
// made already, and a receiver applies each id once). So it is when Collect looks again
// within the minute it keeps the list of boards, a period being due: it took the old board's
// making from that list, and skipped the period for good.
func TestHookToldOfABoardMadeAgain(t *testing.T) {
	for _, c := range []struct {
		name          string
		first, second string // when Collect runs before the board is deleted, and after
	}{
		{"a minute later", "2026-11-03T00:01:00Z", "2026-11-03T00:02:02Z"},
		{"within the minute", "2026-11-03T23:59:30Z", "2026-11-04T00:00:05Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &laureltest.Clock{}
			clock.Set("2026-11-02T10:00:00Z")
			s, spec := openRewarded(t, clock, "1s")
			svc := competition.New(s, s, clock.Now)
			ctx := context.Background()
			hs := testHooks(s, svc, clock)
			if _, _, err := hs.Put(ctx, "h", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/h"), Secret: ptr("0123456789abcdef")}); err != nil {
				t.Fatal(err)
			}
			put := func(late string) {
				t.Helper()
				spec.LateLimit = ptr(late)
				if _, _, err := svc.PutBoard(ctx, "g", spec); err != nil {
					t.Fatal(err)
				}
			}
			submit := func(member string, ts int64) {
				t.Helper()
				if _, err := svc.Submit(ctx, []laurel.Event{{Board: "g", Member: member, Value: 1, TS: ts, HasTS: true}}, laurel.SubmitOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			put("1s")
			nov2 := clock.Now()
			submit("ann", nov2)
			clock.Set(c.first)
			if _, err := hs.Collect(ctx); err != nil {
				t.Fatal(err)
			}
			if err := svc.DeleteBoard(ctx, "g"); err != nil {
				t.Fatal(err)
			}
			if err := hs.ForgetBoard(ctx, "g"); err != nil { // as the API's DELETE does
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			put("48h")
			submit("ben", nov2) // November 2 again, late, on the new board
			clock.Advance(time.Second)
			put("1s") // which closes it
			clock.Set(c.second)
			if _, err := hs.Collect(ctx); err != nil {
				t.Fatal(err)
			}
			ds, err := hs.Deliveries(ctx, "h", "", "", 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				d, err := hs.Delivery(ctx, "h", d.ID)
				if err != nil {
					t.Fatal(err)
				}
				var part laurel.ResultsPart
				if err := json.Unmarshal(d.Body, &part); err != nil || len(part.Results.Results) != 1 {
					t.Fatalf("delivery %s: %s, %v", d.ID, d.Body, err)
				}
				got = append(got, d.ID+" "+part.Results.Results[0].Member)
			}
			slices.Sort(got)
			old := "h:g:day:2026-11-02:1"
			if len(got) != 2 || got[0] != old+" ann" || !strings.HasPrefix(got[1], old+"~") || !strings.HasSuffix(got[1], " ben") {
				t.Fatalf("deliveries %q; want %s for ann, then one of its own for ben", got, old)
			}
		})
	}
}
