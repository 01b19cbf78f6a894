package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
	"github.com/laurel/laurel/embedded"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/webhook"
)

// serveEnvironment lists the variables serve reads, for -h.
const serveEnvironment = `
Environment:
  LAUREL_ADMIN_KEY, LAUREL_WRITE_KEY, LAUREL_READ_KEY
    	comma-separated API keys of each scope, sent as Authorization: Bearer <key>
  LAUREL_PUBLIC_READ
    	"true": reads need no key
  LAUREL_TOKEN_SECRETS
    	kid=secret pairs, comma-separated: the secrets of member tokens (HS256 JWTs, at least 32 bytes)
  LAUREL_POSTGRES, LAUREL_REDIS
    	the scale-out store, as -postgres and -redis
`

// runServe is `laurel serve`: the HTTP API on the embedded store (docs/api.md, "Running"), or,
// with -postgres and -redis, on the scale-out store. It listens at once, answering /readyz
// with 503 until the store is recovered, and stops cleanly on SIGTERM or SIGINT: requests in
// flight finish, then the store is flushed and closed.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage of laurel serve:")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), serveEnvironment)
	}
	addr := fs.String("addr", "127.0.0.1:7300", "address to listen on")
	data := fs.String("data", "./laurel-data", "directory of the embedded store (created if missing)")
	scale := scaleOutFlags(fs)
	maintenance := fs.Duration("maintenance", time.Second, "scale-out: how often to catch up every board and check its index (each pass reads every board's row and index state)")
	cachedAggs := fs.Int("cached-aggregates", postgres.DefaultCachedAggregates, "scale-out: how many aggregates a node keeps from its own writes, so that its next writes to the same shards need not read them (0: none)")
	shards := fs.Int("shards", postgres.DefaultShards, "scale-out: how many shards the members of each board created are split into, each written in parallel (laurel rebuild -shards changes a board's)")
	rate := fs.Float64("rate-limit", 0, "requests per second allowed per key; 0: no limit")
	burst := fs.Int("rate-burst", 0, "requests a key may send at once, the size of its bucket; 0: the rate (at least 1)")
	addrRate := fs.Float64("address-rate-limit", -1, fmt.Sprintf("requests per second allowed per client address without a valid key; 0: no limit; -1: %v when keys are configured, none on an open (loopback-only) server", defaultAddressRate))
	addrBurst := fs.Int("address-rate-burst", 0, fmt.Sprintf("requests an address may send at once, the size of its bucket; 0: twice the rate (%d by default)", int(2*defaultAddressRate)))
	proxies := fs.String("trusted-proxies", "", "comma-separated addresses or CIDR prefixes of the proxies in front of laurel, whose X-Forwarded-For names the client")
	corsOrigins := fs.String("cors-origins", "", "comma-separated web origins (https://game.example) whose pages may call the API from a browser, or * for any; none by default")
	tokenAudience := fs.String("token-audience", "laurel", "the audience (aud) member tokens must name")
	tokenLife := fs.Duration("token-max-lifetime", 24*time.Hour, "the longest a member token may live (exp − iat)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM, with its chain); reloaded when the file changes")
	tlsKey := fs.String("tls-key", "", "the private key (PEM) of -tls-cert")
	timeout := fs.Duration("request-timeout", lhttp.DefaultRequestTimeout, "longest a request (but a live stream) waits for the store before it is answered 503 unavailable")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	config := fs.String("config", "", "JSON file of keys (admin_keys, write_keys, read_keys), public_read and token_secrets, beside the environment's")
	cache := fs.Int64("cache", 32, "MiB of Pebble's block cache, beyond its memtables")
	memtable := fs.Int64("memtable", 64, "MiB of one Pebble memtable (the store holds up to two, its log two of half the size): larger absorbs more rewrites of hot members before they reach disk")
	lag := fs.Int("checkpoint-lag", 1<<14, "events after which an aggregate changed by a submit is written to disk (events are at once): the most a restart after a crash replays")
	sealEvents := fs.Int("seal-events", 1<<16, "events the log holds before they are sealed into the store: what memory indexes beyond it, and what a restart reads back from the log")
	budget := descriptors()
	maxConns := fs.Int("max-conns", budget.conns, fmt.Sprintf("connections served at once; more are answered 503 and closed; by default the descriptor limit (%d here) less %d for the store's files and %d spare", budget.limit, budget.storeFiles, spareDescriptors))
	hookEvery := fs.Duration("webhook-interval", time.Second, "how often webhooks look for periods closed and send the deliveries due")
	hookTimeout := fs.Duration("webhook-timeout", 10*time.Second, "longest a webhook's receiver may take to answer a delivery; an attempt is leased for three times as long")
	memLimit := fs.Int64("memory-limit", 0, fmt.Sprintf("MiB the Go runtime may hold: its memory limit, which the garbage collector steers by as the heap nears it; 0: %.0f%% of the machine's memory, or of the container's limit, less what the embedded store holds outside the Go heap (-cache and the memtables); the GOMEMLIMIT environment variable, when set, decides instead of that default", memoryShare*100))
	procs := fs.Int("procs", 0, fmt.Sprintf("processors (GOMAXPROCS) laurel runs on; 0: on the embedded store %d more than the cores (or the container's CPU limit), so that reads are taken at once while writes keep the cores busy, on the scale-out store as many; the GOMAXPROCS environment variable, when set, decides instead of that default", spareProcs))
	minFree := minFreeFlag(fs, "writes are refused (503)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	scale.givenData(fs)
	if *cache < 1 || *memtable < 1 {
		return usageError{fmt.Errorf("-cache and -memtable must be at least 1 (MiB)")}
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageError{fmt.Errorf("give -tls-cert and -tls-key together")}
	}
	if *lag < 1 {
		return usageError{fmt.Errorf("-checkpoint-lag must be at least 1 (events)")}
	}
	if *sealEvents < 1 {
		return usageError{fmt.Errorf("-seal-events must be at least 1 (events)")}
	}
	if *maxConns < 1 {
		return usageError{fmt.Errorf("-max-conns must be at least 1")}
	}
	if *memLimit < 0 {
		return usageError{fmt.Errorf("-memory-limit must be 0 (the default) or MiB")}
	}
	if *procs < 0 {
		return usageError{fmt.Errorf("-procs must be 0 (the default) or a number of processors")}
	}
	minFreeDisk, err := minFree()
	if err != nil {
		return err
	}
	if err := scale.check(); err != nil {
		return err
	}
	if *maintenance <= 0 {
		return usageError{fmt.Errorf("-maintenance must be positive")}
	}
	if *cachedAggs < 0 {
		return usageError{fmt.Errorf("-cached-aggregates must be 0 or more")}
	}
	if *shards < 1 || *shards > postgres.MaxShards {
		return usageError{fmt.Errorf("-shards must be 1 to %d", postgres.MaxShards)}
	}
	if *timeout <= 0 {
		return usageError{fmt.Errorf("-request-timeout must be positive")}
	}
	if *rate < 0 || *burst < 0 {
		return usageError{fmt.Errorf("-rate-limit and -rate-burst must not be negative (0: no limit; the burst 0: the rate)")}
	}
	if *addrRate < -1 || *addrBurst < 0 {
		return usageError{fmt.Errorf("-address-rate-limit must be -1 (the default), 0 (no limit) or a rate, and -address-rate-burst not negative")}
	}
	if *hookEvery <= 0 || *hookTimeout <= 0 {
		return usageError{fmt.Errorf("-webhook-interval and -webhook-timeout must be positive")}
	}
	if *tokenLife <= 0 {
		return usageError{fmt.Errorf("-token-max-lifetime must be positive")}
	}
	if *tokenAudience == "" {
		return usageError{fmt.Errorf("-token-audience must not be empty")}
	}
	trusted, err := parseProxies(*proxies)
	if err != nil {
		return usageError{fmt.Errorf("-trusted-proxies: %w", err)}
	}
	origins, err := parseOrigins(*corsOrigins)
	if err != nil {
		return usageError{fmt.Errorf("-cors-origins: %w", err)}
	}
	if err := checkAddr(*addr); err != nil {
		return usageError{fmt.Errorf("-addr: %w", err)}
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return usageError{fmt.Errorf("-log-level: %q: want debug, info, warn or error", *level)}
	}
	// Repeated warnings and errors (a failing store answers every request with one) are
	// summarised every 10 s after the first 5.
	log := slog.New(newQuietHandler(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lv, ReplaceAttr: humanDurations}), 10*time.Second, 5))
	acc, exposed, err := serveKeys(*config)
	if err != nil {
		return usageError{err}
	}
	if exposed {
		log.Warn("the key file can be read by other users than its owner", "config", *config)
	}
	log.Info("processors", "gomaxprocs", setProcs(*procs, scale.on()), "cores", runtime.NumCPU())
	outside := int64(0) // what the store holds beyond the Go heap
	if !scale.on() {
		outside = (*cache + 3**memtable) << 20
	}
	log.Info("garbage collection", "gogc", setGC(scale.on()), "memory_limit_mib", setMemoryLimit(*memLimit, outside)>>20)

	cfg := lhttp.Config{
		Keys:           acc.keys,
		Tokens:         lhttp.Tokens{Secrets: acc.tokenSecrets, Audience: *tokenAudience, MaxLifetime: *tokenLife},
		PublicRead:     acc.publicRead,
		RateLimit:      lhttp.RateLimit{PerSecond: *rate, Burst: *burst},
		TrustedProxies: trusted,
		Logger:         log,
		RequestTimeout: *timeout,
		CORSOrigins:    origins,
	}
	if *addrRate == -1 {
		*addrRate = defaultAddressRate
		if cfg.Open() {
			*addrRate = 0
		}
	}
	if *addrBurst == 0 {
		*addrBurst = int(math.Ceil(2 * *addrRate))
	}
	cfg.AddressRateLimit = lhttp.RateLimit{PerSecond: *addrRate, Burst: *addrBurst}
	if cfg.Open() {
		if !loopback(*addr) {
			return usageError{fmt.Errorf("no keys are configured (LAUREL_ADMIN_KEY, LAUREL_WRITE_KEY, LAUREL_READ_KEY), so the API would be open to anyone: refusing to listen on %s, which is not a loopback address", *addr)}
		}
		log.Warn("no keys configured: the API is open to anyone who can reach it; listening on loopback only")
	}

	var tc *tls.Config
	if *tlsCert != "" {
		if tc, err = tlsConfig(*tlsCert, *tlsKey, log); err != nil {
			return usageError{err}
		}
	}
	srv, err := listen(*addr, cfg, tc, *maxConns, log)
	if err != nil {
		return err
	}
	srv.hookEvery, srv.hookTimeout = *hookEvery, *hookTimeout
	if scale.on() {
		err = srv.openScaleOut(ctx, scale, postgres.Options{Maintenance: *maintenance, Shards: *shards, CachedAggregates: cmp.Or(*cachedAggs, -1)})
	} else {
		err = srv.open(*data, embedded.Options{CacheSize: *cache << 20, MemTableSize: *memtable << 20, MinFreeDisk: minFreeDisk, MaxOpenFiles: budget.storeFiles, CheckpointLag: *lag, SealEvents: *sealEvents})
	}
	if errors.Is(err, errStopped) {
		return nil
	}
	if err != nil {
		return err
	}
	if terminal(stderr) {
		// For the person at the terminal, among log lines made for machines.
		fmt.Fprintf(stderr, "laurel is ready at %s/ (boards; the admin console at /admin, the API under /v1). Ctrl-C stops it.\n", srv.url)
	}
	return srv.wait(ctx)
}

