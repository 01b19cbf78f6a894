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

// Run moves the clock by step every millisecond of real time, so that periods close and
// buckets move while a test's writers run, until stop is called.
func (c *Clock) Run(step time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				c.Advance(step)
			}
		}
	}()
	return func() { close(done) }
}
