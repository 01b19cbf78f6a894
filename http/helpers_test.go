package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
	"github.com/laurel/laurel/embedded"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/webhook"
)

// t0 is the fake clock's start: Sunday 2026-11-22 10:00 UTC.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// env is a laurel server running in-process on a real port over an embedded store.
type env struct {
	t      testing.TB
	dir    string
	clock  *laureltest.Clock
	store  *embedded.Store
	hooks  *webhook.Outbox // the server's, unless the test gave its own
	server *lhttp.Server
	srv    *http.Server
	url    string
	key    string // sent as the bearer key by default
	logs   *laureltest.Buffer
}

type options struct {
	cfg     lhttp.Config
	dir     string
	clock   *laureltest.Clock
	service laurel.Service // instead of a store
}

func start(t testing.TB, o options) *env {
	t.Helper()
	e := &env{t: t, dir: o.dir, clock: o.clock, logs: &laureltest.Buffer{}}
	if e.dir == "" {
		e.dir = t.TempDir()
	}
	if e.clock == nil {
		e.clock = laureltest.NewClock(t0.Format(time.RFC3339))
	}
	svc := o.service
	if svc == nil {
		store, err := embedded.Open(e.dir, embedded.Options{Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		e.store = store
		contests := competition.New(store, store, e.clock.Now) // as serve wires it
		svc, o.cfg.Contests, o.cfg.Watcher, o.cfg.MemberWatcher = contests, contests, store, store
		if o.cfg.Flags == nil {
			o.cfg.Flags = store
		}
		if o.cfg.Hooks == nil {
			e.hooks = &webhook.Outbox{Records: store, Service: contests, Results: contests.Results, Encode: lhttp.EncodeDelivery,
				EncodeFlag: lhttp.EncodeFlagDelivery, Now: e.clock.Now}
			o.cfg.Hooks = e.hooks
		}
	}
	if o.cfg.Logger == nil {
		o.cfg.Logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e.server = lhttp.NewServer(svc, o.cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.srv = &http.Server{Handler: e.server.Handler()}
	e.srv.RegisterOnShutdown(e.server.Close)
	go e.srv.Serve(ln)
	e.url = "http://" + ln.Addr().String()
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	if e.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.srv.Shutdown(ctx)
		e.srv = nil
	}
	if e.store != nil {
		if err := e.store.Close(); err != nil {
			e.t.Error(err)
		}
		e.store = nil
	}
}

// response is what a request got.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request with e.key and body (a string, or a value to encode), and decodes a JSON
// answer.
func (e *env) do(method, path string, body any) response {
	e.t.Helper()
	return e.doKey(e.key, method, path, body)
}

func (e *env) doKey(key, method, path string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: raw}
	if len(raw) > 0 {
		if ct := res.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
			if err := json.Unmarshal(raw, &r.body); err != nil {
				e.t.Fatalf("%s %s: answer is not a JSON object: %v: %s", method, path, err, raw)
			}
		}
	}
	return r
}

// must checks the status of a response and returns it.
func (r response) must(t testing.TB, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// is checks that the body equals want, a JSON document.
func (r response) is(t *testing.T, want string) response {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	var got any
	if err := json.Unmarshal(r.raw, &got); err != nil {
		t.Fatalf("answer is not JSON: %s", r.raw)
	}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("body\n got %s\nwant %s", compact(r.raw), compact([]byte(want)))
	}
	return r
}

// isError checks an error answer: status, code and field.
func (r response) isError(t *testing.T, status int, code, field string) response {
	t.Helper()
	r.must(t, status)
	e, ok := r.body["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object: %s", r.raw)
	}
	if e["code"] != code {
		t.Fatalf("code %v, want %s: %s", e["code"], code, r.raw)
	}
	gotField, _ := e["field"].(string)
	if gotField != field {
		t.Fatalf("field %q, want %q: %s", gotField, field, r.raw)
	}
	if _, has := e["field"]; field == "" && has {
		t.Fatalf("field present: %s", r.raw)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("no message: %s", r.raw)
	}
	if len(e) > 3 {
		t.Fatalf("extra keys in error: %s", r.raw)
	}
	if code == "unavailable" && r.header.Get("Retry-After") == "" {
		t.Fatalf("a 503 without Retry-After: %s", r.raw) // docs/api.md: it is always set
	}
	return r
}

// get returns the value at a path of keys and indices in the body.
func (r response) get(path ...any) any {
	var v any = r.body
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}
