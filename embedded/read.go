package embedded

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// view is one ranking a read is answered from: an in-memory span, a closed period on disk,
// or a rolling window evaluated at a past instant. Ranks are 1-based and leave hidden members
// out.
type view interface {
	total() int
	// page returns up to n entries from rank from on, without profiles.
	page(from, n int) ([]laurel.Entry, error)
	// rankOf returns the member's entry, and false when it is not ranked.
	rankOf(member string) (laurel.Entry, bool, error)
	// search returns the rank of the first entry whose (score, reached_at) does not rank
	// before (score, at); total()+1 when there is none.
	search(score, at int64) (int, error)
}

// memView reads an in-memory span; a nil span is an empty ranking.
type memView struct {
	b  *board
	w  *window
	sp *span
	r  pebble.Reader // the store, for the aggregates of calendar periods and all
}

func (v memView) total() int {
	if v.sp == nil {
		return 0
	}
	return v.sp.tree.Len()
}

func (v memView) page(from, n int) ([]laurel.Entry, error) {
	if v.sp == nil {
		return nil, nil
	}
	var out []laurel.Entry
	for r, k := range v.sp.tree.CursorAt(from).Forward() {
		if len(out) == n {
			break
		}
		out = append(out, laurel.Entry{Rank: r, Member: v.b.members.name(k.Member), Score: k.Score, ReachedAt: k.At})
	}
	return out, nil
}

func (v memView) rankOf(member string) (laurel.Entry, bool, error) {
	if v.sp == nil {
		return laurel.Entry{}, false, nil
	}
	h, s, ok, err := spanEntry(v.r, v.b, v.w, v.sp, member)
	if err != nil || !ok {
		return laurel.Entry{}, false, err
	}
	r, ok := v.sp.tree.Rank(treeKey(h, s))
	return laurel.Entry{Rank: r, Member: member, Score: s.score, ReachedAt: s.at}, ok, nil
}

// spanEntry returns a member's handle and aggregate in an in-memory span of w: from its
// slots for a rolling window, from the store (r) for the others.
func spanEntry(r pebble.Reader, b *board, w *window, sp *span, member string) (uint32, slot, bool, error) {
	h, ok := b.members.lookup(member)
	if !ok {
		return 0, slot{}, false, nil
	}
	if w.w.IsRolling() {
		s, ok := sp.slots.get(h)
		return h, s, ok, nil
	}
	v, ok, err := get(r, aggKey(b.cfg.ID, w.name, sp.start, member))
	if err != nil || !ok {
		return 0, slot{}, false, err
	}
	a, err := decodeAgg(v)
	return h, slot(a), err == nil, err
}

func (v memView) search(score, at int64) (int, error) {
	if v.sp == nil {
		return 1, nil
	}
	c := v.sp.tree.Search(score, at)
	return c.Rank(), nil
}

// sliceView is a ranking computed for one read, sorted, hidden members left out.
type sliceView struct {
	entries []entry
	order   laurel.Order
	rank    map[string]int // member → rank, built on the first rankOf
}

func (v *sliceView) total() int { return len(v.entries) }

func (v *sliceView) page(from, n int) ([]laurel.Entry, error) {
	var out []laurel.Entry
	for i := max(from, 1) - 1; i < len(v.entries) && len(out) < n; i++ {
		en := v.entries[i]
		out = append(out, laurel.Entry{Rank: i + 1, Member: en.member, Score: en.agg.score, ReachedAt: en.agg.at})
	}
	return out, nil
}

func (v *sliceView) rankOf(member string) (laurel.Entry, bool, error) {
	if v.rank == nil {
		v.rank = make(map[string]int, len(v.entries))
		for i, en := range v.entries {
			v.rank[en.member] = i + 1
		}
	}
	r, ok := v.rank[member]
	if !ok {
		return laurel.Entry{}, false, nil
	}
	en := v.entries[r-1]
	return laurel.Entry{Rank: r, Member: member, Score: en.agg.score, ReachedAt: en.agg.at}, true, nil
}

