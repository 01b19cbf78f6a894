package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/schollz/progressbar/v3"
)

// runBench is `laurel bench`: a load generator that drives a running laurel over HTTP, and
// with -redis the equivalent plain Redis workload in the same run, and prints both with their
// ratios (docs/benchmarks.md). Writes are batches of value-1 events with ids on Zipf-skewed
// members; reads, running at the same time, are the top 100 with names.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	var c benchConfig
	fs.StringVar(&c.url, "url", "http://127.0.0.1:7300", "laurel to drive")
	fs.StringVar(&c.board, "board", "bench", "board to create (or reuse) and write to")
	fs.IntVar(&c.members, "members", 1_000_000, "members")
	fs.StringVar(&c.windows, "windows", "all,week,day,last7d", "windows of the board, comma-separated")
	fs.IntVar(&c.batch, "batch", 100, "events per request (Redis: commands per pipeline)")
	fs.IntVar(&c.writers, "writers", 16, "concurrent writers")
	fs.IntVar(&c.readers, "readers", 2, "concurrent readers of the top 100")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "how long to write and read, per system")
	fs.Float64Var(&c.zipf, "zipf", 1.1, "Zipf exponent (> 1) of member activity: higher is more skewed")
	fs.BoolVar(&c.preload, "preload", true, "first give every member one event and a name, so all of them are ranked")
	fs.Float64Var(&c.rate, "rate", 0, "events per second to send in all, paced (0: as fast as the system takes them)")
	redis := fs.String("redis", "", "also run the plain Redis workload against this address (host:port) and print ratios")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.members < 1 || c.batch < 1 || c.batch > 1000 || c.writers < 1 || c.readers < 0 || c.zipf <= 1 {
		return usageError{fmt.Errorf("need -members ≥ 1, -batch 1…1000, -writers ≥ 1, -readers ≥ 0, -zipf > 1")}
	}
	c.key = firstKey("LAUREL_ADMIN_KEY")
	c.run = strconv.FormatInt(time.Now().UnixNano(), 36)
	c.stderr = stderr

	targets := []benchTarget{newLaurelTarget(c)}
	if *redis != "" {
		rt, err := newRedisTarget(*redis, c)
		if err != nil {
			return fmt.Errorf("redis at %s: %w", *redis, err)
		}
		defer rt.close()
		targets = append(targets, rt)
	}
	var results []benchResult
	for _, t := range targets {
		if c.preload {
			if err := preload(ctx, t, c); err != nil {
				return fmt.Errorf("%s: preload: %w", t.name(), err)
			}
		} else if err := t.setup(ctx); err != nil {
			return fmt.Errorf("%s: setup: %w", t.name(), err)
		}
		r, err := measure(ctx, t, c)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name(), err)
		}
		results = append(results, r)
	}
	printBench(stdout, c, results)
	return nil
}

type benchConfig struct {
	url, board, windows, key, run string
	members, batch                int
	writers, readers              int
	duration                      time.Duration
	zipf, rate                    float64
	preload                       bool
	stderr                        io.Writer
}

// benchTarget is a system under load: laurel over HTTP, or plain Redis.
type benchTarget interface {
	name() string
	setup(ctx context.Context) error
	// load writes one event (Redis: one score) and a name for each of members.
	load(ctx context.Context, members []int) error
	write(ctx context.Context, members []int, ids []string) error
	top100(ctx context.Context) error
}

func memberID(i int) string { return "player-" + strconv.Itoa(i) }

// preload sets the target up and gives every member one event and a name.
func preload(ctx context.Context, t benchTarget, c benchConfig) error {
	if err := t.setup(ctx); err != nil {
		return err
	}
	bar := progressbar.NewOptions64(int64(c.members), progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription(t.name()+": loading members"), progressbar.OptionShowCount(),
		progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	next := atomic.Int64{}
	var wg sync.WaitGroup
	errs := make(chan error, c.writers)
	for range c.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(1000)) - 1000
				if lo >= c.members || ctx.Err() != nil {
					return
				}
				hi := min(lo+1000, c.members)
				ms := make([]int, 0, hi-lo)
				for i := lo; i < hi; i++ {
					ms = append(ms, i)
				}
				if err := t.load(ctx, ms); err != nil {
					errs <- err
					return
				}
				bar.Add(len(ms))
			}
		}()
	}
	wg.Wait()
	bar.Finish()
	close(errs)
	return <-errs
}

