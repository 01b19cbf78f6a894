package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/laurel/laurel/laureltest"
	"github.com/redis/rueidis"
)

var listening = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// startServe runs `laurel serve` on a free port over dir, waits until it is ready, and returns
// its base URL and a function that stops it with the signal context and returns its exit code.
func startServe(t *testing.T, dir string, env map[string]string, args ...string) (string, func() int) {
	t.Helper()
	s := launchServe(t, dir, env, args...)
	laureltest.Within(t, 10*time.Second, "serve ready; its log:\n"+s.log.String(), func() bool { return readyz(s.url) == http.StatusOK })
	return s.url, s.stop
}

// served is a `laurel serve` running in the test's process.
type served struct {
	url  string
	log  *laureltest.Buffer
	stop func() int // stops it with the signal context (once) and returns its exit code
}

// launchServe runs `laurel serve` on a free port over dir and returns once it listens.
func launchServe(t *testing.T, dir string, env map[string]string, args ...string) served {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &laureltest.Buffer{}
	code := make(chan int, 1)
	args = append([]string{"serve", "-addr", "127.0.0.1:0", "-data", dir}, args...)
	go func() { code <- run(ctx, args, io.Discard, stderr) }()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + m[1]
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not listen; its log:\n%s", stderr.String())
		}
	}
	stop := sync.OnceValue(func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop; its log:\n%s", stderr.String())
			return -1
		}
	})
	return served{url: base, log: stderr, stop: stop}
}

// readyz returns the status of base's /readyz, or 0 when it does not answer.
func readyz(base string) int {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func do(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	return doKey(t, "", method, url, body)
}

func doKey(t *testing.T, key, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	json.Unmarshal(data, &out)
	return resp.StatusCode, out
}

// TestServe runs the server as a user would, writes, stops it with the signal, and finds the
// write again after a restart on the same directory.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	base, stop := startServe(t, dir, nil)
	if code, _ := do(t, "PUT", base+"/v1/boards/solvers", `{"windows": ["all", "last7d"]}`); code != http.StatusCreated {
		t.Fatalf("create board: status %d", code)
	}
	if code, body := do(t, "POST", base+"/v1/boards/solvers/events", `{"member": "alice", "value": 5, "id": "s-1"}`); code != http.StatusOK {
		t.Fatalf("submit: status %d, %v", code, body)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d after the signal", code)
	}
	base, stop = startServe(t, dir, nil)
	defer stop()
	code, body := do(t, "GET", base+"/v1/boards/solvers/members/alice?window=last7d", "")
	entry, _ := body["entry"].(map[string]any)
	if code != http.StatusOK || entry["score"] != float64(5) || entry["rank"] != float64(1) {
		t.Fatalf("after a restart: status %d, %v; want alice first with 5", code, body)
	}
}

// Off a terminal (a file, a pipe, journald), serve's stderr holds its log only, a JSON object
// a line: the line for a person at a terminal is not among them.
func TestServeLogsOnlyJSONOffATerminal(t *testing.T) {
	s := launchServe(t, t.TempDir(), nil)
	laureltest.Within(t, 10*time.Second, "serve ready; its log:\n"+s.log.String(), func() bool { return readyz(s.url) == http.StatusOK })
	if code := s.stop(); code != 0 {
		t.Fatalf("serve exited %d after the signal", code)
	}
	log := strings.TrimSpace(s.log.String())
	if !strings.Contains(log, `"msg":"ready"`) || !strings.Contains(log, `"msg":"stopped"`) {
		t.Fatalf("serve's log lacks its start or its stop:\n%s", log)
	}
	for line := range strings.SplitSeq(log, "\n") {
		if !json.Valid([]byte(line)) || !strings.HasPrefix(line, "{") {
			t.Errorf("a line of serve's log off a terminal is not JSON: %q", line)
		}
	}
}

