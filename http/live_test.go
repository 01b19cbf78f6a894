package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	lhttp "github.com/laurel/laurel/http"
)

// sseEvent is one server-sent event, or a comment (event "comment").
type sseEvent struct {
	event string
	data  string
}

// openStream opens a stream and returns its events as they arrive; the channel closes when the
// stream ends.
func (e *env) openStream(path string) (<-chan sseEvent, *http.Response) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	ch := make(chan sseEvent, 1000)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		readSSE(res.Body, ch)
	}()
	return ch, res
}

func readSSE(r io.Reader, ch chan<- sseEvent) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.event != "" {
				ch <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ch <- sseEvent{event: "comment", data: strings.TrimSpace(line[1:])}
		case strings.HasPrefix(line, "event: "):
			ev.event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data += line[len("data: "):]
		}
	}
}

// next returns the next event other than a comment, failing after wait.
func next(t *testing.T, ch <-chan sseEvent, wait time.Duration) sseEvent {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended")
			}
			if ev.event != "comment" {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event within %s", wait)
		}
	}
}

// TestStream: the first event is the page GET /entries answers; a change is pushed within a
// second; a board deleted under a stream ends it with an error event.
func TestStream(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/g", map[string]any{"windows": []string{"all", "day"}}).must(t, 201)
	e.do("POST", "/v1/boards/g/events", `{"events": [{"member": "a", "value": 5, "name": "Ann"}, {"member": "b", "value": 3}]}`).must(t, 200)

	ch, res := e.openStream("/v1/boards/g/stream?window=day&limit=2")
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	first := next(t, ch, 5*time.Second)
	want := e.do("GET", "/v1/boards/g/entries?window=day&limit=2", nil).must(t, 200)
	if first.event != "page" || compact([]byte(first.data)) != compact(want.raw) {
		t.Fatalf("first event %s %s\nwant page %s", first.event, first.data, want.raw)
	}

	e.do("POST", "/v1/boards/g/events", `{"member": "c", "value": 9, "name": "Cy"}`).must(t, 200)
	ev := next(t, ch, time.Second)
	want = e.do("GET", "/v1/boards/g/entries?window=day&limit=2", nil).must(t, 200)
	if ev.event != "page" || compact([]byte(ev.data)) != compact(want.raw) || !strings.Contains(ev.data, `"Cy"`) {
		t.Fatalf("pushed %s %s\nwant page %s", ev.event, ev.data, want.raw)
	}

	// A profile change shows in the page too.
	e.do("PUT", "/v1/members/a", `{"name": "Anna"}`).must(t, 200)
	if ev := next(t, ch, time.Second); !strings.Contains(ev.data, `"Anna"`) {
		t.Fatalf("after renaming a: %s", ev.data)
	}

	e.do("DELETE", "/v1/boards/g", nil).must(t, 204)
	ev = next(t, ch, time.Second)
	if ev.event != "error" || !strings.Contains(ev.data, `"not_found"`) {
		t.Fatalf("after deleting the board: %s %s", ev.event, ev.data)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatalf("the stream went on after its board was deleted")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the stream did not end after its board was deleted")
	}
}

func TestStreamErrors(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Read: []string{"r"}}}})
	e.key = "r"
	e.do("GET", "/v1/boards/nope/stream", nil).isError(t, 404, "not_found", "board")
	e.key = ""
	e.do("GET", "/v1/boards/nope/stream", nil).isError(t, 401, "unauthenticated", "")
	// An EventSource cannot send headers: the key may come as ?key=, on the stream only.
	e.do("GET", "/v1/boards/nope/stream?key=r", nil).isError(t, 404, "not_found", "board")
	e.do("GET", "/v1/boards/nope/entries?key=r", nil).isError(t, 401, "unauthenticated", "")
	e.do("GET", "/v1/boards/nope/stream?key=x", nil).isError(t, 401, "unauthenticated", "")
}

func TestStreamBadQueries(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/g", map[string]any{"windows": []string{"all", "week"}}).must(t, 201)
	e.do("GET", "/v1/boards/g/stream?window=day", nil).isError(t, 400, "invalid_argument", "window")
	e.do("GET", "/v1/boards/g/stream?limit=101", nil).isError(t, 400, "invalid_argument", "limit")
	e.do("GET", "/v1/boards/g/stream?limit=0", nil).isError(t, 400, "invalid_argument", "limit")
	e.do("GET", "/v1/boards/g/stream?at=2026-11-22T10:00:00Z", nil).isError(t, 400, "invalid_argument", "at")
	e.do("GET", "/v1/boards/g/stream?period=2026-11-16", nil).isError(t, 400, "invalid_argument", "period")
}

// TestStreamCoalesces: a burst of changes reaches a stream as at most ten pages a second, the
// last of them the final state.
func TestStreamCoalesces(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/g", `{}`).must(t, 201)
	e.do("POST", "/v1/boards/g/events", `{"member": "a", "value": 1}`).must(t, 200)
	ch, _ := e.openStream("/v1/boards/g/stream")
	next(t, ch, 5*time.Second)

	const writes = 60
	begin := time.Now()
	for i := range writes {
		e.do("POST", "/v1/boards/g/events?ranks=false", fmt.Sprintf(`{"member": "m%d", "value": %d}`, i%7, i)).must(t, 200)
	}
	want := compact(e.do("GET", "/v1/boards/g/entries", nil).must(t, 200).raw)
	pages := 0
	for {
		ev := next(t, ch, 2*time.Second)
		pages++
		if compact([]byte(ev.data)) == want {
			break
		}
	}
	took := time.Since(begin)
	// Ten a second, plus one for the window the burst began in.
	if limit := int(took/(100*time.Millisecond)) + 1; pages > limit || pages >= writes {
		t.Fatalf("%d writes in %s reached the stream as %d pages; at most %d allowed", writes, took, pages, limit)
	}
	t.Logf("%d writes in %s: %d pages", writes, took, pages)
}

