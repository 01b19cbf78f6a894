package postgres_test

import (
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestGuard: each rule of a board's guard decides as its model, on three nodes over one
// store, and exactly under concurrent writes to one member through all of them.
//
//	go test ./postgres/ -run TestGuard -v -seed=N  # replay a failure
func TestGuard(t *testing.T) {
	laureltest.Guard(t, func(t testing.TB, now func() int64) []laurel.Service {
		s := laureltest.NewScaleOutStore(t)
		return []laurel.Service{s.Open(t, now), s.Open(t, now), s.Open(t, now)}
	})
}

// TestReview: the review queue decides as its model, each step through another of three
// nodes over one store.
func TestReview(t *testing.T) {
	laureltest.Review(t, func(t testing.TB, now func() int64) []laurel.Service {
		s := laureltest.NewScaleOutStore(t)
		return []laurel.Service{s.Open(t, now), s.Open(t, now), s.Open(t, now)}
	})
}