// TestServeKeysFile serves with keys from a file and from the environment: both are accepted,
// each with its scope, and a file laurel cannot take stops it before it listens.
func TestServeKeysFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(path, []byte(`{"admin_keys": ["file-admin"], "read_keys": ["file-read", "file-read-2"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stop := startServe(t, t.TempDir(), map[string]string{"LAUREL_WRITE_KEY": "env-write"}, "-config", path)
	defer stop()
	for _, c := range []struct {
		key, method, path, body string
		status                  int
	}{
		{"file-admin", "PUT", "/v1/boards/b", `{}`, http.StatusCreated},
		{"env-write", "PUT", "/v1/boards/b", `{}`, http.StatusForbidden},
		{"env-write", "POST", "/v1/boards/b/events", `{"member": "m", "value": 1}`, http.StatusOK},
		{"file-read-2", "GET", "/v1/boards/b/entries", "", http.StatusOK},
		{"file-read", "POST", "/v1/boards/b/events", `{"member": "m", "value": 1}`, http.StatusForbidden},
		{"", "GET", "/v1/boards/b/entries", "", http.StatusUnauthorized},
	} {
		if code, body := doKey(t, c.key, c.method, base+c.path, c.body); code != c.status {
			t.Errorf("%s %s with key %q: %d %v, want %d", c.method, c.path, c.key, code, body, c.status)
		}
	}

	for _, bad := range []struct{ file, want string }{
		{`{"admin_keys": ["a"], "admin": ["b"]}`, `unknown field "admin"`},
		{`{"read_keys": [""]}`, "read_keys: a key must not be empty"},
		{`{"write_keys": ["a,b"]}`, "write_keys: a key must be"},
		{`{"read_keys": "k"}`, "read_keys: a JSON string where the field takes a list of strings"},
		{`{"public_read": "yes"}`, "public_read: a JSON string where the field takes true or false"},
		{`{} {}`, "more than one JSON object"},
		{`{"Admin_Keys": ["a"]}`, `unknown field "Admin_Keys"`},
		{`{"read_keys": ["tab\tkey"]}`, "read_keys: a key must be printable ASCII"},
		{`{"read_keys": ["café"]}`, "read_keys: a key must be printable ASCII"},
		{"{\"read_keys\": [\"k\xff\"]}", "not valid UTF-8"},
	} {
		if err := os.WriteFile(path, []byte(bad.file), 0o600); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-data", t.TempDir(), "-config", path}, io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), bad.want) {
			t.Errorf("config %s: exit %d, stderr %q; want 2 and %q", bad.file, code, stderr.String(), bad.want)
		}
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-data", t.TempDir(), "-config", filepath.Join(dir, "missing.json")}, io.Discard, &stderr); code != 2 {
		t.Errorf("missing config: exit %d, stderr %q; want 2", code, stderr.String())
	}

	// A key file others can read is taken, with a warning.
	if err := os.WriteFile(path, []byte(`{"admin_keys": ["a"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve starts, then stops at once
	stderr.Reset()
	if code := run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-data", t.TempDir(), "-config", path}, io.Discard, &stderr); code != 0 ||
		!strings.Contains(stderr.String(), "the key file can be read by other users") {
		t.Errorf("world-readable config: exit %d, stderr %q; want 0 and a warning", code, stderr.String())
	}
}

func TestServeRefusesAnOpenNonLoopbackAddress(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "-addr", "0.0.0.0:0", "-data", t.TempDir()}, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "not a loopback address") {
		t.Fatalf("exit %d, stderr %q; want 2 and a refusal", code, stderr.String())
	}
}

// redisAddr is the Redis the tests use: a real one, as on every machine of this project and
// in CI, where its absence fails the test instead of skipping it.
func redisAddr(t *testing.T) string {
	t.Helper()
	laureltest.NeedRedis(t)
	return laureltest.RedisAddr()
}

// TestBench drives a served laurel and Redis with a small workload and checks that the
// report holds both systems' figures and their ratios.
func TestBench(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "-url", base, "-redis", redisAddr(t), "-board", "benchtest",
		"-members", "300", "-batch", "20", "-writers", "4", "-readers", "1", "-duration", "1s"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, out, stderr.String())
	}
	positive := `(?:[1-9][0-9]*\.[0-9]+|0\.[0-9]*[1-9][0-9]*)` // a CPU time an event above zero: no run takes none
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^laurel +[1-9][0-9]* +[0-9.]+ / [0-9.]+ / [0-9.]+ +[1-9][0-9]* +[0-9.]+ / [0-9.]+ / [0-9.]+ +` + positive + ` / ` + positive + `$`),
		regexp.MustCompile(`(?m)^redis +[1-9][0-9]* +[0-9.]+ / .* ` + positive + ` / ` + positive + `$`),
		regexp.MustCompile(`laurel / redis: server CPU an event ` + positive + ` \(events/s the server's CPU alone allows: ` + positive + `\)`),
		regexp.MustCompile(`laurel / redis: events/s [0-9.]+, write p99 [0-9.]+, top-100 p99 [0-9.]+`),
		regexp.MustCompile(`write p99 ≤ [0-9.]+ ms, top-100 p99 ≤ [0-9.]+ ms`),
		// Memory per entry: 300 members × 4 windows on laurel, 300 in Redis's sorted set.
		regexp.MustCompile(`(?m)^laurel +-?[0-9.]+ +-?[0-9.]+ +1200$`),
		regexp.MustCompile(`(?m)^redis +[1-9][0-9.]* +-?[0-9.]+ +300$`),
		regexp.MustCompile(`laurel / redis: memory per entry -?[0-9.]+ \(all -?[0-9.a-zA-Z+]+\)`),
		regexp.MustCompile(`laurel / redis: resident per entry -?[0-9.a-zA-Z+]+ \(-?[0-9.]+ B / -?[0-9.]+ B, Redis's used_memory_rss`),
	} {
		if !want.MatchString(out) {
			t.Errorf("bench report lacks %s:\n%s", want, out)
		}
	}
	// The events laurel acknowledged are on its board.
	code, body := do(t, "GET", base+"/v1/boards/benchtest", "")
	cur, _ := body["current"].(map[string]any)
	all, _ := cur["all"].(map[string]any)
	if code != http.StatusOK || all["total"] != float64(300) {
		t.Fatalf("board after bench: %d %v; want 300 members in all", code, body)
	}
}

