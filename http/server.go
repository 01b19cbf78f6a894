// Package http serves laurel's HTTP API (docs/api.md) over a laurel.Service: it decodes requests,
// checks keys, scopes and rate limits, calls the service and encodes its answers and errors.
// It holds no state of the model.
package http

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/laurel/laurel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultMaxBody is the largest request body accepted by default: 1 MiB (docs/api.md).
const DefaultMaxBody = 1 << 20

// DefaultRequestTimeout bounds how long a request may wait for the store by default.
const DefaultRequestTimeout = 10 * time.Second

// Keys are the API keys of each scope. A key of a scope also has every lower scope: read <
// write < admin.
type Keys struct {
	Admin, Write, Read []string
}

// empty reports whether no key is configured at all: the server is open.
func (k Keys) empty() bool { return len(k.Admin)+len(k.Write)+len(k.Read) == 0 }

// RateLimit configures a token bucket per client. A zero PerSecond turns it off.
type RateLimit struct {
	PerSecond float64 // tokens added per second
	Burst     int     // bucket size; 0 means max(1, PerSecond)
}

// Config configures a Server. The zero value serves an open API with no rate limit.
type Config struct {
	Keys Keys
	// Tokens lets game clients use member tokens instead of keys (tokens.go).
	Tokens     Tokens
	PublicRead bool      // reads need no key
	RateLimit  RateLimit // per valid key
	// AddressRateLimit is per client address, for requests without a valid key (public
	// reads, unknown keys): what faces the internet.
	AddressRateLimit RateLimit
	// TrustedProxies are the addresses of the proxies in front of the server: a request from
	// one of them is counted against the client that X-Forwarded-For names, the nearest
	// address in it that is not itself a trusted proxy. From any other peer the header is
	// ignored, since anyone can send it.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger // nil discards logs
	// Contests are the server's competitions (tournaments' entries, cohorts, tiers, results by
	// cohort): the Service the server serves is the same one, wrapped (package competition).
	// Nil: the server keeps none, and their routes answer not_found.
	Contests laurel.Contests
	// Hooks are the store's webhooks (/v1/hooks, package webhook); nil answers those routes
	// not_found.
	Hooks laurel.Webhooks
	// Flags is the store's review queue (/v1/flags, and the game's reports of members); nil
	// answers those routes not_found.
	Flags laurel.FlagQueue
	// Watcher tells live streams when boards change; nil: they look every pollEvery.
	Watcher laurel.Watcher
	// MemberWatcher tells members' live streams whose entries changed; nil: they look every
	// pollEvery and name no one who passed.
	MemberWatcher laurel.MemberWatcher
	Ready         func() bool   // nil: always ready
	Failed        func() bool   // nil: never; true: the store cannot serve (it failed, or its backends do not answer), and /readyz answers 503
	MaxBody       int64         // 0: DefaultMaxBody
	StreamPing    time.Duration // keep-alive comment interval of live streams; 0: 15 s
	// RequestTimeout bounds every request but live streams: one the store has not answered
	// by then is answered 503 unavailable. 0: DefaultRequestTimeout.
	RequestTimeout time.Duration
	// CORSOrigins are the web origins (scheme://host[:port]) whose pages may call the API
	// from a browser, "*" for any (cors.go); none by default.
	CORSOrigins []string
}

// Server adapts a laurel.Service to HTTP.
type Server struct {
	svc     laurel.Service
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	routes  []string
	limiter *limiter // per key
	byAddr  *limiter // per client address
	metrics *metrics
	hub     *hub
	members *memberHub
	ping    time.Duration
	subs    *subscores // which boards have a subscore
}

// scope is what an endpoint requires.
type scope int

const (
	scopeNone  scope = iota // /healthz, /readyz, /metrics
	scopeRead               // reading boards and profiles
	scopeWrite              // submitting and retracting events, setting profiles
	scopeAdmin              // everything
)

