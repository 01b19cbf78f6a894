package main

import (
	"context"
	"fmt"
	"time"
)

// retry calls try until it succeeds, ctx ends, or patience has passed since its first
// failure (zero: no second try; below zero: no end), pausing from 100 ms and doubling up to
// longest between tries, the last pause cut to what patience leaves. An error that
// retryable refuses ends it at once. tell hears each failure whose message differs from the
// last one's, so that a backend down for long is logged once, not at every try.
func retry(ctx context.Context, patience, longest time.Duration, retryable func(error) bool, tell func(error), try func() error) error {
	var since time.Time
	last := ""
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, longest) {
		err := try()
		if err == nil || !retryable(err) {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if patience == 0 {
			return err
		}
		if patience > 0 {
			left := patience - time.Since(since)
			if left <= 0 {
				return fmt.Errorf("%w (still failing after %v)", err, patience)
			}
			wait = min(wait, left)
		}
		if err.Error() != last {
			tell(err)
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// always is retry's retryable for what may fail only for a while: opening a store whose
// backends are coming up.
func always(error) bool { return true }

// forever is retry's patience that never ends.
const forever = -1
