package http

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/http/internal/wire"
)

// Live pages (docs/api.md, "Live and history"). One publisher per server computes each distinct
// (board, window, limit, metadata) page once per change and hands the same bytes to every
// stream that follows it, so the cost of a change does not grow with the streams watching it.
// Writers only mark boards dirty; a stream whose connection cannot keep up is dropped, never
// waited for, and its browser's EventSource reconnects.

const streamRoute = "GET /v1/boards/{board}/stream"

const (
	// publishEvery spaces a feed's pages: at most ten a second, bursts coalesced.
	publishEvery = 100 * time.Millisecond
	// sendBudget caps the pages sent a second over all streams, so that the CPU streams take
	// from writers stays bounded however many watch: with more than sendBudget/10 streams
	// open, each gets fewer than ten pages a second (the latest, always).
	sendBudget = 4000
	// pollEvery is how often every feed is recomputed when the service cannot tell of changes.
	pollEvery = time.Second
	// streamBuffer is how many pages a stream may fall behind before it is dropped.
	streamBuffer = 4
	// streamWriteWait bounds one write to a stream's connection.
	streamWriteWait = 10 * time.Second
	// defaultPing is the interval of the keep-alive comment.
	defaultPing = 15 * time.Second
)

type feedKey struct {
	board, window string
	limit         int
	metadata      bool
	cohort        string // a member whose cohort the page ranks, or ""
}

// feed is one live page and the streams following it.
type feed struct {
	key   feedKey
	subs  map[*stream]struct{}
	last  []byte // the page last published, as a complete SSE event
	end   int64  // when the page's calendar period ends (unix ms); 0: never by time alone
	stale bool   // recompute at the next publish
	next  int64  // not before (unix ms): the send budget's spacing
}

// stream is one subscriber.
type stream struct {
	pages chan []byte
	gone  chan struct{} // closed when the publisher drops it
	end   []byte        // an error event to send before ending, set before gone closes
}

// hub is the publisher.
type hub struct {
	svc laurel.Service
	srv *Server
	publisher

	mu    sync.Mutex // guards the publisher's shut and stop too
	feeds map[feedKey]*feed

	// The writer marks changes under a lock of their own, never waiting for a publish.
	dirtyMu sync.Mutex
	dirty   map[string]bool // boards changed since the last publish
	all     bool            // every board may have changed
}

func newHub(s *Server) *hub {
	return &hub{svc: s.svc, srv: s, feeds: make(map[feedKey]*feed), dirty: make(map[string]bool), publisher: newPublisher()}
}

// start watches the service and runs the publisher, on the first stream.
func (h *hub) start() {
	var watch func() (stop func())
	if w := h.srv.cfg.Watcher; w != nil {
		watch = func() func() { return w.Watch(h.changed) }
	}
	h.begin(&h.mu, watch, h.publish)
}

// publisher is what runs a hub's publish: started on the first stream, woken by the store's
// callback, ended once.
type publisher struct {
	once   sync.Once
	wake   chan struct{}
	closed chan struct{}
	stop   func() // stops watching the service
	shut   bool
}

func newPublisher() publisher {
	return publisher{wake: make(chan struct{}, 1), closed: make(chan struct{})}
}

// begin runs publish, once: on the store's changes that watch subscribes to, under mu, or,
// without watch, on every change and every pollEvery.
func (p *publisher) begin(mu *sync.Mutex, watch func() (stop func()), publish func(now int64, all bool)) {
	p.once.Do(func() {
		poll := pollEvery
		if watch != nil {
			mu.Lock()
			p.stop = watch()
			mu.Unlock()
			poll = 0
		}
		go runPublisher(p.closed, p.wake, poll, publish)
	})
}

