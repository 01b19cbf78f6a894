package laureltest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/webhook"
)

// HookStore is a store with webhooks: its Service and its Records.
type HookStore interface {
	laurel.Service
	laurel.Records
}

// mustPutBoard makes or changes a board, or fails the test.
func mustPutBoard(t *testing.T, store laurel.Service, id string, spec laurel.BoardSpec) *laurel.Board {
	t.Helper()
	info, _, err := store.PutBoard(context.Background(), id, spec)
	if err != nil {
		t.Fatal(err)
	}
	return &info.Board
}

// HookRules runs the webhook outbox's rules over a store whose clock is clock: which closed
// periods make deliveries (once, even from two nodes), their bodies and parts, claims and
// leases, retries with backoff, failure after the last attempt, replay, pruning, and deleting
// a hook.
func HookRules(t *testing.T, store HookStore, clock *Clock) {
	ctx := context.Background()
	clock.Set("2026-11-02T10:00:00Z") // a Monday
	encode := func(p laurel.ResultsPart) ([]byte, error) { return json.Marshal(p) }
	node := func() *webhook.Outbox {
		return &webhook.Outbox{Records: store, Service: store, Encode: encode, Now: clock.Now, Backoff: time.Second, MaxAttempts: 3}
	}
	hs := node()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	board := func(id, rewards string) {
		t.Helper()
		spec := laurel.BoardSpec{Windows: []string{"all", "day", "week"}, LateLimit: ptr("1h")}
		must(json.Unmarshal([]byte(rewards), &spec.Rewards))
		mustPutBoard(t, store, id, spec)
	}
	board("race", `[{"window":"day","ranks":[1,1],"reward":{"gold":1}},{"window":"day","percent":50,"reward":{"silver":1}},
		{"window":"week","ranks":[1,3],"reward":{"week":1}}]`)
	board("other", `[{"window":"day","ranks":[1,1],"reward":{"o":1}}]`)
	board("crowd", `[{"window":"day","percent":100,"reward":{"c":1}}]`)
	board("plain", `[]`) // no rewards: no deliveries
	submit := func(board string, scores map[string]int64) {
		t.Helper()
		var evs []laurel.Event
		for m, v := range scores {
			evs = append(evs, laurel.Event{Board: board, Member: m, Value: v})
		}
		for len(evs) > 0 {
			n := min(len(evs), laurel.MaxBatch)
			_, err := store.Submit(ctx, evs[:n], laurel.SubmitOptions{NoRanks: true})
			must(err)
			evs = evs[n:]
		}
	}
	submit("race", map[string]int64{"alice": 5, "bob": 3, "carol": 1, "dave": 2})
	submit("other", map[string]int64{"olga": 1})
	submit("plain", map[string]int64{"pat": 1})
	crowd := map[string]int64{}
	for i := range 2100 {
		crowd[fmt.Sprintf("m%04d", i)] = int64(i)
	}
	submit("crowd", crowd)

	for _, tc := range []struct {
		spec  laurel.HookSpec
		field string
	}{
		{laurel.HookSpec{URL: ptr("http://127.0.0.1:1/h")}, "secret"},
		{laurel.HookSpec{Secret: ptr("0123456789abcdef")}, "url"},
		{laurel.HookSpec{URL: ptr("ftp://127.0.0.1/h"), Secret: ptr("0123456789abcdef")}, "url"},
		{laurel.HookSpec{URL: ptr("http://127.0.0.1/h"), Secret: ptr("short")}, "secret"},
		{laurel.HookSpec{URL: ptr("http://127.0.0.1/h"), Secret: ptr("0123456789abcdef"), Boards: []string{"Bad"}}, "boards[0]"},
	} {
		if _, _, err := hs.Put(ctx, "x", tc.spec); laurel.ErrorCode(err) != laurel.EInvalid || err.(*laurel.Error).Field != tc.field {
			t.Errorf("Put(%+v): %v, want %s on %s", tc.spec, err, laurel.EInvalid, tc.field)
		}
	}
	if _, err := hs.Hook(ctx, "x"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("a refused hook exists: %v", err)
	}
	a, created, err := hs.Put(ctx, "a", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/a"), Secret: ptr("0123456789abcdef")})
	if err != nil || !created || a.CreatedAt != clock.Now() {
		t.Fatalf("Put a: %+v, %v, %v", a, created, err)
	}
	if _, created, err := hs.Put(ctx, "b", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/b"), Secret: ptr("0123456789abcdef"), Boards: []string{"other"}}); err != nil || !created {
		t.Fatalf("Put b: %v, %v", created, err)
	}
	if a2, created, err := hs.Put(ctx, "a", laurel.HookSpec{URL: ptr("http://127.0.0.1:2/a")}); err != nil || created || a2.Secret != a.Secret || a2.CreatedAt != a.CreatedAt {
		t.Fatalf("updating a: %+v, %v, %v", a2, created, err)
	}

	collect := func(h *webhook.Outbox, want int) {
		t.Helper()
		n, err := h.Collect(ctx)
		if err != nil || n != want {
			t.Fatalf("Collect at %s made %d deliveries, %v; want %d", laurel.FormatTime(clock.Now()), n, err, want)
		}
	}
	collect(hs, 0)
	clock.Set("2026-11-03T00:59:59Z") // the day has ended; its late_limit has not passed
	collect(hs, 0)
	clock.Set("2026-11-03T01:00:00Z")
	// a: race, other, and crowd in three parts (2100 rewarded, 1000 a part); b: other.
	collect(hs, 6)
	collect(hs, 0)
	collect(node(), 0) // another node finds them made

	d, err := hs.Delivery(ctx, "a", "a:race:day:2026-11-02:1")
	must(err)
	var body laurel.ResultsPart
	must(json.Unmarshal(d.Body, &body))
	got := fmt.Sprintf("%s %d %d %d %d", body.Delivery, body.Part, body.Parts, body.Results.Total, body.Results.Rewarded)
	for _, r := range body.Results.Results {
		got += fmt.Sprintf(" %d:%s:%s", r.Rank, r.Member, r.Reward)
	}
	if want := `a:race:day:2026-11-02:1 1 1 4 2 1:alice:{"gold":1} 2:bob:{"silver":1}`; got != want {
		t.Errorf("the body of a's race delivery reads\n %s\nwant\n %s", got, want)
	}
	d3, err := hs.Delivery(ctx, "a", "a:crowd:day:2026-11-02:3")
	must(err)
	must(json.Unmarshal(d3.Body, &body))
	if body.Part != 3 || body.Parts != 3 || len(body.Results.Results) != 100 || body.Results.Results[0].Rank != 2001 {
		t.Errorf("crowd's last part: part %d of %d, %d results from rank %d", body.Part, body.Parts, len(body.Results.Results), body.Results.Results[0].Rank)
	}
	if _, err := hs.Delivery(ctx, "b", "a:race:day:2026-11-02:1"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Errorf("b reads a's delivery: %v", err)
	}

	ids := func(ds []laurel.Delivery) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		slices.Sort(out)
		return out
	}
	claimedIDs := func(ds []webhook.Stored) []string {
		var out []laurel.Delivery
		for _, d := range ds {
			out = append(out, d.Delivery)
		}
		return ids(out)
	}
	claimed, err := hs.Claim(ctx, 10, 30*time.Second)
	must(err)
	if len(claimed) != 6 {
		t.Fatalf("claimed %q, want all 6", claimedIDs(claimed))
	}
	if again, err := node().Claim(ctx, 10, 30*time.Second); err != nil || len(again) != 0 {
		t.Fatalf("another node claimed %q while they are leased (%v)", claimedIDs(again), err)
	}
	byID := map[string]webhook.Stored{}
	for _, d := range claimed {
		byID[d.ID] = d
	}
	// b's delivery: delivered at the first attempt.
	done, err := hs.Finish(ctx, byID["b:other:day:2026-11-02:1"], 204, "")
	if err != nil || done.State != laurel.DeliveryDelivered || done.DeliveredAt != clock.Now() || done.Attempts != 1 {
		t.Fatalf("Finish ok: %+v, %v", done, err)
	}
	// a's race delivery: fails, is retried after the backoff, and fails for good at the third.
	race := byID["a:race:day:2026-11-02:1"]
	for attempt, wait := 1, time.Second; ; attempt, wait = attempt+1, 2*wait {
		done, err := hs.Finish(ctx, race, 500, "the receiver answered 500")
		must(err)
		if attempt == 3 {
			if done.State != laurel.DeliveryFailed || done.LastStatus != 500 {
				t.Fatalf("after the last attempt: %+v", done)
			}
			break
		}
		if done.State != laurel.DeliveryPending || done.NextAt != clock.Now()+wait.Milliseconds() {
			t.Fatalf("after attempt %d: %s, next at %s; want pending at +%v", attempt, done.State, laurel.FormatTime(done.NextAt), wait)
		}
		clock.Advance(wait - time.Millisecond)
		if c, _ := hs.Claim(ctx, 10, 30*time.Second); slices.Contains(claimedIDs(c), race.ID) {
			t.Fatalf("claimed before its backoff ended")
		}
		clock.Advance(time.Millisecond)
		c, err := hs.Claim(ctx, 10, 30*time.Second)
		must(err)
		if i := slices.IndexFunc(c, func(d webhook.Stored) bool { return d.ID == race.ID }); i < 0 {
			t.Fatalf("not claimed once its backoff ended: %q", claimedIDs(c))
		} else {
			race = c[i]
		}
		if race.Attempts != attempt+1 {
			t.Fatalf("attempt %d counted %d", attempt+1, race.Attempts)
		}
	}
	failed, err := hs.Deliveries(ctx, "a", laurel.DeliveryFailed, "", 100)
	if err != nil || fmt.Sprint(ids(failed)) != "[a:race:day:2026-11-02:1]" {
		t.Fatalf("failed deliveries of a: %q, %v", ids(failed), err)
	}
	// What is delivered or failed leaves the pending index; what is pending stays in it.
	indexed := func(prefix string) []string {
		recs, err := store.Records(ctx, "delivery-pending", prefix, "", 100)
		must(err)
		var keys []string
		for _, r := range recs {
			keys = append(keys, r.Key)
		}
		return keys
	}
	if got := indexed("b:"); len(got) != 0 {
		t.Fatalf("b's delivered delivery is still indexed as pending: %q", got)
	}
	if got := indexed("a:race:"); len(got) != 0 {
		t.Fatalf("a's failed delivery is still indexed as pending: %q", got)
	}
	if got := indexed("a:crowd:"); len(got) != 3 {
		t.Fatalf("a's pending deliveries indexed: %q", got)
	}
	// A replay sends it again, under its id, with a fresh count.
	replayed, err := hs.Replay(ctx, "a", race.ID)
	if err != nil || replayed.State != laurel.DeliveryPending || replayed.Attempts != 0 || string(replayed.Body) != string(race.Body) {
		t.Fatalf("Replay: %+v, %v", replayed, err)
	}
	// A lease that ends (its node died mid-attempt) frees the delivery for another claim.
	clock.Advance(31 * time.Second)
	c, err := node().Claim(ctx, 10, 30*time.Second)
	must(err)
	if got := fmt.Sprint(claimedIDs(c)); got != "[a:crowd:day:2026-11-02:1 a:crowd:day:2026-11-02:2 a:crowd:day:2026-11-02:3 a:other:day:2026-11-02:1 a:race:day:2026-11-02:1]" {
		t.Fatalf("claimed after the leases ended: %s", got)
	}
	for _, d := range c {
		_, err := hs.Finish(ctx, d, 200, "")
		must(err)
	}
	// Finishing an attempt whose claim is stale changes nothing.
	if _, err := hs.Finish(ctx, race, 500, "late"); err != nil {
		t.Fatal(err)
	}
	if d, _ := hs.Delivery(ctx, "a", race.ID); d.State != laurel.DeliveryDelivered {
		t.Fatalf("a stale attempt overwrote the delivery: %+v", d)
	}

	// The week closes the next Monday at 01:00; a hook created then is told of it, not of
	// the periods closed before it.
	clock.Set("2026-11-09T01:00:00Z")
	_, _, err = hs.Put(ctx, "c", laurel.HookSpec{URL: ptr("http://127.0.0.1:1/c"), Secret: ptr("0123456789abcdef")})
	must(err)
	// a: race's week, and the days of race, crowd and other closed since (empty ones only
	// where a period is listed); c: this week's only, closed at this instant.
	n, err := hs.Collect(ctx)
	must(err)
	all, err := hs.Deliveries(ctx, "a", "", "", 100)
	must(err)
	if !slices.Contains(ids(all), "a:race:week:2026-11-02:1") {
		t.Fatalf("no delivery of race's week: %q (made %d)", ids(all), n)
	}
	cs, err := hs.Deliveries(ctx, "c", "", "", 100)
	must(err)
	if got := fmt.Sprint(ids(cs)); got != "[c:race:week:2026-11-02:1]" {
		t.Errorf("c was told of %s; want only the week that closed as it was created", got)
	}

	// Delivered ones older than a week are pruned; pending ones stay; the cursor remembers.
	clock.Advance(8 * 24 * time.Hour)
	_, err = hs.Collect(ctx)
	must(err)
	left, err := hs.Deliveries(ctx, "a", "", "", 100)
	must(err)
	for _, d := range left {
		if d.State != laurel.DeliveryPending {
			t.Errorf("kept %s (%s), made %s", d.ID, d.State, laurel.FormatTime(d.CreatedAt))
		}
		if d.Period == "2026-11-02" && d.Window == "day" {
			t.Errorf("made %s again after its pruning", d.ID)
		}
	}

	// An index entry left by a crash before its delivery was made is dropped once stale, and
	// never sent.
	_, err = store.SwapRecord(ctx, "delivery-pending", "b:ghost:day:2026-11-01:1", nil, []byte(fmt.Sprint(clock.Now())))
	must(err)
	clock.Advance(2 * time.Minute)
	if c, err := hs.Claim(ctx, 100, 30*time.Second); err != nil || slices.Contains(claimedIDs(c), "b:ghost:day:2026-11-01:1") {
		t.Fatalf("claimed %q, %v", claimedIDs(c), err)
	}
	if got := indexed("b:ghost"); len(got) != 0 {
		t.Fatalf("a stale index entry stayed: %q", got)
	}

	must(hs.Delete(ctx, "a"))
	if _, err := hs.Deliveries(ctx, "a", "", "", 100); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("deliveries of a deleted hook: %v", err)
	}
	for _, kind := range []string{"delivery", "delivery-body", "delivery-pending", "hook-cursor"} {
		if recs, err := store.Records(ctx, kind, "a:", "", 10); err != nil || len(recs) != 0 {
			t.Fatalf("a deleted hook left %d records of %s, %v", len(recs), kind, err)
		}
	}
	hooks, err := hs.List(ctx)
	must(err)
	if len(hooks) != 2 || hooks[0].ID != "b" || hooks[1].ID != "c" {
		t.Fatalf("hooks left: %+v", hooks)
	}
}
