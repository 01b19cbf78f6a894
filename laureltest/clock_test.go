package laureltest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/laurel/laurel/laureltest"
)

// TestClock: the clock reads what it was set to, moves by what it was advanced, and does so
// consistently under concurrent advances.
func TestClock(t *testing.T) {
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	if got, want := c.Now(), time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixMilli(); got != want {
		t.Fatalf("Now %d, want %d", got, want)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Advance(time.Millisecond)
			}
		})
	}
	wg.Wait()
	c.Advance(-time.Second)
	if got, want := c.Now(), time.Date(2026, 11, 22, 10, 0, 7, 0, time.UTC).UnixMilli(); got != want {
		t.Fatalf("after 8000 ms forward and 1 s back: %d, want %d", got, want)
	}
	c.Set("2026-11-23T00:00:00.250+01:00")
	if got, want := c.Now(), time.Date(2026, 11, 22, 23, 0, 0, 250e6, time.UTC).UnixMilli(); got != want {
		t.Fatalf("Set: %d, want %d", got, want)
	}
}
