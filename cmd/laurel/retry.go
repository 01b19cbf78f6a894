package main

import (
	"context"
	"time"
)

// retry calls try until it succeeds, ctx ends, or patience (0: no end) has passed since its
// first failure, pausing from 100 ms and doubling up to longest between tries. An error that
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
		if err.Error() != last {
			tell(err)
			last = err.Error()
		}
		if patience > 0 && time.Since(since)+wait > patience {
			return err
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
