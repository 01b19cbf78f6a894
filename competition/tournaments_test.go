package competition_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// BenchmarkTournamentsSubmit measures what competition.Service adds to a submit of 100 events
// on a board that is no tournament (every board's cost: a read of the board's configuration),
// against the store's own submit, in one run.
func BenchmarkTournamentsSubmit(b *testing.B) {
	s, err := embedded.Open(b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.PutBoard(ctx, "b", laurel.BoardSpec{Windows: []string{"all", "week", "day", "last7d"}}); err != nil {
		b.Fatal(err)
	}
	batch := make([]laurel.Event, 100)
	for _, c := range []struct {
		name string
		svc  laurel.Service
	}{{"store", s}, {"tournaments", competition.New(s, s, nil)}} {
		svc := c.svc
		b.Run(c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				for j := range batch {
					batch[j] = laurel.Event{Board: "b", Member: fmt.Sprintf("m%d", (i*100+j)%100_000), Value: 1}
				}
				if _, err := svc.Submit(ctx, batch, laurel.SubmitOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAnIDTwiceInASubmitIsOneAttempt: an event id sent twice in one submit is applied once
// and found a duplicate once (as the store answers), so it takes one attempt of a run, not
// two; a submit past the last attempt names the event that goes past it.
func TestAnIDTwiceInASubmitIsOneAttempt(t *testing.T) {
	ctx := context.Background()
	tours := openCompetitions(t, "2026-11-02T10:00:00Z")
	for _, c := range []struct {
		max    int
		ids    []string
		status []string
		used   int
		field  string // of the error, when the submit is refused
	}{
		{1, []string{"z", "z"}, []string{"applied", "duplicate"}, 1, ""},
		{2, []string{"b", "b", "b"}, []string{"applied", "duplicate", "duplicate"}, 1, ""},
		{2, []string{"c", "d", "c", "e"}, nil, 0, "events[3].member"},
		{1, []string{"f", "", "g"}, nil, 0, "events[1].member"},
	} {
		board := fmt.Sprintf("t%d", c.max*10+len(c.ids))
		if _, _, err := tours.PutBoard(ctx, board, laurel.BoardSpec{Windows: []string{"all"}, Tournament: &laurel.TournamentSpec{MaxAttempts: &c.max}}); err != nil {
			t.Fatal(err)
		}
		evs := make([]laurel.Event, len(c.ids))
		for i, id := range c.ids {
			evs[i] = laurel.Event{Board: board, Member: "m", Value: 1, ID: id}
		}
		res, err := tours.Submit(ctx, evs, laurel.SubmitOptions{})
		if c.field != "" {
			var e *laurel.Error
			if !errors.As(err, &e) || e.Code != laurel.EConflict || e.Field != c.field {
				t.Errorf("%v, at most %d attempts: %v; want a conflict at %s", c.ids, c.max, err, c.field)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v, at most %d attempts: %v", c.ids, c.max, err)
		}
		for i, want := range c.status {
			if res[i].Status != want {
				t.Errorf("%v: event %d %s, want %s", c.ids, i, res[i].Status, want)
			}
		}
		if en, err := tours.Entrant(ctx, board, "m"); err != nil || en.Attempts != c.used {
			t.Errorf("%v: %d attempts used (%v), want %d", c.ids, en.Attempts, err, c.used)
		}
	}
}

// TestRetryAfterMaxAttemptsLowered: once max_attempts is lowered below what a member has used,
// a retry of an event the run counted is still a duplicate (it panicked: no event of the
// submit was counted, and the refusal looked for the first one past the last attempt), and a
// new one is refused.
func TestRetryAfterMaxAttemptsLowered(t *testing.T) {
	ctx := context.Background()
	tours := openCompetitions(t, "2026-11-02T10:00:00Z")
	two, one := 2, 1
	if _, _, err := tours.PutBoard(ctx, "t", laurel.BoardSpec{Windows: []string{"all"}, Tournament: &laurel.TournamentSpec{MaxAttempts: &two}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := tours.Submit(ctx, []laurel.Event{{Board: "t", Member: "u", Value: 1, ID: id}}, laurel.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := tours.PutBoard(ctx, "t", laurel.BoardSpec{Tournament: &laurel.TournamentSpec{MaxAttempts: &one}}); err != nil {
		t.Fatal(err)
	}
	res, err := tours.Submit(ctx, []laurel.Event{{Board: "t", Member: "u", Value: 1, ID: "b"}}, laurel.SubmitOptions{})
	if err != nil || res[0].Status != laurel.StatusDuplicate {
		t.Fatalf("a retry of a counted event after max_attempts went from 2 to 1: %+v, %v; want a duplicate", res, err)
	}
	var e *laurel.Error
	if _, err := tours.Submit(ctx, []laurel.Event{{Board: "t", Member: "u", Value: 1, ID: "c"}}, laurel.SubmitOptions{}); !errors.As(err, &e) || e.Code != laurel.EConflict || e.Field != "events[0].member" {
		t.Fatalf("a new event past the lowered limit: %v; want a conflict at events[0].member", err)
	}
}

// TestRetractedIDIsANewAttempt: once an event is retracted, its id may be used again (docs/api.md)
// for a new event, which is an attempt like any other, counted and capped, not a retry of the
// retracted one. The retracted event's attempt stays used.
func TestRetractedIDIsANewAttempt(t *testing.T) {
	ctx := context.Background()
	tours := openCompetitions(t, "2026-11-02T10:00:00Z")
	two := 2
	if _, _, err := tours.PutBoard(ctx, "t", laurel.BoardSpec{Windows: []string{"all"}, Tournament: &laurel.TournamentSpec{MaxAttempts: &two}}); err != nil {
		t.Fatal(err)
	}
	submit := func(id string, value int64) ([]laurel.EventResult, error) {
		return tours.Submit(ctx, []laurel.Event{{Board: "t", Member: "u", Value: value, ID: id}}, laurel.SubmitOptions{})
	}
	used := func(want int) {
		t.Helper()
		if en, err := tours.Entrant(ctx, "t", "u"); err != nil || en.Attempts != want {
			t.Fatalf("%d attempts used (%v), want %d", en.Attempts, err, want)
		}
	}
	if _, err := submit("a", 5); err != nil {
		t.Fatal(err)
	}
	if err := tours.Retract(ctx, "t", "a"); err != nil {
		t.Fatal(err)
	}
	used(1)
	res, err := submit("a", 7)
	if err != nil || res[0].Status != laurel.StatusApplied {
		t.Fatalf("the retracted id used again: %+v, %v; want applied", res, err)
	}
	used(2)
	// A retry of the new event is a duplicate, and no attempt, at the limit.
	if res, err := submit("a", 7); err != nil || res[0].Status != laurel.StatusDuplicate {
		t.Fatalf("a retry of the new event: %+v, %v; want a duplicate", res, err)
	}
	used(2)
	// With both attempts used, the id retracted and used again is refused, and not stored.
	if err := tours.Retract(ctx, "t", "a"); err != nil {
		t.Fatal(err)
	}
	var e *laurel.Error
	if _, err := submit("a", 9); !errors.As(err, &e) || e.Code != laurel.EConflict || e.Field != "events[0].member" {
		t.Fatalf("the retracted id again, past the last attempt: %v; want a conflict at events[0].member", err)
	}
	if m, err := tours.Member(ctx, laurel.Query{Board: "t"}, "u"); err == nil || laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("the refused event was stored: %+v, %v", m, err)
	}
	used(2)
	// An id the board never had: the store's answer, and the entry unchanged.
	if err := tours.Retract(ctx, "t", "nope"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("retracting an unknown id: %v; want not found", err)
	}
	used(2)
}

// openCompetitions returns competitions over a new embedded store whose clock is at now.
func openCompetitions(t *testing.T, now string) *competition.Service {
	t.Helper()
	clock := laureltest.NewClock(now)
	s, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return competition.New(s, s, clock.Now)
}
