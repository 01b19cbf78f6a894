package embedded_test

import (
	"context"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

func TestRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	laureltest.Records(t, s)
	// What a swap stored is there after a restart, and a closed store refuses records.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwapRecord(context.Background(), "k", "late", nil, []byte("x")); laurel.ErrorCode(err) != laurel.EUnavailable {
		t.Errorf("a swap on a closed store: %v, want %s", err, laurel.EUnavailable)
	}
	s, err = embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Record(context.Background(), "other", "a/9"); err != nil || string(v) != "elsewhere" {
		t.Fatalf("after a restart: %q, %v", v, err)
	}
}

func TestHookRules(t *testing.T) {
	s, clock := openOnClock(t, "2026-11-02T10:00:00Z")
	laureltest.HookRules(t, s, clock)
}

func TestTournamentRules(t *testing.T) {
	s, clock := openOnClock(t, "2026-10-31T12:00:00Z")
	laureltest.TournamentRules(t, s, clock, laureltest.Seed(t), 400)
}

func TestCohortRules(t *testing.T) {
	s, clock := openOnClock(t, "2026-10-24T12:00:00Z")
	laureltest.CohortRules(t, s, clock, laureltest.Seed(t), 300, func(from laureltest.HookStore) laureltest.HookStore {
		return laureltest.IntoEmbedded(t, from.(*embedded.Store), clock.Now)
	})
}

func TestLeagueRules(t *testing.T) {
	s, clock := openOnClock(t, "2026-10-30T12:00:00Z")
	laureltest.LeagueRules(t, s, clock, laureltest.Seed(t), 200, func(from laureltest.HookStore) laureltest.HookStore {
		return laureltest.IntoEmbedded(t, from.(*embedded.Store), clock.Now)
	})
}

// openOnClock opens a store in a new directory on a fake clock at start, closed with the test.
func openOnClock(t *testing.T, start string) (*embedded.Store, *laureltest.Clock) {
	t.Helper()
	clock := laureltest.NewClock(start)
	s, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

func TestPreviousRules(t *testing.T) {
	s, clock := openOnClock(t, "2026-12-07T10:00:00Z")
	laureltest.PreviousRules(t, s, clock)
}