// NewServer returns a Server serving svc.
func NewServer(svc laurel.Service, cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	s := &Server{svc: svc, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	if cfg.RateLimit.PerSecond > 0 {
		s.limiter = newLimiter(cfg.RateLimit.PerSecond, cfg.RateLimit.Burst)
	}
	if cfg.AddressRateLimit.PerSecond > 0 {
		s.byAddr = newLimiter(cfg.AddressRateLimit.PerSecond, cfg.AddressRateLimit.Burst)
	}
	s.metrics = newMetrics(svc)
	s.hub = newHub(s)
	s.members = newMemberHub(s)
	s.ping = cmp.Or(cfg.StreamPing, defaultPing)
	s.subs = &subscores{svc: svc}

	s.handle("GET /healthz", scopeNone, s.handleHealthz)
	s.handle("GET /readyz", scopeNone, s.handleReadyz)
	s.handle("GET /metrics", scopeNone, promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP)
	s.handle("GET /openapi.json", scopeNone, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(OpenAPI)
	})

	s.handle("GET /v1/boards", scopeRead, s.handleBoards)
	s.handle("PUT /v1/boards/{board}", scopeAdmin, s.handlePutBoard)
	s.handle("GET /v1/boards/{board}", scopeRead, s.handleBoard)
	s.handle("DELETE /v1/boards/{board}", scopeAdmin, s.bodiless(s.handleDeleteBoard))

	s.handle("POST /v1/boards/{board}/events", scopeWrite, s.handleBoardEvents)
	s.handle("POST /v1/events", scopeWrite, s.handleEvents)
	s.handle("DELETE /v1/boards/{board}/events/{id}", scopeWrite, s.bodiless(s.handleRetract))

	s.handle("GET /v1/boards/{board}/entries", scopeRead, s.handleEntries)
	s.handle("GET /v1/boards/{board}/members/{member}", scopeRead, s.handleMemberEntry)
	s.handle("GET /v1/boards/{board}/members/{member}/around", scopeRead, s.handleAround)
	s.handle("POST /v1/boards/{board}/lookup", scopeRead, s.handleLookup)
	s.handle("GET /v1/boards/{board}/rank", scopeRead, s.handleRank)
	s.handle("GET /v1/boards/{board}/distribution", scopeRead, s.handleDistribution)
	s.handle("GET /v1/boards/{board}/periods", scopeRead, s.handlePeriods)
	s.handle("GET /v1/boards/{board}/periods/{period}/results", scopeRead, s.handleResults)
	s.handle("POST /v1/boards/{board}/members/{member}/join", scopeWrite, s.bodiless(s.handleJoin))
	s.handle("GET /v1/boards/{board}/members/{member}/entry", scopeRead, s.handleEntrant)
	s.handle("GET /v1/boards/{board}/members/{member}/cohort", scopeRead, s.handleCohort)
	s.handle("GET /v1/boards/{board}/members/{member}/tier", scopeRead, s.handleTier)

	s.handle("GET /v1/hooks", scopeAdmin, s.handleHooks)
	s.handle("PUT /v1/hooks/{hook}", scopeAdmin, s.handlePutHook)
	s.handle("GET /v1/hooks/{hook}", scopeAdmin, s.handleHook)
	s.handle("DELETE /v1/hooks/{hook}", scopeAdmin, s.bodiless(s.handleDeleteHook))
	s.handle("GET /v1/hooks/{hook}/deliveries", scopeAdmin, s.handleDeliveries)
	s.handle("GET /v1/hooks/{hook}/deliveries/{delivery}", scopeAdmin, s.handleDelivery)
	s.handle("POST /v1/hooks/{hook}/deliveries/{delivery}/replay", scopeAdmin, s.bodiless(s.handleReplay))

	s.handle("POST /v1/boards/{board}/members/{member}/flags", scopeWrite, s.handleReportFlag)
	s.handle("GET /v1/flags", scopeAdmin, s.handleFlags)
	s.handle("GET /v1/flags/{flag}", scopeAdmin, s.handleFlag)
	s.handle("POST /v1/flags/{flag}", scopeAdmin, s.handleResolveFlag)

	s.handle("PUT /v1/members/{member}", scopeWrite, s.handlePutProfile)
	s.handle("GET /v1/members/{member}", scopeRead, s.handleProfile)
	s.handle("DELETE /v1/members/{member}", scopeAdmin, s.bodiless(s.handleDeleteMember))
	s.handle("POST /v1/members/{member}/hide", scopeAdmin, s.bodiless(s.handleHide))
	s.handle("POST /v1/members/{member}/unhide", scopeAdmin, s.bodiless(s.handleUnhide))

	s.handle(whoamiRoute, scopeRead, s.handleWhoami)
	s.handle(streamRoute, scopeRead, s.handleStream)
	s.handle(memberStreamRoute, scopeRead, s.handleMemberStream)
	s.handle("GET /v1/boards/{board}/members/{member}/history", scopeRead, s.handleHistory)
	s.routeWeb()
	s.routeDebug()
	return s
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Routes returns every registered route as "METHOD /pattern", in registration order.
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

// Registry returns the server's Prometheus registry, which /metrics serves.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// ObserveDelivery counts one webhook delivery attempt by the state it left the delivery in.
// Wire it to the dispatcher's OnAttempt hook.
func (s *Server) ObserveDelivery(d laurel.Delivery) {
	s.metrics.hookAttempts.WithLabelValues(d.State).Inc()
}

// ObserveCommit records one group commit of the store: how many operations one fsync made
// durable and how long it took. Wire it to the store's OnCommit hook.
func (s *Server) ObserveCommit(ops int, took time.Duration) {
	s.metrics.commitOps.Observe(float64(ops))
	s.metrics.commitSeconds.Observe(took.Seconds())
}

// serveHTTP answers the requests that no route matches (404 or 405) with an error body, and
// hands the others to the mux.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		return // a preflight, answered
	}
	if seg, ok := uncleanSegment(r.URL.EscapedPath()); ok {
		// The mux would redirect to the path cleaned, which names another resource (an empty
		// member id before "/around" reads the member "around").
		writeErrorJSON(w, http.StatusNotFound, errorJSON{Code: laurel.ENotFound,
			Message: fmt.Sprintf("no such endpoint: %s %s: the path has a segment %q (escape a . or .. id as %%2E)", r.Method, r.URL.EscapedPath(), seg)})
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		// Let the mux decide between 404 and 405 (and its Allow header), then answer in JSON.
		rec := &statusRecorder{header: http.Header{}}
		s.mux.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		if rec.status == http.StatusMethodNotAllowed {
			writeErrorJSON(w, http.StatusMethodNotAllowed, errorJSON{Code: laurel.EMethodNotAllowed, Message: "method " + r.Method + " is not allowed here; allowed: " + allowed(rec.header)})
			return
		}
		if rec.status == http.StatusMovedPermanently || rec.status == http.StatusTemporaryRedirect || rec.status == http.StatusPermanentRedirect {
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.status)
			return
		}
		writeErrorJSON(w, http.StatusNotFound, errorJSON{Code: laurel.ENotFound, Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// uncleanSegment returns the first segment of an escaped path that a cleaning would remove:
// an empty one (a trailing slash aside), "." or "..".
func uncleanSegment(p string) (string, bool) {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." || seg == "" && i < len(segs)-1 {
			return seg, true
		}
	}
	return "", false
}