// TestStreamPing: a comment keeps idle streams open.
func TestStreamPing(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{StreamPing: 20 * time.Millisecond}})
	e.do("PUT", "/v1/boards/g", `{}`).must(t, 201)
	ch, _ := e.openStream("/v1/boards/g/stream")
	next(t, ch, 5*time.Second)
	select {
	case ev := <-ch:
		if ev.event != "comment" || ev.data != "ping" {
			t.Fatalf("got %v, want a ping", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no ping")
	}
}

// TestStreamSlowConsumerDropped: a client that stops reading is dropped, while writes and the
// other streams go on.
func TestStreamSlowConsumerDropped(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/g", `{}`).must(t, 201)
	// Big pages fill the socket buffers quickly: 100 members with 2 KiB of metadata each.
	meta := fmt.Sprintf(`{"bio": %q}`, strings.Repeat("x", 2000))
	var batch []map[string]any
	for i := range 100 {
		e.do("PUT", fmt.Sprintf("/v1/members/m%03d", i), fmt.Sprintf(`{"name": "Member %d", "metadata": %s}`, i, meta)).must(t, 200)
		batch = append(batch, map[string]any{"member": fmt.Sprintf("m%03d", i), "value": i})
	}
	e.do("POST", "/v1/boards/g/events", map[string]any{"events": batch}).must(t, 200)

	const path = "/v1/boards/g/stream?limit=100&metadata=true"
	stuck := dialStuck(t, e.url, path)
	defer stuck.Close()
	healthy, _ := e.openStream(path)
	next(t, healthy, 5*time.Second)

	dropped := func() bool {
		m := e.do("GET", "/metrics", nil).must(t, 200)
		return strings.Contains(string(m.raw), "laurel_streams_dropped_total 1")
	}
	deadline := time.Now().Add(60 * time.Second)
	i := 0
	for !dropped() {
		if time.Now().After(deadline) {
			t.Fatalf("the stuck stream was not dropped after %d writes", i)
		}
		// Every write changes the page; each returns while the stuck client reads nothing.
		e.do("POST", "/v1/boards/g/events?ranks=false", fmt.Sprintf(`{"member": "m%03d", "value": 1000}`, i%100)).must(t, 200)
		i++
		time.Sleep(50 * time.Millisecond)
		// The healthy stream keeps up.
		for len(healthy) > 0 {
			<-healthy
		}
	}
	t.Logf("dropped after %d writes", i)
	e.do("POST", "/v1/boards/g/events", `{"member": "z", "value": 100000}`).must(t, 200)
	for {
		if ev := next(t, healthy, 2*time.Second); strings.Contains(ev.data, `"member":"z"`) {
			break
		}
	}
}

// dialStuck sends a stream request on a connection with a tiny receive buffer and never reads.
func dialStuck(t *testing.T, base, path string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	host := strings.TrimPrefix(base, "http://")
	conn, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host)
	return conn
}

// TestStreamEndsOnShutdown: a graceful shutdown ends open streams at once instead of waiting
// for them.
func TestStreamEndsOnShutdown(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/g", `{}`).must(t, 201)
	ch, _ := e.openStream("/v1/boards/g/stream")
	next(t, ch, 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (the stream held it up)", err)
	}
	e.srv = nil
	for ev := range ch {
		if ev.event != "comment" {
			t.Fatalf("unexpected event after shutdown: %v", ev)
		}
	}
}

// TestHistoryHTTP: the points of a member, newest first, as docs/api.md words them.
func TestHistoryHTTP(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/g", map[string]any{"windows": []string{"all", "day"}}).must(t, 201)
	e.do("POST", "/v1/boards/g/events", `{"member": "b", "value": 5}`).must(t, 200)
	e.do("POST", "/v1/boards/g/events", `{"member": "a", "value": 3}`).must(t, 200)
	e.clock.Advance(time.Minute)
	e.do("POST", "/v1/boards/g/events", `{"member": "a", "value": 4}`).must(t, 200)
	e.do("GET", "/v1/boards/g/members/a/history", nil).must(t, 200).is(t, `{"points": [
		{"at": "2026-11-22T10:01:00.000Z", "score": 7, "rank": 1},
		{"at": "2026-11-22T10:00:00.000Z", "score": 3, "rank": 2}]}`)
	e.do("GET", "/v1/boards/g/members/a/history?window=day&limit=1", nil).must(t, 200).is(t, `{"points": [
		{"at": "2026-11-22T10:01:00.000Z", "score": 7, "rank": 1}]}`)
	e.do("GET", "/v1/boards/g/members/zed/history", nil).must(t, 200).is(t, `{"points": []}`)
	e.do("GET", "/v1/boards/nope/members/a/history", nil).isError(t, 404, "not_found", "board")
	e.do("GET", "/v1/boards/g/members/a/history?limit=1001", nil).isError(t, 400, "invalid_argument", "limit")
	// It has no instant or period to read at (both were taken and ignored).
	e.do("GET", "/v1/boards/g/members/a/history?period=2026-11-22", nil).isError(t, 400, "invalid_argument", "period")
	e.do("GET", "/v1/boards/g/members/a/history?at=2026-11-22T10:00:00Z", nil).isError(t, 400, "invalid_argument", "at")
	e.do("GET", "/v1/boards/g/members/a/history?window=week", nil).isError(t, 400, "invalid_argument", "window")

	var raw json.RawMessage = e.do("GET", "/v1/boards/g/members/a/history", nil).raw
	if !strings.HasSuffix(string(raw), "\n") {
		t.Fatalf("no trailing newline: %q", raw)
	}
}