// defaultAddressRate is the requests per second an address may send without a valid key,
// on a server with keys: far above what one player's page or game needs, far below a flood.
const defaultAddressRate = 50

// parseProxies reads -trusted-proxies: addresses or CIDR prefixes, comma-separated.
func parseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", item)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// parseOrigins reads -cors-origins: "*", or origins as a browser sends them in its Origin
// header (scheme://host[:port], nothing after), comma-separated.
func parseOrigins(list string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if item != "*" {
			u, err := url.Parse(item)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
				u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(item, "?") || strings.HasSuffix(item, "#") {
				return nil, fmt.Errorf("%q is not an origin such as https://game.example or http://127.0.0.1:8080", item)
			}
			item = strings.ToLower(item)
		}
		out = append(out, item)
	}
	return out, nil
}

// minFreeFlag defines -min-free, the free disk (MiB) the embedded store keeps so that Pebble
// has room to flush, for serve and import; what says what happens below it. Its result is
// embedded.Options.MinFreeDisk.
func minFreeFlag(fs *flag.FlagSet, what string) func() (int64, error) {
	mib := fs.Int64("min-free", 0, "MiB of free disk below which "+what+", so that the store keeps room to flush; 0: 4 memtables of the store and 2 of its log, at least 64; -1: no guard")
	return func() (int64, error) {
		if *mib < -1 {
			return 0, usageError{fmt.Errorf("-min-free must be -1 (no guard), 0 (the default) or a number of MiB")}
		}
		return *mib << 20, nil
	}
}

