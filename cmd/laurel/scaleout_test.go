package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel/laureltest"
)

// TestServeScaleOut runs two servers on one PostgreSQL and Redis, as two nodes of a
// deployment: what one writes, the other reads; both stop cleanly; what was written is there
// when a server starts again; `laurel rebuild` restores an index that Redis lost, and with
// -shards splits a board into another number of shards.
func TestServeScaleOut(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	args := []string{"-postgres", store.DSN, "-redis", laureltest.RedisAddr(), "-redis-prefix", store.Prefix}
	a, stopA := startServe(t, t.TempDir(), nil, args...)
	b, stopB := startServe(t, t.TempDir(), nil, args...)
	if code, body := do(t, "PUT", a+"/v1/boards/solvers", `{"windows": ["all", "last7d"]}`); code != http.StatusCreated {
		t.Fatalf("create board on a: %d %v", code, body)
	}
	if code, body := do(t, "POST", b+"/v1/boards/solvers/events", `{"member": "alice", "value": 5, "id": "s-1", "name": "Alice"}`); code != http.StatusOK {
		t.Fatalf("submit on b: %d %v", code, body)
	}
	if code, body := do(t, "POST", a+"/v1/boards/solvers/events", `{"member": "bob", "value": 7}`); code != http.StatusOK {
		t.Fatalf("submit on a: %d %v", code, body)
	}
	for _, base := range []string{a, b} {
		code, body := do(t, "GET", base+"/v1/boards/solvers/entries?window=last7d", "")
		if code != http.StatusOK || body["total"] != float64(2) || !strings.Contains(show(body), `"member":"alice","name":"Alice"`) {
			t.Fatalf("entries on %s: %d %s; want bob then Alice", base, code, show(body))
		}
	}
	// Commits are counted in the metrics, as the embedded store's are.
	resp, err := http.Get(a + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := regexp.MustCompile(`(?m)^laurel_store_commit_ops_count ([0-9]+)$`).FindSubmatch(metrics); m == nil || string(m[1]) == "0" {
		t.Errorf("no commits in the metrics of a:\n%s", metrics)
	}
	if !regexp.MustCompile(`(?m)^laurel_history_points_lost_total 0$`).Match(metrics) {
		t.Errorf("no count of lost history points, at 0, in the metrics of a:\n%s", metrics)
	}
	if code := stopA(); code != 0 {
		t.Fatalf("serve a exited %d after the signal", code)
	}
	if code := stopB(); code != 0 {
		t.Fatalf("serve b exited %d after the signal", code)
	}

	// Redis loses everything; rebuild brings the index back from PostgreSQL.
	for _, k := range store.Keys(t) {
		store.Client.Do(context.Background(), store.Client.B().Del().Key(k).Build())
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"rebuild", "-check"}, args...), &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "rebuilt the index of 1 board(s)") || !strings.Contains(stdout.String(), "the index matches the store") {
		t.Fatalf("rebuild: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	// Split into another number of shards, the board reads the same.
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), append([]string{"rebuild", "-board", "solvers", "-shards", "3", "-check"}, args...), &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "split 1 board(s) into 3 shards") || !strings.Contains(stdout.String(), "the index matches the store") {
		t.Fatalf("rebuild -shards: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), append([]string{"rebuild", "-board", "nope"}, args...), io.Discard, &stderr); code != 1 ||
		!strings.HasSuffix(stderr.String(), "laurel rebuild: no board \"nope\"\n") {
		t.Fatalf("rebuild of a board that does not exist: exit %d, %q", code, stderr.String())
	}
	c, stopC := startServe(t, t.TempDir(), nil, args...)
	defer stopC()
	code, body := do(t, "GET", c+"/v1/boards/solvers/members/alice?window=all", "")
	if entry, _ := body["entry"].(map[string]any); code != http.StatusOK || entry["rank"] != float64(2) || entry["score"] != float64(5) {
		t.Fatalf("alice after the rebuild: %d %s", code, show(body))
	}
}

// TestServeScaleOutFollowsItsBackends: a node started before its Redis listens, answers
// /readyz with 503 and becomes ready once Redis is up; when Redis dies it says so on /readyz
// and answers reads 503 at once, and it is ready again when Redis is back.
func TestServeScaleOutFollowsItsBackends(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	r := laureltest.NewPrivateRedis(t)
	r.Kill()
	s := launchServe(t, t.TempDir(), nil, "-postgres", store.DSN, "-redis", r.Addr, "-redis-prefix", store.Prefix, "-maintenance", "100ms")
	defer s.stop()
	time.Sleep(300 * time.Millisecond)
	if code, body := do(t, "GET", s.url+"/readyz", ""); code != http.StatusServiceUnavailable || !strings.Contains(show(body), "waiting for PostgreSQL and Redis; not ready yet") {
		t.Fatalf("/readyz before Redis is up: %d %s, want 503 saying it waits for its backends", code, show(body))
	}
	r.Start()
	took := laureltest.Within(t, 15*time.Second, "ready once Redis is up; log:\n"+s.log.String(), func() bool { return readyz(s.url) == http.StatusOK })
	t.Logf("ready %v after Redis started", took)
	if n := strings.Count(s.log.String(), "waiting for the scale-out store's backends"); n != 1 {
		t.Errorf("the wait was logged %d times, want once:\n%s", n, s.log.String())
	}
	if code, body := do(t, "PUT", s.url+"/v1/boards/b", `{}`); code != http.StatusCreated {
		t.Fatalf("create board: %d %v", code, body)
	}

	r.Kill()
	laureltest.Within(t, 5*time.Second, "not ready once Redis died", func() bool { return readyz(s.url) == http.StatusServiceUnavailable })
	start := time.Now()
	if code, body := do(t, "GET", s.url+"/v1/boards/b/entries", ""); code != http.StatusServiceUnavailable || time.Since(start) > 2*time.Second {
		t.Fatalf("a read with Redis down: %d %v after %v; want 503 at once", code, body, time.Since(start))
	}
	r.Start()
	laureltest.Within(t, 10*time.Second, "ready once Redis is back", func() bool { return readyz(s.url) == http.StatusOK })
	if code, body := do(t, "GET", s.url+"/v1/boards/b/entries", ""); code != http.StatusOK {
		t.Fatalf("a read once Redis is back: %d %v\nlog:\n%s", code, body, s.log.String())
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

func TestServeScaleOutFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-postgres", "postgres://x"}, "-postgres and -redis go together"},
		{[]string{"serve", "-redis", "127.0.0.1:1"}, "-postgres and -redis go together"},
		{[]string{"rebuild"}, "-postgres and -redis"},
		{[]string{"rebuild", "-redis", "127.0.0.1:1"}, "-postgres and -redis go together"},
		{[]string{"serve", "-postgres", "postgres://u@h:port/db", "-redis", "127.0.0.1:1"}, "-postgres:"},
		{[]string{"serve", "-postgres", "postgres://u@h/db", "-redis", "redis://h:port"}, "-redis:"},
	} {
		t.Setenv("LAUREL_POSTGRES", "")
		t.Setenv("LAUREL_REDIS", "")
		var stderr bytes.Buffer
		if code := run(context.Background(), c.args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
