package http

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/laurel/laurel"
)

// A member's live feed (docs/api.md, "Live and history"): its standing in each window, sent
// again each time its rank or score there changes. A change only marks the boards it touched,
// and the members it moved (laurel.MemberWatcher); the publisher then reads, per board and
// window, every member that streams there in lookups of 1,000, so that a publish costs a read
// per subscribed member, however many events came since, at most ten times a second and within
// a send budget of its own. Who passed a member is told from the members the changes named,
// read in the same lookups, never from the board's pages.

const memberStreamRoute = "GET /v1/boards/{board}/members/{member}/stream"

// maxNamedMoves is how many members a publish reads to name who passed whom: past it, bursts
// name no one (one member alone crossing another among so many is rare, and reading them all
// would cost as much as the writes).
const maxNamedMoves = 500

// memberSendBudget caps the members' standings read a second over all member streams, as
// sendBudget does the pages: a publish reads every member streaming from a board, and a busy
// board moves most of them each time, so that with more than memberSendBudget/10 streams open
// each hears less often than ten times a second (the latest, always), and the writers keep
// their CPU: 10,000 streams cost 1.08 of the CPU an event without them at 5,000 events/s
// (docs/benchmarks.md, "Members' live streams").
const memberSendBudget = 250

type memberKey struct {
	board, member, window string // window "": every window of the board
}

// standing is what a member's feed last said of one window.
type standing struct {
	period       laurel.PeriodInfo
	ranked       bool
	rank         int
	score, total int64
	sub          int64 // the subscore, when ranked on a board with one
	hasSub       bool  // the board has a subscore: the feed shows it
}

// memberFeed is one member's feed and the streams following it.
type memberFeed struct {
	key   memberKey
	subs  map[*stream]struct{}
	last  map[string]standing // by window: what the feed last sent
	order []string            // the windows of last, in the board's order
}

// memberBoard is the feeds of one board, published together.
type memberBoard struct {
	feeds map[memberKey]*memberFeed
	moves moves // since the board's last publish
	stale bool
	next  int64 // not before (unix ms): the send budget's spacing
	end   int64 // when the first of its calendar periods ends (unix ms); 0: none
}

// moves is whose entries changed on a board.
type moves struct {
	members map[string]bool
	anyone  bool // or unknown: any member's
}

// add adds what one change moved (nil: anyone).
func (m *moves) add(members []string) {
	if m.anyone {
		return
	}
	if members == nil || len(m.members)+len(members) > maxNamedMoves {
		m.anyone, m.members = true, nil
		return
	}
	if m.members == nil {
		m.members = make(map[string]bool, len(members))
	}
	for _, member := range members {
		m.members[member] = true
	}
}

func (m *moves) merge(o moves) {
	if o.anyone {
		m.add(nil)
		return
	}
	m.add(slices.Collect(maps.Keys(o.members)))
}

type memberHub struct {
	svc laurel.Service
	srv *Server
	publisher

	mu     sync.Mutex // guards the publisher's shut and stop too
	boards map[string]*memberBoard
	count  int // streams open

	// The writer marks changes under a lock of their own, never waiting for a publish.
	dirtyMu sync.Mutex
	dirty   map[string]*moves
	all     bool // any board, anyone
}

func newMemberHub(s *Server) *memberHub {
	return &memberHub{svc: s.svc, srv: s, boards: make(map[string]*memberBoard), dirty: make(map[string]*moves), publisher: newPublisher()}
}

// start watches the service and runs the publisher, on the first stream.
func (h *memberHub) start() {
	var watch func() (stop func())
	if w := h.srv.cfg.MemberWatcher; w != nil {
		watch = func() func() { return w.WatchMembers(h.changed) }
	}
	h.begin(&h.mu, watch, h.publish)
}

// changed is the service's WatchMembers callback: it runs on the writer, so it only marks.
func (h *memberHub) changed(cs []laurel.Changed) {
	h.dirtyMu.Lock()
	for _, c := range cs {
		if c.Board == "" {
			// Entries anywhere may have moved, or only names did (read with the next move).
			h.all = h.all || c.Members == nil
			continue
		}
		m := h.dirty[c.Board]
		if m == nil {
			m = &moves{}
			h.dirty[c.Board] = m
		}
		m.add(c.Members)
	}
	h.dirtyMu.Unlock()
	h.poke()
}