// errStopped says serve was told to stop before its store was open.
var errStopped = errors.New("stopped")

// store is what serve runs the API on: the embedded store or the scale-out one.
type store interface {
	laurel.Service
	laurel.Records
	laurel.FlagStore
	laurel.Watcher
	laurel.MemberWatcher
	Close() error
}

// server is the HTTP API on the embedded store, as serve and demo run it.
type server struct {
	log     *slog.Logger
	cfg     lhttp.Config
	http    *http.Server
	url     string
	handler atomic.Pointer[http.Handler]
	api     atomic.Pointer[lhttp.Server]
	store   store
	served  chan error
	// hooks stops the webhook dispatcher, before the store closes.
	stopHooks   context.CancelFunc
	hooksDone   chan struct{}
	hookEvery   time.Duration // how often closed periods are looked for and deliveries sent
	hookTimeout time.Duration // how long a receiver may take
}

// listen starts answering at addr at once: /healthz, and 503 for the rest until open. It
// serves at most maxConns connections at a time.
func listen(addr string, cfg lhttp.Config, tc *tls.Config, maxConns int, log *slog.Logger) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	scheme := "http://"
	if tc != nil {
		// TLS inside the limit, so that a connection over it is refused in TLS too.
		ln, scheme = tls.NewListener(ln, tc), "https://"
	}
	ln = lhttp.LimitListener(ln, maxConns, log)
	s := &server{log: log, cfg: cfg, served: make(chan error, 1), url: scheme + ln.Addr().String()}
	recovering := lhttp.Recovering("recovering the store")
	s.handler.Store(&recovering)
	s.http = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*s.handler.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // live streams set their own deadline per write
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() { s.served <- s.http.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "url", s.url)
	return s, nil
}

