package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/redis"
	"github.com/laurel/laurel/webhook"
)

// TestRedisDown: when the index's Redis dies or hangs, the store says it is not ready within
// a few probes and reads fail with unavailable rather than hang; a write made meanwhile is
// stored in PostgreSQL; once Redis is back (empty) the store is ready again and answers from
// an index rebuilt from PostgreSQL, with that write in it.
func TestRedisDown(t *testing.T) {
	e, r := openOnPrivateRedis(t)
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, e, laurel.Event{Board: "b", Member: "alice", Value: 3}, laurel.Event{Board: "b", Member: "bob", Value: 5})
	page := func(ctx context.Context) (laurel.Page, error) {
		return e.Page(ctx, laurel.Query{Board: "b"}, 0, 10, laurel.ScoreRange{})
	}
	if p, err := page(ctx); err != nil || p.Total != 2 || e.Failed() {
		t.Fatalf("with Redis up: %+v, %v, failed %v", p, err, e.Failed())
	}

	// Hung: a read ends with its deadline, as unavailable.
	r.Pause()
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	start := time.Now()
	_, err := page(rctx)
	cancel()
	t.Logf("a read with Redis hung: %v after %v", err, time.Since(start))
	if laurel.ErrorCode(err) != laurel.EUnavailable || time.Since(start) > 5*time.Second {
		t.Fatalf("a read with Redis hung: %v after %v; want unavailable at its deadline", err, time.Since(start))
	}
	laureltest.Within(t, 5*time.Second, "not ready while Redis hangs", e.Failed)
	// A write is answered about its deadline too: stored without ranks, or refused and not
	// stored (docs/operations.md, "When things go wrong").
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	start = time.Now()
	_, werr := e.Submit(wctx, []laurel.Event{{Board: "b", Member: "dan", Value: 1, ID: "d1"}}, laurel.SubmitOptions{})
	cancel()
	t.Logf("a write with Redis hung: %v after %v", werr, time.Since(start))
	if werr != nil && laurel.ErrorCode(werr) != laurel.EUnavailable || time.Since(start) > 3*time.Second {
		t.Fatalf("a write with Redis hung: %v after %v; want an answer within its deadline and the index's second", werr, time.Since(start))
	}
	r.Resume()
	laureltest.Within(t, 10*time.Second, "ready once Redis answers again", func() bool { return !e.Failed() })
	if res, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: "dan", Value: 1, ID: "d1"}}, laurel.SubmitOptions{}); err != nil ||
		(res[0].Status == laurel.StatusDuplicate) != (werr == nil) {
		t.Fatalf("the write made while Redis hung, sent again: %+v, %v; stored is %v", res, err, werr == nil)
	}

	// Dead: a read fails at once.
	r.Kill()
	took := laureltest.Within(t, 5*time.Second, "not ready once Redis is down", e.Failed)
	t.Logf("not ready %v after Redis died", took)
	start = time.Now()
	_, err = page(ctx)
	t.Logf("a read with Redis down: %v after %v", err, time.Since(start))
	if laurel.ErrorCode(err) != laurel.EUnavailable || time.Since(start) > time.Second {
		t.Fatalf("a read with Redis down: %v after %v; want unavailable at once", err, time.Since(start))
	}
	// A write is stored in PostgreSQL, its ranks pending (docs/operations.md, "Failures").
	if _, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: "carol", Value: 9}}, laurel.SubmitOptions{}); err != nil {
		t.Fatalf("a write with Redis down: %v", err)
	}

	r.Start()
	laureltest.Within(t, 10*time.Second, "ready once Redis is back", func() bool { return !e.Failed() })
	p, err := page(ctx)
	if err != nil || p.Total != 4 || p.Entries[0].Member != "carol" || p.Entries[1].Member != "bob" {
		t.Fatalf("after Redis came back empty: %+v, %v", p, err)
	}
}