// benchResult is what one system did.
type benchResult struct {
	name          string
	events        int
	took          time.Duration
	writes, reads []time.Duration // latency of each write request and each top-100 read
}

func (r benchResult) rate() float64 { return float64(r.events) / r.took.Seconds() }

// measure runs the writers and readers against t for the configured duration.
func measure(ctx context.Context, t benchTarget, c benchConfig) (benchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	bar := progressbar.NewOptions64(int64(c.duration/time.Second), progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription(t.name()+": writing and reading"), progressbar.OptionClearOnFinish())
	go func() {
		for range time.Tick(time.Second) {
			if ctx.Err() != nil {
				return
			}
			bar.Add(1)
		}
	}()
	var (
		mu     sync.Mutex
		res    = benchResult{name: t.name()}
		wg     sync.WaitGroup
		failed error
	)
	fail := func(err error) {
		mu.Lock()
		if failed == nil && ctx.Err() == nil {
			failed = err
		}
		mu.Unlock()
		cancel()
	}
	start := time.Now()
	var batches atomic.Int64 // with -rate, batch k is due at start + k·batch/rate
	for w := range c.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z := mrand.NewZipf(mrand.New(mrand.NewSource(int64(w)+1)), c.zipf, 1, uint64(c.members-1))
			var lat []time.Duration
			events := 0
			for n := 0; ctx.Err() == nil; n++ {
				if c.rate > 0 {
					due := start.Add(time.Duration(float64(batches.Add(1)-1) * float64(c.batch) / c.rate * float64(time.Second)))
					select {
					case <-time.After(time.Until(due)):
					case <-ctx.Done():
					}
					if ctx.Err() != nil {
						break
					}
				}
				ms := make([]int, c.batch)
				ids := make([]string, c.batch)
				for i := range ms {
					ms[i] = int(z.Uint64())
					ids[i] = fmt.Sprintf("%s-%d-%d-%d", c.run, w, n, i)
				}
				t0 := time.Now()
				if err := t.write(ctx, ms, ids); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					break
				}
				lat = append(lat, time.Since(t0))
				events += len(ms)
			}
			mu.Lock()
			res.writes = append(res.writes, lat...)
			res.events += events
			mu.Unlock()
		}()
	}
	for range c.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				if err := t.top100(ctx); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					break
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.reads = append(res.reads, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.took = time.Since(start)
	bar.Finish()
	return res, failed
}

func quantile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

func printBench(w io.Writer, c benchConfig, rs []benchResult) {
	pace := "as fast as taken"
	if c.rate > 0 {
		pace = fmt.Sprintf("paced at %.0f events/s", c.rate)
	}
	fmt.Fprintf(w, "members %d, windows %s, batch %d, writers %d (%s), readers %d, %s each, zipf %.2f\n\n",
		c.members, c.windows, c.batch, c.writers, pace, c.readers, c.duration, c.zipf)
	fmt.Fprintf(w, "%-8s %12s %28s %28s\n", "system", "events/s", "write ms p50/p99/p999", "top-100 ms p50/p99/p999")
	for _, r := range rs {
		fmt.Fprintf(w, "%-8s %12.0f %28s %28s\n", r.name, r.rate(),
			ms(quantile(r.writes, .5))+" / "+ms(quantile(r.writes, .99))+" / "+ms(quantile(r.writes, .999)),
			ms(quantile(r.reads, .5))+" / "+ms(quantile(r.reads, .99))+" / "+ms(quantile(r.reads, .999)))
	}
	if len(rs) == 2 {
		l, r := rs[0], rs[1]
		ratio := func(a, b time.Duration) string {
			if b == 0 {
				return "-"
			}
			return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
		}
		fmt.Fprintf(w, "\nlaurel / redis: events/s %.2f, write p99 %s, top-100 p99 %s\n",
			l.rate()/r.rate(), ratio(quantile(l.writes, .99), quantile(r.writes, .99)), ratio(quantile(l.reads, .99), quantile(r.reads, .99)))
	}
}

// laurelTarget drives laurel's HTTP API.
type laurelTarget struct {
	c      benchConfig
	client *http.Client
}

func newLaurelTarget(c benchConfig) *laurelTarget {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = c.writers + c.readers + 4
	return &laurelTarget{c: c, client: &http.Client{Transport: tr, Timeout: time.Minute}}
}

func (t *laurelTarget) name() string { return "laurel" }

