package http_test

import (
	"strconv"
	"testing"
	"time"

	lhttp "github.com/laurel/laurel/http"
)

func TestLimiterRefillsAndRetryAfter(t *testing.T) {
	l := lhttp.NewLimiter(2, 3) // 2 a second, 3 at once
	now := time.Unix(1_700_000_000, 0)
	for i := range 3 {
		if ok, _ := l.Allow("k", now); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	if ok, retry := l.Allow("k", now); ok || retry != "1" {
		t.Fatalf("past the burst: allowed %v, Retry-After %q; want refused, 1", ok, retry)
	}
	if ok, _ := l.Allow("other", now); !ok {
		t.Fatal("another client shares the first one's bucket")
	}
	if ok, _ := l.Allow("k", now.Add(500*time.Millisecond)); !ok {
		t.Fatal("a token did not come back after half a second at 2 a second")
	}
}

// TestLimiterManyClients: a flood of clients, each spending its tokens, keeps the limiter's
// memory bounded, and a client it remembers is still limited.
func TestLimiterManyClients(t *testing.T) {
	l := lhttp.NewLimiter(0.001, 1) // a token per 1000 s: nobody refills during the test
	now := time.Unix(1_700_000_000, 0)
	for i := range 3 * lhttp.MaxBuckets {
		l.Allow("ip:"+strconv.Itoa(i), now)
		if n := l.Buckets(); n > lhttp.MaxBuckets {
			t.Fatalf("after %d clients the limiter holds %d buckets, over %d", i+1, n, lhttp.MaxBuckets)
		}
	}
	last := "ip:" + strconv.Itoa(3*lhttp.MaxBuckets-1)
	if ok, retry := l.Allow(last, now); ok || retry != "1000" {
		t.Fatalf("the latest client, just limited: allowed %v, Retry-After %q; want refused, 1000", ok, retry)
	}
}