// openOnPrivateRedis opens a store whose index is on a redis-server of the test's own, which
// it may pause, kill and start again; maintenance runs every 50 ms.
func openOnPrivateRedis(t *testing.T) (*postgres.Store, *laureltest.PrivateRedis) {
	t.Helper()
	laureltest.NeedServices(t)
	r := laureltest.NewPrivateRedis(t)
	s := laureltest.NewScaleOutStore(t)
	client, err := redis.Connect(r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	e, err := postgres.Open(ctx, s.DSN, redis.New(client, s.Prefix), postgres.Options{Now: laureltest.NewClock("2026-11-22T10:00:00Z").Now, Maintenance: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, r
}

// TestPostgresDown: when PostgreSQL cannot be reached, the store says it is not ready, a
// write fails promptly with unavailable and stores nothing; once PostgreSQL is back the store
// is ready again, takes writes, and has every write it acknowledged.
func TestPostgresDown(t *testing.T) {
	e, proxy := openBehindProxy(t)
	proxy.Cut()
	took := laureltest.Within(t, 5*time.Second, "not ready once PostgreSQL is cut off", e.Failed)
	t.Logf("not ready %v after PostgreSQL was cut off", took)
	start := time.Now()
	_, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: "bob", Value: 5, ID: "b1"}}, laurel.SubmitOptions{})
	t.Logf("a write with PostgreSQL down: %v after %v", err, time.Since(start))
	if laurel.ErrorCode(err) != laurel.EUnavailable || time.Since(start) > 5*time.Second {
		t.Fatalf("a write with PostgreSQL down: %v after %v; want unavailable promptly", err, time.Since(start))
	}

	proxy.Restore()
	laureltest.Within(t, 10*time.Second, "ready once PostgreSQL is back", func() bool { return !e.Failed() })
	submit(t, e, laurel.Event{Board: "b", Member: "carol", Value: 4, ID: "c1"})
	p, err := e.Page(ctx, laurel.Query{Board: "b"}, 0, 10, laurel.ScoreRange{})
	if err != nil || p.Total != 2 || p.Entries[0].Member != "carol" || p.Entries[1].Member != "alice" {
		t.Fatalf("after PostgreSQL came back: %+v, %v; want carol and alice, not bob", p, err)
	}
}

// TestPostgresHung: when PostgreSQL stops answering without closing its connections, a write
// fails with unavailable at its deadline, and so does one queued behind it, at its own (an
// earlier one: it is withdrawn from the queue); neither is stored. Once PostgreSQL answers
// again the store is ready and takes them.
func TestPostgresHung(t *testing.T) {
	e, proxy := openBehindProxy(t)
	proxy.Pause()
	type answer struct {
		id             string
		err            error
		took, deadline time.Duration
	}
	answers := make(chan answer, 2)
	for i, deadline := range []time.Duration{2 * time.Second, 500 * time.Millisecond} {
		id := fmt.Sprintf("h%d", i)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			start := time.Now()
			_, err := e.Submit(wctx, []laurel.Event{{Board: "b", Member: "bob", Value: 5, ID: id}}, laurel.SubmitOptions{})
			answers <- answer{id, err, time.Since(start), deadline}
		}()
		time.Sleep(100 * time.Millisecond) // the second waits behind the first's step
	}
	for range 2 {
		a := <-answers
		t.Logf("write %s with PostgreSQL hung: %v after %v", a.id, a.err, a.took)
		if laurel.ErrorCode(a.err) != laurel.EUnavailable || a.took > a.deadline+700*time.Millisecond {
			t.Errorf("write %s with PostgreSQL hung: %v after %v; want unavailable at its deadline", a.id, a.err, a.took)
		}
	}
	proxy.Resume()
	laureltest.Within(t, 10*time.Second, "ready once PostgreSQL answers again", func() bool { return !e.Failed() })
	// Neither was stored: sent again, both are applied, not duplicates.
	res, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: "bob", Value: 5, ID: "h0"}, {Board: "b", Member: "bob", Value: 5, ID: "h1"}}, laurel.SubmitOptions{})
	if err != nil || res[0].Status != laurel.StatusApplied || res[1].Status != laurel.StatusApplied {
		t.Fatalf("the refused writes sent again: %+v, %v; want both applied", res, err)
	}
}

