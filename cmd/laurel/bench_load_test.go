package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestPreloadSendsAgainWhenUnavailable: a preload's batch answered 503 (the server's writes
// queued past their deadline) is sent again, ids and all, until it is taken; any other refusal
// ends the bench at once.
func TestPreloadSendsAgainWhenUnavailable(t *testing.T) {
	for _, c := range []struct {
		name      string
		refusals  int32 // how many answers before a 200
		status    int
		wantErr   bool
		wantSends int32
	}{
		{"503 twice, then taken", 2, http.StatusServiceUnavailable, false, 3},
		{"400: not sent again", 1, http.StatusBadRequest, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sends atomic.Int32
			var bodies [2]string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := sends.Add(1)
				buf := make([]byte, 1<<16)
				k, _ := r.Body.Read(buf)
				if n <= 2 {
					bodies[n-1] = string(buf[:k])
				}
				if n <= c.refusals {
					http.Error(w, `{"error":{"code":"unavailable"}}`, c.status)
					return
				}
				w.Write([]byte(`{"results":[]}`))
			}))
			defer srv.Close()
			tgt := newLaurelTarget(benchConfig{url: srv.URL, board: "b", run: "r1", writers: 1})
			err := tgt.load(context.Background(), []int{1, 2, 3})
			if (err != nil) != c.wantErr || sends.Load() != c.wantSends {
				t.Fatalf("load: %v after %d sends; want error %v after %d", err, sends.Load(), c.wantErr, c.wantSends)
			}
			if c.wantSends > 1 && bodies[0] != bodies[1] {
				t.Fatalf("sent again with another body:\n%s\n%s", bodies[0], bodies[1])
			}
		})
	}
}
