package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// laurelTarget drives laurel's HTTP API. Its writers and readers cost about what rueidis costs
// for Redis, so that the ratios measure the servers: bodies are appended into reused buffers
// without reflection, responses not needed are drained unread, and every writer and reader
// keeps its own connection.
type laurelTarget struct {
	c      benchConfig
	base   string       // the URL without its trailing slash
	client *http.Client // for setup and load
	fast   *http.Client // for writers and readers: their ctx bounds them, and no timer per request
	runs   int          // measurements so far, each with ids of its own (measureAgain)
}

func newLaurelTarget(c benchConfig) *laurelTarget {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// An idle connection for every writer and reader, so none is closed and reopened.
	tr.MaxIdleConnsPerHost = c.writers + c.readers + 4
	tr.MaxIdleConns = max(tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	return &laurelTarget{c: c, base: strings.TrimRight(c.url, "/"),
		client: &http.Client{Transport: tr, Timeout: time.Minute}, fast: &http.Client{Transport: tr}}
}

func (t *laurelTarget) name() string {
	switch {
	case t.c.guarded:
		return "guarded"
	case t.c.tagged:
		return "tagged"
	case t.c.subbed:
		return "subscore"
	}
	return "laurel"
}

// newRequest returns a request to path with the headers every call sends.
func (t *laurelTarget) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.c.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.c.key)
	}
	return req, nil
}

// check returns the error of a response of status 300 or more, with its body.
func check(resp *http.Response, req *http.Request) error {
	if resp.StatusCode < 300 {
		return nil
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	hint := ""
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		hint = " (laurel bench sends the first key of $LAUREL_ADMIN_KEY: it needs an admin key)"
	}
	return &statusError{resp.StatusCode, fmt.Sprintf("%s %s: %s: %s%s", req.Method, req.URL.RequestURI(), resp.Status, bytes.TrimSpace(data), hint)}
}

// statusError is an answer that is not a success.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// unavailableAnswer says whether err is a 503: the server could not take the request for a
// while, and a request with ids may be sent again exactly.
func unavailableAnswer(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.status == http.StatusServiceUnavailable
}

// call sends body and returns the answer.
func (t *laurelTarget) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := t.newRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := check(resp, req); err != nil {
		return nil, err
	}
	return io.ReadAll(resp.Body)
}

func (t *laurelTarget) setup(ctx context.Context) error {
	spec := map[string]any{"windows": strings.Split(t.c.windows, ",")}
	if t.c.guarded {
		spec["guard"] = json.RawMessage(t.c.guard)
	}
	if t.c.subbed {
		spec["subscore"] = t.c.subscore
	}
	body, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	_, err = t.call(ctx, "PUT", "/v1/boards/"+t.c.board, body)
	return err
}

// memory reads the live heap from the heap profile's statistics, taken right after the
// collection gc=1 asks for, and the resident set from /metrics.
func (t *laurelTarget) memory(ctx context.Context) (footprint, error) {
	heap, metrics, err := t.heapAndMetrics(ctx)
	if err != nil {
		return footprint{}, err
	}
	board, err := t.call(ctx, "GET", "/v1/boards/"+t.c.board, nil)
	if err != nil {
		return footprint{}, err
	}
	data, err1 := statLine(heap, "# HeapAlloc = ")
	rss, err2 := statLine(metrics, "process_resident_memory_bytes ")
	if err := cmp.Or(err1, err2); err != nil {
		return footprint{}, err
	}
	var b struct {
		Current map[string]struct{ Total int64 }
	}
	if err := json.Unmarshal(board, &b); err != nil {
		return footprint{}, fmt.Errorf("board: %w", err)
	}
	var entries int64
	for _, w := range b.Current {
		entries += w.Total
	}
	return footprint{data: int64(data), all: int64(rss), resident: int64(rss), entries: entries}, nil
}

// heapAndMetrics reads the heap profile's statistics, right after the collection gc=1 asks
// for, then /metrics.
func (t *laurelTarget) heapAndMetrics(ctx context.Context) (heap, metrics []byte, err error) {
	if heap, err = t.call(ctx, "GET", "/debug/pprof/heap?gc=1&debug=1", nil); err != nil {
		return nil, nil, err
	}
	metrics, err = t.call(ctx, "GET", "/metrics", nil)
	return heap, metrics, err
}

