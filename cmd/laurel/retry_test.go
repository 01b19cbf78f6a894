package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRetryPatience: zero patience tries once (`rebuild -wait 0` tried for ever); a patience
// is kept to, not cut short by the next pause (-wait 5s gave up after 3.2 s); below zero it
// goes on until its context ends; an error not worth a retry ends it at once.
func TestRetryPatience(t *testing.T) {
	down := errors.New("down")
	for _, c := range []struct {
		name      string
		patience  time.Duration
		retryable func(error) bool
		cancel    time.Duration // the context ends then (0: never)
		tries     func(int) bool
		took      func(time.Duration) bool
		want      string
	}{
		{"zero", 0, always, 0, func(n int) bool { return n == 1 }, func(d time.Duration) bool { return d < 50*time.Millisecond }, "down"},
		{"a second", time.Second, always, 0, func(n int) bool { return n >= 4 }, func(d time.Duration) bool { return d >= time.Second && d < 1500*time.Millisecond }, "still failing after 1s"},
		{"forever", forever, always, 700 * time.Millisecond, func(n int) bool { return n >= 3 }, func(d time.Duration) bool { return d >= 700*time.Millisecond }, "context canceled"},
		{"not retryable", time.Minute, func(error) bool { return false }, 0, func(n int) bool { return n == 1 }, func(d time.Duration) bool { return d < 50*time.Millisecond }, "down"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if c.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx) // as a signal's context
				defer cancel()
				time.AfterFunc(c.cancel, cancel)
			}
			n, told := 0, 0
			start := time.Now()
			err := retry(ctx, c.patience, 200*time.Millisecond, c.retryable, func(error) { told++ }, func() error { n++; return down })
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), c.want) || !c.tries(n) || !c.took(took) || told > 1 {
				t.Fatalf("%v after %d tries in %v, told %d times; want %q", err, n, took, told, c.want)
			}
		})
	}
}