// TestBenchTags: -tags alternates the board with a board whose events carry tags, printing
// each round's ratios and the memory per entry of both; the tagged board's entries show them.
func TestBenchTags(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "-url", base, "-board", "benchtags", "-tags", "-rounds", "2",
		"-members", "300", "-batch", "20", "-writers", "2", "-readers", "1", "-duration", "1s"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, out, stderr.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tagged +[1-9][0-9]* `),
		regexp.MustCompile(`round 1, tagged / laurel: events/s [0-9.]+, server CPU an event [0-9.]+`),
		regexp.MustCompile(`round 2, tagged / laurel: events/s [0-9.]+, server CPU an event [0-9.]+`),
		regexp.MustCompile(`(?m)^tagged +-?[0-9.]+ +-?[0-9.]+ +1200$`),
		regexp.MustCompile(`tagged / laurel: memory per entry -?[0-9.]+ \(-?[0-9.]+ B / -?[0-9.]+ B\)`),
	} {
		if !want.MatchString(out) {
			t.Errorf("bench report lacks %s:\n%s", want, out)
		}
	}
	if code, body := do(t, "GET", base+"/v1/boards/benchtags-tagged/entries?limit=1", ""); code != http.StatusOK || !strings.Contains(fmt.Sprint(body["entries"]), "kart-") {
		t.Errorf("the tagged board's top entry: %d %v, want a tag", code, body)
	}
	if code, body := do(t, "GET", base+"/v1/boards/benchtags/entries?limit=1", ""); code != http.StatusOK || strings.Contains(fmt.Sprint(body["entries"]), "kart-") {
		t.Errorf("the board without tags: %d %v, want no tag", code, body)
	}
}

// TestBenchSoak: -soak prints a line an interval with what the server holds (its store's
// tables, memtables and id filter among them, from /metrics), then the growth over the
// second half, the heap's told apart from the id filter's.
func TestBenchSoak(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "-url", base, "-board", "soaktest", "-members", "200", "-batch", "10",
		"-writers", "2", "-readers", "1", "-rate", "200", "-read-rate", "5", "-soak", "3s", "-interval", "1s"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("bench -soak exited %d: %s\n%s", code, out, stderr.String())
	}
	interval := regexp.MustCompile(`(?m)^ +[0-9]+s +[1-9][0-9]* +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9][0-9.]* +[1-9][0-9.]* +[1-9][0-9]* +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+$`)
	if n := len(interval.FindAllString(out, -1)); n != 3 {
		t.Errorf("bench -soak printed %d intervals, want 3:\n%s", n, out)
	}
	for _, want := range []string{"over the second half (", "the heap less the id filter ", "read p99 of the intervals: median "} {
		if !strings.Contains(out, want) {
			t.Errorf("bench -soak's report lacks %q:\n%s", want, out)
		}
	}
	// Every interval's events are counted: ids differ from one interval to the next.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte("\nlaurel_events_duplicate_total 0\n")) {
		t.Errorf("the soak's events were taken as duplicates:\n%s", metrics)
	}
	if filter := regexp.MustCompile(`\nlaurel_store_id_filter_bytes ([0-9.e+]+)\n`).FindSubmatch(metrics); filter == nil || string(filter[1]) == "0" {
		t.Errorf("/metrics has no id filter's bytes, or none: %q", filter)
	}
	var stderr2 bytes.Buffer
	if code := run(context.Background(), []string{"bench", "-url", base, "-soak", "1s", "-redis", "127.0.0.1:1"}, io.Discard, &stderr2); code != 2 {
		t.Errorf("-soak with -redis: exit %d, %s; want 2", code, stderr2.String())
	}
}

// TestBenchNeedsAnAdminKey: against a server with keys, bench without an admin key in
// $LAUREL_ADMIN_KEY fails saying where its key comes from.
func TestBenchNeedsAnAdminKey(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), map[string]string{"LAUREL_ADMIN_KEY": "adm", "LAUREL_WRITE_KEY": "wri"})
	defer stop()
	for _, key := range []string{"", "wri"} {
		t.Setenv("LAUREL_ADMIN_KEY", key)
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"bench", "-url", base, "-members", "10", "-duration", "1s"}, io.Discard, &stderr); code != 1 ||
			!strings.Contains(stderr.String(), "laurel bench sends the first key of $LAUREL_ADMIN_KEY: it needs an admin key") {
			t.Errorf("bench with LAUREL_ADMIN_KEY=%q against a keyed server: exit %d, %s", key, code, stderr.String())
		}
	}
}

// TestBenchReadRate checks that -read-rate paces each reader: over one second at 5 reads a
// second, one reader reads about 5 times, where unpaced it reads as often as it is answered.
func TestBenchReadRate(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	readsPerSecond := func(extra ...string) float64 {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := append([]string{"bench", "-url", base, "-board", "benchpaced", "-members", "200", "-batch", "10",
			"-writers", "2", "-readers", "1", "-duration", "1s"}, extra...)
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("bench %v exited %d: %s\n%s", extra, code, stdout.String(), stderr.String())
		}
		m := regexp.MustCompile(`(?m)^laurel +[0-9]+ +[0-9.]+ / [0-9.]+ / [0-9.]+ +([0-9]+) `).FindStringSubmatch(stdout.String())
		if m == nil {
			t.Fatalf("no reads/s in the report:\n%s", stdout.String())
		}
		if strings.Contains(stdout.String(), "Redis") {
			t.Errorf("without -redis, the report speaks of Redis:\n%s", stdout.String())
		}
		if paced := len(extra) > 0; paced && !strings.Contains(stdout.String(), "readers 1 (each paced at 5 a second)") {
			t.Errorf("the report does not say how the readers were paced:\n%s", stdout.String())
		}
		n, _ := strconv.ParseFloat(m[1], 64)
		return n
	}
	if got := readsPerSecond("-read-rate", "5"); got < 1 || got > 7 {
		t.Errorf("paced at 5 a second, the reader read %v a second", got)
	}
	if got := readsPerSecond(); got <= 20 {
		t.Errorf("unpaced, the reader read only %v a second", got)
	}
}

// TestBenchRedisMirror checks that with -redis-mirror Redis gets an id and a sorted set per
// window for each event, as laurel does.
func TestBenchRedisMirror(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	addr := redisAddr(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "-url", base, "-redis", addr, "-redis-mirror", "-board", "benchmirror",
		"-members", "200", "-windows", "all,day", "-batch", "10", "-writers", "2", "-readers", "1", "-duration", "1s"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "Redis: an id and a sorted set per window") {
		t.Errorf("the report does not say what Redis did:\n%s", stdout.String())
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	all, err1 := client.Do(ctx, client.B().Zcard().Key("laurel-bench:benchmirror").Build()).AsInt64()
	day, err2 := client.Do(ctx, client.B().Zcard().Key("laurel-bench:benchmirror:day").Build()).AsInt64()
	ids, err3 := client.Do(ctx, client.B().Hlen().Key("laurel-bench:benchmirror:ids").Build()).AsInt64()
	sum, err4 := client.Do(ctx, client.B().Zscore().Key("laurel-bench:benchmirror:day").Member("player-1").Build()).AsFloat64()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	if all != 200 || day != 200 || ids == 0 || sum < 2 {
		t.Errorf("Redis after a mirrored bench: %d and %d members in the window sets, %d ids, player-1 at %v in day; want 200, 200, some, ≥ 2",
			all, day, ids, sum)
	}
}

// TestServeRefusesBadFlags: a flag out of its range stops serve with exit 2 and one line that
// names the flag, before anything is opened.
// TestServeMemoryLimit: -memory-limit is the Go runtime's memory limit, which the log's
// garbage collection line reports beside the collector's target.
func TestServeMemoryLimit(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve starts, then stops at once
	var stderr bytes.Buffer
	if code := run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-data", t.TempDir(), "-memory-limit", "300"}, io.Discard, &stderr); code != 0 {
		t.Fatalf("serve -memory-limit 300: exit %d, %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"garbage collection","gogc":"25","memory_limit_mib":300`) || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Errorf("serve -memory-limit 300 set the limit to %d; log:\n%s", debug.SetMemoryLimit(-1), stderr.String())
	}
}

func TestServeRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rate-limit", "-1"}, "-rate-limit and -rate-burst must not be negative"},
		{[]string{"-rate-burst", "-5"}, "-rate-limit and -rate-burst must not be negative"},
		{[]string{"-addr", "localhost"}, `-addr: "localhost" is not host:port`},
		{[]string{"-addr", "127.0.0.1:http"}, "the port must be a number"},
		{[]string{"-addr", "127.0.0.1:70000"}, "the port must be a number"},
		{[]string{"-maintenance", "0s"}, "-maintenance must be positive"},
		{[]string{"-cache", "0"}, "-cache and -memtable must be at least 1"},
		{[]string{"-min-free", "-2"}, "-min-free must be -1"},
		{[]string{"-max-conns", "0"}, "-max-conns must be at least 1"},
		{[]string{"-memory-limit", "-1"}, "-memory-limit must be 0 (the default) or MiB"},
		{[]string{"-request-timeout", "0s"}, "-request-timeout must be positive"},
		{[]string{"-address-rate-limit", "-2"}, "-address-rate-limit must be -1"},
		{[]string{"-trusted-proxies", "10.0.0.0/8,proxy"}, `-trusted-proxies: "proxy" is neither an address nor a CIDR prefix`},
		{[]string{"-cors-origins", "https://game.example/"}, `-cors-origins: "https://game.example/" is not an origin`},
		{[]string{"-cors-origins", "https://a.example,game.example"}, `-cors-origins: "game.example" is not an origin`},
		{[]string{"-cors-origins", "ftp://game.example"}, `-cors-origins: "ftp://game.example" is not an origin`},
		{[]string{"-webhook-interval", "0s"}, "-webhook-interval and -webhook-timeout must be positive"},
		{[]string{"-token-max-lifetime", "0s"}, "-token-max-lifetime must be positive"},
		{[]string{"-token-max-lifetime", "-1h"}, "-token-max-lifetime must be positive"},
		{[]string{"-token-audience", ""}, "-token-audience must not be empty"},
	} {
		var stderr bytes.Buffer
		dir := t.TempDir()
		args := append([]string{"serve", "-data", dir}, tc.args...)
		if code := run(context.Background(), args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 and one line, %q", tc.args, code, stderr.String(), tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("serve %v: the data directory was opened", tc.args)
		}
	}
}