func (v *sliceView) search(score, at int64) (int, error) {
	return 1 + sort.Search(len(v.entries), func(i int) bool {
		return !before(v.order, v.entries[i].agg, score, at)
	}), nil
}

// before reports whether an entry with aggregate a ranks before (score, at).
func before(o laurel.Order, a aggregate, score, at int64) bool {
	if a.score != score {
		return o.Better(a.score, score)
	}
	return a.at < at
}

// frozenView reads a closed period from the store. Its records hold ranks as frozen; ranks of
// members hidden or deleted since are skipped and the others close up.
type frozenView struct {
	r     pebble.Reader
	board string
	w     string
	order laurel.Order
	cp    *closedPeriod
}

func (v frozenView) total() int { return int(v.cp.total) - len(v.cp.excluded) }

// raw returns the frozen rank of the visible rank r.
func (v frozenView) raw(r int) uint32 {
	ex := v.cp.excluded
	raw := uint32(r)
	for {
		n, _ := slices.BinarySearch(ex, raw+1) // excluded ranks ≤ raw
		next := uint32(r) + uint32(n)
		if next == raw {
			return raw
		}
		raw = next
	}
}

func (v frozenView) visible(raw uint32) int {
	n, _ := slices.BinarySearch(v.cp.excluded, raw)
	return int(raw) - n
}

func (v frozenView) page(from, n int) ([]laurel.Entry, error) {
	if from < 1 || from > v.total() || n <= 0 {
		return nil, nil
	}
	var out []laurel.Entry
	lo := rankKey(v.board, v.w, v.cp.start, v.raw(from))
	hi := spanPrefix(tagRank, v.board, v.w, v.cp.start+1)
	p := len(spanPrefix(tagRank, v.board, v.w, v.cp.start))
	err := scan(v.r, lo, hi, func(k, val []byte) error {
		if len(out) == n {
			return errStop
		}
		raw := binary.BigEndian.Uint32(k[p:])
		if _, ok := slices.BinarySearch(v.cp.excluded, raw); ok {
			return nil
		}
		f, err := decodeFrozen(raw, val)
		if err != nil {
			return err
		}
		out = append(out, laurel.Entry{Rank: v.visible(raw), Member: f.member, Score: f.agg.score, ReachedAt: f.agg.at})
		return nil
	})
	if err == errStop {
		err = nil
	}
	return out, err
}

func (v frozenView) rankOf(member string) (laurel.Entry, bool, error) {
	raw, ok, err := frozenRankOf(v.r, v.board, v.w, v.cp.start, member)
	if err != nil || !ok {
		return laurel.Entry{}, false, err
	}
	if _, ex := slices.BinarySearch(v.cp.excluded, raw); ex {
		return laurel.Entry{}, false, nil
	}
	val, ok, err := get(v.r, rankKey(v.board, v.w, v.cp.start, raw))
	if err != nil || !ok {
		return laurel.Entry{}, false, err
	}
	f, err := decodeFrozen(raw, val)
	if err != nil {
		return laurel.Entry{}, false, err
	}
	return laurel.Entry{Rank: v.visible(raw), Member: member, Score: f.agg.score, ReachedAt: f.agg.at}, true, nil
}

func (v frozenView) search(score, at int64) (int, error) {
	// Binary search over ranks, one read per probe.
	lo, hi := 1, v.total()+1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		es, err := v.page(mid, 1)
		if err != nil {
			return 0, err
		}
		if len(es) == 1 && before(v.order, aggregate{es[0].Score, es[0].ReachedAt}, score, at) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, nil
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}

// reading is a resolved Query: the view to answer from and what describes it. It holds the
// engine's read lock until done.
type reading struct {
	e      *Engine
	b      *board
	w      *window
	at     int64 // the instant read
	period laurel.PeriodInfo
	v      view
}

func (rd *reading) done() { rd.e.mu.RUnlock() }