// serverLatencies are laurel's request duration histograms of the routes the bench drives.
type serverLatencies struct{ writes, reads histogram }

// histogram is a Prometheus histogram: cumulative counts at each upper bound, ascending.
type histogram struct {
	bounds []string // as /metrics writes them, "+Inf" last
	counts []float64
	count  float64
}

func (l serverLatencies) minus(m serverLatencies) serverLatencies {
	return serverLatencies{writes: l.writes.minus(m.writes), reads: l.reads.minus(m.reads)}
}

func (h histogram) minus(g histogram) histogram {
	d := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), count: h.count - g.count}
	for i := range d.counts {
		if i < len(g.counts) {
			d.counts[i] -= g.counts[i]
		}
	}
	return d
}

// quantile returns the upper bound, in milliseconds, of the bucket that holds quantile q.
func (h histogram) quantile(q float64) string {
	for i, c := range h.counts {
		if c >= q*h.count {
			if h.bounds[i] == "+Inf" {
				return h.bounds[i]
			}
			f, _ := strconv.ParseFloat(h.bounds[i], 64)
			return strconv.FormatFloat(f*1000, 'g', -1, 64)
		}
	}
	return "?"
}

// server reads, from laurel's metrics, its process's CPU time and its request histograms of
// successful writes and top-100 reads.
func (t *laurelTarget) server(ctx context.Context) (serverView, error) {
	metrics, err := t.call(ctx, "GET", "/metrics", nil)
	if err != nil {
		return serverView{}, err
	}
	s, err := statLine(metrics, "process_cpu_seconds_total ")
	return serverView{
		cpu: time.Duration(s * float64(time.Second)),
		latencies: serverLatencies{
			writes: parseHistogram(metrics, `route="POST /v1/boards/{board}/events",status="200"`),
			reads:  parseHistogram(metrics, `route="GET /v1/boards/{board}/entries",status="200"`),
		},
	}, err
}

// parseHistogram reads the buckets of laurel_http_request_duration_seconds with labels.
func parseHistogram(metrics []byte, labels string) histogram {
	var h histogram
	prefix := []byte("laurel_http_request_duration_seconds_bucket{" + labels + `,le="`)
	for line := range bytes.Lines(metrics) {
		rest, ok := bytes.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		bound, value, ok := bytes.Cut(rest, []byte(`"} `))
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(string(bytes.TrimSpace(value)), 64)
		if err != nil {
			continue
		}
		h.bounds = append(h.bounds, string(bound))
		h.counts = append(h.counts, n)
		if string(bound) == "+Inf" {
			h.count = n
		}
	}
	return h
}

// statLine returns the number after prefix at the start of a line of text.
func statLine(text []byte, prefix string) (float64, error) {
	for line := range bytes.Lines(text) {
		if v, ok := bytes.CutPrefix(line, []byte(prefix)); ok {
			return strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
		}
	}
	return 0, fmt.Errorf("no %q in the answer", strings.TrimSpace(prefix))
}

// eventsPath is where events go: without ranks in the answer, unless ranks (bench -ranks).
func (t *laurelTarget) eventsPath(ranks bool) string {
	return "/v1/boards/" + t.c.board + "/events?ranks=" + strconv.FormatBool(ranks)
}

// appendEvent appends a value-1 event of member m with the id prefix-suffix, the name
// "Player m" when named, the tag {"car":"kart-N"} (N of 0–99, by member) when tagged, and a
// subscore of 1 to 5 (by suffix) when sub. Member ids, event ids, names and tags need no JSON
// escapes.
func appendEvent(b []byte, m int, prefix []byte, suffix int, named, tagged, sub bool) []byte {
	b = append(b, `{"member":"player-`...)
	b = strconv.AppendInt(b, int64(m), 10)
	b = append(b, `","value":1,"id":"`...)
	b = append(b, prefix...)
	b = strconv.AppendInt(b, int64(suffix), 10)
	if named {
		b = append(b, `","name":"Player `...)
		b = strconv.AppendInt(b, int64(m), 10)
	}
	b = append(b, '"')
	if tagged {
		b = append(b, `,"tag":{"car":"kart-`...)
		b = strconv.AppendInt(b, int64(m%100), 10)
		b = append(b, `"}`...)
	}
	if sub {
		b = append(b, `,"subscore":`...)
		b = strconv.AppendInt(b, int64(suffix%5+1), 10)
	}
	return append(b, '}')
}