// TestServeLimitsAddressesByDefault: a server with keys limits what each address may send
// without a valid key (50 a second, bursts of 100), and not what a key sends; an open server,
// on loopback only, limits nothing.
func TestServeLimitsAddressesByDefault(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), map[string]string{"LAUREL_READ_KEY": "r", "LAUREL_PUBLIC_READ": "true"})
	defer stop()
	count := func(key string) (limited int) {
		for range 150 {
			if code, _ := doKey(t, key, "GET", base+"/v1/boards", ""); code == http.StatusTooManyRequests {
				limited++
			}
		}
		return limited
	}
	if n := count("r"); n != 0 {
		t.Errorf("%d of 150 requests with a key were limited", n)
	}
	if n := count(""); n < 20 {
		t.Errorf("%d of 150 requests without a key were limited, want about 50 past the burst of 100", n)
	}
	open, stopOpen := startServe(t, t.TempDir(), map[string]string{"LAUREL_READ_KEY": "", "LAUREL_PUBLIC_READ": ""})
	defer stopOpen()
	for i := range 150 {
		if code, _ := do(t, "GET", open+"/v1/boards", ""); code != http.StatusOK {
			t.Fatalf("request %d to an open server: %d", i, code)
		}
	}
}

// TestServeRefusesBadEnvironmentKeys: a key in the environment that a client could not send
// stops serve before it listens, naming the variable.
// So does a variable that is set but names no key (which would leave the API open), and a
// LAUREL_PUBLIC_READ that is neither true nor false.
func TestServeRefusesBadEnvironmentKeys(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"LAUREL_WRITE_KEY", "good, bad key", "LAUREL_WRITE_KEY: a key must be printable ASCII without spaces or commas (byte 4 of a key of 7 is ' ')"},
		// The message names the byte, not the key: it reaches logs.
		{"LAUREL_ADMIN_KEY", "Zk3vQ9pL2mN8xR4tW7yB1cD6fH0jK5s\x7f", "LAUREL_ADMIN_KEY: a key must be printable ASCII without spaces or commas (byte 32 of a key of 32 is '\\x7f')"},
		{"LAUREL_ADMIN_KEY", ",", `LAUREL_ADMIN_KEY: "," names no key`},
		{"LAUREL_READ_KEY", " ", `LAUREL_READ_KEY: " " names no key`},
		{"LAUREL_PUBLIC_READ", "TRUE", `LAUREL_PUBLIC_READ: "TRUE": want true or false`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			var stderr bytes.Buffer
			if code := run(context.Background(), []string{"serve", "-data", t.TempDir()}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("%s=%q: exit %d, stderr %q; want 2 and %q", c.name, c.value, code, stderr.String(), c.want)
			}
			if strings.Contains(stderr.String(), "Zk3v") {
				t.Errorf("%s: the key is told: %s", c.name, stderr.String())
			}
		})
	}
}

