package http

import (
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps a token bucket (golang.org/x/time/rate) per client: rate tokens a second, up
// to burst. What it adds is a bounded memory of clients and the Retry-After of a refusal.
type limiter struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// maxBuckets is how many buckets the limiter keeps before it forgets the full ones.
const maxBuckets = 1 << 16

func newLimiter(r float64, burst int) *limiter {
	if burst <= 0 {
		burst = int(math.Max(1, math.Ceil(r)))
	}
	return &limiter{rate: rate.Limit(r), burst: burst, buckets: make(map[string]*rate.Limiter)}
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
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[id] = b
	}
	if b.AllowN(now, 1) {
		return true, ""
	}
	// How long until a token: what is missing, at the rate.
	wait := math.Ceil((1 - b.TokensAt(now)) / float64(l.rate))
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
		if b.TokensAt(now) >= float64(l.burst) {
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
