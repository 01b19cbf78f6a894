package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestRebuildAllPasses: the boards rebuilt before the index failed are rebuilt again, since
// the failure may have been a restart that lost them, and so are those found lost at the end
// (a flush fails nothing); a board deleted meanwhile is skipped, unless it was the one asked
// for; a failure in every pass gives up.
func TestRebuildAllPasses(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	var log bytes.Buffer
	quiet := slog.New(slog.NewTextHandler(&log, nil))
	for _, c := range []struct {
		name    string
		fail    map[string]int // a board's tries that fail, by board
		lost    map[string]int // how many times a board is found lost once all are done
		missing string
		named   bool
		want    []string // the boards rebuilt, in order
		n       int
		err     string
	}{
		{name: "no failure", want: ids, n: 5},
		{name: "a failure at c", fail: map[string]int{"c": 1}, want: []string{"a", "b", "c", "d", "e", "a", "b"}, n: 5},
		{name: "at the first board", fail: map[string]int{"a": 2}, want: ids, n: 5},
		{name: "at e, then at b", fail: map[string]int{"e": 1, "b": 2}, want: []string{"a", "b", "c", "d", "e", "a", "b", "c", "d", "a"}, n: 5},
		{name: "in every pass", fail: map[string]int{"e": 1, "d": 2, "c": 3}, err: "during each of 3 passes"},
		{name: "lost to a flush", lost: map[string]int{"b": 1, "d": 1}, want: []string{"a", "b", "c", "d", "e", "b", "d"}, n: 5},
		{name: "lost in every pass", lost: map[string]int{"b": 3}, err: "during each of 3 passes"},
		{name: "deleted", missing: "b", want: []string{"a", "c", "d", "e"}, n: 4},
		{name: "deleted, named", missing: "b", named: true, want: []string{"a"}, err: `no board "b"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fail, lost := maps.Clone(c.fail), maps.Clone(c.lost)
			var got []string
			n, err := rebuildAll(ids, c.named, func(id string, tell func(error)) error {
				if id == c.missing {
					return laurel.Errorf(laurel.ENotFound, "no board %q", id)
				}
				// The try fails once (a backend that comes back), the next pass again if
				// asked; the failure is told, then the board is rebuilt.
				if fail[id] > 0 {
					fail[id]--
					tell(fmt.Errorf("unavailable"))
				}
				got = append(got, id)
				return nil
			}, func(id string) (bool, error) {
				if lost[id] > 0 {
					lost[id]--
					return true, nil
				}
				return false, nil
			}, quiet, newProgress(&log, "rebuilding", int64(len(ids)), false))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, %v; want an error saying %q", got, err, c.err)
				}
				return
			}
			if err != nil || n != c.n || !slices.Equal(got, c.want) {
				t.Fatalf("rebuilt %v (%d), %v; want %v (%d)", got, n, err, c.want, c.n)
			}
		})
	}
}

// TestRebuildThroughRedisFaults: Redis killed and started again, empty, or flushed, in the
// middle of a rebuild: the rebuild waits for it, rebuilds again the boards it had rebuilt
// before, and the index matches the store. It exited 1 after a restart, and reported
// success after a flush with the boards before it missing from the index.
func TestRebuildThroughRedisFaults(t *testing.T) {
	for _, fault := range []string{"restart", "flush"} {
		t.Run(fault, func(t *testing.T) {
			store := laureltest.NewScaleOutStore(t)
			r := laureltest.NewPrivateRedis(t)
			args := []string{"-postgres", store.DSN, "-redis", r.Addr, "-redis-prefix", store.Prefix}
			const boards = 150
			url, stop := startServe(t, t.TempDir(), nil, args...)
			for i := range boards {
				if code, body := do(t, "PUT", fmt.Sprintf("%s/v1/boards/b%d", url, i), `{"windows": ["all", "day"]}`); code != http.StatusCreated {
					t.Fatalf("create board: %d %v", code, body)
				}
				if code, body := do(t, "POST", fmt.Sprintf("%s/v1/boards/b%d/events", url, i), `{"member": "m", "value": 1}`); code != http.StatusOK {
					t.Fatalf("submit: %d %v", code, body)
				}
			}
			if code := stop(); code != 0 {
				t.Fatalf("serve exited %d", code)
			}
			r.FlushAll()
			var stdout, stderr laureltest.Buffer
			done := make(chan int, 1)
			go func() {
				done <- run(context.Background(), append([]string{"rebuild", "-check", "-wait", "20s"}, args...), &stdout, &stderr)
			}()
			// Once a tenth of the boards are back in Redis, it loses them.
			laureltest.Within(t, 20*time.Second, "the rebuild under way", func() bool { return r.DBSize() >= boards/10*4 })
			if fault == "flush" {
				r.FlushAll()
			} else {
				r.Kill()
				time.Sleep(300 * time.Millisecond)
				r.Start()
			}
			select {
			case code := <-done:
				if code != 0 || !strings.Contains(stdout.String(), fmt.Sprintf("rebuilt the index of %d board(s)", boards)) ||
					!strings.Contains(stdout.String(), "the index matches the store") {
					t.Fatalf("rebuild: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("the rebuild did not end\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), "rebuilding those boards again") {
				t.Fatalf("the rebuild did not say it went over the boards again:\n%s", stderr.String())
			}
		})
	}
}