// publish reads the boards that changed, at most once per the send budget's spacing each,
// and sends each of their feeds what changed of its member.
func (h *memberHub) publish(now int64, all bool) {
	h.dirtyMu.Lock()
	all = all || h.all
	dirty := h.dirty
	h.dirty, h.all = make(map[string]*moves, len(dirty)), false
	h.dirtyMu.Unlock()

	type due struct {
		board string
		feeds []*memberFeed
		last  []map[string]standing
		moves moves
	}
	var ds []due
	h.mu.Lock()
	space := max(publishEvery.Milliseconds(), int64(h.count)*1000/memberSendBudget)
	for id, b := range h.boards {
		switch m := dirty[id]; {
		case all:
			b.moves.add(nil)
			b.stale = true
		case m != nil:
			b.moves.merge(*m)
			b.stale = true
		}
		// A period that ended moved no entry: its feeds' next events are of the new period.
		b.stale = b.stale || b.end != 0 && now >= b.end
		if !b.stale || now < b.next {
			continue
		}
		d := due{board: id, moves: b.moves}
		for _, f := range b.feeds {
			d.feeds = append(d.feeds, f)
			d.last = append(d.last, maps.Clone(f.last))
		}
		b.stale, b.next, b.moves = false, now+space, moves{}
		ds = append(ds, d)
	}
	h.mu.Unlock()

	for _, d := range ds {
		h.publishBoard(d.board, d.feeds, d.last, d.moves)
	}
}

