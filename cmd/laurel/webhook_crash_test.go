package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/webhook"
)

// TestWebhookAfterKill kills laurel (kill -9) while a closed period's delivery is failing at
// its receiver, and finds it delivered after the restart: the outbox is on disk, not in the
// process.
func TestWebhookAfterKill(t *testing.T) {
	if args := os.Getenv("LAUREL_TEST_NODE_ARGS"); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		os.Exit(run(ctx, strings.Split(args, "\x1f"), io.Discard, os.Stderr))
	}
	const secret = "a-secret-of-16-bytes-or-more"
	var (
		mu       sync.Mutex
		failing  = true
		attempts int
		applied  = map[string][]byte{}
	)
	receiver := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body, time.Now(), time.Minute); err != nil {
			t.Errorf("a delivery failed its signature: %v", err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if failing {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if _, ok := applied[r.Header.Get(webhook.HeaderDelivery)]; !ok {
			applied[r.Header.Get(webhook.HeaderDelivery)] = body
		}
	})}
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go receiver.Serve(rl)
	defer receiver.Close()

	// The store as a game left it two days ago: a board whose day has closed since, and a
	// hook made before it closed.
	dir := t.TempDir()
	then := time.Now().Add(-48 * time.Hour).UnixMilli()
	s, err := embedded.Open(dir, embedded.Options{Now: func() int64 { return then }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec := laurel.BoardSpec{Windows: []string{"day"}, LateLimit: ptr("1h"),
		Rewards: laurel.Rewards{{Window: "day", Ranks: []int{1, 2}, Reward: json.RawMessage(`{"chest":"gold"}`)}}}
	if _, _, err := s.PutBoard(ctx, "daily", spec); err != nil {
		t.Fatal(err)
	}
	hooks := &webhook.Outbox{Records: s, Service: s, Encode: lhttp.EncodeDelivery, Now: func() int64 { return then }}
	if _, _, err := hooks.Put(ctx, "game", laurel.HookSpec{URL: ptr("http://" + rl.Addr().String() + "/results"), Secret: ptr(secret)}); err != nil {
		t.Fatal(err)
	}
	evs := []laurel.Event{{Board: "daily", Member: "ann", Value: 30}, {Board: "daily", Member: "ben", Value: 20}, {Board: "daily", Member: "cy", Value: 10}}
	if _, err := s.Submit(ctx, evs, laurel.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	day := time.UnixMilli(then).UTC().Format(time.DateOnly)
	id := "game:daily:day:" + day + ":1"

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	node := &faultNode{t: t, url: "http://" + addr, log: &laureltest.Buffer{}, test: "TestWebhookAfterKill",
		args: []string{"serve", "-addr", addr, "-data", dir, "-webhook-interval", "50ms", "-webhook-timeout", "1s"}}
	node.start()
	defer node.stop()
	laureltest.Within(t, 20*time.Second, "two failed attempts; laurel's log:\n"+node.log.String(), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts >= 2
	})
	node.kill()

	mu.Lock()
	failing = false
	mu.Unlock()
	node.start()
	laureltest.Within(t, 30*time.Second, "the delivery after the restart; laurel's log:\n"+node.log.String(), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return applied[id] != nil
	})
	mu.Lock()
	var body struct {
		Delivery string
		Results  []struct {
			Rank   int
			Member string
			Reward json.RawMessage
		}
	}
	err = json.Unmarshal(applied[id], &body)
	mu.Unlock()
	if err != nil || body.Delivery != id || len(body.Results) != 2 || body.Results[0].Member != "ann" || body.Results[1].Member != "ben" ||
		string(body.Results[1].Reward) != `{"chest":"gold"}` {
		t.Fatalf("delivered %+v (%v)", body, err)
	}
	laureltest.Within(t, 10*time.Second, "the delivery recorded as delivered", func() bool {
		_, out := do(t, "GET", node.url+"/v1/hooks/game/deliveries/"+id, "")
		return out["state"] == laurel.DeliveryDelivered
	})
	resp, err := http.Get(node.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `laurel_webhook_attempts_total{state="delivered"} 1`) {
		t.Errorf("/metrics does not count the delivery:\n%s", metrics)
	}
	status, out := do(t, "GET", node.url+"/v1/boards/daily/periods/"+day+"/results?window=day", "")
	if status != http.StatusOK || out["rewarded"] != 2.0 {
		t.Fatalf("GET results: %d %v", status, out)
	}
}
