package laureltest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/laurel/laurel"
)

// The model: every accepted event, and the reads recomputed from them.

type mEvent struct {
	board      string
	member     string
	value, ts  int64
	sub        int64 // the subscore: 0 on a board without one
	id         string
	tag        string // compact JSON; "" for none
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
	sub          *laurel.Order // the subscore's order; nil: the board has none
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
	rewards      laurel.Rewards     // what the final ranks of closed periods earn
	tournament   *mTournament       // when events count, if set
}

// mTournament is a board's tournament: events from start until end, each run (a period of w)
// taking events for its first open milliseconds.
type mTournament struct {
	start, end int64
	w          laurel.Window
	open       int64
}

// refuses returns the code of a tournament's refusal of an event at ts, or "".
func (t *mTournament) refuses(b *mBoard, ts int64) string {
	switch {
	case t == nil:
		return ""
	case ts < t.start:
		return laurel.EInvalid
	case ts >= t.end || ts >= b.periodAt(t.w, ts).start+t.open:
		return laurel.ETooLate
	}
	return ""
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

// better reports whether the pair (score, sub) ranks before (score2, sub2) on b: by score in
// the board's order, then by subscore in its own (docs/design.md, "Subscore").
func (b *mBoard) better(score, sub, score2, sub2 int64) bool {
	if score != score2 {
		return b.order.Better(score, score2)
	}
	return b.sub != nil && b.sub.Better(sub, sub2)
}

// ranking returns the ranked entries of window w in span sp: every present, visible member.
func (m *model) ranking(b *mBoard, w *mWindow, sp mSpan) []laurel.Entry {
	type agg struct {
		score, sub, at int64
		arr            uint64
		tag            string // of the event that made the score
	}
	aggs := map[string]*agg{}
	for _, e := range b.events {
		if !m.counts(e, w, sp) {
			continue
		}
		a := aggs[e.member]
		if a == nil {
			aggs[e.member] = &agg{e.value, e.sub, e.ts, e.arrival, e.tag}
			continue
		}
		switch b.mode {
		case laurel.Sum:
			// Both sums; reached_at the latest counted event's, and its tag (on equal
			// times, the later arrival's).
			if e.ts >= a.at {
				a.tag = e.tag
			}
			a.score += e.value
			a.sub += e.sub
			a.at = max(a.at, e.ts)
		case laurel.Best:
			// The best (value, subscore) pair; of equal pairs the earliest.
			if b.better(e.value, e.sub, a.score, a.sub) || e.value == a.score && e.sub == a.sub && e.ts < a.at {
				a.score, a.sub, a.at, a.tag = e.value, e.sub, e.ts, e.tag
			}
		case laurel.Last:
			if e.ts > a.at || e.ts == a.at && e.arrival > a.arr {
				a.score, a.sub, a.at, a.arr, a.tag = e.value, e.sub, e.ts, e.arrival, e.tag
			}
		}
	}
	out := make([]laurel.Entry, 0, len(aggs))
	for mem, a := range aggs {
		if m.hidden[mem] {
			continue
		}
		tag := a.tag
		if sp.kind == spanPeriod && sp.closed {
			tag = m.frozenTag(b, sp, mem, a.score, a.sub, a.at)
		}
		out = append(out, laurel.Entry{Member: mem, Score: a.score, Sub: a.sub, ReachedAt: a.at, Tag: tagJSON(tag)})
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Score != y.Score || x.Sub != y.Sub {
			return b.better(x.Score, x.Sub, y.Score, y.Sub)
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

// frozenTag is the tag of a member's entry (score, sub, at) in a closed period: among all its
// events at that instant, retracted ones too (the period froze with those retracted since), in
// best the first to arrive with that score and subscore, in last and sum the last to arrive.
func (m *model) frozenTag(b *mBoard, sp mSpan, member string, score, sub, at int64) string {
	tag := ""
	found := false
	for _, e := range b.events {
		if e.member != member || e.deleted || e.ts != at || e.ts < sp.start || e.ts >= sp.end || b.mode == laurel.Best && (e.value != score || e.sub != sub) {
			continue
		}
		if b.mode != laurel.Best || !found {
			tag, found = e.tag, true
		}
	}
	return tag
}

// tagJSON is a model's tag as entries carry it: nil for none.
func tagJSON(tag string) json.RawMessage {
	if tag == "" {
		return nil
	}
	return json.RawMessage(tag)
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
		if ev.Member == "" || len(ev.Member) > laurel.MaxMemberID || strings.ContainsAny(ev.Member, "/\x00\n") || len(ev.ID) > laurel.MaxEventID {
			add(laurel.EInvalid)
		}
		if ev.HasSub && b.sub == nil {
			add(laurel.EInvalid) // whether or not its id repeats an event
		}
		// An id the board counts decides before the board's rules of admission: a repeat is a
		// duplicate (a retry after late_limit included), anything else a conflict.
		if ev.ID != "" {
			if e := b.active(ev.ID); e != nil {
				if e.member != ev.Member || e.value != ev.Value || e.sub != ev.Sub || ev.HasTS && ev.TS != e.ts {
					add(laurel.EConflict)
				}
				continue
			}
		}
		if b.min != nil && ev.Value < *b.min || b.max != nil && ev.Value > *b.max {
			add(laurel.EInvalid)
		}
		if ev.HasTS && ev.TS > m.now+futureSkew {
			add(laurel.EInvalid)
		}
		if ev.HasTS && (ev.TS < m.now-b.lateLimit() || m.inClosedPeriod(b, ev.TS)) {
			add(laurel.ETooLate)
		}
		ts := m.now
		if ev.HasTS {
			ts = ev.TS
		}
		if c := b.tournament.refuses(b, ts); c != "" {
			add(c)
		}
	}
	return codes
}

// apply applies a valid batch and returns each event's status.
func (m *model) apply(evs []laurel.Event) []string {
	st, _ := m.applied(evs)
	return st
}

// standingsBefore returns, for each of evs, its member's standing in each window's span at
// now before the batch, as a submit's previous gives it (none for a hidden member).
func (m *model) standingsBefore(evs []laurel.Event) []map[string]laurel.Standing {
	out := make([]map[string]laurel.Standing, len(evs))
	for i, ev := range evs {
		b := m.byID[ev.Board]
		if b == nil || m.hidden[ev.Member] {
			continue
		}
		for _, w := range b.windows {
			for _, en := range m.ranking(b, w, m.spanAt(b, w, m.now)) {
				if en.Member == ev.Member {
					if out[i] == nil {
						out[i] = make(map[string]laurel.Standing)
					}
					out[i][w.name] = laurel.Standing{Rank: en.Rank, Score: en.Score, Sub: en.Sub}
				}
			}
		}
	}
	return out
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
		e := &mEvent{board: b.id, member: ev.Member, value: ev.Value, sub: ev.Sub, ts: m.now, id: ev.ID, tag: string(ev.Tag), arrival: m.arrival}
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
				e.points[w.name] = laurel.Standing{Rank: all[i].Rank, Score: all[i].Score, Sub: all[i].Sub}
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