// allowed lists the methods of an Allow header, for a person to read.
func allowed(h http.Header) string { return strings.Join(h.Values("Allow"), ", ") }

// statusRecorder captures what the mux's own 404 and 405 handlers write.
type statusRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *statusRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// handle registers a route with what every request goes through: metrics, logs, panics,
// a deadline, readiness, keys, rate limit.
func (s *Server) handle(pattern string, sc scope, h http.HandlerFunc) {
	s.routes = append(s.routes, pattern)
	// Streams and profiles (?seconds=N, which the server's write timeout bounds) set their
	// own deadlines.
	ownDeadline := isStream(pattern) || strings.HasPrefix(pattern, debugRoutes)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if !ownDeadline {
			// A store whose backend hangs must not hold the request, nor its client, forever.
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		rw := &responseWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "route", pattern, "panic", v)
				if rw.status == 0 {
					writeJSON(rw, http.StatusInternalServerError, internalBody)
				}
			}
			status := rw.status
			if status == 0 {
				status = http.StatusOK
			}
			took := time.Since(start)
			s.metrics.observeRequest(pattern, status, took)
			if s.log.Enabled(r.Context(), slog.LevelDebug) {
				s.log.Debug("request", "route", pattern, "method", r.Method, "path", r.URL.Path,
					"status", status, "bytes", rw.bytes, "took", took, "remote", r.RemoteAddr)
			}
		}()
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			// r.URL.Query() would drop the malformed pair and answer with defaults.
			s.writeError(rw, r, laurel.Errorf(laurel.EInvalid, "the query string is malformed: %v", err))
			return
		}
		if sc != scopeNone {
			if !s.ready() {
				s.writeError(rw, r, laurel.Errorf(laurel.EUnavailable, "the server is not ready yet"))
				return
			}
			var ok bool
			if r, ok = s.authorize(rw, r, sc); !ok {
				return
			}
		}
		h(rw, r)
	})
}

func (s *Server) ready() bool { return s.cfg.Ready == nil || s.cfg.Ready() }

// authorize checks the request's key (or member token) against the scope sc and takes a
// token from its rate limit bucket. It writes the error and returns false when the request
// may not go on; the request it returns carries a member token's grant.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, sc scope) (*http.Request, bool) {
	key, hasKey := bearer(r)
	if !hasKey && isStream(r.Pattern) {
		// A browser's EventSource cannot send headers (docs/api.md, "Live and history").
		key = r.URL.Query().Get("key")
		hasKey = key != ""
	}
	if hasKey && s.cfg.Tokens.enabled() && looksLikeToken(key) {
		return s.authorizeToken(w, r, key)
	}
	return r, s.authorizeKey(w, r, sc, key, hasKey)
}

