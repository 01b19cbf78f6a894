package http

import (
	"math"
	"strconv"
	"sync"
	"time"
)

// limiter is a token bucket per client: rate tokens a second, up to burst.
type limiter struct {
	rate  float64
	burst float64

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets is how many buckets the limiter keeps before it forgets the full ones.
const maxBuckets = 1 << 16

func newLimiter(rate float64, burst int) *limiter {
	b := float64(burst)
	if b <= 0 {
		b = math.Max(1, math.Ceil(rate))
	}
	return &limiter{rate: rate, burst: b, buckets: make(map[string]*bucket)}
}

// allow takes a token from id's bucket. When there is none, it returns false and the whole
// seconds (at least 1) until there will be one, for Retry-After.
func (l *limiter) allow(id string, now time.Time) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[id]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.sweep(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[id] = b
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(l.burst, b.tokens+elapsed*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, ""
	}
	wait := math.Ceil((1 - b.tokens) / l.rate)
	if wait < 1 || math.IsNaN(wait) {
		wait = 1
	}
	if wait > 1<<31 {
		wait = 1 << 31
	}
	return false, strconv.FormatInt(int64(wait), 10)
}

// sweep forgets the buckets that have refilled: they are the same as new ones. If that
// leaves more than three quarters of maxBuckets (many clients, each with tokens spent), it
// forgets others at random down to that, giving them a full bucket again: a flood of new
// addresses then costs a bounded map and one sweep per maxBuckets/4 of them, not a sweep a
// request.
func (l *limiter) sweep(now time.Time) {
	for id, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, id)
		}
	}
	for id := range l.buckets { // random order
		if len(l.buckets) <= maxBuckets*3/4 {
			break
		}
		delete(l.buckets, id)
	}
}