// Member tokens, with their secrets from the environment and the keys file: a game's server
// mints one for a member, and the game client submits with it; the secrets are checked at
// start.
func TestServeMemberTokens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	fileSecret := strings.Repeat("f", 32)
	if err := os.WriteFile(path, []byte(`{"admin_keys": ["admin"], "token_secrets": {"file": "`+fileSecret+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	envSecret := strings.Repeat("e", 40)
	base, stop := startServe(t, t.TempDir(), map[string]string{"LAUREL_TOKEN_SECRETS": "env=" + envSecret}, "-config", path, "-token-audience", "my-game",
		"-cors-origins", "https://Game.example, http://127.0.0.1:8080")
	defer stop()
	// The game's web page may call it from its own origin (the browser asks first).
	preflight, err := http.NewRequest("OPTIONS", base+"/v1/boards/b/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	preflight.Header.Set("Origin", "https://game.example")
	preflight.Header.Set("Access-Control-Request-Method", "POST")
	if resp, err := http.DefaultClient.Do(preflight); err != nil || resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://game.example" {
		t.Fatalf("preflight from the game's origin: %v %v", resp, err)
	}
	if code, body := doKey(t, "admin", "PUT", base+"/v1/boards/b", `{}`); code != http.StatusCreated {
		t.Fatalf("board: %d %v", code, body)
	}
	token := func(kid, secret, aud string) string {
		now := time.Now()
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "ada", "aud": aud, "iat": now.Unix(),
			"exp": now.Add(time.Minute).Unix(), "boards": []string{"b"}, "scope": "write"})
		tok.Header["kid"] = kid
		s, err := tok.SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		token  string
		status int
	}{
		{token("env", envSecret, "my-game"), http.StatusOK},
		{token("file", fileSecret, "my-game"), http.StatusOK},
		{token("env", envSecret, "laurel"), http.StatusUnauthorized}, // the audience is this server's
		{token("file", envSecret, "my-game"), http.StatusUnauthorized},
	} {
		if code, body := doKey(t, c.token, "POST", base+"/v1/boards/b/events", `{"member": "ada", "value": 1}`); code != c.status {
			t.Errorf("token %s…: %d %v, want %d", c.token[:20], code, body, c.status)
		}
	}

	for _, bad := range []struct{ env, want string }{
		{"k=short", `the secret of key id "k" is 5 bytes: at least 32`},
		{"nokid" + strings.Repeat("x", 32), "give each secret as kid=secret"},
		{"=" + strings.Repeat("x", 32), "a key id must be printable ASCII"},
	} {
		t.Setenv("LAUREL_TOKEN_SECRETS", bad.env)
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-data", t.TempDir()}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), bad.want) {
			t.Errorf("LAUREL_TOKEN_SECRETS=%s: exit %d, stderr %q; want 2 and %q", bad.env, code, stderr.String(), bad.want)
		}
	}
}

