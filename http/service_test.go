package http_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
	lhttp "github.com/laurel/laurel/http"
)

func TestKeys(t *testing.T) {
	keys := lhttp.Keys{Admin: []string{"adm1", "adm2"}, Write: []string{"wri"}, Read: []string{"rea"}}
	e := start(t, options{cfg: lhttp.Config{Keys: keys}})

	// No key, an unknown key, a malformed header: 401.
	e.doKey("", "GET", "/v1/boards", nil).isError(t, 401, "unauthenticated", "")
	e.doKey("nope", "GET", "/v1/boards", nil).isError(t, 401, "unauthenticated", "")
	e.doKey("adm", "GET", "/v1/boards", nil).isError(t, 401, "unauthenticated", "")

	// admin: everything.
	e.doKey("adm2", "PUT", "/v1/boards/b", `{}`).must(t, 201)
	e.doKey("adm1", "GET", "/v1/boards/b", nil).must(t, 200)
	// write: events and profiles, plus reads; not boards, member deletion or hiding.
	e.doKey("wri", "POST", "/v1/boards/b/events", `{"member": "m", "value": 1, "id": "x"}`).must(t, 200)
	e.doKey("wri", "POST", "/v1/events", `{"events": [{"board": "b", "member": "m", "value": 1}]}`).must(t, 200)
	e.doKey("wri", "PUT", "/v1/members/m", `{"name": "M"}`).must(t, 200)
	e.doKey("wri", "GET", "/v1/boards/b/entries", nil).must(t, 200)
	e.doKey("wri", "DELETE", "/v1/boards/b/events/x", nil).must(t, 200)
	e.doKey("wri", "PUT", "/v1/boards/b", `{}`).isError(t, 403, "permission_denied", "")
	e.doKey("wri", "DELETE", "/v1/boards/b", nil).isError(t, 403, "permission_denied", "")
	e.doKey("wri", "DELETE", "/v1/members/m", nil).isError(t, 403, "permission_denied", "")
	e.doKey("wri", "POST", "/v1/members/m/hide", nil).isError(t, 403, "permission_denied", "")
	e.doKey("wri", "POST", "/v1/members/m/unhide", nil).isError(t, 403, "permission_denied", "")
	// read: reads only.
	for _, path := range []string{"/v1/boards", "/v1/boards/b", "/v1/boards/b/entries", "/v1/boards/b/members/m",
		"/v1/boards/b/members/m/around", "/v1/boards/b/rank?score=1", "/v1/boards/b/distribution", "/v1/boards/b/periods", "/v1/members/m"} {
		e.doKey("rea", "GET", path, nil).must(t, 200)
		e.doKey("", "GET", path, nil).isError(t, 401, "unauthenticated", "")
	}
	e.doKey("rea", "POST", "/v1/boards/b/lookup", `{"members": ["m"]}`).must(t, 200)
	e.doKey("rea", "POST", "/v1/boards/b/events", `{"member": "m", "value": 1}`).isError(t, 403, "permission_denied", "")
	e.doKey("rea", "POST", "/v1/events", `{"events": [{"board": "b", "member": "m", "value": 1}]}`).isError(t, 403, "permission_denied", "")
	e.doKey("rea", "PUT", "/v1/members/m", `{}`).isError(t, 403, "permission_denied", "")
	e.doKey("rea", "DELETE", "/v1/boards/b/events/x", nil).isError(t, 403, "permission_denied", "")
	// The service endpoints need no key.
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		e.doKey("", "GET", path, nil).must(t, 200)
	}
	// Go's profiles: admin only, since they show the process's insides and cost CPU.
	e.doKey("wri", "GET", "/debug/pprof/heap", nil).isError(t, 403, "permission_denied", "")
	e.doKey("", "GET", "/debug/pprof/", nil).isError(t, 401, "unauthenticated", "")
	if heap := e.doKey("adm1", "GET", "/debug/pprof/heap?gc=1&debug=1", nil).must(t, 200); !bytes.Contains(heap.raw, []byte("# HeapAlloc = ")) {
		t.Errorf("heap profile without memory statistics:\n%.300s", heap.raw)
	}
	e.doKey("adm1", "DELETE", "/v1/members/m", nil).must(t, 204)
	e.doKey("adm1", "DELETE", "/v1/boards/b", nil).must(t, 204)
}