// publishBoard reads the standings of a board's feeds and sends what changed.
func (h *memberHub) publishBoard(board string, feeds []*memberFeed, last []map[string]standing, m moves) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	members := make([]string, 0, len(feeds))
	for _, f := range feeds {
		members = append(members, f.key.member)
	}
	r := newStandingReader(h.svc, board, members, m)
	type update struct {
		msg   []byte
		order []string
		err   error
	}
	ups := make([]update, len(feeds))
	for i, f := range feeds {
		u := &ups[i]
		u.msg, last[i], u.order, u.err = r.update(ctx, f.key, last[i])
		if u.err != nil && laurel.ErrorCode(u.err) == laurel.EInternal {
			// Keep the streams; the next publish tries again.
			h.srv.log.Error("member feed", "board", board, "member", f.key.member, "err", u.err)
			h.mu.Lock()
			if b := h.boards[board]; b != nil {
				b.stale = true
				b.moves.add(nil)
			}
			h.mu.Unlock()
			return
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.boards[board]
	if b == nil {
		return
	}
	b.end = r.end
	for i, f := range feeds {
		u := ups[i]
		switch {
		case b.feeds[f.key] != f:
		case u.err != nil:
			// The board or the window is gone: say why and end the feed's streams.
			body, _ := json.Marshal(errorBody{Error: errorOf(u.err)})
			for s := range f.subs {
				s.end = sse("error", body)
				h.drop(f, s)
			}
		case u.msg != nil:
			f.last, f.order = last[i], u.order
			for s := range f.subs {
				select {
				case s.pages <- u.msg:
				default:
					h.drop(f, s) // it cannot keep up
					h.srv.metrics.streamsDropped.Inc()
				}
			}
		default:
			f.last = last[i] // totals move without an event
		}
	}
}

// subscribe adds a stream to the feed of k; first is what the stream starts with: the
// feed's latest standings when it has some, else those the caller read.
func (h *memberHub) subscribe(k memberKey, read map[string]standing, order []string, end int64) (s *stream, first []byte, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shut {
		return nil, nil, false
	}
	b := h.boards[k.board]
	if b == nil {
		b = &memberBoard{feeds: make(map[memberKey]*memberFeed), end: end}
		h.boards[k.board] = b
	}
	f := b.feeds[k]
	if f == nil {
		f = &memberFeed{key: k, subs: make(map[*stream]struct{}), last: read, order: order}
		b.feeds[k] = f
		// A change may have been published between the caller's read and now: look again.
		// The publisher heard it (start ran before the read), so it names whom it moved.
		b.stale = true
	}
	s = &stream{pages: make(chan []byte, streamBuffer), gone: make(chan struct{})}
	f.subs[s] = struct{}{}
	h.count++
	for _, w := range f.order {
		first = appendStanding(first, w, f.last[w], nil, nil, nil)
	}
	return s, first, true
}

func (h *memberHub) unsubscribe(k memberKey, s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.boards[k.board]; b != nil {
		if f := b.feeds[k]; f != nil {
			if _, ok := f.subs[s]; ok {
				h.drop(f, s)
			}
		}
	}
}

// drop removes s from f, under mu; a feed without streams goes, and a board without feeds.
func (h *memberHub) drop(f *memberFeed, s *stream) {
	delete(f.subs, s)
	close(s.gone)
	h.count--
	if len(f.subs) > 0 {
		return
	}
	b := h.boards[f.key.board]
	delete(b.feeds, f.key)
	if len(b.feeds) == 0 {
		delete(h.boards, f.key.board)
	}
}

func (h *memberHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.end()
}

// standingReader reads, for one publish of a board, each window's standings of the members
// streaming there, with the members the change moved in the same lookups: who passed whom is
// told from one instant of the board.
type standingReader struct {
	svc     laurel.Service
	board   string
	members []string // every member streaming from the board
	moves   moves
	movers  []string // the members moved, when they can be named
	windows []string // the board's, once read
	read    map[string]*windowRead
	end     int64 // when the first calendar period read ends; 0: none
}

// windowRead is one window's standings as read.
type windowRead struct {
	period  laurel.PeriodInfo
	total   int
	hasSub  bool                    // the board has a subscore
	entries map[string]laurel.Entry // of the members read who are ranked
	err     error
}

func newStandingReader(svc laurel.Service, board string, members []string, m moves) *standingReader {
	r := &standingReader{svc: svc, board: board, members: members, moves: m, read: make(map[string]*windowRead)}
	if !m.anyone {
		r.movers = slices.Sorted(maps.Keys(m.members))
	}
	return r
}

// update returns the events of the feed of k since last (every window's, when last is nil),
// nil when none; what the feed has said once they are sent; and its windows in order.
func (r *standingReader) update(ctx context.Context, k memberKey, last map[string]standing) (msg []byte, now map[string]standing, order []string, err error) {
	order = []string{k.window}
	if k.window == "" {
		if order, err = r.boardWindows(ctx); err != nil {
			return nil, last, nil, err
		}
	}
	now = make(map[string]standing, len(order))
	for _, w := range order {
		wr := r.window(ctx, w)
		if wr.err != nil {
			return nil, last, nil, wr.err
		}
		cur := standing{period: wr.period, total: int64(wr.total), hasSub: wr.hasSub}
		if e, ok := wr.entries[k.member]; ok {
			cur.ranked, cur.rank, cur.score, cur.sub = true, e.Rank, e.Score, e.Sub
		}
		now[w] = cur
		prev, had := last[w]
		switch {
		case had && cur.same(prev):
			continue
		case had && cur.period.ID == prev.period.ID:
			by, passed := r.crossed(ctx, w, k.member, prev, cur)
			msg = appendStanding(msg, w, cur, &prev, by, passed)
		default:
			msg = appendStanding(msg, w, cur, nil, nil, nil)
		}
	}
	return msg, now, order, nil
}

// same reports whether a feed has nothing new to say: the total alone moved.
func (s standing) same(o standing) bool {
	return s.period.ID == o.period.ID && s.ranked == o.ranked && s.rank == o.rank && s.score == o.score && s.sub == o.sub
}

// crossed names the member that passed member (by) or that member passed (passed) from
// prev to cur, when one member alone did: the member's rank moved by one, and of the members
// the change moved, one alone can have crossed it. A member that moved itself names the
// neighbour it crossed only when it moved alone.
func (r *standingReader) crossed(ctx context.Context, w, member string, prev, cur standing) (by, passed *laurel.Entry) {
	d := cur.rank - prev.rank
	if r.movers == nil || !prev.ranked || !cur.ranked || (d != 1 && d != -1) {
		return nil, nil
	}
	if r.moves.members[member] {
		if len(r.movers) != 1 {
			return nil, nil
		}
		// It crossed one member, who now stands beside it.
		p, err := r.svc.Page(ctx, laurel.Query{Board: r.board, Window: w}, cur.rank-d-1, 1, laurel.ScoreRange{})
		if err != nil || len(p.Entries) != 1 || p.Period.ID != cur.period.ID || p.Entries[0].Member == member {
			return nil, nil
		}
		e := p.Entries[0]
		if d > 0 {
			return &e, nil
		}
		return nil, &e
	}
	// The others moved: those now above it (below it) that were below (above) it are what
	// its rank lost (gained), so with one candidate alone, that one crossed.
	wr := r.read[w]
	var one *laurel.Entry
	for _, m := range r.movers {
		e, ranked := wr.entries[m]
		if d > 0 && ranked && e.Rank < cur.rank || d < 0 && (!ranked || e.Rank > cur.rank) {
			if one != nil || !ranked {
				return nil, nil
			}
			one = &e
		}
	}
	if one == nil {
		return nil, nil
	}
	if d > 0 {
		return one, nil
	}
	return nil, one
}

// boardWindows returns the board's windows, read once.
func (r *standingReader) boardWindows(ctx context.Context) ([]string, error) {
	if r.windows != nil {
		return r.windows, nil
	}
	b, err := r.svc.Board(ctx, r.board)
	if err != nil {
		return nil, err
	}
	for _, w := range b.Windows {
		r.windows = append(r.windows, w.String())
	}
	return r.windows, nil
}

// window reads window w's standings of every member streaming from the board, and of the
// movers, in lookups of the most members one takes, each holding every mover.
func (r *standingReader) window(ctx context.Context, w string) *windowRead {
	if wr := r.read[w]; wr != nil {
		return wr
	}
	wr := &windowRead{entries: make(map[string]laurel.Entry)}
	r.read[w] = wr
	room := laurel.MaxLookup - len(r.movers)
	for from := 0; from < len(r.members) && wr.err == nil; from += room {
		batch := append(slices.Clone(r.movers), r.members[from:min(from+room, len(r.members))]...)
		p, err := r.svc.Lookup(ctx, laurel.Query{Board: r.board, Window: w}, batch)
		if err != nil {
			wr.err = err
			break
		}
		wr.period, wr.total, wr.hasSub = p.Period, p.Total, p.HasSub
		for _, e := range p.Entries {
			wr.entries[e.Member] = e
		}
	}
	if id := wr.period.ID; id != "" && id != "all" && (r.end == 0 || wr.period.End < r.end) {
		r.end = wr.period.End
	}
	return wr
}

// memberStandingJSON is one event of a member's feed.
type memberStandingJSON struct {
	Window   string        `json:"window"`
	Period   periodJSON    `json:"period"`
	Total    int64         `json:"total"`
	Rank     *int          `json:"rank,omitempty"`
	Score    *int64        `json:"score,omitempty"`
	Sub      *int64        `json:"subscore,omitempty"` // ranked, on a board with a subscore
	Previous *previousJSON `json:"previous,omitempty"`
	PassedBy *entryJSON    `json:"passed_by,omitempty"`
	Passed   *entryJSON    `json:"passed,omitempty"`
}

type previousJSON struct {
	Rank  *int   `json:"rank,omitempty"`
	Score *int64 `json:"score,omitempty"`
	Sub   *int64 `json:"subscore,omitempty"`
}

// appendStanding appends an SSE event of s in window w, with what the feed said before in
// the same period (prev, nil: nothing) and who crossed it.
func appendStanding(dst []byte, w string, s standing, prev *standing, by, passed *laurel.Entry) []byte {
	out := memberStandingJSON{Window: w, Period: periodOf(s.period, false, false), Total: s.total}
	if s.ranked {
		out.Rank, out.Score, out.Sub = &s.rank, &s.score, subOf(s.sub, s.hasSub)
	}
	if prev != nil {
		out.Previous = &previousJSON{}
		if prev.ranked {
			out.Previous.Rank, out.Previous.Score, out.Previous.Sub = &prev.rank, &prev.score, subOf(prev.sub, s.hasSub)
		}
	}
	if by != nil {
		e := entryOf(*by, s.hasSub)
		out.PassedBy = &e
	}
	if passed != nil {
		e := entryOf(*passed, s.hasSub)
		out.Passed = &e
	}
	data, _ := json.Marshal(out)
	return append(dst, sse("standing", data)...)
}

func (s *Server) handleMemberStream(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	board, member := r.PathValue("board"), r.PathValue("member")
	err := laurel.ValidateBoardID(board)
	if err == nil {
		err = laurel.ValidateMember("member", member)
	}
	if err == nil {
		err = noInstant(v, "a member's stream follows its standing now; read past periods from /members/{member}")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	k := memberKey{board: board, member: member, window: v.Get("window")}
	s.members.start()
	// Read once here, so that a bad window or an unknown board is a plain error response.
	rd := newStandingReader(s.svc, board, []string{member}, moves{anyone: true})
	_, read, order, err := rd.update(r.Context(), k, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, first, ok := s.members.subscribe(k, read, order, rd.end)
	if !ok {
		s.writeError(w, r, laurel.Errorf(laurel.EUnavailable, "the server is shutting down"))
		return
	}
	defer s.members.unsubscribe(k, st)
	// Twice the page's interval: ten thousand members' streams pinging every 15 s are 667
	// writes a second, more than the standings the budget lets out; proxies wait a minute.
	s.follow(w, r, first, st, s.members.closed, 2*s.ping)
}
