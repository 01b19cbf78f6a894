package webhook_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/webhook"
)

const secret = "0123456789abcdef-secret"

func TestSignVerify(t *testing.T) {
	body := []byte(`{"a":1}`)
	now := time.Unix(1_800_000_000, 0)
	h := http.Header{}
	h.Set(webhook.HeaderTimestamp, fmt.Sprint(now.Unix()))
	h.Set(webhook.HeaderSignature, webhook.Sign(secret, now.Unix(), body))
	if err := webhook.Verify(secret, h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("a good delivery: %v", err)
	}
	for name, check := range map[string]func() error{
		"another body":   func() error { return webhook.Verify(secret, h, []byte(`{"a":2}`), now, 5*time.Minute) },
		"another secret": func() error { return webhook.Verify(secret+"x", h, body, now, 5*time.Minute) },
		"replayed later": func() error { return webhook.Verify(secret, h, body, now.Add(6*time.Minute), 5*time.Minute) },
		"no timestamp":   func() error { return webhook.Verify(secret, http.Header{}, body, now, 5*time.Minute) },
	} {
		if check() == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestDeliveryEmbedded(t *testing.T) {
	clock := laureltest.NewClock("2026-11-02T10:00:00Z")
	s, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deliverAll(t, s, clock)
}

func TestDeliveryScaleOut(t *testing.T) {
	clock := laureltest.NewClock("2026-11-02T10:00:00Z")
	deliverAll(t, laureltest.NewScaleOutStore(t).Open(t, clock.Now), clock)
}

// receiver is a game's webhook endpoint that fails often: it answers errors, hangs past
// the sender's timeout, drops connections, and is itself restarted. It verifies every
// delivery and applies each delivery id once.
type receiver struct {
	t   *testing.T
	rng *rand.Rand

	mu       sync.Mutex
	applied  map[string][]byte // delivery id → body, applied once
	repeats  int               // deliveries received again after they were applied
	badSigns int
	ln       net.Listener
	srv      *http.Server
	addr     string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if err := webhook.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
		rc.mu.Lock()
		rc.badSigns++
		rc.mu.Unlock()
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	roll := rc.rng.IntN(10)
	rc.mu.Unlock()
	switch {
	case roll < 3:
		http.Error(w, "try later", http.StatusInternalServerError)
		return
	case roll == 3:
		time.Sleep(300 * time.Millisecond) // past the sender's timeout
	case roll == 4:
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			c.Close() // gone without an answer
		}
		return
	}
	id := r.Header.Get(webhook.HeaderDelivery)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, ok := rc.applied[id]; ok {
		rc.repeats++
	} else {
		rc.applied[id] = body
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) start() {
	ln, err := net.Listen("tcp", rc.addr)
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.ln, rc.addr = ln, ln.Addr().String()
	rc.srv = &http.Server{Handler: rc}
	go rc.srv.Serve(ln)
}

func (rc *receiver) stop() { rc.srv.Close() }

// deliverAll runs two dispatchers (two nodes) over one store against the failing receiver,
// restarts the receiver meanwhile, and checks that every result was applied once, as made.
func deliverAll(t *testing.T, store laureltest.HookStore, clock *laureltest.Clock) {
	ctx := context.Background()
	seed, _ := strconv.ParseUint(flag.Lookup("seed").Value.String(), 10, 64) // laureltest's -seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	rc := &receiver{t: t, rng: rand.New(rand.NewPCG(seed, 1)), applied: map[string][]byte{}, addr: "127.0.0.1:0"}
	rc.start()
	defer func() { rc.stop() }()

	spec := laurel.BoardSpec{Windows: []string{"day"}, LateLimit: ptr("1h")}
	if err := json.Unmarshal([]byte(`[{"window":"day","ranks":[1,3],"reward":{"gems":10}},{"window":"day","percent":100,"reward":{"gems":1}}]`), &spec.Rewards); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"alpha", "beta", "gamma"} {
		if _, _, err := store.PutBoard(ctx, b, spec); err != nil {
			t.Fatal(err)
		}
	}
	hooks := func() *webhook.Outbox {
		return &webhook.Outbox{Records: store, Service: store, Encode: lhttp.EncodeDelivery, Now: clock.Now,
			Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, MaxAttempts: 1000}
	}
	if _, _, err := hooks().Put(ctx, "game", laurel.HookSpec{URL: ptr("http://" + rc.addr + "/laurel"), Secret: ptr(secret)}); err != nil {
		t.Fatal(err)
	}
	// Three days of events: each day of each board closes into one delivery.
	for day := range 3 {
		var evs []laurel.Event
		for _, b := range []string{"alpha", "beta", "gamma"} {
			for m := range 5 + day {
				evs = append(evs, laurel.Event{Board: b, Member: fmt.Sprintf("p%d", m), Value: int64(m * (day + 1))})
			}
		}
		if _, err := store.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour)
	}
	clock.Advance(time.Hour)

	// Time runs fast for the store, so that backoffs pass; two nodes send.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for runCtx.Err() == nil {
			clock.Advance(200 * time.Millisecond)
			time.Sleep(5 * time.Millisecond)
		}
	})
	for range 2 {
		wg.Go(func() {
			(&webhook.Dispatcher{Outbox: hooks(), Every: 5 * time.Millisecond, Timeout: 100 * time.Millisecond, Parallel: 2}).Run(runCtx)
		})
	}
	want := 9
	delivered := func() int {
		ds, err := hooks().Deliveries(ctx, "game", laurel.DeliveryDelivered, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(ds)
	}
	// The receiver goes down and comes back on its port while deliveries are under way.
	laureltest.Within(t, 20*time.Second, "a first delivery", func() bool { return delivered() > 0 })
	rc.stop()
	time.Sleep(50 * time.Millisecond)
	rc.start()
	laureltest.Within(t, 60*time.Second, "every delivery delivered", func() bool { return delivered() == want })
	stop()
	wg.Wait()

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.badSigns > 0 {
		t.Errorf("%d deliveries failed their signature", rc.badSigns)
	}
	var ids []string
	for id := range rc.applied {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) != want {
		t.Fatalf("applied %d deliveries, want %d: %q", len(ids), want, ids)
	}
	for _, id := range ids {
		var body struct {
			Type, Delivery, Hook, Board, Window string
			Period                              struct{ ID string }
			Total, Rewarded, Part, Parts        int
			Results                             []struct {
				Rank   int
				Member string
				Reward json.RawMessage
			}
		}
		if err := json.Unmarshal(rc.applied[id], &body); err != nil {
			t.Fatal(err)
		}
		res, err := laurel.BoardResults(ctx, store, body.Board, body.Window, body.Period.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if body.Type != "period.results" || body.Delivery != id || body.Hook != "game" || body.Part != 1 || body.Parts != 1 ||
			body.Total != res.Total || body.Rewarded != res.Rewarded || len(body.Results) != len(res.Results) || res.Total < 5 {
			t.Fatalf("%s: body %+v, results %+v", id, body, res)
		}
		for i, r := range body.Results {
			if r.Rank != res.Results[i].Rank || r.Member != res.Results[i].Member || string(r.Reward) != string(res.Results[i].Reward) {
				t.Fatalf("%s: result %d is %+v, want %+v", id, i, r, res.Results[i])
			}
		}
	}
	t.Logf("%d deliveries applied once; %d received again after they were applied (at least once)", len(ids), rc.repeats)
}

func ptr[T any](v T) *T { return &v }

// TestShutdownSpendsNoAttempt: an attempt that the dispatcher itself stops (the node shuts
// down mid-send) is given back, not counted as failed against the delivery's attempts (it
// was: "context canceled", one attempt fewer to go), and the delivery is due again at once.
func TestShutdownSpendsNoAttempt(t *testing.T) {
	ctx := context.Background()
	clock := laureltest.NewClock("2026-11-02T10:00:00Z")
	store, err := embedded.Open(t.TempDir(), embedded.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server sees the sender hang up
		select {
		case arrived <- struct{}{}:
		default:
		}
		select { // hangs until the sender gives up or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release) // before the server closes, which waits for its handlers
	spec := laurel.BoardSpec{Windows: []string{"day"}, LateLimit: ptr("1h")}
	if err := json.Unmarshal([]byte(`[{"window":"day","ranks":[1,1],"reward":{}}]`), &spec.Rewards); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.PutBoard(ctx, "b", spec); err != nil {
		t.Fatal(err)
	}
	hooks := &webhook.Outbox{Records: store, Service: store, Encode: lhttp.EncodeDelivery, Now: clock.Now}
	if _, _, err := hooks.Put(ctx, "h", laurel.HookSpec{URL: ptr(srv.URL), Secret: ptr(secret)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Submit(ctx, []laurel.Event{{Board: "b", Member: "m", Value: 1}}, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(26 * time.Hour)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		(&webhook.Dispatcher{Outbox: hooks, Every: 5 * time.Millisecond, Timeout: time.Minute}).Run(runCtx)
		close(done)
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no attempt reached the receiver")
	}
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the dispatcher did not stop")
	}
	ds, err := hooks.Deliveries(ctx, "h", "", "", 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries: %+v, %v", ds, err)
	}
	if d := ds[0]; d.State != laurel.DeliveryPending || d.Attempts != 0 || d.NextAt > clock.Now() || d.LeaseUntil != 0 {
		t.Fatalf("the delivery after a shutdown mid-attempt: %+v; want pending, no attempt spent, due now, no lease", d)
	}
}