// TestProfileOutlivesTheRequestTimeout: a CPU profile lasts the seconds it asks for, not
// -request-timeout (it was cut to the timeout and answered 200 all the same).
func TestProfileOutlivesTheRequestTimeout(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{"adm"}}, RequestTimeout: 200 * time.Millisecond}})
	start := time.Now()
	e.doKey("adm", "GET", "/debug/pprof/profile?seconds=1", nil).must(t, 200)
	if took := time.Since(start); took < time.Second {
		t.Fatalf("a profile of 1 s answered after %v: cut by the request timeout of 200 ms", took)
	}
}

func TestPublicRead(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{"adm"}}, PublicRead: true}})
	e.doKey("adm", "PUT", "/v1/boards/b", `{}`).must(t, 201)
	e.doKey("", "GET", "/v1/boards/b/entries", nil).must(t, 200)
	e.doKey("", "POST", "/v1/boards/b/lookup", `{"members": ["m"]}`).must(t, 200)
	// A key sent must be known, even where reads need none: a mistyped key is told.
	e.doKey("whatever", "GET", "/v1/boards/b/entries", nil).isError(t, 401, "unauthenticated", "")
	e.doKey("", "POST", "/v1/boards/b/events", `{"member": "m", "value": 1}`).isError(t, 401, "unauthenticated", "")
	e.doKey("", "PUT", "/v1/boards/b", `{}`).isError(t, 401, "unauthenticated", "")
}

func TestOpen(t *testing.T) {
	e := start(t, options{})
	e.doKey("", "PUT", "/v1/boards/b", `{}`).must(t, 201)
	e.doKey("any", "DELETE", "/v1/boards/b", nil).must(t, 204)
}

func TestRateLimit(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{"a1", "a2"}},
		RateLimit: lhttp.RateLimit{PerSecond: 0.5, Burst: 3}, AddressRateLimit: lhttp.RateLimit{PerSecond: 0.5, Burst: 3}}})
	for range 3 {
		e.doKey("a1", "GET", "/v1/boards", nil).must(t, 200)
	}
	r := e.doKey("a1", "GET", "/v1/boards", nil).isError(t, 429, "rate_limited", "")
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Another key has its own bucket; so do clients without a valid key, by address.
	e.doKey("a2", "GET", "/v1/boards", nil).must(t, 200)
	for range 3 {
		e.doKey("", "GET", "/v1/boards", nil).isError(t, 401, "unauthenticated", "")
	}
	e.doKey("", "GET", "/v1/boards", nil).isError(t, 429, "rate_limited", "")
	// The service endpoints are not limited.
	e.doKey("a1", "GET", "/healthz", nil).must(t, 200)

	// Each limit alone: keys unlimited, addresses limited, and the other way round.
	e = start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Read: []string{"r"}}, PublicRead: true, AddressRateLimit: lhttp.RateLimit{PerSecond: 0.5, Burst: 2}}})
	for range 10 {
		e.doKey("r", "GET", "/v1/boards", nil).must(t, 200)
	}
	e.doKey("", "GET", "/v1/boards", nil).must(t, 200)
	e.doKey("", "GET", "/v1/boards", nil).must(t, 200)
	e.doKey("", "GET", "/v1/boards", nil).isError(t, 429, "rate_limited", "")
	e.doKey("nope", "GET", "/v1/boards", nil).isError(t, 429, "rate_limited", "") // an unknown key counts against its address
	e = start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Read: []string{"r"}}, PublicRead: true, RateLimit: lhttp.RateLimit{PerSecond: 0.5, Burst: 2}}})
	for range 10 {
		e.doKey("", "GET", "/v1/boards", nil).must(t, 200)
	}
	e.doKey("r", "GET", "/v1/boards", nil).must(t, 200)
	e.doKey("r", "GET", "/v1/boards", nil).must(t, 200)
	e.doKey("r", "GET", "/v1/boards", nil).isError(t, 429, "rate_limited", "")
}