func (t *laurelTarget) load(ctx context.Context, members []int) error {
	b := append(make([]byte, 0, 96*len(members)), `{"events":[`...)
	prefix := []byte(t.c.run + "-load-")
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEvent(b, m, prefix, m, true, t.c.tagged, t.c.subbed)
	}
	b = append(b, "]}"...)
	// The events carry ids, so a batch answered 503 (its write queued past its deadline, as
	// 16 loaders of 1000 events each can on the scale-out store) is sent again, exactly.
	return retry(ctx, loadPatience, 2*time.Second, unavailableAnswer, func(error) {}, func() error {
		_, err := t.call(ctx, "POST", t.eventsPath(false), b)
		return err
	})
}

// loadPatience is how long a preload's batch is sent again while the server answers 503.
const loadPatience = time.Minute

// laurelWriter is one writer's reused request and body buffer.
type laurelWriter struct {
	t    *laurelTarget
	w    int
	tmpl *http.Request // copied for each request
	buf  []byte
	// The transport may still be writing a request body when Do returns (the server may
	// answer before reading it all), so buf is rewritten only once the body is closed.
	sent    sync.WaitGroup
	lent    atomic.Bool // the transport took a copy of the body to retry with: buf is not free
	getBody func() (io.ReadCloser, error)
}

// sentBody is a request body that tells its writer when the transport is done with it.
type sentBody struct {
	bytes.Reader
	closed atomic.Bool
	sent   *sync.WaitGroup
}

func (b *sentBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.sent.Done()
	}
	return nil
}

func (t *laurelTarget) writer(ctx context.Context, w int) func(int, []int) error {
	lw := &laurelWriter{t: t, w: w}
	lw.getBody = func() (io.ReadCloser, error) {
		lw.lent.Store(true)
		return io.NopCloser(bytes.NewReader(lw.buf)), nil
	}
	var err error
	if lw.tmpl, err = t.newRequest(ctx, "POST", t.eventsPath(t.c.ranks), []byte{}); err != nil {
		return func(int, []int) error { return err }
	}
	return lw.write
}

func (lw *laurelWriter) write(n int, members []int) error {
	lw.sent.Wait()
	b := lw.buf[:0]
	if lw.lent.Swap(false) {
		b = nil
	}
	b = append(b, `{"events":[`...)
	// Ids are run-writer-batch-index: unique across runs, writers and batches.
	var prefix [64]byte
	p := append(prefix[:0], lw.t.c.run...)
	p = append(strconv.AppendInt(append(p, '-'), int64(lw.w), 10), '-')
	p = append(strconv.AppendInt(p, int64(n), 10), '-')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEvent(b, m, p, i, lw.t.c.names, lw.t.c.tagged, lw.t.c.subbed)
	}
	lw.buf = append(b, "]}"...)

	req := new(http.Request)
	*req = *lw.tmpl
	body := &sentBody{sent: &lw.sent}
	body.Reset(lw.buf)
	lw.sent.Add(1)
	req.Body, req.GetBody, req.ContentLength = body, lw.getBody, int64(len(lw.buf))
	resp, err := lw.t.fast.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := check(resp, req); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func (t *laurelTarget) reader(ctx context.Context) func() error {
	tmpl, err := t.newRequest(ctx, "GET", "/v1/boards/"+t.c.board+"/entries?limit=100", nil)
	if err != nil {
		return func() error { return err }
	}
	var buf bytes.Buffer
	return func() error {
		req := new(http.Request)
		*req = *tmpl
		resp, err := t.fast.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := check(resp, req); err != nil {
			return err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			return err
		}
		if !hasEntries(buf.Bytes()) {
			return fmt.Errorf("top 100: empty page")
		}
		return nil
	}
}

// hasEntries reports whether a page has a non-empty "entries" array, without decoding it.
func hasEntries(page []byte) bool {
	_, rest, ok := bytes.Cut(page, []byte(`"entries"`))
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || rest[0] != '[' {
		return false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	return len(rest) > 0 && rest[0] != ']'
}
