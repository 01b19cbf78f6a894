package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/laurel/laurel/embedded"
	lhttp "github.com/laurel/laurel/http"
)

// runServe is `laurel serve`: the HTTP API on the embedded store (API.md, "Running"). It
// listens at once, answering /readyz with 503 until the store is recovered, and stops cleanly
// on SIGTERM or SIGINT: requests in flight finish, then the store is flushed and closed.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	addr := fs.String("addr", "127.0.0.1:7300", "address to listen on")
	data := fs.String("data", "./laurel-data", "directory of the embedded store (created if missing)")
	rate := fs.Float64("rate-limit", 0, "requests per second allowed per key (or per address without a key); 0: no limit")
	burst := fs.Int("rate-burst", 0, "requests a key may send at once above its rate; 0: the rate")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return usageError{fmt.Errorf("-log-level: %v", err)}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lv}))

	cfg := lhttp.Config{
		Keys: lhttp.Keys{
			Admin: keyList("LAUREL_ADMIN_KEY"),
			Write: keyList("LAUREL_WRITE_KEY"),
			Read:  keyList("LAUREL_READ_KEY"),
		},
		PublicRead: os.Getenv("LAUREL_PUBLIC_READ") == "true",
		RateLimit:  lhttp.RateLimit{PerSecond: *rate, Burst: *burst},
		Logger:     log,
	}
	open := len(cfg.Keys.Admin)+len(cfg.Keys.Write)+len(cfg.Keys.Read) == 0
	if open {
		if !loopback(*addr) {
			return usageError{fmt.Errorf("no keys are configured (LAUREL_ADMIN_KEY, LAUREL_WRITE_KEY, LAUREL_READ_KEY), so the API would be open to anyone: refusing to listen on %s, which is not a loopback address", *addr)}
		}
		log.Warn("no keys configured: the API is open to anyone who can reach it; listening on loopback only")
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// Until the store is recovered, every request but /healthz is 503.
	var handler atomic.Pointer[http.Handler]
	recovering := lhttp.Recovering()
	handler.Store(&recovering)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "data", *data)

	var api atomic.Pointer[lhttp.Server]
	engine, err := embedded.Open(*data, embedded.Options{
		Logger: log,
		OnCommit: func(ops, _ int, took time.Duration) {
			if s := api.Load(); s != nil {
				s.ObserveCommit(ops, took)
			}
		},
	})
	if err != nil {
		srv.Close()
		return err
	}
	s := lhttp.NewServer(engine, cfg)
	srv.RegisterOnShutdown(s.Close) // live streams end, so that shutting down need not wait for them
	api.Store(s)
	h := s.Handler()
	handler.Store(&h)
	log.Info("ready")

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	log.Info("stopping")
	stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if shutErr := srv.Shutdown(stop); shutErr != nil {
		log.Error("stopping the listener", "err", shutErr)
	}
	if closeErr := engine.Close(); closeErr != nil {
		return closeErr
	}
	log.Info("stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// keyList reads a comma-separated list of keys from the environment.
func keyList(name string) []string {
	var keys []string
	for k := range strings.SplitSeq(os.Getenv(name), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// loopback reports whether addr (host:port) listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