func (t *laurelTarget) call(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(t.c.url, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.c.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.c.key)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (t *laurelTarget) setup(ctx context.Context) error {
	return t.call(ctx, "PUT", "/v1/boards/"+t.c.board, map[string]any{"windows": strings.Split(t.c.windows, ",")}, nil)
}

type benchEvent struct {
	Member string `json:"member"`
	Value  int64  `json:"value"`
	ID     string `json:"id,omitempty"`
	Name   string `json:"name,omitempty"`
}

func (t *laurelTarget) load(ctx context.Context, members []int) error {
	evs := make([]benchEvent, len(members))
	for i, m := range members {
		evs[i] = benchEvent{Member: memberID(m), Value: 1, ID: t.c.run + "-load-" + strconv.Itoa(m), Name: "Player " + strconv.Itoa(m)}
	}
	return t.call(ctx, "POST", "/v1/boards/"+t.c.board+"/events?ranks=false", map[string]any{"events": evs}, nil)
}

func (t *laurelTarget) write(ctx context.Context, members []int, ids []string) error {
	evs := make([]benchEvent, len(members))
	for i, m := range members {
		evs[i] = benchEvent{Member: memberID(m), Value: 1, ID: ids[i]}
	}
	return t.call(ctx, "POST", "/v1/boards/"+t.c.board+"/events?ranks=false", map[string]any{"events": evs}, nil)
}

func (t *laurelTarget) top100(ctx context.Context) error {
	var page struct {
		Entries []struct {
			Name string `json:"name"`
		} `json:"entries"`
	}
	if err := t.call(ctx, "GET", "/v1/boards/"+t.c.board+"/entries?limit=100", nil, &page); err != nil {
		return err
	}
	if len(page.Entries) == 0 {
		return fmt.Errorf("top 100: empty page")
	}
	return nil
}

// redisTarget is the plain Redis equivalent: one sorted set, scores added with pipelined
// ZINCRBY, names in one hash per member, the top 100 read with ZREVRANGE and the hashes.
type redisTarget struct {
	c      benchConfig
	client rueidis.Client
	key    string
}

func newRedisTarget(addr string, c benchConfig) (*redisTarget, error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return nil, err
	}
	return &redisTarget{c: c, client: client, key: "laurel-bench:" + c.board}, nil
}

func (t *redisTarget) name() string { return "redis" }
func (t *redisTarget) close()       { t.client.Close() }

func (t *redisTarget) setup(ctx context.Context) error {
	return t.client.Do(ctx, t.client.B().Del().Key(t.key).Build()).Error()
}

func (t *redisTarget) nameKey(m int) string { return t.key + ":member:" + memberID(m) }

func (t *redisTarget) load(ctx context.Context, members []int) error {
	cmds := make(rueidis.Commands, 0, 2*len(members))
	for _, m := range members {
		cmds = append(cmds, t.client.B().Zincrby().Key(t.key).Increment(1).Member(memberID(m)).Build(),
			t.client.B().Hset().Key(t.nameKey(m)).FieldValue().FieldValue("name", "Player "+strconv.Itoa(m)).Build())
	}
	return firstError(t.client.DoMulti(ctx, cmds...))
}

func (t *redisTarget) write(ctx context.Context, members []int, _ []string) error {
	cmds := make(rueidis.Commands, 0, len(members))
	for _, m := range members {
		cmds = append(cmds, t.client.B().Zincrby().Key(t.key).Increment(1).Member(memberID(m)).Build())
	}
	return firstError(t.client.DoMulti(ctx, cmds...))
}

func (t *redisTarget) top100(ctx context.Context) error {
	top, err := t.client.Do(ctx, t.client.B().Zrevrange().Key(t.key).Start(0).Stop(99).Withscores().Build()).AsZScores()
	if err != nil {
		return err
	}
	cmds := make(rueidis.Commands, 0, len(top))
	for _, z := range top {
		cmds = append(cmds, t.client.B().Hget().Key(t.key+":member:"+z.Member).Field("name").Build())
	}
	if len(cmds) == 0 {
		return fmt.Errorf("top 100: empty")
	}
	return firstError(t.client.DoMulti(ctx, cmds...))
}

func firstError(rs []rueidis.RedisResult) error {
	for _, r := range rs {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return err
		}
	}
	return nil
}

// firstKey returns the first key of a comma-separated list in the environment.
func firstKey(name string) string {
	if keys := keyList(name); len(keys) > 0 {
		return keys[0]
	}
	return ""
}
