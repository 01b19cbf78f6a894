// Package laureltest tests an implementation of [laurel.Service] (an engine) against
// docs/design.md: a randomized differential test of the engine against a brute-force model of
// §1, recomputed from the raw events at every read, and the fixed cases it found. Every engine
// runs the same oracle from its own tests, over its own store, with a [Target]:
//
//	func TestOracle(t *testing.T) { laureltest.Oracle(t, target(t)) }
//
// It is test support, like net/http/httptest: only tests import it.
//
//	go test ./embedded/ -run Oracle -v                 # a fresh seed, printed
//	go test ./embedded/ -run Oracle -v -seed=N -ops=M  # replay a failure
//
// (and the same with the package of another engine). -ops defaults to 1200 (150 with
// -short). -skipops=retract,hide,delete,invalid,putboard,config,restart leaves kinds of
// operation out to bisect a failure (it changes the random stream, so a seed then replays
// something else). -keepmode=lenient accepts the other reading of keep (not_found once keep
// newer periods have closed). A failure prints the seed, the operation, the clock, the
// expected and actual entries, and the last 60 operations.
//
// The package registers these flags in its init, -seed and -ops only when they are not
// registered yet, so the test package importing it may read them too (with [flag.Lookup]).
// A test package that registers -seed or -ops itself must do so in an init guarded by
// flag.Lookup, as this package does: its package-level variables are initialized after this
// package's init, and the flag package panics on a flag defined twice.
//
// The model keeps, per board, every accepted event (member, value, ts, id, arrival order,
// retraction time, deletion) and nothing derived: each read filters the events counted in its
// span, aggregates them per member by the board's mode, leaves hidden members out and sorts by
// (score in the board's order, reached_at ascending, member bytes ascending).
//
// Calendar periods close late_limit after their end (late_limit may grow: a period closes at
// the first instant t with t >= end + late_limit(t)); a closed period's content is what was
// counted at that instant: an event retracted at or after the close still counts in it. A
// window added later is computed from the events retained when it was added. A closed period
// stays readable until more than keep newer periods of the window have closed.
package laureltest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// The flags are registered in init, each only if no other package registered it before (a
// test package may declare -seed and -ops in its own init, guarded the same way).
func init() {
	if flag.Lookup("seed") == nil {
		flag.Uint64("seed", 0, "seed for the randomized tests (0: from the clock)")
	}
	if flag.Lookup("ops") == nil {
		flag.Int("ops", 0, "operations per randomized test run (0: the test's default)")
	}
	// keepmode selects how the oracle reads keep. "spec" (docs/design.md literally): a closed
	// period stays readable until more than keep newer periods of its window (with data or
	// not) have closed, so keep+1 closed periods are readable. "lenient": a closed period may
	// also read as not_found once keep newer periods have closed, and is never required to
	// be gone.
	if flag.Lookup("keepmode") == nil {
		flag.String("keepmode", "spec", "the oracle's reading of keep: spec or lenient")
	}
	// skipops disables kinds of operation of the oracle, to bisect a failure: a
	// comma-separated list of retract, hide, delete, invalid, putboard (every board change),
	// config (random late_limit and keep changes), restart.
	if flag.Lookup("skipops") == nil {
		flag.String("skipops", "", "the oracle: operations to leave out (retract,hide,delete,invalid,putboard,config,restart)")
	}
}

// flagString returns the value of the flag name, or "" if no package registered it.
func flagString(name string) string {
	f := flag.Lookup(name)
	if f == nil {
		return ""
	}
	return f.Value.String()
}