// resolve finds what q reads, catching the board up to now first. On success the caller must
// call done.
func (e *Engine) resolve(ctx context.Context, q laurel.Query) (*reading, error) {
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return nil, err
	}
	if q.HasAt && q.Period != "" {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "period", "give either at or period, not both")
	}
	now := e.now()
	e.mu.RLock()
	b, err := e.lookupBoard(q.Board)
	e.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := e.catchUp(ctx, b, now); err != nil {
		return nil, err
	}
	e.mu.RLock()
	rd, err := e.resolveLocked(b, q, now)
	if err != nil {
		e.mu.RUnlock()
		return nil, err
	}
	return rd, nil
}

func (e *Engine) resolveLocked(b *board, q laurel.Query, now int64) (*reading, error) {
	if e.boards[b.cfg.ID] != b {
		return nil, laurel.FieldErrorf(laurel.ENotFound, "board", "no board %q", b.cfg.ID)
	}
	w := b.windows[0]
	if q.Window != "" {
		if w = b.window(q.Window); w == nil {
			if _, err := laurel.ParseWindow(q.Window); err != nil {
				return nil, laurel.FieldErrorf(laurel.EInvalid, "window", "%s", laurel.ErrorMessage(err))
			}
			return nil, laurel.FieldErrorf(laurel.EInvalid, "window", "board %q has no window %s", b.cfg.ID, q.Window)
		}
	}
	t := now
	if q.HasAt {
		t = q.At
	}
	rd := &reading{e: e, b: b, w: w, at: t}
	cal := b.cfg.Calendar()
	switch {
	case w.w.Kind == laurel.WindowAll:
		if q.Period != "" && q.Period != "all" {
			return nil, laurel.FieldErrorf(laurel.EInvalid, "period", "window all has one period, \"all\"")
		}
		rd.period = laurel.PeriodInfo{ID: "all"}
		rd.v = memView{b, w, w.open[0], e.snap}
	case w.w.IsRolling():
		if q.Period != "" {
			return nil, laurel.FieldErrorf(laurel.EInvalid, "period", "window %s is rolling and has no periods; read it at an instant", w.name)
		}
		s, en := cal.Span(w.w, time.UnixMilli(t))
		start, end := s.UnixMilli(), en.UnixMilli()
		rd.period = laurel.PeriodInfo{Start: start, End: end}
		if sp := w.open[0]; sp.start == start && sp.end == end {
			rd.v = memView{b, w, sp, e.snap}
			break
		}
		aggs, err := loadBuckets(e.snap, b, w, start, end)
		if err != nil {
			return nil, err
		}
		entries := make([]entry, 0, len(aggs))
		for m, a := range aggs {
			if !e.hidden[m] {
				entries = append(entries, entry{m, fromAgg(a)})
			}
		}
		slices.SortFunc(entries, b.compare)
		rd.v = &sliceView{entries: entries, order: b.cfg.Order}
	default:
		var p laurel.Period
		if q.Period != "" {
			var err error
			if p, err = cal.ParsePeriod(w.w, q.Period); err != nil {
				return nil, laurel.FieldErrorf(laurel.EInvalid, "period", "%s", laurel.ErrorMessage(err))
			}
		} else {
			p = cal.PeriodAt(w.w, time.UnixMilli(t))
		}
		start, end := p.Start.UnixMilli(), p.End.UnixMilli()
		rd.period = laurel.PeriodInfo{ID: p.ID, Start: start, End: end, Closed: end+b.cfg.LateLimit.Milliseconds() <= now}
		if sp := w.span(start); sp != nil {
			rd.v = memView{b, w, sp, e.snap}
			break
		}
		if start < w.keptFrom(&b.cfg, now) {
			return nil, laurel.FieldErrorf(laurel.ENotFound, "period", "period %s of window %s is no longer kept", p.ID, w.name)
		}
		for _, cp := range w.closed {
			if cp.start == start {
				rd.period.Closed = true
				rd.v = frozenView{e.snap, b.cfg.ID, w.name, b.cfg.Order, cp}
				break
			}
		}
		if rd.v != nil {
			break
		}
		if w.isClosed(&b.cfg, start, now) {
			rd.period.Closed = true
		}
		rd.v = memView{b, w, nil, e.snap}
	}
	rd.period.Total = rd.v.total()
	return rd, nil
}

