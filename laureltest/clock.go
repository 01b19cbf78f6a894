package laureltest

import (
	"sync/atomic"
	"time"

	"github.com/laurel/laurel"
)

// Clock is the tests' fake clock, in unix milliseconds as stores take it (pass its Now), safe
// for concurrent use: the test sets it and moves it while the store reads it.
type Clock struct{ ms atomic.Int64 }

// NewClock returns a clock at t, an RFC 3339 time.
func NewClock(t string) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's instant.
func (c *Clock) Now() int64 { return c.ms.Load() }

// Set moves the clock to t, an RFC 3339 time; a bad t is a mistake in the test, and panics.
func (c *Clock) Set(t string) {
	ms, err := laurel.ParseTime(t)
	if err != nil {
		panic("laureltest: " + err.Error())
	}
	c.ms.Store(ms)
}

// Advance moves the clock by d (backwards when negative).
func (c *Clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }
