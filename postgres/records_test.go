package postgres_test

import (
	"testing"

	"github.com/laurel/laurel/laureltest"
)

func TestRecords(t *testing.T) {
	s := laureltest.NewScaleOutStore(t)
	laureltest.Records(t, s.Open(t, nil))
}

func TestHookRules(t *testing.T) {
	clock := laureltest.NewClock("2026-11-02T10:00:00Z")
	laureltest.HookRules(t, laureltest.NewScaleOutStore(t).Open(t, clock.Now), clock)
}

func TestTournamentRules(t *testing.T) {
	clock := laureltest.NewClock("2026-10-31T12:00:00Z")
	laureltest.TournamentRules(t, laureltest.NewScaleOutStore(t).Open(t, clock.Now), clock, laureltest.Seed(t), 200)
}