// fill adds profiles (name, and metadata when asked) to entries.
func (rd *reading) fill(entries []laurel.Entry, metadata bool) error {
	for i := range entries {
		p, err := rd.e.profile(entries[i].Member)
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		entries[i].Name = p.Name
		if metadata && p.Metadata != nil {
			entries[i].Metadata = p.Metadata
		}
	}
	return nil
}

func (rd *reading) newPage(entries []laurel.Entry) laurel.Page {
	return laurel.Page{Board: rd.b.cfg.ID, Window: rd.w.name, Period: rd.period, Total: rd.v.total(), Entries: entries}
}

// Page returns consecutive ranks from offset, limit of them; with a score range, only the
// entries whose score lies in it, offset and limit applying within them.
func (e *Engine) Page(ctx context.Context, q laurel.Query, offset, limit int, sr laurel.ScoreRange) (laurel.Page, error) {
	if limit == 0 {
		limit = laurel.DefaultPageLimit
	}
	if limit < 0 || limit > laurel.MaxPageLimit {
		return laurel.Page{}, laurel.FieldErrorf(laurel.EInvalid, "limit", "must be 1 to %d", laurel.MaxPageLimit)
	}
	if offset < 0 {
		return laurel.Page{}, laurel.FieldErrorf(laurel.EInvalid, "offset", "must not be negative")
	}
	if sr.HasMin && sr.HasMax && sr.Min > sr.Max {
		return laurel.Page{}, laurel.FieldErrorf(laurel.EInvalid, "min_score", "must not exceed max_score")
	}
	rd, err := e.resolve(ctx, q)
	if err != nil {
		return laurel.Page{}, err
	}
	defer rd.done()
	first, end := 1, rd.v.total()+1
	best, worst, hasBest, hasWorst := sr.Max, sr.Min, sr.HasMax, sr.HasMin
	if rd.b.cfg.Order == laurel.Asc {
		best, worst, hasBest, hasWorst = sr.Min, sr.Max, sr.HasMin, sr.HasMax
	}
	if hasBest {
		if first, err = rd.v.search(best, math.MinInt64); err != nil {
			return laurel.Page{}, err
		}
	}
	if hasWorst {
		if end, err = rd.v.search(worst, math.MaxInt64); err != nil {
			return laurel.Page{}, err
		}
	}
	var entries []laurel.Entry
	if from := first + offset; offset < end-first && from < end {
		if entries, err = rd.v.page(from, min(limit, end-from)); err != nil {
			return laurel.Page{}, err
		}
	}
	if err := rd.fill(entries, q.Metadata); err != nil {
		return laurel.Page{}, err
	}
	return rd.newPage(entries), nil
}

// Member returns one member's entry; ENotFound when it is not present.
func (e *Engine) Member(ctx context.Context, q laurel.Query, member string) (laurel.MemberEntry, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.MemberEntry{}, err
	}
	rd, err := e.resolve(ctx, q)
	if err != nil {
		return laurel.MemberEntry{}, err
	}
	defer rd.done()
	en, err := rd.entryOf(member)
	if err != nil {
		return laurel.MemberEntry{}, err
	}
	es := []laurel.Entry{en}
	if err := rd.fill(es, q.Metadata); err != nil {
		return laurel.MemberEntry{}, err
	}
	return laurel.MemberEntry{Board: rd.b.cfg.ID, Window: rd.w.name, Period: rd.period, Total: rd.v.total(), Entry: es[0]}, nil
}

func (rd *reading) entryOf(member string) (laurel.Entry, error) {
	en, ok, err := rd.v.rankOf(member)
	if err != nil {
		return laurel.Entry{}, err
	}
	if !ok {
		return laurel.Entry{}, laurel.FieldErrorf(laurel.ENotFound, "member", "%q is not on board %q in window %s", member, rd.b.cfg.ID, rd.w.name)
	}
	return en, nil
}