// TestTrustedProxies: behind a trusted proxy each client has its own bucket, by the nearest
// untrusted address of X-Forwarded-For; from an untrusted peer the header is ignored, so a
// client cannot escape its limit by inventing addresses.
func TestTrustedProxies(t *testing.T) {
	limit := lhttp.RateLimit{PerSecond: 0.1, Burst: 1}
	get := func(e *env, xff ...string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", e.url+"/v1/boards", nil)
		for _, h := range xff {
			req.Header.Add("X-Forwarded-For", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The test's client is 127.0.0.1: a trusted proxy here.
	e := start(t, options{cfg: lhttp.Config{AddressRateLimit: limit, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}}})
	for _, c := range []struct {
		xff  []string
		want int
	}{
		{[]string{"203.0.113.7"}, 200},
		{[]string{"203.0.113.7"}, 429},               // the same client
		{[]string{"203.0.113.8"}, 200},               // another one
		{[]string{"198.51.100.1, 203.0.113.9"}, 200}, // the nearest untrusted hop counts, whatever the client claims before it
		{[]string{"6.6.6.6, 203.0.113.9"}, 429},
		{[]string{"203.0.113.10", "10.1.2.3"}, 200}, // through a second trusted proxy
		{[]string{"203.0.113.10, 10.9.9.9"}, 429},
		{nil, 200},                        // the proxy itself
		{[]string{"not an address"}, 429}, // ... which a malformed header leaves counted
	} {
		if got := get(e, c.xff...); got != c.want {
			t.Errorf("X-Forwarded-For %q: %d, want %d", c.xff, got, c.want)
		}
	}
	// Not trusted: the header changes nothing.
	e = start(t, options{cfg: lhttp.Config{AddressRateLimit: limit}})
	if get(e, "203.0.113.7") != 200 || get(e, "203.0.113.8") != 429 {
		t.Error("X-Forwarded-For from an untrusted peer was believed")
	}
}

func TestNotReady(t *testing.T) {
	var ready atomic.Bool
	e := start(t, options{cfg: lhttp.Config{Ready: ready.Load}})
	e.do("GET", "/healthz", nil).must(t, 200).is(t, `{"status": "ok"}`)
	e.do("GET", "/readyz", nil).isError(t, 503, "unavailable", "")
	e.do("GET", "/v1/boards", nil).isError(t, 503, "unavailable", "")
	r := e.do("PUT", "/v1/boards/b", `{}`).isError(t, 503, "unavailable", "")
	if ra := r.header.Get("Retry-After"); ra != "1" {
		t.Errorf("503 with Retry-After %q, want 1", ra)
	}
	ready.Store(true)
	e.do("GET", "/readyz", nil).must(t, 200)
	e.do("PUT", "/v1/boards/b", `{}`).must(t, 201)
}

// TestStoreFailed: once the store has failed, /readyz takes the server out of service; reads,
// served from memory, go on.
func TestStoreFailed(t *testing.T) {
	var failed atomic.Bool
	e := start(t, options{cfg: lhttp.Config{Failed: failed.Load}})
	e.do("PUT", "/v1/boards/b", `{}`).must(t, 201)
	e.do("GET", "/readyz", nil).must(t, 200)
	failed.Store(true)
	e.do("GET", "/readyz", nil).isError(t, 503, "unavailable", "")
	e.do("GET", "/healthz", nil).must(t, 200)
	e.do("GET", "/v1/boards/b/entries", nil).must(t, 200)
}

func TestRecovering(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: lhttp.Recovering("waiting for PostgreSQL and Redis")}
	go srv.Serve(ln)
	defer srv.Close()
	e := &env{t: t, url: "http://" + ln.Addr().String()}
	e.do("GET", "/healthz", nil).must(t, 200)
	if msg := e.do("GET", "/readyz", nil).isError(t, 503, "unavailable", "").get("error", "message"); msg != "waiting for PostgreSQL and Redis; not ready yet" {
		t.Errorf("/readyz while recovering says %q", msg)
	}
	e.do("GET", "/v1/boards", nil).isError(t, 503, "unavailable", "")
}

func TestMetrics(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/b", `{"windows": ["day", "all"]}`).must(t, 201)
	e.do("POST", "/v1/boards/b/events", `{"events": [{"member": "m", "value": 1, "id": "x"}, {"member": "n", "value": 1}]}`).must(t, 200)
	e.do("POST", "/v1/boards/b/events", `{"member": "m", "value": 1, "id": "x"}`).must(t, 200)
	e.do("GET", "/v1/boards/nope", nil).must(t, 404)
	e.server.ObserveCommit(7, 3*time.Millisecond)
	r := e.do("GET", "/metrics", nil).must(t, 200)
	text := string(r.raw)
	for _, want := range []string{
		`laurel_http_requests_total{route="PUT /v1/boards/{board}",status="201"} 1`,
		`laurel_http_requests_total{route="GET /v1/boards/{board}",status="404"} 1`,
		`laurel_http_request_duration_seconds_count{route="POST /v1/boards/{board}/events",status="200"} 2`,
		`laurel_events_applied_total 2`,
		`laurel_events_duplicate_total 1`,
		`laurel_board_entries{board="b"} 2`,
		`laurel_store_commit_ops_sum 7`,
		`laurel_store_commit_duration_seconds_count 1`,
		// before any webhook attempt, so that an alert on failed ones has a series
		`laurel_webhook_attempts_total{state="failed"} 0`,
		`laurel_webhook_attempts_total{state="delivered"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if e.server.Registry() == nil {
		t.Fatal("no registry")
	}
	if !strings.Contains(e.logs.String(), "route=\"PUT /v1/boards/{board}\"") {
		t.Errorf("no request log at debug level:\n%s", e.logs.String())
	}
}

// failing is a Service whose every call fails with an error it did not anticipate.
type failing struct{ laurel.Service }

func (failing) Boards(context.Context) ([]laurel.BoardInfo, error) {
	return nil, errors.New("disk on fire at /var/secret")
}

func (failing) Board(context.Context, string) (laurel.BoardInfo, error) { panic("boom") }

func TestInternalError(t *testing.T) {
	e := start(t, options{service: failing{}})
	r := e.do("GET", "/v1/boards", nil).must(t, 500).is(t, `{"error": {"code": "internal", "message": "internal error"}}`)
	if strings.Contains(string(r.raw), "secret") {
		t.Fatal("leaked")
	}
	if !strings.Contains(e.logs.String(), "disk on fire") || !strings.Contains(e.logs.String(), "GET /v1/boards") {
		t.Errorf("internal error not logged with its route:\n%s", e.logs.String())
	}
	e.do("GET", "/v1/boards/b", nil).must(t, 500).is(t, `{"error": {"code": "internal", "message": "internal error"}}`)
}

// hanging is a Service whose reads wait for their context, as a store whose backend stopped
// answering does.
type hanging struct{ laurel.Service }

func (hanging) Boards(ctx context.Context) ([]laurel.BoardInfo, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("redis: %w", ctx.Err())
}

// TestRequestTimeout: a request the store does not answer is answered 503 unavailable at the
// server's deadline, with Retry-After, and logged as no internal error.
func TestRequestTimeout(t *testing.T) {
	e := start(t, options{service: hanging{}, cfg: lhttp.Config{RequestTimeout: 200 * time.Millisecond}})
	begin := time.Now()
	r := e.do("GET", "/v1/boards", nil).must(t, 503).is(t, `{"error": {"code": "unavailable", "message": "the store did not answer within 200ms; try again"}}`)
	if took := time.Since(begin); took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("answered after %v, want at the 200ms deadline", took)
	}
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	if strings.Contains(e.logs.String(), "internal error") {
		t.Errorf("a timeout was logged as an internal error:\n%s", e.logs.String())
	}
}

func TestRoutes(t *testing.T) {
	s := lhttp.NewServer(failing{}, lhttp.Config{})
	routes := s.Routes()
	api := []string{
		"GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json",
		"GET /v1/boards", "PUT /v1/boards/{board}", "GET /v1/boards/{board}", "DELETE /v1/boards/{board}",
		"POST /v1/boards/{board}/events", "POST /v1/events", "DELETE /v1/boards/{board}/events/{id}",
		"GET /v1/boards/{board}/entries", "GET /v1/boards/{board}/members/{member}",
		"GET /v1/boards/{board}/members/{member}/around", "POST /v1/boards/{board}/lookup",
		"GET /v1/boards/{board}/rank", "GET /v1/boards/{board}/distribution", "GET /v1/boards/{board}/periods",
		"PUT /v1/members/{member}", "GET /v1/members/{member}", "DELETE /v1/members/{member}",
		"POST /v1/members/{member}/hide", "POST /v1/members/{member}/unhide",
		"GET /v1/boards/{board}/stream", "GET /v1/boards/{board}/members/{member}/stream",
		"GET /v1/boards/{board}/members/{member}/history", "GET /v1/whoami",
		"GET /v1/boards/{board}/periods/{period}/results", "GET /v1/hooks", "PUT /v1/hooks/{hook}", "GET /v1/hooks/{hook}",
		"DELETE /v1/hooks/{hook}", "GET /v1/hooks/{hook}/deliveries", "GET /v1/hooks/{hook}/deliveries/{delivery}",
		"POST /v1/hooks/{hook}/deliveries/{delivery}/replay",
		"POST /v1/boards/{board}/members/{member}/join", "GET /v1/boards/{board}/members/{member}/entry",
		"GET /v1/boards/{board}/members/{member}/cohort", "GET /v1/boards/{board}/members/{member}/tier",
		"POST /v1/boards/{board}/members/{member}/flags", "GET /v1/flags", "GET /v1/flags/{flag}", "POST /v1/flags/{flag}",
	}
	for _, want := range api {
		if !slices.Contains(routes, want) {
			t.Errorf("no route %s", want)
		}
	}
	n := 0
	for _, r := range routes {
		if strings.Contains(r, " /v1/") {
			n++
		}
	}
	if n != len(api)-4 {
		t.Errorf("%d API routes: %v", n, routes)
	}
}