// poke wakes the publisher, never waiting.
func (p *publisher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// end stops the publisher and the watching, once; under the hub's mu.
func (p *publisher) end() {
	if p.shut {
		return
	}
	p.shut = true
	close(p.closed)
	if p.stop != nil {
		p.stop()
	}
}

// changed is the service's Watch callback: it runs on the writer, so it only marks.
func (h *hub) changed(boards []string) {
	h.dirtyMu.Lock()
	if boards == nil {
		h.all = true
	}
	for _, b := range boards {
		h.dirty[b] = true
	}
	h.dirtyMu.Unlock()
	h.poke()
}

// runPublisher calls publish until closed: on a wake, and every publishEvery (for the ends
// of periods), with all set every poll (when not zero), at most once per publishEvery.
func runPublisher(closed, wake <-chan struct{}, poll time.Duration, publish func(now int64, all bool)) {
	tick := time.NewTicker(publishEvery)
	defer tick.Stop()
	var lastPoll time.Time
	for {
		select {
		case <-closed:
			return
		case <-wake:
		case <-tick.C:
		}
		now := time.Now()
		all := poll > 0 && now.Sub(lastPoll) >= poll
		if all {
			lastPoll = now
		}
		publish(now.UnixMilli(), all)
		select {
		case <-closed:
			return
		case <-time.After(time.Until(now.Add(publishEvery))):
		}
	}
}

// publish recomputes the feeds that may have changed and sends the pages that did.
func (h *hub) publish(now int64, all bool) {
	h.dirtyMu.Lock()
	all = all || h.all
	dirty := h.dirty
	h.dirty, h.all = make(map[string]bool, len(dirty)), false
	h.dirtyMu.Unlock()

	h.mu.Lock()
	streams := 0
	for _, f := range h.feeds {
		streams += len(f.subs)
	}
	space := max(publishEvery.Milliseconds(), int64(streams)*1000/sendBudget)
	var due []*feed
	for _, f := range h.feeds {
		if all || dirty[f.key.board] || f.end != 0 && now >= f.end {
			f.stale = true
		}
		if f.stale && now >= f.next {
			f.stale, f.next = false, now+space
			due = append(due, f)
		}
	}
	h.mu.Unlock()

	for _, f := range due {
		msg, end, err := h.page(f.key)
		h.mu.Lock()
		switch {
		case err != nil && laurel.ErrorCode(err) == laurel.EInternal:
			// Keep the streams; the next change tries again.
			h.srv.log.Error("live page", "board", f.key.board, "window", f.key.window, "err", err)
			f.stale = true
		case err != nil:
			// The board or its window is gone: say why and end the streams.
			body, _ := json.Marshal(errorBody{Error: errorOf(err)})
			for s := range f.subs {
				s.end = sse("error", body)
				h.drop(f, s)
			}
		case !bytes.Equal(msg, f.last):
			f.last, f.end = msg, end
			for s := range f.subs {
				select {
				case s.pages <- msg:
				default:
					h.drop(f, s) // it cannot keep up
					h.srv.metrics.streamsDropped.Inc()
				}
			}
		}
		h.mu.Unlock()
	}
}

// page computes the feed's page as an SSE event, and when its calendar period ends.
func (h *hub) page(k feedKey) (msg []byte, end int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := h.svc.Page(ctx, laurel.Query{Board: k.board, Window: k.window, Metadata: k.metadata, Cohort: k.cohort}, 0, k.limit, laurel.ScoreRange{})
	if err != nil {
		return nil, 0, err
	}
	if p.Period.ID != "" && p.Period.ID != "all" {
		end = p.Period.End
	}
	return sse("page", wire.AppendPage(nil, p)), end, nil
}

// subscribe adds a stream to the feed of k. first is the page the stream starts with: the
// feed's latest when it has one, else the page the caller computed.
func (h *hub) subscribe(k feedKey, computed []byte, end int64) (s *stream, first []byte, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shut {
		return nil, nil, false
	}
	f := h.feeds[k]
	if f == nil {
		// A change may have been published between the caller's read and now: look again at
		// the next publish.
		f = &feed{key: k, subs: make(map[*stream]struct{}), last: computed, end: end, stale: true}
		h.feeds[k] = f
	}
	s = &stream{pages: make(chan []byte, streamBuffer), gone: make(chan struct{})}
	f.subs[s] = struct{}{}
	return s, f.last, true
}

func (h *hub) unsubscribe(k feedKey, s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.feeds[k]; f != nil {
		if _, ok := f.subs[s]; ok {
			h.drop(f, s)
		}
	}
}

// drop removes s from f, under mu; a feed without streams goes.
func (h *hub) drop(f *feed, s *stream) {
	delete(f.subs, s)
	close(s.gone)
	if len(f.subs) == 0 {
		delete(h.feeds, f.key)
	}
}

// close ends every stream and the publisher.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.end()
}