// Around returns up to 2·radius+1 consecutive entries centred on member, shifted to stay
// within 1…total.
func (e *Engine) Around(ctx context.Context, q laurel.Query, member string, radius int) (laurel.Page, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Page{}, err
	}
	if radius < 0 || radius > laurel.MaxRadius {
		return laurel.Page{}, laurel.FieldErrorf(laurel.EInvalid, "radius", "must be 0 to %d", laurel.MaxRadius)
	}
	rd, err := e.resolve(ctx, q)
	if err != nil {
		return laurel.Page{}, err
	}
	defer rd.done()
	en, err := rd.entryOf(member)
	if err != nil {
		return laurel.Page{}, err
	}
	total := rd.v.total()
	lo := max(1, en.Rank-radius)
	hi := min(total, lo+2*radius)
	lo = max(1, hi-2*radius)
	entries, err := rd.v.page(lo, hi-lo+1)
	if err == nil {
		err = rd.fill(entries, q.Metadata)
	}
	if err != nil {
		return laurel.Page{}, err
	}
	return rd.newPage(entries), nil
}

// Lookup returns the entries of the members present, in rank order, with their ranks.
func (e *Engine) Lookup(ctx context.Context, q laurel.Query, members []string) (laurel.Page, error) {
	if len(members) > laurel.MaxLookup {
		return laurel.Page{}, laurel.FieldErrorf(laurel.ETooLarge, "members", "must list at most %d members", laurel.MaxLookup)
	}
	for i, m := range members {
		if err := laurel.ValidateMember("members["+strconv.Itoa(i)+"]", m); err != nil {
			return laurel.Page{}, err
		}
	}
	rd, err := e.resolve(ctx, q)
	if err != nil {
		return laurel.Page{}, err
	}
	defer rd.done()
	var entries []laurel.Entry
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if seen[m] {
			continue
		}
		seen[m] = true
		en, ok, err := rd.v.rankOf(m)
		if err != nil {
			return laurel.Page{}, err
		}
		if ok {
			entries = append(entries, en)
		}
	}
	slices.SortFunc(entries, func(a, b laurel.Entry) int { return a.Rank - b.Rank })
	if err := rd.fill(entries, q.Metadata); err != nil {
		return laurel.Page{}, err
	}
	return rd.newPage(entries), nil
}

// RankOf returns the rank a member reaching score at the instant read would get (after the
// members already there with the same score), and the total.
func (e *Engine) RankOf(ctx context.Context, q laurel.Query, score int64) (int, int, error) {
	rd, err := e.resolve(ctx, q)
	if err != nil {
		return 0, 0, err
	}
	defer rd.done()
	at := rd.at
	if at < math.MaxInt64 {
		at++
	}
	r, err := rd.v.search(score, at)
	return r, rd.v.total(), err
}

// Periods lists a calendar window's kept periods, newest first: the current one, the open
// ones that still take late events, and the closed ones.
func (e *Engine) Periods(ctx context.Context, boardID, windowName string) ([]laurel.PeriodInfo, error) {
	rd, err := e.resolve(ctx, laurel.Query{Board: boardID, Window: windowName})
	if err != nil {
		return nil, err
	}
	defer rd.done()
	b, w := rd.b, rd.w
	if w.w.IsRolling() {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "window", "window %s is rolling and has no periods", w.name)
	}
	if w.w.Kind == laurel.WindowAll {
		return []laurel.PeriodInfo{rd.period}, nil
	}
	var out []laurel.PeriodInfo
	cur := rd.period
	listedCur := false
	for i := len(w.open) - 1; i >= 0; i-- {
		sp := w.open[i]
		if !listedCur && sp.start < cur.Start {
			out = append(out, cur)
			listedCur = true
		}
		if sp.start == cur.Start {
			listedCur = true
		}
		p := e.periodAt(b, w, sp.start)
		p.Total = sp.tree.Len()
		out = append(out, p)
	}
	if !listedCur {
		out = append(out, cur)
	}
	for _, cp := range w.closed {
		out = append(out, laurel.PeriodInfo{ID: cp.id, Start: cp.start, End: cp.end, Closed: true,
			Total: frozenView{cp: cp}.total()})
	}
	return out, nil
}
