package http

import (
	"net/http"
	"net/netip"
	"time"
)

// Limiter exposes the rate limiter to its test.
type Limiter struct{ l *limiter }

func NewLimiter(rate float64, burst int) Limiter { return Limiter{newLimiter(rate, burst)} }

func (l Limiter) Allow(id string, now time.Time) (bool, string) { return l.l.allow(id, now) }

// Buckets is how many clients the limiter remembers.
func (l Limiter) Buckets() int { return len(l.l.buckets) }

// MaxBuckets is how many it keeps before it forgets some.
const MaxBuckets = maxBuckets

// Statuses are the HTTP statuses of the error codes.
var Statuses = statuses

// ClientIP is the address a server trusting the proxies of trusted counts r against.
func ClientIP(trusted []netip.Prefix, r *http.Request) string {
	return (&Server{cfg: Config{TrustedProxies: trusted}}).clientIP(r)
}

// PublishEvery is how often the live streams' publisher runs at most.
const PublishEvery = publishEvery
