package embedded_test

import (
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestGuard: each rule of a board's guard decides as its model, on one store.
//
//	go test ./embedded/ -run TestGuard -v -seed=N  # replay a failure
func TestGuard(t *testing.T) {
	laureltest.Guard(t, func(t testing.TB, now func() int64) []laurel.Service {
		target := laureltest.EmbeddedTarget(t)
		s, err := target.Open(t, now)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { target.Close(s) })
		return []laurel.Service{s}
	})
}