// authorizeToken checks a member token and what it allows; it is counted against the
// client's address, like any request from the internet.
func (s *Server) authorizeToken(w http.ResponseWriter, r *http.Request, raw string) (*http.Request, bool) {
	if !s.allow(w, r, s.byAddr, s.clientIP(r)) {
		return r, false
	}
	g, err := s.cfg.Tokens.verifyToken(raw, time.Now())
	if err != nil {
		s.writeError(w, r, laurel.Errorf(laurel.EUnauthenticated, "invalid member token: %v", err))
		return r, false
	}
	if err := g.allows(r); err != nil {
		s.writeError(w, r, err)
		return r, false
	}
	return withGrant(r, g), true
}

// allow takes a token from id's bucket in l (nil: no limit), or answers 429 with Retry-After.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, l *limiter, id string) bool {
	if l == nil {
		return true
	}
	ok, retry := l.allow(id, time.Now())
	if !ok {
		w.Header().Set("Retry-After", retry)
		s.writeError(w, r, laurel.Errorf(laurel.ERateLimited, "too many requests; retry after %s s", retry))
	}
	return ok
}

func (s *Server) authorizeKey(w http.ResponseWriter, r *http.Request, sc scope, key string, hasKey bool) bool {
	granted := scopeNone
	if hasKey {
		granted = s.keyScope(key)
	}
	l, id := s.limiter, key
	if granted == scopeNone {
		l, id = s.byAddr, s.clientIP(r)
	}
	if !s.allow(w, r, l, id) {
		return false
	}
	switch {
	case s.cfg.Open():
		return true
	case granted == scopeNone && hasKey:
		// Even where reads are public: a mistyped key is told, not read as no key.
		s.writeError(w, r, laurel.Errorf(laurel.EUnauthenticated, "unknown key"))
		return false
	case sc == scopeRead && s.cfg.PublicRead:
		return true
	case granted == scopeNone:
		s.writeError(w, r, laurel.Errorf(laurel.EUnauthenticated, "a key is required: send Authorization: Bearer <key>"))
		return false
	case granted < sc:
		s.writeError(w, r, laurel.Errorf(laurel.EPermissionDenied, "this key lacks the %s scope", scopeName(sc)))
		return false
	}
	return true
}

// admin reports whether the request may do what takes the admin scope: its key has it, or
// the server is open.
func (s *Server) admin(r *http.Request) bool {
	if s.cfg.Open() {
		return true
	}
	key, ok := bearer(r)
	return ok && s.keyScope(key) == scopeAdmin
}

// Open reports whether a server so configured takes requests without keys: none is
// configured, and no member token either.
func (c Config) Open() bool { return c.Keys.empty() && !c.Tokens.enabled() }

func scopeName(sc scope) string {
	switch sc {
	case scopeRead:
		return "read"
	case scopeWrite:
		return "write"
	case scopeAdmin:
		return "admin"
	}
	return "none"
}

// keyScope returns the highest scope of key, comparing it in constant time with every
// configured key.
func (s *Server) keyScope(key string) scope {
	granted := scopeNone
	check := func(keys []string, sc scope) {
		for _, k := range keys {
			if subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1 && sc > granted {
				granted = sc
			}
		}
	}
	check(s.cfg.Keys.Read, scopeRead)
	check(s.cfg.Keys.Write, scopeWrite)
	check(s.cfg.Keys.Admin, scopeAdmin)
	return granted
}

// bearer returns the key of an "Authorization: Bearer <key>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return "", false
	}
	key := strings.TrimSpace(h[7:])
	return key, key != ""
}

// clientIP is the address a request is counted against: its TCP peer's, or behind trusted
// proxies the nearest untrusted address of X-Forwarded-For (each proxy appends the address it
// got the request from, so the addresses to the right of it are the proxies').
func (s *Server) clientIP(r *http.Request) string {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	addr := peer.Addr().Unmap()
	if !s.trusted(addr) {
		return addr.String()
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // not an address: what is left of it cannot be trusted
		}
		addr = hop.Unmap()
		if !s.trusted(addr) {
			break
		}
	}
	return addr.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if !s.ready() {
		s.writeError(w, r, laurel.Errorf(laurel.EUnavailable, "the server is not ready yet"))
		return
	}
	if s.cfg.Failed != nil && s.cfg.Failed() {
		s.writeError(w, r, laurel.Errorf(laurel.EUnavailable, "the store cannot serve requests now; see the server log"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// responseWriter remembers the status and size of a response.
type responseWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer (flushes, deadlines).
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isClientGone reports whether err comes from the client going away.
func isClientGone(r *http.Request, err error) bool {
	return errors.Is(r.Context().Err(), context.Canceled) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// isTimedOut reports whether err comes from the request's own deadline.
func isTimedOut(r *http.Request, err error) bool {
	return errors.Is(r.Context().Err(), context.DeadlineExceeded) && errors.Is(err, context.DeadlineExceeded)
}