// TestBenchMemberStreams: -member-streams measures without streams, with them and without
// again, each run's events counted (new ids each run, not duplicates), and the streams hear
// their members' standings.
func TestBenchMemberStreams(t *testing.T) {
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "-url", base, "-board", "benchfeed", "-members", "200", "-batch", "10",
		"-writers", "2", "-readers", "0", "-duration", "1s", "-member-streams", "20"}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("bench exited %d: %s\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{`(?m)^none +[1-9][0-9]* `, `(?m)^20 +[1-9][0-9]* +[0-9.]+ +[0-9.]+ +[1-9][0-9]*$`,
		`(?m)^none again +[1-9][0-9]* `, `with / without \(the mean of the two runs without\): server CPU an event [0-9.]+`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the report lacks %s:\n%s", want, out)
		}
	}
	code, body := do(t, "GET", base+"/v1/boards/benchfeed/members/player-0", "")
	if score, _ := body["entry"].(map[string]any)["score"].(float64); code != 200 || score < 3 {
		t.Errorf("player-0 after three runs: %d %v", code, body)
	}
	if run(context.Background(), []string{"bench", "-url", base, "-members", "10", "-member-streams", "20"}, io.Discard, io.Discard) != 2 {
		t.Error("more member streams than members: not a usage error")
	}
}