// openBehindProxy opens a store whose PostgreSQL is reached through a proxy the test can cut
// or pause, with board b holding alice's event a1.
func openBehindProxy(t *testing.T) (*postgres.Store, *laureltest.Proxy) {
	t.Helper()
	laureltest.NeedServices(t)
	s := laureltest.NewScaleOutStore(t)
	u, err := url.Parse(s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	proxy := laureltest.NewProxy(t, u.Host)
	u.Host = proxy.Addr
	e, err := postgres.Open(ctx, u.String(), s.Index, postgres.Options{Now: laureltest.NewClock("2026-11-22T10:00:00Z").Now, Maintenance: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, e, laurel.Event{Board: "b", Member: "alice", Value: 3, ID: "a1"})
	return e, proxy
}

// TestNoSuchSchema: a search_path that names no schema that exists is refused with a message
// that says so (it was "cannot scan NULL into *string"), and nothing is made in PostgreSQL.
func TestNoSuchSchema(t *testing.T) {
	laureltest.NeedServices(t)
	s := laureltest.NewScaleOutStore(t)
	u, err := url.Parse(s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	missing := q.Get("search_path") + "_missing"
	q.Set("search_path", missing)
	u.RawQuery = q.Encode()
	e, err := postgres.Open(ctx, u.String(), s.Index, postgres.Options{Maintenance: -1})
	if err == nil {
		e.Close()
		t.Fatal("opened a store whose search_path names no schema")
	}
	if !strings.Contains(err.Error(), "no schema of the search_path ("+missing+") exists; create it first") {
		t.Fatalf("search_path %s, no such schema: %v", missing, err)
	}
}

// TestAdminWritesWithRedisHung: with the index's Redis hung, a board's creation or change, a
// member's erasure, a hook's creation and a profile are each stored and answered so, or
// refused and not stored: they were stored, then answered 503 when what followed the commit
// (a read of the index, the competitions' records, a read back) found the deadline spent.
func TestAdminWritesWithRedisHung(t *testing.T) {
	e, r := openOnPrivateRedis(t)
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, e, laurel.Event{Board: "b", Member: "alice", Value: 3})
	hooks := &webhook.Outbox{Records: e, Service: e}
	svc := competition.New(e, e, nil) // as the server runs it: what it keeps of a member goes too

	r.Pause()
	var errs [5]error
	for i, write := range []func(context.Context) error{
		func(ctx context.Context) error {
			_, _, err := e.PutBoard(ctx, "b", laurel.BoardSpec{Title: ptr("hung")})
			return err
		},
		func(ctx context.Context) error { _, _, err := e.PutBoard(ctx, "nb", laurel.BoardSpec{}); return err },
		func(ctx context.Context) error { return svc.DeleteMember(ctx, "alice") },
		func(ctx context.Context) error {
			_, _, err := hooks.Put(ctx, "h", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/h"), Secret: ptr("0123456789abcdef")})
			return err
		},
		func(ctx context.Context) error {
			_, err := e.PutProfile(ctx, "bob", laurel.ProfileSpec{Name: ptr("Bob")})
			return err
		},
	} {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		errs[i] = write(wctx)
		cancel()
		if errs[i] != nil && laurel.ErrorCode(errs[i]) != laurel.EUnavailable {
			t.Fatalf("write %d with Redis hung: %v; want done or unavailable", i, errs[i])
		}
	}
	t.Logf("answers with Redis hung: %v", errs)
	r.Resume()
	var last error
	laureltest.Within(t, 10*time.Second, "ready once Redis answers again", func() bool {
		_, last = e.Board(ctx, "b")
		return last == nil
	})
	b, err := e.Board(ctx, "b")
	if err != nil || (b.Title == "hung") != (errs[0] == nil) {
		t.Errorf("board b's change: answered %v, title now %q", errs[0], b.Title)
	}
	if _, err := e.Board(ctx, "nb"); (err == nil) != (errs[1] == nil) {
		t.Errorf("board nb's creation: answered %v, read %v", errs[1], err)
	}
	if _, err := e.Member(ctx, laurel.Query{Board: "b"}, "alice"); (laurel.ErrorCode(err) == laurel.ENotFound) != (errs[2] == nil) {
		t.Errorf("alice's erasure: answered %v, read %v", errs[2], err)
	}
	if _, err := hooks.Hook(ctx, "h"); (err == nil) != (errs[3] == nil) {
		t.Errorf("hook h's creation: answered %v, read %v", errs[3], err)
	}
	if p, err := e.Profile(ctx, "bob"); (err == nil && p.Name == "Bob") != (errs[4] == nil) {
		t.Errorf("bob's profile: answered %v, read %+v, %v", errs[4], p, err)
	}
}