// sse frames data as one server-sent event.
func sse(event string, data []byte) []byte {
	out := make([]byte, 0, len(event)+len(data)+16)
	out = append(out, "event: "...)
	out = append(out, event...)
	out = append(out, "\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// Close ends the live streams, so that a graceful shutdown of the HTTP server need not wait
// for them: register it with http.Server.RegisterOnShutdown. The other routes keep working.
func (s *Server) Close() {
	s.hub.close()
	s.members.close()
}

// isStream reports whether a route is a live stream: it sets its own deadlines and may take
// its key as ?key=, since a browser's EventSource cannot send headers.
func isStream(pattern string) bool { return pattern == streamRoute || pattern == memberStreamRoute }

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err == nil {
		err = noInstant(r.URL.Query(), "a stream follows the current page; read past instants and periods from /entries")
	}
	var limit int64
	if err == nil {
		limit, _, err = intParam(r.URL.Query(), "limit", laurel.DefaultStreamLimit, 1, laurel.MaxStreamLimit)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	k := feedKey{board: q.Board, window: q.Window, limit: int(limit), metadata: q.Metadata, cohort: q.Cohort}
	// Read once here, so that a bad window or an unknown board is a plain error response.
	computed, end, err := s.hub.page(k)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.hub.start()
	st, first, ok := s.hub.subscribe(k, computed, end)
	if !ok {
		s.writeError(w, r, laurel.Errorf(laurel.EUnavailable, "the server is shutting down"))
		return
	}
	defer s.hub.unsubscribe(k, st)
	s.follow(w, r, first, st, s.hub.closed, s.ping)
}

// follow answers a live stream: first, then what the publisher sends st, with a ping between,
// until st is dropped, the publisher closes, the client goes, or its member token expires.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, first []byte, st *stream, closed <-chan struct{}, pingEvery time.Duration) {
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()

	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	rc.SetReadDeadline(time.Time{})
	if !send(first) {
		return
	}
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	// A member token's stream ends when the token does: the reads after would need a new one.
	var expired <-chan time.Time
	if g := grantOf(r); g != nil {
		t := time.NewTimer(time.Until(g.expires) + tokenSkew)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-expired:
			body, _ := json.Marshal(errorBody{Error: errorOf(laurel.Errorf(laurel.EUnauthenticated, "the member token expired: open the stream again with a new one"))})
			send(sse("error", body))
			return
		case msg := <-st.pages:
			if !send(msg) {
				return
			}
		case <-ping.C:
			if !send([]byte(": ping\n\n")) {
				return
			}
		case <-st.gone:
			if st.end != nil {
				send(st.end)
			}
			return
		case <-closed:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// noInstant refuses at and period on a route that reads no other instant than now, saying
// why, in the field the request gave (empty, as everywhere, is not given).
func noInstant(v url.Values, why string) error {
	for _, f := range []string{"period", "at"} {
		if v.Get(f) != "" {
			return laurel.FieldErrorf(laurel.EInvalid, f, "%s", why)
		}
	}
	return nil
}

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	limit, _, err := intParam(v, "limit", laurel.DefaultHistoryLimit, 1, laurel.MaxHistoryLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	board := r.PathValue("board")
	if err := laurel.ValidateBoardID(board); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := noInstant(v, "history holds a point per event, each of the period current at its write; read a period's standing from /members/{member}"); err != nil {
		s.writeError(w, r, err)
		return
	}
	member := r.PathValue("member")
	history := s.svc.History
	if c := v.Get("cohort"); c != "" {
		contests := s.cfg.Contests
		switch {
		case contests == nil:
			s.writeError(w, r, laurel.FieldErrorf(laurel.EInvalid, "cohort", "this service keeps no cohorts"))
			return
		case c != member:
			s.writeError(w, r, laurel.FieldErrorf(laurel.EInvalid, "cohort", "a member's history is ranked in its own cohort: cohort=%s", member))
			return
		}
		history = contests.CohortHistory
	}
	points, err := history(r.Context(), board, v.Get("window"), member, int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hasSub := len(points) > 0 && s.subs.has(r.Context(), board)
	out := historyJSON{Points: make([]pointJSON, len(points))}
	for i, p := range points {
		out.Points[i] = pointJSON{At: laurel.FormatTime(p.At), Score: p.Score, Sub: subOf(p.Sub, hasSub), Rank: p.Rank, Tag: p.Tag}
	}
	writeJSON(w, http.StatusOK, out)
}

type historyJSON struct {
	Points []pointJSON `json:"points"`
}

type pointJSON struct {
	At    string          `json:"at"`
	Score int64           `json:"score"`
	Sub   *int64          `json:"subscore,omitempty"` // on a board with a subscore
	Rank  int             `json:"rank"`
	Tag   json.RawMessage `json:"tag,omitempty"` // the event's
}