func flagInt(name string) uint64 {
	v, err := strconv.ParseUint(flagString(name), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// Target is an engine under test. A Target serves one test: Open opens the engine over the
// store that test uses, empty the first time.
type Target struct {
	// Open opens the engine; now is the test's clock in unix ms, which the engine must take
	// as its own. It is called again after Close to model a restart: the engine must come
	// back with everything it acknowledged.
	Open func(t testing.TB, now func() int64) (laurel.Service, error)
	// Close stops what Open returned. When nil, the service's Close method is used if it
	// has one (io.Closer).
	Close func(laurel.Service) error
	// Check, when set, verifies the engine's own invariants (the embedded engine's
	// (*Engine).Check); it is called at the checkpoints where the oracle compares
	// everything with the model.
	Check func(laurel.Service) error
	// Export writes everything the open engine holds as a dump (laurel.DumpWriter), and
	// Import loads a dump into the target's store before it is opened, on the test's clock:
	// OracleTransfer moves the oracle's data from one target to the next through them.
	Export func(laurel.Service, io.Writer) error
	Import func(t testing.TB, now func() int64, r io.Reader) error
}

func (tg Target) open(t testing.TB, now func() int64) (laurel.Service, error) {
	if tg.Open == nil {
		return nil, fmt.Errorf("laureltest: Target.Open is nil")
	}
	return tg.Open(t, now)
}

func (tg Target) close(s laurel.Service) error {
	if tg.Close != nil {
		return tg.Close(s)
	}
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (tg Target) check(s laurel.Service) error {
	if tg.Check == nil {
		return nil
	}
	return tg.Check(s)
}

// ---------------------------------------------------------------------------------------
// The model.

type mEvent struct {
	board      string
	member     string
	value, ts  int64
	id         string
	arrival    uint64
	retracted  bool
	retractAt  int64  // clock at the retraction
	retractSeq uint64 // operation sequence of the retraction
	deleted    bool
	// points is the member's standing per window right after the event's batch (its history
	// point), when the model knows it: not for batches written concurrently.
	points      map[string]laurel.Standing
	pointsKnown bool
}

type mWindow struct {
	w      laurel.Window
	name   string
	addSeq uint64 // operation sequence at which the window was added (0: with the board)
	addAt  int64  // clock when it was added (board creation for the first ones)
}

type lateStep struct{ from, limit int64 } // late_limit (ms) in force from the instant from

type keepStep struct {
	from int64 // keep in force from the instant from
	keep int
}

type mBoard struct {
	id           string
	order        laurel.Order
	mode         laurel.Mode
	tz           string
	cal          laurel.Calendar
	windows      []*mWindow
	late         []lateStep
	keep         int // the current keep
	keeps        []keepStep
	min, max     *int64
	created      int64
	events       []*mEvent          // in arrival order
	ids          map[string]*mEvent // latest event per id
	idOrder      []string           // ids in first-use order (deterministic picking)
	valLo, valHi int64              // range of generated valid values
}

type model struct {
	now     int64
	seq     uint64
	arrival uint64
	boards  []*mBoard
	byID    map[string]*mBoard
	hidden  map[string]bool

	lenientKeep bool
}

func (b *mBoard) lateLimit() int64 { return b.late[len(b.late)-1].limit }

func (b *mBoard) window(name string) *mWindow {
	for _, w := range b.windows {
		if w.name == name {
			return w
		}
	}
	return nil
}

func (b *mBoard) windowNames() []string {
	var ns []string
	for _, w := range b.windows {
		ns = append(ns, w.name)
	}
	return ns
}

// closeAt is the instant a calendar period ending at end closes: the first t with
// t >= end + late_limit(t).
func (b *mBoard) closeAt(end int64) int64 {
	for i, s := range b.late {
		c := max(s.from, end+s.limit)
		if i == len(b.late)-1 || c < b.late[i+1].from {
			return c
		}
	}
	panic("unreachable")
}

type mPeriod struct {
	id         string
	start, end int64
}

func toPeriod(p laurel.Period) mPeriod {
	return mPeriod{id: p.ID, start: p.Start.UnixMilli(), end: p.End.UnixMilli()}
}

func (b *mBoard) periodAt(w laurel.Window, ms int64) mPeriod {
	return toPeriod(b.cal.PeriodAt(w, time.UnixMilli(ms)))
}

func (b *mBoard) nextPeriod(w laurel.Window, p mPeriod) mPeriod {
	return toPeriod(b.cal.NextPeriod(w, laurel.Period{ID: p.id, Start: time.UnixMilli(p.start), End: time.UnixMilli(p.end)}))
}

func (b *mBoard) prevPeriod(w laurel.Window, p mPeriod) mPeriod {
	return toPeriod(b.cal.PrevPeriod(w, laurel.Period{ID: p.id, Start: time.UnixMilli(p.start), End: time.UnixMilli(p.end)}))
}

func (m *model) closed(b *mBoard, p mPeriod) bool { return b.closeAt(p.end) <= m.now }

// dropped: more than keep newer periods of the window have closed, i.e. the (keep+1)-th
// period after p has closed (periods close in order), under the keep in force at some time
// until now: a dropped period never comes back.
func (m *model) dropped(b *mBoard, w laurel.Window, p mPeriod) bool { return m.droppedBy(b, w, p, 1) }

// mayBeDropped: keep newer periods of the window have closed (the lenient reading).
func (m *model) mayBeDropped(b *mBoard, w laurel.Window, p mPeriod) bool {
	return m.droppedBy(b, w, p, 0)
}

func (m *model) droppedBy(b *mBoard, w laurel.Window, p mPeriod, extra int) bool {
	for i, k := range b.keeps {
		until := m.now
		if i+1 < len(b.keeps) {
			until = b.keeps[i+1].from
		}
		q := p
		for j := 0; j < k.keep+extra; j++ {
			q = b.nextPeriod(w, q)
		}
		if b.closeAt(q.end) <= until {
			return true
		}
	}
	return false
}

// inClosedPeriod reports whether ts lies in a closed period of one of b's calendar windows.
func (m *model) inClosedPeriod(b *mBoard, ts int64) bool {
	for _, w := range b.windows {
		if w.w.IsCalendar() && m.closed(b, b.periodAt(w.w, ts)) {
			return true
		}
	}
	return false
}

const futureSkew = int64(5 * time.Minute / time.Millisecond)

func (m *model) tsValid(b *mBoard, ts int64) bool {
	return ts <= m.now+futureSkew && ts >= m.now-b.lateLimit() && !m.inClosedPeriod(b, ts)
}

func (b *mBoard) active(id string) *mEvent {
	e := b.ids[id]
	if e == nil || e.retracted || e.deleted {
		return nil
	}
	return e
}

type spanKind int

const (
	spanAll spanKind = iota
	spanRolling
	spanPeriod
)

// mSpan is what a read is answered from.
type mSpan struct {
	kind       spanKind
	id         string
	start, end int64
	closed     bool
	closeAt    int64
	dropped    bool
	mayDrop    bool // lenient keep: not_found is accepted
	preWindow  bool // the period began before its window existed
}

func (sp mSpan) info() laurel.PeriodInfo {
	switch sp.kind {
	case spanAll:
		return laurel.PeriodInfo{ID: "all"}
	case spanRolling:
		return laurel.PeriodInfo{Start: sp.start, End: sp.end}
	}
	return laurel.PeriodInfo{ID: sp.id, Start: sp.start, End: sp.end, Closed: sp.closed}
}

func (sp mSpan) String() string {
	switch sp.kind {
	case spanAll:
		return "all"
	case spanRolling:
		return fmt.Sprintf("rolling[%s, %s)", laurel.FormatTime(sp.start), laurel.FormatTime(sp.end))
	}
	return fmt.Sprintf("period %s [%s, %s) closed=%v closeAt=%s dropped=%v", sp.id, laurel.FormatTime(sp.start),
		laurel.FormatTime(sp.end), sp.closed, laurel.FormatTime(sp.closeAt), sp.dropped)
}

// calendarSpan is the span of the calendar period p of window w at the model's now.
func (m *model) calendarSpan(b *mBoard, w *mWindow, p mPeriod) mSpan {
	sp := mSpan{kind: spanPeriod, id: p.id, start: p.start, end: p.end, closed: m.closed(b, p),
		closeAt: b.closeAt(p.end), dropped: m.dropped(b, w.w, p), preWindow: p.start < w.addAt}
	if m.lenientKeep {
		sp.mayDrop = sp.dropped || m.mayBeDropped(b, w.w, p)
		sp.dropped = false
	}
	return sp
}

// spanAt is the span of window w read at the instant t.
func (m *model) spanAt(b *mBoard, w *mWindow, t int64) mSpan {
	switch {
	case w.w.Kind == laurel.WindowAll:
		return mSpan{kind: spanAll}
	case w.w.IsRolling():
		s, e := b.cal.Span(w.w, time.UnixMilli(t))
		return mSpan{kind: spanRolling, start: s.UnixMilli(), end: e.UnixMilli()}
	}
	return m.calendarSpan(b, w, b.periodAt(w.w, t))
}

// counts reports whether e counts in span sp of window w.
func (m *model) counts(e *mEvent, w *mWindow, sp mSpan) bool {
	if e.deleted {
		return false
	}
	if sp.kind != spanAll && (e.ts < sp.start || e.ts >= sp.end) {
		return false
	}
	if !e.retracted {
		return true
	}
	if sp.kind == spanPeriod && sp.closed {
		// Frozen at the close (or, for a window added after that, at its addition).
		return e.retractAt >= sp.closeAt && e.retractSeq > w.addSeq
	}
	return false
}

// ranking returns the ranked entries of window w in span sp: every present, visible member.
func (m *model) ranking(b *mBoard, w *mWindow, sp mSpan) []laurel.Entry {
	type agg struct {
		score, at int64
		arr       uint64
	}
	aggs := map[string]*agg{}
	for _, e := range b.events {
		if !m.counts(e, w, sp) {
			continue
		}
		a := aggs[e.member]
		if a == nil {
			aggs[e.member] = &agg{e.value, e.ts, e.arrival}
			continue
		}
		switch b.mode {
		case laurel.Sum:
			a.score += e.value
			a.at = max(a.at, e.ts)
		case laurel.Best:
			if b.order.Better(e.value, a.score) {
				a.score, a.at = e.value, e.ts
			} else if e.value == a.score && e.ts < a.at {
				a.at = e.ts
			}
		case laurel.Last:
			if e.ts > a.at || e.ts == a.at && e.arrival > a.arr {
				a.score, a.at, a.arr = e.value, e.ts, e.arrival
			}
		}
	}
	out := make([]laurel.Entry, 0, len(aggs))
	for mem, a := range aggs {
		if m.hidden[mem] {
			continue
		}
		out = append(out, laurel.Entry{Member: mem, Score: a.score, ReachedAt: a.at})
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Score != y.Score {
			return b.order.Better(x.Score, y.Score)
		}
		if x.ReachedAt != y.ReachedAt {
			return x.ReachedAt < y.ReachedAt
		}
		return x.Member < y.Member
	})
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

// expRead is the model's answer to a Query.
type expRead struct {
	code string // expected error code; "" for success
	b    *mBoard
	w    *mWindow
	sp   mSpan
	all  []laurel.Entry
}

func (m *model) resolve(q laurel.Query) expRead {
	b := m.byID[q.Board]
	if b == nil {
		return expRead{code: laurel.ENotFound}
	}
	if q.HasAt && q.Period != "" {
		return expRead{code: laurel.EInvalid}
	}
	w := b.windows[0]
	if q.Window != "" {
		if w = b.window(q.Window); w == nil {
			return expRead{code: laurel.EInvalid}
		}
	}
	t := m.now
	if q.HasAt {
		t = q.At
	}
	var sp mSpan
	switch {
	case q.Period != "" && w.w.IsCalendar():
		p, err := b.cal.ParsePeriod(w.w, q.Period)
		if err != nil {
			return expRead{code: laurel.EInvalid}
		}
		sp = m.calendarSpan(b, w, toPeriod(p))
	case q.Period != "" && w.w.Kind == laurel.WindowAll:
		if q.Period != "all" {
			return expRead{code: laurel.EInvalid}
		}
		sp = mSpan{kind: spanAll}
	case q.Period != "":
		return expRead{code: laurel.EInvalid} // a rolling window has no periods
	default:
		sp = m.spanAt(b, w, t)
	}
	if sp.kind == spanPeriod && sp.dropped {
		return expRead{code: laurel.ENotFound, b: b, w: w, sp: sp}
	}
	return expRead{b: b, w: w, sp: sp, all: m.ranking(b, w, sp)}
}

// validate returns the error codes the batch deserves (one per failing event, deduplicated);
// none when it must be accepted.
func (m *model) validate(evs []laurel.Event) []string {
	var codes []string
	add := func(c string) {
		if !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	for _, ev := range evs {
		// Every rule the event breaks: when it breaks several, any of their codes will do.
		b := m.byID[ev.Board]
		if b == nil {
			add(laurel.ENotFound)
			continue
		}
		if ev.Member == "" || len(ev.Member) > laurel.MaxMemberID || strings.ContainsAny(ev.Member, "/\x00\n") ||
			len(ev.ID) > laurel.MaxEventID || b.min != nil && ev.Value < *b.min || b.max != nil && ev.Value > *b.max {
			add(laurel.EInvalid)
		}
		if ev.HasTS && ev.TS > m.now+futureSkew {
			add(laurel.EInvalid)
		}
		if ev.HasTS && (ev.TS < m.now-b.lateLimit() || m.inClosedPeriod(b, ev.TS)) {
			add(laurel.ETooLate)
		}
		if ev.ID != "" {
			if e := b.active(ev.ID); e != nil && (e.member != ev.Member || e.value != ev.Value || ev.HasTS && ev.TS != e.ts) {
				add(laurel.EConflict)
			}
		}
	}
	return codes
}

// apply applies a valid batch and returns each event's status.
func (m *model) apply(evs []laurel.Event) []string {
	st, _ := m.applied(evs)
	return st
}

// applied applies evs and returns their statuses and the events applied (nil for
// duplicates).
func (m *model) applied(evs []laurel.Event) ([]string, []*mEvent) {
	m.seq++
	st := make([]string, len(evs))
	added := make([]*mEvent, len(evs))
	for i, ev := range evs {
		b := m.byID[ev.Board]
		if ev.ID != "" && b.active(ev.ID) != nil {
			st[i] = laurel.StatusDuplicate
			continue
		}
		st[i] = laurel.StatusApplied
		m.arrival++
		e := &mEvent{board: b.id, member: ev.Member, value: ev.Value, ts: m.now, id: ev.ID, arrival: m.arrival}
		if ev.HasTS {
			e.ts = ev.TS
		}
		b.events = append(b.events, e)
		added[i] = e
		if ev.ID != "" {
			if b.ids[ev.ID] == nil {
				b.idOrder = append(b.idOrder, ev.ID)
			}
			b.ids[ev.ID] = e
		}
	}
	return st, added
}

// notePoints gives the events of a batch just applied their history points: the member's
// standing in each window's current span after the whole batch, none while it is hidden.
func (m *model) notePoints(added []*mEvent) {
	rankings := make(map[[2]string][]laurel.Entry)
	for _, e := range added {
		if e == nil {
			continue
		}
		e.points, e.pointsKnown = make(map[string]laurel.Standing), true
		if m.hidden[e.member] {
			continue
		}
		b := m.byID[e.board]
		for _, w := range b.windows {
			k := [2]string{b.id, w.name}
			all, ok := rankings[k]
			if !ok {
				all = m.ranking(b, w, m.spanAt(b, w, m.now))
				rankings[k] = all
			}
			if i := slices.IndexFunc(all, func(en laurel.Entry) bool { return en.Member == e.member }); i >= 0 {
				e.points[w.name] = laurel.Standing{Rank: all[i].Rank, Score: all[i].Score}
			}
		}
	}
}

func (m *model) retract(board, id string) string {
	b := m.byID[board]
	if b == nil {
		return laurel.ENotFound
	}
	e := b.active(id)
	if e == nil {
		return laurel.ENotFound
	}
	m.seq++
	e.retracted, e.retractAt, e.retractSeq = true, m.now, m.seq
	return ""
}

func (m *model) deleteMember(member string) {
	m.seq++
	for _, b := range m.boards {
		for _, e := range b.events {
			if e.member == member {
				e.deleted = true
			}
		}
	}
}

// members returns the members with an event that was not erased, sorted.
func (m *model) members() []string {
	set := map[string]bool{}
	for _, b := range m.boards {
		for _, e := range b.events {
			if !e.deleted {
				set[e.member] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------------------
// The harness.

type harness struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	m       *model
	clock   atomic.Int64
	target  Target
	eng     laurel.Service
	ctx     context.Context
	op      int
	log     []string
	nextID  int
	nextMem int
	stats   map[string]int
}

func (h *harness) now() int64 { return h.m.now }

func (h *harness) logf(format string, args ...any) {
	s := fmt.Sprintf("op %d @%s: ", h.op, laurel.FormatTime(h.m.now)) + fmt.Sprintf(format, args...)
	h.log = append(h.log, s)
	if len(h.log) > 60 {
		h.log = h.log[len(h.log)-60:]
	}
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Logf("last operations:\n  %s", strings.Join(h.log, "\n  "))
	h.t.Fatalf("seed %d, op %d, now %s (%d): %s", h.seed, h.op, laurel.FormatTime(h.m.now), h.m.now, fmt.Sprintf(format, args...))
}

func (h *harness) open() {
	e, err := h.target.open(h.t, h.clock.Load)
	if err != nil {
		h.fatalf("Open: %v", err)
	}
	h.eng = e
}

func (h *harness) reopen() {
	h.logf("restart")
	if err := h.target.close(h.eng); err != nil {
		h.fatalf("Close: %v", err)
	}
	h.eng = nil
	h.open()
}

// transfer moves everything to the next target through a dump: export from the engine,
// close it, import into next's empty store, and go on there.
func (h *harness) transfer(next Target) {
	h.logf("transfer through a dump")
	if h.target.Export == nil || next.Import == nil {
		h.fatalf("transfer: the targets cannot export or import")
	}
	var dump bytes.Buffer
	if err := h.target.Export(h.eng, &dump); err != nil {
		h.fatalf("Export: %v", err)
	}
	if err := h.target.close(h.eng); err != nil {
		h.fatalf("Close: %v", err)
	}
	h.eng = nil
	h.stats["transfer bytes"] += dump.Len()
	if err := next.Import(h.t, h.clock.Load, bytes.NewReader(dump.Bytes())); err != nil {
		h.fatalf("Import: %v", err)
	}
	h.target = next
	h.open()
}

func (h *harness) setNow(t int64) {
	h.m.now = t
	h.clock.Store(t)
}

func (h *harness) advance() {
	var d int64
	switch r := h.rng.IntN(100); {
	case r < 35:
		d = h.rng.Int64N(60_000)
	case r < 65:
		d = 60_000 + h.rng.Int64N(29*60_000)
	case r < 80:
		d = 3_600_000 + h.rng.Int64N(4*3_600_000)
	case r < 82:
		d = 86_400_000 + h.rng.Int64N(2*86_400_000)
	case r < 83 && h.rng.IntN(3) == 0:
		d = 10*86_400_000 + h.rng.Int64N(30*86_400_000)
	default:
		d = h.rng.Int64N(2000)
	}
	h.setNow(h.m.now + d)
}

func code(err error) string { return laurel.ErrorCode(err) }

func ptr[T any](v T) *T { return &v }

var memberPool = []string{
	"alice", "bob", "carol", "dave", "Eve", "émile", "zoë", "a", "ab", "a b",
	"mallory", "x-1", "X-1", "trent", "peggy", "victor", "Zed", "ümit", "m00", "m01",
	"m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11",
}

func (h *harness) pickMember() string {
	switch r := h.rng.IntN(100); {
	case r < 70:
		return memberPool[h.rng.IntN(10)]
	case r < 96:
		return memberPool[10+h.rng.IntN(len(memberPool)-10)]
	default:
		h.nextMem++
		return "new" + strconv.Itoa(h.nextMem)
	}
}

type boardDef struct {
	id, order, mode, tz, week, late string
	windows                         []string
	keep                            int
	min, max                        *int64
	valLo, valHi                    int64
}

var boardDefs = []boardDef{
	{id: "sum-utc", order: "desc", mode: "sum", tz: "UTC", week: "monday", late: "3h", windows: []string{"all", "day", "last7d", "hour"}, keep: 2, min: ptr[int64](-20), max: ptr[int64](50), valLo: -5, valHi: 20},
	{id: "best-ny", order: "asc", mode: "best", tz: "America/New_York", week: "sunday", late: "6h", windows: []string{"week", "all", "last3h", "day"}, keep: 1, valLo: 1, valHi: 40},
	{id: "last-lh", order: "desc", mode: "last", tz: "Australia/Lord_Howe", week: "monday", late: "1d", windows: []string{"day", "last1d", "month"}, keep: 3, min: ptr[int64](0), max: ptr[int64](100), valLo: 0, valHi: 30},
	{id: "sum-ny", order: "asc", mode: "sum", tz: "America/New_York", week: "monday", late: "2h", windows: []string{"hour", "last3h", "week"}, keep: 0, valLo: -5, valHi: 10},
	{id: "best-utc", order: "desc", mode: "best", tz: "UTC", week: "tuesday", late: "2d", windows: []string{"last7d", "day"}, keep: 2, min: ptr[int64](0), max: ptr[int64](30), valLo: 0, valHi: 25},
	{id: "last-ny", order: "asc", mode: "last", tz: "America/New_York", week: "monday", late: "2h", windows: []string{"hour", "all"}, keep: 3, valLo: -3, valHi: 12},
}

func (h *harness) createBoards() {
	for _, d := range boardDefs {
		spec := laurel.BoardSpec{Order: ptr(d.order), Mode: ptr(d.mode), Timezone: ptr(d.tz), WeekStart: ptr(d.week),
			LateLimit: ptr(d.late), Keep: ptr(d.keep), Windows: d.windows, MinValue: d.min, MaxValue: d.max}
		info, created, err := h.eng.PutBoard(h.ctx, d.id, spec)
		if err != nil || !created {
			h.fatalf("PutBoard %s: created=%v err=%v", d.id, created, err)
		}
		if info.ID != d.id {
			h.fatalf("PutBoard %s: got id %q", d.id, info.ID)
		}
		lb, err := spec.Apply(d.id, nil, h.m.now)
		if err != nil {
			h.fatalf("spec.Apply %s: %v", d.id, err)
		}
		b := &mBoard{id: d.id, order: lb.Order, mode: lb.Mode, tz: d.tz, cal: lb.Calendar(), keep: d.keep,
			min: d.min, max: d.max, created: h.m.now, ids: map[string]*mEvent{}, valLo: d.valLo, valHi: d.valHi,
			late: []lateStep{{from: h.m.now, limit: lb.LateLimit.Milliseconds()}}, keeps: []keepStep{{h.m.now, d.keep}}}
		for _, w := range lb.Windows {
			b.windows = append(b.windows, &mWindow{w: w, name: w.String(), addAt: h.m.now})
		}
		h.m.boards = append(h.m.boards, b)
		h.m.byID[b.id] = b
	}
}

// ---------------------------------------------------------------------------------------
// Writes.

func (h *harness) pickBoard() *mBoard { return h.m.boards[h.rng.IntN(len(h.m.boards))] }

func (h *harness) activeIDs(b *mBoard, used map[string]bool) []string {
	var out []string
	for _, id := range b.idOrder {
		if b.active(id) != nil && !used[id] {
			out = append(out, id)
		}
	}
	return out
}

func (h *harness) reusableIDs(b *mBoard, used map[string]bool) []string {
	var out []string
	for _, id := range b.idOrder {
		if e := b.ids[id]; e.retracted && !e.deleted && !used[id] {
			out = append(out, id)
		}
	}
	return out
}

func (h *harness) pickFrom(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[h.rng.IntN(len(s))]
}

func (h *harness) genTS(b *mBoard) (int64, bool) {
	now, late := h.m.now, b.lateLimit()
	switch r := h.rng.IntN(100); {
	case r < 45:
		return 0, false
	case r < 73:
		return now - h.rng.Int64N(late+1), true
	case r < 83:
		return now - h.rng.Int64N(600_000), true
	case r < 88:
		return now + 1 + h.rng.Int64N(futureSkew), true
	case r < 91:
		return now - late, true
	case r < 92:
		return now + futureSkew, true
	case r < 97:
		// Whole minutes: ties on ts.
		t := now - h.rng.Int64N(late+1)
		t = (t + 59_999) / 60_000 * 60_000
		return min(t, now+futureSkew), true
	default:
		// The ts of a recent event: ties on ts.
		for range 5 {
			if len(b.events) == 0 {
				break
			}
			e := b.events[len(b.events)-1-h.rng.IntN(min(len(b.events), 20))]
			if e.ts >= now-late && e.ts <= now+futureSkew {
				return e.ts, true
			}
		}
		return now, true
	}
}

// genEvent generates an event for b that is valid most of the time.
func (h *harness) genEvent(b *mBoard, used map[string]bool) laurel.Event {
	ev := laurel.Event{Board: b.id}
	if h.rng.IntN(100) < 7 {
		if id := h.pickFrom(h.activeIDs(b, used)); id != "" {
			orig := b.ids[id]
			used[id] = true
			ev.Member, ev.Value, ev.ID = orig.member, orig.value, id
			if h.rng.IntN(2) == 0 && h.m.tsValid(b, orig.ts) {
				ev.HasTS, ev.TS = true, orig.ts
			}
			return ev
		}
	}
	ev.Member = h.pickMember()
	ev.Value = b.valLo + h.rng.Int64N(b.valHi-b.valLo+1)
	ev.TS, ev.HasTS = h.genTS(b)
	switch r := h.rng.IntN(100); {
	case r < 45:
	case r < 88:
		h.nextID++
		ev.ID = "e" + strconv.Itoa(h.nextID)
	case r < 94:
		ev.ID = h.pickFrom(h.reusableIDs(b, used))
	default:
		// An id used on another board, new to this one.
		o := h.pickBoard()
		for _, id := range o.idOrder {
			if b.ids[id] == nil && !used[id] {
				ev.ID = id
				break
			}
		}
	}
	if ev.ID != "" {
		used[ev.ID] = true
	}
	return ev
}

func fmtEvent(ev laurel.Event) string {
	s := fmt.Sprintf("{%s %q %d", ev.Board, ev.Member, ev.Value)
	if ev.HasTS {
		s += " ts=" + laurel.FormatTime(ev.TS)
	}
	if ev.ID != "" {
		s += " id=" + ev.ID
	}
	return s + "}"
}

func fmtEvents(evs []laurel.Event) string {
	var parts []string
	for _, ev := range evs {
		parts = append(parts, fmtEvent(ev))
	}
	return strings.Join(parts, " ")
}

// corrupt makes one event of the batch invalid and says how.
func (h *harness) corrupt(evs []laurel.Event) string {
	i := h.rng.IntN(len(evs))
	ev := &evs[i]
	b := h.m.byID[ev.Board]
	now, late := h.m.now, b.lateLimit()
	for {
		switch h.rng.IntN(9) {
		case 0:
			ev.HasTS, ev.TS = true, now-late-1-h.rng.Int64N(3*3_600_000)
			return "too late"
		case 1:
			ev.HasTS, ev.TS = true, now+futureSkew+1+h.rng.Int64N(3_600_000)
			return "future"
		case 2:
			if b.max == nil {
				continue
			}
			if h.rng.IntN(2) == 0 {
				ev.Value = *b.max + 1 + h.rng.Int64N(10)
			} else {
				ev.Value = *b.min - 1 - h.rng.Int64N(10)
			}
			return "out of bounds"
		case 3:
			ev.Board = "no-such-board"
			return "unknown board"
		case 4, 5:
			used := map[string]bool{}
			for _, o := range evs {
				if o.Board == b.id && o.ID != "" {
					used[o.ID] = true
				}
			}
			id := h.pickFrom(h.activeIDs(b, used))
			if id == "" {
				continue
			}
			orig := b.ids[id]
			ev.ID, ev.Member, ev.Value, ev.HasTS = id, orig.member, orig.value, false
			switch h.rng.IntN(3) {
			case 0:
				for ev.Member == orig.member {
					ev.Member = h.pickMember()
				}
			case 1:
				if b.valHi == b.valLo {
					continue
				}
				for ev.Value == orig.value {
					ev.Value = b.valLo + h.rng.Int64N(b.valHi-b.valLo+1)
				}
			case 2:
				ev.HasTS, ev.TS = true, now-h.rng.Int64N(60_000)
				if ev.TS == orig.ts {
					ev.TS--
				}
				if !h.m.tsValid(b, ev.TS) {
					continue
				}
			}
			return "conflict"
		case 6:
			// A ts in a closed period that is still within late_limit (after late_limit grew).
			for _, w := range b.windows {
				if !w.w.IsCalendar() {
					continue
				}
				p := b.periodAt(w.w, now-late)
				if h.m.closed(b, p) && p.end > now-late {
					ev.HasTS, ev.TS = true, max(p.start, now-late)+h.rng.Int64N(min(p.end, now)-max(p.start, now-late))
					return "closed period"
				}
			}
			continue
		case 7:
			ev.Member = []string{"", "a/b", strings.Repeat("m", 129)}[h.rng.IntN(3)]
			return "bad member"
		case 8:
			ev.ID = strings.Repeat("i", 129)
			return "bad id"
		}
	}
}

func (h *harness) opSubmit(kind string) {
	n := 1
	if kind != "single" {
		n = 1 + h.rng.IntN(8)
	}
	boards := []*mBoard{h.pickBoard()}
	if n > 1 && h.rng.IntN(4) == 0 {
		if o := h.pickBoard(); o != boards[0] {
			boards = append(boards, o)
		}
	}
	used := map[string]map[string]bool{}
	for _, b := range boards {
		used[b.id] = map[string]bool{}
	}
	evs := make([]laurel.Event, 0, n)
	for range n {
		b := boards[h.rng.IntN(len(boards))]
		evs = append(evs, h.genEvent(b, used[b.id]))
	}
	how := ""
	if kind == "invalid" {
		how = h.corrupt(evs)
	}
	opts := laurel.SubmitOptions{NoRanks: h.rng.IntN(5) == 0}
	codes := h.m.validate(evs)
	h.logf("submit%s %s", map[bool]string{true: " (" + how + ")", false: ""}[how != ""], fmtEvents(evs))
	res, err := h.eng.Submit(h.ctx, evs, opts)
	if len(codes) > 0 {
		h.stats["submit rejected "+strings.Join(codes, "|")]++
		if err == nil {
			h.fatalf("Submit %s: accepted, want error %v", fmtEvents(evs), codes)
		}
		if !slices.Contains(codes, code(err)) {
			h.fatalf("Submit %s: error %v (code %s), want code %v", fmtEvents(evs), err, code(err), codes)
		}
		for _, b := range boards {
			h.quickCheck(b, "after rejected submit")
		}
		return
	}
	if err != nil {
		h.fatalf("Submit %s: %v", fmtEvents(evs), err)
	}
	st, added := h.m.applied(evs)
	h.m.notePoints(added)
	if len(res) != len(evs) {
		h.fatalf("Submit %s: %d results for %d events", fmtEvents(evs), len(res), len(evs))
	}
	perMember := map[[2]string]int{}
	for _, ev := range evs {
		perMember[[2]string{ev.Board, ev.Member}]++
	}
	for i, r := range res {
		ev := evs[i]
		h.stats["submit "+st[i]]++
		if r.Status != st[i] || r.Board != ev.Board || r.Member != ev.Member || r.ID != ev.ID {
			h.fatalf("Submit %s: result %d = {board %q member %q id %q status %q}, want {%q %q %q %q}",
				fmtEvents(evs), i, r.Board, r.Member, r.ID, r.Status, ev.Board, ev.Member, ev.ID, st[i])
		}
		if opts.NoRanks {
			if len(r.Entries) != 0 {
				h.fatalf("Submit with NoRanks: result %d has entries %v", i, r.Entries)
			}
			continue
		}
		if st[i] != laurel.StatusApplied || h.m.hidden[ev.Member] || perMember[[2]string{ev.Board, ev.Member}] != 1 {
			continue
		}
		b := h.m.byID[ev.Board]
		for _, w := range b.windows {
			all := h.m.ranking(b, w, h.m.spanAt(b, w, h.m.now))
			got, ok := r.Entries[w.name]
			idx := slices.IndexFunc(all, func(e laurel.Entry) bool { return e.Member == ev.Member })
			if idx < 0 {
				if ok && got.Rank != 0 {
					h.fatalf("Submit %s: result %d entries[%s] = %+v, want none (member not in the current period)", fmtEvents(evs), i, w.name, got)
				}
				continue
			}
			if want := (laurel.Standing{Rank: all[idx].Rank, Score: all[idx].Score}); got != want || !ok {
				h.fatalf("Submit %s: result %d entries[%s] = %+v (present %v), want %+v\nmodel ranking: %s",
					fmtEvents(evs), i, w.name, got, ok, want, fmtEntries(all, 10))
			}
		}
	}
}

// opConcurrent submits batches from several goroutines at once, so that an engine that
// commits in groups does. Each goroutine has its own members and fresh ids, so the outcome
// does not depend on the order the engine takes them in (last-mode ties by arrival only arise
// between events of one member, which one goroutine sends in order).
func (h *harness) opConcurrent() {
	const writers = 4
	type job struct {
		batches [][]laurel.Event
		errs    []error
		res     [][]laurel.EventResult
	}
	jobs := make([]*job, writers)
	for g := range jobs {
		j := &job{}
		var mine []string
		for i, mem := range memberPool {
			if i%writers == g {
				mine = append(mine, mem)
			}
		}
		for range 1 + h.rng.IntN(3) {
			var batch []laurel.Event
			for range 1 + h.rng.IntN(6) {
				b := h.pickBoard()
				ev := laurel.Event{Board: b.id, Member: mine[h.rng.IntN(len(mine))], Value: b.valLo + h.rng.Int64N(b.valHi-b.valLo+1)}
				ev.TS, ev.HasTS = h.genTS(b)
				if h.rng.IntN(2) == 0 {
					h.nextID++
					ev.ID = "c" + strconv.Itoa(h.nextID)
				}
				batch = append(batch, ev)
			}
			if len(h.m.validate(batch)) == 0 {
				j.batches = append(j.batches, batch)
			}
		}
		j.errs = make([]error, len(j.batches))
		j.res = make([][]laurel.EventResult, len(j.batches))
		jobs[g] = j
	}
	for g, j := range jobs {
		for _, batch := range j.batches {
			h.logf("concurrent writer %d: submit %s", g, fmtEvents(batch))
		}
	}
	done := make(chan struct{})
	for _, j := range jobs {
		go func() {
			defer func() { done <- struct{}{} }()
			for i, batch := range j.batches {
				j.res[i], j.errs[i] = h.eng.Submit(h.ctx, batch, laurel.SubmitOptions{})
			}
		}()
	}
	for range jobs {
		<-done
	}
	h.stats["concurrent writes"]++
	for g, j := range jobs {
		for i, batch := range j.batches {
			if j.errs[i] != nil {
				h.fatalf("concurrent writer %d: Submit %s: %v", g, fmtEvents(batch), j.errs[i])
			}
			st := h.m.apply(batch)
			for k, r := range j.res[i] {
				if r.Status != st[k] || r.Member != batch[k].Member || r.ID != batch[k].ID {
					h.fatalf("concurrent writer %d: Submit %s: result %d = %+v, want status %s", g, fmtEvents(batch), k, r, st[k])
				}
			}
		}
	}
}

func (h *harness) opRetract() {
	b := h.pickBoard()
	board := b.id
	var id string
	switch r := h.rng.IntN(100); {
	case r < 80:
		id = h.pickFrom(h.activeIDs(b, nil))
	case r < 90:
		id = h.pickFrom(h.reusableIDs(b, nil))
	case r < 97:
	default:
		board = "no-such-board"
		id = h.pickFrom(h.activeIDs(b, nil))
	}
	if id == "" {
		h.nextID++
		id = "nope" + strconv.Itoa(h.nextID)
	}
	want := h.m.retract(board, id)
	h.logf("retract %s %s (want %q)", board, id, want)
	h.stats["retract "+map[string]string{"": "ok"}[want]+want]++
	err := h.eng.Retract(h.ctx, board, id)
	if code(err) != want {
		h.fatalf("Retract(%s, %s) = %v, want code %q", board, id, err, want)
	}
	if want != "" {
		h.quickCheck(b, "after failed retract")
	}
}

func (h *harness) opHide() {
	if len(h.m.hidden) > 0 && h.rng.IntN(5) < 2 {
		var hs []string
		for k := range h.m.hidden {
			hs = append(hs, k)
		}
		sort.Strings(hs)
		mem := h.pickFrom(hs)
		h.logf("unhide %q", mem)
		h.stats["unhide"]++
		if err := h.eng.Unhide(h.ctx, mem); err != nil {
			h.fatalf("Unhide(%q): %v", mem, err)
		}
		h.m.seq++
		delete(h.m.hidden, mem)
		return
	}
	mem := h.pickFrom(h.m.visibleMembers())
	if mem == "" {
		return
	}
	h.logf("hide %q", mem)
	h.stats["hide"]++
	if err := h.eng.Hide(h.ctx, mem); err != nil {
		h.fatalf("Hide(%q): %v", mem, err)
	}
	h.m.seq++
	h.m.hidden[mem] = true
}

// visibleMembers lists the members not hidden.
func (m *model) visibleMembers() []string {
	var out []string
	for _, mem := range m.members() {
		if !m.hidden[mem] {
			out = append(out, mem)
		}
	}
	return out
}

func (h *harness) opDelete() {
	mem := h.pickFrom(h.m.visibleMembers())
	if mem == "" {
		return
	}
	h.logf("delete member %q", mem)
	h.stats["delete member"]++
	if err := h.eng.DeleteMember(h.ctx, mem); err != nil {
		h.fatalf("DeleteMember(%q): %v", mem, err)
	}
	h.m.deleteMember(mem)
}

// addWindows adds windows to a board with PutBoard.
func (h *harness) addWindows(id string, names ...string) {
	b := h.m.byID[id]
	ws := append(b.windowNames(), names...)
	h.logf("PutBoard %s windows %v", id, ws)
	h.stats["add window"]++
	info, created, err := h.eng.PutBoard(h.ctx, id, laurel.BoardSpec{Windows: ws})
	if err != nil || created {
		h.fatalf("PutBoard %s windows %v: created=%v err=%v", id, ws, created, err)
	}
	if len(info.Windows) != len(ws) {
		h.fatalf("PutBoard %s windows %v: board has windows %v", id, ws, info.Windows)
	}
	h.m.seq++
	for _, n := range names {
		w, err := laurel.ParseWindow(n)
		if err != nil {
			h.fatalf("bad window %s", n)
		}
		b.windows = append(b.windows, &mWindow{w: w, name: n, addSeq: h.m.seq, addAt: h.m.now})
	}
	h.checkBoard(b, true)
}

// growLateLimit raises a board's late_limit: periods already closed stay closed.
func (h *harness) growLateLimit(id, late string) {
	b := h.m.byID[id]
	h.setNow(h.m.now + 1)  // never at the instant of another change
	if h.m.now%1000 == 0 { // nor exactly at a close instant (whole seconds)
		h.setNow(h.m.now + 1)
	}
	d, err := laurel.ParseDuration(late)
	if err != nil {
		h.fatalf("bad duration %s", late)
	}
	h.logf("PutBoard %s late_limit %s", id, late)
	h.stats["grow late_limit"]++
	if _, created, err := h.eng.PutBoard(h.ctx, id, laurel.BoardSpec{LateLimit: ptr(late)}); err != nil || created {
		h.fatalf("PutBoard %s late_limit %s: created=%v err=%v", id, late, created, err)
	}
	h.m.seq++
	b.late = append(b.late, lateStep{from: h.m.now, limit: d.Milliseconds()})
	h.checkBoard(b, true)
}

// changeConfig changes a board's late_limit or keep, up or down.
func (h *harness) changeConfig() {
	b := h.pickBoard()
	h.setNow(h.m.now + 1)  // never at the instant of another change
	if h.m.now%1000 == 0 { // nor exactly at a close instant (whole seconds)
		h.setNow(h.m.now + 1)
	}
	var spec laurel.BoardSpec
	if h.rng.IntN(2) == 0 {
		lates := []string{"1h", "2h", "3h", "5h", "1d", "2d"}
		late := lates[h.rng.IntN(len(lates))]
		d, _ := laurel.ParseDuration(late)
		if d.Milliseconds() == b.lateLimit() {
			return
		}
		spec.LateLimit = ptr(late)
		h.logf("PutBoard %s late_limit %s (was %dms)", b.id, late, b.lateLimit())
		b.late = append(b.late, lateStep{from: h.m.now, limit: d.Milliseconds()})
		h.stats["change late_limit"]++
	} else {
		keep := h.rng.IntN(5)
		if keep == b.keep {
			return
		}
		spec.Keep = ptr(keep)
		h.logf("PutBoard %s keep %d (was %d)", b.id, keep, b.keep)
		b.keep = keep
		b.keeps = append(b.keeps, keepStep{from: h.m.now, keep: keep})
		h.stats["change keep"]++
	}
	h.m.seq++
	if _, created, err := h.eng.PutBoard(h.ctx, b.id, spec); err != nil || created {
		h.fatalf("PutBoard %s %+v: created=%v err=%v", b.id, spec, created, err)
	}
	h.checkBoard(b, true)
}

// badPutBoard tries changes that must be refused.
func (h *harness) badPutBoard() {
	b := h.pickBoard()
	var spec laurel.BoardSpec
	what := ""
	switch h.rng.IntN(3) {
	case 0:
		spec.Mode = ptr(map[laurel.Mode]string{laurel.Sum: "best", laurel.Best: "last", laurel.Last: "sum"}[b.mode])
		what = "mode"
	case 1:
		spec.Order = ptr(map[laurel.Order]string{laurel.Desc: "asc", laurel.Asc: "desc"}[b.order])
		what = "order"
	case 2:
		if len(b.windows) < 2 {
			return
		}
		spec.Windows = b.windowNames()[1:]
		what = "window removed"
	}
	h.logf("PutBoard %s (%s: must conflict)", b.id, what)
	if _, _, err := h.eng.PutBoard(h.ctx, b.id, spec); code(err) != laurel.EConflict {
		h.fatalf("PutBoard %s changing %s: err %v, want conflict", b.id, what, err)
	}
	h.quickCheck(b, "after refused PutBoard")
}

// ---------------------------------------------------------------------------------------
// Reads.

func fmtEntry(e laurel.Entry) string {
	return fmt.Sprintf("#%d %q %d @%s", e.Rank, e.Member, e.Score, laurel.FormatTime(e.ReachedAt))
}

func fmtEntries(es []laurel.Entry, n int) string {
	var parts []string
	for i, e := range es {
		if i == n {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(es)))
			break
		}
		parts = append(parts, fmtEntry(e))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func sameEntry(a, b laurel.Entry) bool {
	return a.Rank == b.Rank && a.Member == b.Member && a.Score == b.Score && a.ReachedAt == b.ReachedAt
}

// diffEntries describes how got differs from want, or returns "".
func diffEntries(got, want []laurel.Entry) string {
	n := max(len(got), len(want))
	for i := 0; i < n; i++ {
		if i >= len(got) || i >= len(want) || !sameEntry(got[i], want[i]) {
			lo := max(0, i-2)
			g, w := "(none)", "(none)"
			if i < len(got) {
				g = fmtEntry(got[i])
			}
			if i < len(want) {
				w = fmtEntry(want[i])
			}
			return fmt.Sprintf("first difference at index %d: got %s, want %s\n    got  (%d) from %d: %s\n    want (%d) from %d: %s",
				i, g, w, len(got), lo, fmtEntries(got[min(lo, len(got)):], 8), len(want), lo, fmtEntries(want[min(lo, len(want)):], 8))
		}
	}
	return ""
}

func fmtQuery(q laurel.Query) string {
	s := q.Board + "/" + q.Window
	if q.Window == "" {
		s += "(default)"
	}
	if q.HasAt {
		s += " at " + laurel.FormatTime(q.At)
	}
	if q.Period != "" {
		s += " period " + q.Period
	}
	return s
}

func samePeriod(got, want laurel.PeriodInfo) bool {
	return got.ID == want.ID && got.Start == want.Start && got.End == want.End && got.Closed == want.Closed
}

func fmtPeriod(p laurel.PeriodInfo) string {
	if p.ID == "all" && p.Start == 0 && p.End == 0 {
		return fmt.Sprintf("{all closed=%v}", p.Closed)
	}
	return fmt.Sprintf("{%q [%s, %s) closed=%v}", p.ID, laurel.FormatTime(p.Start), laurel.FormatTime(p.End), p.Closed)
}

// tolerantEmpty: a period before its window existed that holds nothing may read as empty or
// as not found.
func tolerantEmpty(x expRead) bool {
	return x.code == "" && x.sp.kind == spanPeriod && x.sp.preWindow && len(x.all) == 0
}

// checkErr checks a read's error against the model's; it reports whether the read succeeded
// and its result is to be compared.
func (h *harness) checkErr(what string, q laurel.Query, x expRead, err error, want string) bool {
	h.t.Helper()
	if want == "" && err != nil && code(err) == laurel.ENotFound && (tolerantEmpty(x) || x.sp.mayDrop) {
		h.stats["read: tolerated not_found"]++
		return false
	}
	switch {
	case x.code != "":
		h.stats["read: error "+x.code]++
	case x.sp.kind == spanPeriod && x.sp.closed:
		h.stats["read: closed period"]++
	case x.sp.kind == spanPeriod:
		h.stats["read: open period"]++
	case x.sp.kind == spanRolling:
		h.stats["read: rolling"]++
	default:
		h.stats["read: all"]++
	}
	if code(err) != want {
		h.fatalf("%s %s: err %v (code %q), want code %q; model span %s, %d entries: %s",
			what, fmtQuery(q), err, code(err), want, x.sp, len(x.all), fmtEntries(x.all, 5))
	}
	return err == nil
}

func (h *harness) checkPageHeader(what string, q laurel.Query, x expRead, got laurel.Page, wantTotal int) {
	h.t.Helper()
	if got.Board != x.b.id || got.Window != x.w.name || !samePeriod(got.Period, x.sp.info()) || got.Total != wantTotal {
		h.fatalf("%s %s: page header board %q window %q period %s total %d, want %q %q %s %d (model span %s)",
			what, fmtQuery(q), got.Board, got.Window, fmtPeriod(got.Period), got.Total, x.b.id, x.w.name, fmtPeriod(x.sp.info()), wantTotal, x.sp)
	}
}

// checkPage reads a page and compares it with the model.
func (h *harness) checkPage(q laurel.Query, offset, limit int, r laurel.ScoreRange) {
	h.t.Helper()
	x := h.m.resolve(q)
	got, err := h.eng.Page(h.ctx, q, offset, limit, r)
	what := fmt.Sprintf("Page(offset %d, limit %d, range %+v)", offset, limit, r)
	if !h.checkErr(what, q, x, err, x.code) {
		return
	}
	var sel []laurel.Entry
	for _, e := range x.all {
		if r.HasMin && e.Score < r.Min || r.HasMax && e.Score > r.Max {
			continue
		}
		sel = append(sel, e)
	}
	want := sel[min(offset, len(sel)):min(offset+limit, len(sel))]
	total := len(x.all)
	if (r.HasMin || r.HasMax) && got.Total == len(sel) {
		total = len(sel) // either reading of "total" for a score range is accepted
	}
	if d := diffEntries(got.Entries, want); d != "" {
		h.fatalf("%s %s (model span %s): %s", what, fmtQuery(q), x.sp, d)
	}
	h.checkPageHeader(what, q, x, got, total)
}

func (h *harness) checkMember(q laurel.Query, member string) {
	h.t.Helper()
	x := h.m.resolve(q)
	want := x.code
	idx := slices.IndexFunc(x.all, func(e laurel.Entry) bool { return e.Member == member })
	if want == "" && idx < 0 {
		want = laurel.ENotFound
	}
	got, err := h.eng.Member(h.ctx, q, member)
	what := fmt.Sprintf("Member(%q)", member)
	if code(err) == laurel.ENotFound && x.code == "" && idx < 0 {
		return
	}
	if !h.checkErr(what, q, x, err, want) {
		return
	}
	if got.Board != x.b.id || got.Window != x.w.name || !samePeriod(got.Period, x.sp.info()) || got.Total != len(x.all) || !sameEntry(got.Entry, x.all[idx]) {
		h.fatalf("%s %s: got board %q window %q period %s total %d entry %s, want %q %q %s %d %s",
			what, fmtQuery(q), got.Board, got.Window, fmtPeriod(got.Period), got.Total, fmtEntry(got.Entry),
			x.b.id, x.w.name, fmtPeriod(x.sp.info()), len(x.all), fmtEntry(x.all[idx]))
	}
}

func (h *harness) checkAround(q laurel.Query, member string, radius int) {
	h.t.Helper()
	x := h.m.resolve(q)
	want := x.code
	idx := slices.IndexFunc(x.all, func(e laurel.Entry) bool { return e.Member == member })
	if want == "" && idx < 0 {
		want = laurel.ENotFound
	}
	got, err := h.eng.Around(h.ctx, q, member, radius)
	what := fmt.Sprintf("Around(%q, %d)", member, radius)
	if code(err) == laurel.ENotFound && x.code == "" && idx < 0 {
		return
	}
	if !h.checkErr(what, q, x, err, want) {
		return
	}
	n, size := len(x.all), 2*radius+1
	start := idx - radius
	if start+size > n {
		start = n - size
	}
	start = max(start, 0)
	h.checkPageHeader(what, q, x, got, n)
	if d := diffEntries(got.Entries, x.all[start:min(n, start+size)]); d != "" {
		h.fatalf("%s %s (model span %s): %s", what, fmtQuery(q), x.sp, d)
	}
}

func (h *harness) checkLookup(q laurel.Query, members []string) {
	h.t.Helper()
	x := h.m.resolve(q)
	got, err := h.eng.Lookup(h.ctx, q, members)
	what := fmt.Sprintf("Lookup(%q)", members)
	if !h.checkErr(what, q, x, err, x.code) {
		return
	}
	var want []laurel.Entry
	for _, e := range x.all {
		if slices.Contains(members, e.Member) {
			want = append(want, e)
		}
	}
	h.checkPageHeader(what, q, x, got, len(x.all))
	if d := diffEntries(got.Entries, want); d != "" {
		h.fatalf("%s %s (model span %s): %s", what, fmtQuery(q), x.sp, d)
	}
}

func (h *harness) checkRankOf(q laurel.Query, score int64) {
	h.t.Helper()
	x := h.m.resolve(q)
	rank, total, err := h.eng.RankOf(h.ctx, q, score)
	what := fmt.Sprintf("RankOf(%d)", score)
	if !h.checkErr(what, q, x, err, x.code) {
		return
	}
	want := 1
	for _, e := range x.all {
		if x.b.order.Better(e.Score, score) || e.Score == score && e.ReachedAt <= h.m.now {
			want++
		}
	}
	if rank != want || total != len(x.all) {
		h.fatalf("%s %s: rank %d total %d, want %d %d; model: %s", what, fmtQuery(q), rank, total, want, len(x.all), fmtEntries(x.all, 12))
	}
}

// periodsWithData returns the periods of window w that hold an event (any, even retracted or
// erased), with the current one, newest first.
func (h *harness) periodsWithData(b *mBoard, w *mWindow) []mPeriod {
	seen := map[string]bool{}
	var ps []mPeriod
	add := func(p mPeriod) {
		if !seen[p.id] {
			seen[p.id] = true
			ps = append(ps, p)
		}
	}
	add(b.periodAt(w.w, h.m.now))
	for _, e := range b.events {
		add(b.periodAt(w.w, e.ts))
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].start > ps[j].start })
	return ps
}

func (h *harness) checkPeriods(b *mBoard, w *mWindow) {
	h.t.Helper()
	got, err := h.eng.Periods(h.ctx, b.id, w.name)
	if err != nil {
		h.fatalf("Periods(%s, %s): %v", b.id, w.name, err)
	}
	var gotIDs []string
	for i, p := range got {
		gotIDs = append(gotIDs, p.ID)
		mp, err := b.cal.ParsePeriod(w.w, p.ID)
		if err != nil {
			h.fatalf("Periods(%s, %s)[%d]: bad id %q: %v", b.id, w.name, i, p.ID, err)
		}
		sp := h.m.calendarSpan(b, w, toPeriod(mp))
		if sp.dropped {
			h.fatalf("Periods(%s, %s)[%d] = %s: the model has dropped it (%s)", b.id, w.name, i, fmtPeriod(p), sp)
		}
		all := h.m.ranking(b, w, sp)
		if !samePeriod(p, sp.info()) || p.Total != len(all) {
			h.fatalf("Periods(%s, %s)[%d] = %s total %d, want %s total %d (model span %s)\nmodel: %s",
				b.id, w.name, i, fmtPeriod(p), p.Total, fmtPeriod(sp.info()), len(all), sp, fmtEntries(all, 6))
		}
		if i > 0 && got[i-1].Start <= p.Start {
			h.fatalf("Periods(%s, %s): not newest first: %q", b.id, w.name, gotIDs)
		}
	}
	for _, p := range h.periodsWithData(b, w) {
		sp := h.m.calendarSpan(b, w, p)
		if sp.dropped || sp.mayDrop || p.start > h.m.now {
			continue
		}
		if n := len(h.m.ranking(b, w, sp)); n > 0 && !slices.ContainsFunc(got, func(g laurel.PeriodInfo) bool { return g.ID == p.id }) {
			h.fatalf("Periods(%s, %s) = %q: misses %s (total %d)", b.id, w.name, gotIDs, sp, n)
		}
	}
}

func (h *harness) checkBoardInfo(b *mBoard) {
	h.t.Helper()
	info, err := h.eng.Board(h.ctx, b.id)
	if err != nil {
		h.fatalf("Board(%s): %v", b.id, err)
	}
	if info.ID != b.id || info.Order != b.order || info.Mode != b.mode || info.Keep != b.keep ||
		info.LateLimit.Milliseconds() != b.lateLimit() || len(info.Windows) != len(b.windows) {
		h.fatalf("Board(%s) = %+v: configuration differs from the model's", b.id, info.Board)
	}
	for i, w := range b.windows {
		if info.Windows[i].String() != w.name {
			h.fatalf("Board(%s): windows %v, want %v", b.id, info.Windows, b.windowNames())
		}
		sp := h.m.spanAt(b, w, h.m.now)
		n := len(h.m.ranking(b, w, sp))
		cur, ok := info.Current[w.name]
		if !ok || cur.ID != sp.info().ID || cur.Start != sp.info().Start || cur.End != sp.info().End || cur.Total != n {
			h.fatalf("Board(%s).Current[%s] = %s total %d (present %v), want %s total %d", b.id, w.name, fmtPeriod(cur), cur.Total, ok, fmtPeriod(sp.info()), n)
		}
	}
}

// quickCheck compares every window of b at now, in full.
func (h *harness) quickCheck(b *mBoard, why string) {
	h.t.Helper()
	for _, w := range b.windows {
		h.checkPage(laurel.Query{Board: b.id, Window: w.name}, 0, laurel.MaxPageLimit, laurel.ScoreRange{})
	}
}

// someMembers returns a few members to ask about: present, hidden, absent.
func (h *harness) someMembers(all []laurel.Entry, n int) []string {
	var out []string
	for range n {
		switch r := h.rng.IntN(10); {
		case r < 6 && len(all) > 0:
			out = append(out, all[h.rng.IntN(len(all))].Member)
		default:
			out = append(out, h.pickMember())
		}
	}
	return out
}

// checkQuery runs every kind of read of one query against the model.
func (h *harness) checkQuery(q laurel.Query, deep bool) {
	h.t.Helper()
	x := h.m.resolve(q)
	h.checkPage(q, 0, laurel.MaxPageLimit, laurel.ScoreRange{})
	if !deep {
		return
	}
	h.checkPage(q, h.rng.IntN(len(x.all)+2), 1+h.rng.IntN(5), laurel.ScoreRange{})
	for _, mem := range h.someMembers(x.all, 3) {
		h.checkMember(q, mem)
	}
	for _, mem := range h.someMembers(x.all, 1) {
		h.checkAround(q, mem, h.rng.IntN(4))
	}
	mems := h.someMembers(x.all, 1+h.rng.IntN(6))
	slices.Sort(mems)
	h.checkLookup(q, slices.Compact(mems))
	if len(x.all) > 0 {
		s := x.all[h.rng.IntN(len(x.all))].Score
		lo, hi := s-h.rng.Int64N(5), s+h.rng.Int64N(5)
		var r laurel.ScoreRange
		switch h.rng.IntN(3) {
		case 0:
			r = laurel.ScoreRange{Min: lo, HasMin: true}
		case 1:
			r = laurel.ScoreRange{Max: hi, HasMax: true}
		default:
			r = laurel.ScoreRange{Min: lo, Max: hi, HasMin: true, HasMax: true}
		}
		h.checkPage(q, h.rng.IntN(2), 1+h.rng.IntN(laurel.MaxPageLimit), r)
	}
	if !q.HasAt && q.Period == "" {
		for range 2 {
			var s int64
			if len(x.all) > 0 && h.rng.IntN(3) > 0 {
				s = x.all[h.rng.IntN(len(x.all))].Score + h.rng.Int64N(3) - 1
			} else {
				s = h.rng.Int64N(60) - 10
			}
			h.checkRankOf(q, s)
		}
	}
}

func (h *harness) checkBoard(b *mBoard, deep bool) {
	h.t.Helper()
	if deep {
		h.checkQuery(laurel.Query{Board: b.id}, false) // the default window
	}
	for _, w := range b.windows {
		h.checkQuery(laurel.Query{Board: b.id, Window: w.name}, deep)
		if !deep {
			continue
		}
		// At a past instant since the board exists (at most four days back, sometimes twenty).
		back := min(h.m.now-b.created, 4*86_400_000)
		if h.rng.IntN(4) == 0 {
			back = min(h.m.now-b.created, 20*86_400_000)
		}
		if back > 0 {
			at := h.m.now - h.rng.Int64N(back+1)
			h.checkQuery(laurel.Query{Board: b.id, Window: w.name, At: at, HasAt: true}, h.rng.IntN(2) == 0)
		}
		if w.w.Kind == laurel.WindowAll {
			h.checkQuery(laurel.Query{Board: b.id, Window: w.name, Period: "all"}, false)
		}
		h.checkHistory(b, w)
		if w.w.IsCalendar() {
			ps := h.periodsWithData(b, w)
			// Some with data, and the ones just before the current one.
			var cands []mPeriod
			for range 2 {
				cands = append(cands, ps[h.rng.IntN(len(ps))])
			}
			p := b.periodAt(w.w, h.m.now)
			for range 1 + h.rng.IntN(b.keep+3) {
				p = b.prevPeriod(w.w, p)
			}
			if p.start >= b.created {
				cands = append(cands, p)
			}
			for _, p := range cands {
				h.checkQuery(laurel.Query{Board: b.id, Window: w.name, Period: p.id}, h.rng.IntN(2) == 0)
			}
			h.checkPeriods(b, w)
		}
	}
}

// checkHistory compares the rank history of a few members of the board in w with the points
// the model noted: those of their counted events, newest first, in the windows where they
// were ranked right after the event.
func (h *harness) checkHistory(b *mBoard, w *mWindow) {
	h.t.Helper()
	var members []string
	for _, e := range b.events {
		if !e.deleted && !slices.Contains(members, e.member) {
			members = append(members, e.member)
		}
	}
	for range min(2, len(members)) {
		member := members[h.rng.IntN(len(members))]
		limit := 1 + h.rng.IntN(12)
		got, err := h.eng.History(h.ctx, b.id, w.name, member, limit)
		if h.m.hidden[member] {
			if code(err) != laurel.ENotFound {
				h.fatalf("History(%s, %s, %q) of a hidden member: %v, %v; want not_found", b.id, w.name, member, got, err)
			}
			continue
		}
		if err != nil {
			h.fatalf("History(%s, %s, %q): %v", b.id, w.name, member, err)
		}
		var want []laurel.HistoryPoint
		known := true
		for _, e := range slices.Backward(b.events) {
			if e.member != member || e.retracted || e.deleted {
				continue
			}
			known = known && e.pointsKnown
			if p, ok := e.points[w.name]; ok && len(want) < limit {
				want = append(want, laurel.HistoryPoint{At: e.ts, Score: p.Score, Rank: p.Rank})
			}
		}
		if !known {
			continue // some of its points come from concurrent batches, whose order the model does not know
		}
		h.stats["history checked"]++
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			h.fatalf("History(%s, %s, %q, limit %d) = %v, want %v", b.id, w.name, member, limit, got, want)
		}
	}
}

// checkAll compares every board with the model, and has the engine check its invariants.
func (h *harness) checkAll(deep bool) {
	h.t.Helper()
	for _, b := range h.m.boards {
		h.checkBoard(b, deep)
		h.checkBoardInfo(b)
	}
	if err := h.target.check(h.eng); err != nil {
		h.fatalf("Check: %v", err)
	}
}

// badReads are queries the engine must refuse.
func (h *harness) badReads() {
	b := h.pickBoard()
	w := b.windows[h.rng.IntN(len(b.windows))]
	type bad struct {
		q    laurel.Query
		code string
	}
	cands := []bad{
		{laurel.Query{Board: b.id, Window: w.name, At: h.m.now, HasAt: true, Period: "2026-01"}, laurel.EInvalid},
		{laurel.Query{Board: b.id, Window: "nope"}, laurel.EInvalid},
		{laurel.Query{Board: "no-such-board"}, laurel.ENotFound},
	}
	if w.w.IsRolling() {
		cands = append(cands, bad{laurel.Query{Board: b.id, Window: w.name, Period: "2026-01-01"}, laurel.EInvalid})
	}
	if w.w.IsCalendar() {
		cands = append(cands, bad{laurel.Query{Board: b.id, Window: w.name, Period: "20x6-01"}, laurel.EInvalid})
		if b.tz == "America/New_York" && w.w.Kind == laurel.WindowHour {
			cands = append(cands, bad{laurel.Query{Board: b.id, Window: w.name, Period: "2026-03-08T02"}, laurel.EInvalid})
		}
	}
	for _, name := range []string{"year", "last2d"} {
		if b.window(name) == nil {
			cands = append(cands, bad{laurel.Query{Board: b.id, Window: name}, laurel.EInvalid})
		}
	}
	c := cands[h.rng.IntN(len(cands))]
	if x := h.m.resolve(c.q); x.code != c.code {
		h.fatalf("test bug: model says %q for bad query %s, want %q", x.code, fmtQuery(c.q), c.code)
	}
	_, err := h.eng.Page(h.ctx, c.q, 0, 10, laurel.ScoreRange{})
	if code(err) != c.code {
		h.fatalf("Page %s: err %v, want code %q", fmtQuery(c.q), err, c.code)
	}
	_, err = h.eng.Member(h.ctx, c.q, "alice")
	if code(err) != c.code {
		h.fatalf("Member %s: err %v, want code %q", fmtQuery(c.q), err, c.code)
	}
}

// ---------------------------------------------------------------------------------------

var oracleStarts = []string{
	"2026-03-05T09:00:00Z", // New York springs forward on 2026-03-08
	"2026-03-29T20:00:00Z", // Lord Howe falls back on 2026-04-05; month ends
	"2026-10-26T11:00:00Z", // New York falls back on 2026-11-01
	"2026-12-27T15:00:00Z", // month and year end
	"2026-06-10T00:00:00Z",
}

// Oracle runs the randomized differential test of the engine target opens against the model:
// -ops random operations (writes, reads of every kind, board changes, restarts) from -seed,
// each checked against the model, with everything compared at checkpoints.
func Oracle(t *testing.T, target Target) { oracle(t, []Target{target}) }

// OracleTransfer is Oracle over a chain of targets: at each of the oracle's restarts (three
// by default) the data moves to the next target of the chain through a dump (Export, then
// Import into its empty store), and the model must hold there as before. It tests dumps
// between engines of any kinds.
func OracleTransfer(t *testing.T, chain ...Target) { oracle(t, chain) }

func oracle(t *testing.T, chain []Target) {
	target := chain[0]
	seed := flagInt("seed")
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	keepMode := flagString("keepmode")
	t.Logf("seed %d (rerun with -seed=%d), -keepmode=%s", seed, seed, keepMode)
	ops := int(flagInt("ops"))
	if ops == 0 {
		ops = 1200
		if testing.Short() {
			ops = 150
		}
	}
	h := &harness{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		m: &model{byID: map[string]*mBoard{}, hidden: map[string]bool{}}, target: target,
		ctx: context.Background(), stats: map[string]int{}}
	switch keepMode {
	case "spec":
	case "lenient":
		h.m.lenientKeep = true
	default:
		t.Fatalf("-keepmode=%s: want spec or lenient", keepMode)
	}
	start, _ := laurel.ParseTime(oracleStarts[h.rng.IntN(len(oracleStarts))])
	h.setNow(start + h.rng.Int64N(86_400_000))
	t.Logf("start %s, %d operations", laurel.FormatTime(h.m.now), ops)
	h.open()
	t.Cleanup(func() {
		if h.eng != nil {
			h.target.close(h.eng)
		}
	})
	h.createBoards()
	h.checkAll(true)

	restartEvery := max(ops/4, 20)
	skip := map[string]bool{}
	for _, k := range strings.Split(flagString("skipops"), ",") {
		skip[strings.TrimSpace(k)] = true
	}
	for h.op = 1; h.op <= ops; h.op++ {
		h.advance()
		switch {
		case skip["putboard"]:
		case h.op == ops/3:
			h.addWindows("sum-ny", "day", "all")
			h.addWindows("best-utc", "week", "last3h")
		case h.op == ops*2/5:
			h.growLateLimit("sum-utc", "8h")
		case h.op == ops/2:
			h.addWindows("last-lh", "hour", "last7d")
		}
		if h.op > ops/2 && !skip["putboard"] && !skip["config"] && h.rng.IntN(40) == 0 {
			h.changeConfig()
		}
		r := h.rng.IntN(1000)
		switch {
		case r >= 520 && r < 600 && skip["invalid"], r >= 600 && r < 720 && skip["retract"],
			r >= 720 && r < 760 && skip["hide"], r >= 760 && r < 775 && skip["delete"], r >= 775 && r < 790 && skip["putboard"]:
			r = h.rng.IntN(380)
		}
		switch {
		case r < 380:
			h.opSubmit("batch")
		case r < 520:
			h.opSubmit("single")
		case r < 600:
			h.opSubmit("invalid")
		case r < 720:
			h.opRetract()
		case r < 760:
			h.opHide()
		case r < 775:
			h.opDelete()
		case r < 790:
			h.badPutBoard()
		case r < 820:
			h.badReads()
		case r < 850:
			h.opConcurrent()
		default:
			b := h.pickBoard()
			h.checkBoard(b, true)
		}
		if h.op%restartEvery == 0 && !skip["restart"] {
			if next := h.op / restartEvery; next < len(chain) {
				h.transfer(chain[next])
			} else {
				h.reopen()
			}
			h.checkAll(true)
		} else if h.op%8 == 0 {
			h.checkAll(h.op%16 == 0)
		}
	}
	h.checkAll(true)
	keys := make([]string, 0, len(h.stats))
	for k := range h.stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %s: %d\n", k, h.stats[k])
	}
	events := 0
	for _, b := range h.m.boards {
		events += len(b.events)
	}
	t.Logf("end %s, %d events; operations:\n%s", laurel.FormatTime(h.m.now), events, sb.String())
}

// OracleKeepAfterLateLimitGrows is the smallest case Oracle found of keep counting closed
// periods by the current late_limit: periods that closed under an earlier, smaller
// late_limit stay closed (docs/design.md: closed periods never change), so they count among the
// "newer periods that have closed" when keep is lowered later.
func OracleKeepAfterLateLimitGrows(t *testing.T, target Target) {
	now, _ := laurel.ParseTime("2026-06-10T10:10:00Z")
	var clock atomic.Int64
	clock.Store(now)
	e, err := target.open(t, clock.Load)
	if err != nil {
		t.Fatal(err)
	}
	defer target.close(e)
	ctx := context.Background()
	if _, _, err := e.PutBoard(ctx, "b", laurel.BoardSpec{Windows: []string{"hour"}, LateLimit: ptr("1h"), Keep: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"h10", "h11"} { // one event in hour 10, one in hour 11
		if _, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: m, Value: 5}}, laurel.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
		clock.Add(3600_000)
	}
	clock.Add(3600_000) // 13:10: hour 10 closed at 12:00, hour 11 at 13:00
	if _, _, err := e.PutBoard(ctx, "b", laurel.BoardSpec{LateLimit: ptr("5h")}); err != nil {
		t.Fatal(err)
	}
	clock.Add(600_000) // 13:20
	if _, _, err := e.PutBoard(ctx, "b", laurel.BoardSpec{Keep: ptr(0)}); err != nil {
		t.Fatal(err)
	}
	// Hour 11 is the newest closed period and the only one kept; hour 10 has one newer
	// closed period, more than keep 0.
	q := laurel.Query{Board: "b", Window: "hour", Period: "2026-06-10T11"}
	if p, err := e.Page(ctx, q, 0, 10, laurel.ScoreRange{}); err != nil || !p.Period.Closed || len(p.Entries) != 1 {
		t.Errorf("hour 11: %+v, %v; want closed with h11", p, err)
	}
	q.Period = "2026-06-10T10"
	if p, err := e.Page(ctx, q, 0, 10, laurel.ScoreRange{}); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Errorf("hour 10: %+v, err %v; want not_found (dropped: hour 11 closed at 13:00, keep is 0)", p, err)
	}
	ps, err := e.Periods(ctx, "b", "hour")
	for _, p := range ps {
		if p.ID == "2026-06-10T10" {
			t.Errorf("Periods lists the dropped hour 10: %+v", ps)
		}
	}
	if err != nil {
		t.Error(err)
	}
	if err := target.check(e); err != nil {
		t.Errorf("Check: %v", err)
	}
}