// open recovers the store in dir and starts serving the API from it.
func (s *server) open(dir string, o embedded.Options) error {
	o.Logger = s.log
	o.OnCommit = func(ops, _ int, took time.Duration) { s.observeCommit(ops, took) }
	store, err := embedded.Open(dir, o)
	if err != nil {
		s.http.Close()
		return err
	}
	cfg := s.cfg
	cfg.Failed = store.Failed
	s.serve(store, cfg)
	s.api.Load().Registry().MustRegister(footprintCollector{store})
	s.log.Info("ready", "data", dir)
	return nil
}

// observeCommit counts a commit of the store in the API's metrics, once it serves.
func (s *server) observeCommit(ops int, took time.Duration) {
	if a := s.api.Load(); a != nil {
		a.ObserveCommit(ops, took)
	}
}

// serve starts answering the API from store, with its boards' competitions and webhooks kept
// in its records, and delivering the webhooks.
func (s *server) serve(store store, cfg lhttp.Config) {
	s.store = store
	svc := competition.New(store, store, nil)
	hooks := &webhook.Outbox{Records: store, Service: svc, Results: svc.Results, Encode: lhttp.EncodeDelivery, EncodeFlag: lhttp.EncodeFlagDelivery}
	cfg.Contests, cfg.Hooks, cfg.Watcher, cfg.MemberWatcher, cfg.Flags = svc, hooks, store, store, store
	a := lhttp.NewServer(svc, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	s.stopHooks, s.hooksDone = cancel, make(chan struct{})
	go func() {
		defer close(s.hooksDone)
		(&webhook.Dispatcher{Outbox: hooks, Every: s.hookEvery, Timeout: s.hookTimeout, Log: s.log, OnAttempt: a.ObserveDelivery}).Run(ctx)
	}()
	s.http.RegisterOnShutdown(a.Close) // live streams end, so that shutting down need not wait for them
	s.api.Store(a)
	h := a.Handler()
	s.handler.Store(&h)
}

// wait serves until ctx is done (SIGTERM, SIGINT), then stops cleanly: requests in flight
// finish, then the store is flushed and closed.
func (s *server) wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-s.served:
	}
	s.log.Info("stopping")
	stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if shutErr := s.http.Shutdown(stop); shutErr != nil {
		s.log.Error("stopping the listener", "err", shutErr)
	}
	s.stopHooks()
	<-s.hooksDone // an attempt in flight is abandoned: its lease ends, and it is sent again
	if closeErr := s.store.Close(); closeErr != nil {
		return closeErr
	}
	s.log.Info("stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
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

// checkAddr checks a listening address: host:port, the port a number (0: any free one).
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (for instance 127.0.0.1:7300, or :7300 for every interface)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", addr)
	}
	return nil
}
