package laureltest

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/laurel/laurel"
)

// The checks: every read of the store compared with the model.

func fmtEntry(e laurel.Entry) string {
	s := fmt.Sprintf("#%d %q %d @%s", e.Rank, e.Member, e.Score, laurel.FormatTime(e.ReachedAt))
	if e.Sub != 0 {
		s += fmt.Sprintf(" sub=%d", e.Sub)
	}
	if e.Tag != nil {
		s += " tag " + string(e.Tag)
	}
	return s
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

// SameEntries reports whether two lists of entries agree in rank, member, score, reached_at
// and tag, in order (profiles aside).
func SameEntries(a, b []laurel.Entry) bool { return slices.EqualFunc(a, b, sameEntry) }

func sameEntry(a, b laurel.Entry) bool {
	return a.Rank == b.Rank && a.Member == b.Member && a.Score == b.Score && a.Sub == b.Sub && a.ReachedAt == b.ReachedAt && bytes.Equal(a.Tag, b.Tag)
}

// samePoint reports whether two history points agree, tags included.
func samePoint(a, b laurel.HistoryPoint) bool {
	return a.At == b.At && a.Score == b.Score && a.Sub == b.Sub && a.Rank == b.Rank && bytes.Equal(a.Tag, b.Tag)
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

// memberRead is what the model expects of a read centred on member: the resolved query, the
// member's index in its ranking (-1 when it is not ranked), and the error code due.
func (h *harness) memberRead(q laurel.Query, member string) (x expRead, idx int, want string) {
	x = h.m.resolve(q)
	want = x.code
	idx = slices.IndexFunc(x.all, func(e laurel.Entry) bool { return e.Member == member })
	if want == "" && idx < 0 {
		want = laurel.ENotFound
	}
	return x, idx, want
}

// checkMemberErr checks the error of a read centred on member, and reports whether the
// read's answer is left to check.
func (h *harness) checkMemberErr(what string, q laurel.Query, x expRead, idx int, want string, err error) bool {
	h.t.Helper()
	if code(err) == laurel.ENotFound && x.code == "" && idx < 0 {
		return false
	}
	return h.checkErr(what, q, x, err, want)
}

func (h *harness) checkMember(q laurel.Query, member string) {
	h.t.Helper()
	x, idx, want := h.memberRead(q, member)
	got, err := h.eng.Member(h.ctx, q, member)
	what := fmt.Sprintf("Member(%q)", member)
	if !h.checkMemberErr(what, q, x, idx, want, err) {
		return
	}
	if got.Board != x.b.id || got.Window != x.w.name || !samePeriod(got.Period, x.sp.info()) || got.Total != len(x.all) || !sameEntry(got.Entry, x.all[idx]) {
		h.fatalf("%s %s: got board %q window %q period %s total %d entry %s, want %q %q %s %d %s",
			what, fmtQuery(q), got.Board, got.Window, fmtPeriod(got.Period), got.Total, fmtEntry(got.Entry),
			x.b.id, x.w.name, fmtPeriod(x.sp.info()), len(x.all), fmtEntry(x.all[idx]))
	}
	h.checkPercentiles(what, q, []laurel.Entry{got.Entry}, got.Total)
}

// checkPercentiles checks that each entry of a read about members carries the share of the
// others it beats, as docs/design.md defines it from its rank and the total.
func (h *harness) checkPercentiles(what string, q laurel.Query, entries []laurel.Entry, total int) {
	h.t.Helper()
	for _, en := range entries {
		want := 100.0
		if total > 1 {
			want = float64((total-en.Rank)*10000/(total-1)) / 100
		}
		if en.Percentile == nil || *en.Percentile != want {
			h.fatalf("%s %s: %s of %d has percentile %v, want %v", what, fmtQuery(q), fmtEntry(en), total, en.Percentile, want)
		}
	}
	h.stats["read: percentiles"]++
}

// checkDistribution reads a histogram and compares its counts with a count of the model's
// ranking.
func (h *harness) checkDistribution(q laurel.Query, hist laurel.Histogram) {
	h.t.Helper()
	x := h.m.resolve(q)
	got, err := h.eng.Distribution(h.ctx, q, hist)
	what := fmt.Sprintf("Distribution(%+v)", hist)
	if !h.checkErr(what, q, x, err, x.code) {
		return
	}
	if got.Board != x.b.id || got.Window != x.w.name || !samePeriod(got.Period, x.sp.info()) || got.Total != len(x.all) {
		h.fatalf("%s %s: board %q window %q period %s total %d, want %q %q %s %d", what, fmtQuery(q),
			got.Board, got.Window, fmtPeriod(got.Period), got.Total, x.b.id, x.w.name, fmtPeriod(x.sp.info()), len(x.all))
	}
	var bounds [][2]int64
	switch {
	case len(hist.Edges) > 0:
		for i := 1; i < len(hist.Edges); i++ {
			bounds = append(bounds, [2]int64{hist.Edges[i-1], hist.Edges[i] - 1})
		}
		bounds[len(bounds)-1][1] = hist.Edges[len(hist.Edges)-1]
	case len(x.all) > 0:
		lo, hi := x.all[0].Score, x.all[len(x.all)-1].Score
		if lo > hi {
			lo, hi = hi, lo
		}
		n := int64(max(hist.Buckets, 1))
		if hist.Buckets == 0 {
			n = laurel.DefaultBuckets
		}
		n = min(n, hi-lo+1) // the model's scores are small
		for i := range n {
			bounds = append(bounds, [2]int64{lo + i*(hi-lo+1)/n, lo + (i+1)*(hi-lo+1)/n - 1})
		}
	}
	ok := len(got.Buckets) == len(bounds)
	for i := 0; ok && i < len(bounds); i++ {
		n := 0
		for _, en := range x.all {
			if en.Score >= bounds[i][0] && en.Score <= bounds[i][1] {
				n++
			}
		}
		b := got.Buckets[i]
		ok = b.Min == bounds[i][0] && b.Max == bounds[i][1] && b.Count == n
	}
	if !ok {
		h.fatalf("%s %s: buckets %+v, want bounds %v over the model's ranking %s", what, fmtQuery(q), got.Buckets, bounds, fmtEntries(x.all, 12))
	}
	h.stats["read: distribution"]++
}

func (h *harness) checkAround(q laurel.Query, member string, radius int) {
	h.t.Helper()
	x, idx, want := h.memberRead(q, member)
	got, err := h.eng.Around(h.ctx, q, member, radius)
	what := fmt.Sprintf("Around(%q, %d)", member, radius)
	if !h.checkMemberErr(what, q, x, idx, want, err) {
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
	h.checkPercentiles(what, q, got.Entries, got.Total)
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
	h.checkPercentiles(what, q, got.Entries, got.Total)
}

// checkRankOf reads the rank a score and subscore would get (0 on a board without one).
func (h *harness) checkRankOf(q laurel.Query, score, sub int64) {
	h.t.Helper()
	x := h.m.resolve(q)
	rank, total, err := h.eng.RankOf(h.ctx, q, score, sub)
	what := fmt.Sprintf("RankOf(%d, %d)", score, sub)
	if !h.checkErr(what, q, x, err, x.code) {
		return
	}
	want := 1
	for _, e := range x.all {
		if x.b.better(e.Score, e.Sub, score, sub) || e.Score == score && e.Sub == sub && e.ReachedAt <= h.m.now {
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
		h.checkResults(b, w, p, all)
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

// checkResults compares the results of a period with the rewards of the model's ranks: every
// member whose rank a rule covers, in rank order, and nothing for a period still open.
func (h *harness) checkResults(b *mBoard, w *mWindow, p laurel.PeriodInfo, all []laurel.Entry) {
	h.t.Helper()
	got, err := laurel.BoardResults(h.ctx, h.eng, b.id, w.name, p.ID, 0, 0)
	if !p.Closed {
		if laurel.ErrorCode(err) != laurel.EConflict {
			h.fatalf("BoardResults(%s, %s, %s) of an open period: %v, want %s", b.id, w.name, p.ID, err, laurel.EConflict)
		}
		return
	}
	if err != nil {
		h.fatalf("BoardResults(%s, %s, %s): %v", b.id, w.name, p.ID, err)
	}
	var want []laurel.Entry
	for _, en := range all {
		if _, ok := b.rewards.For(w.name, en.Rank, len(all)); ok {
			want = append(want, en)
		}
	}
	gotEntries := make([]laurel.Entry, len(got.Results))
	for i, r := range got.Results {
		gotEntries[i] = r.Entry
		if reward, _ := b.rewards.For(w.name, r.Rank, len(all)); string(r.Reward) != string(reward) {
			h.fatalf("BoardResults(%s, %s, %s): rank %d earned %s, want %s", b.id, w.name, p.ID, r.Rank, r.Reward, reward)
		}
	}
	if d := diffEntries(gotEntries, want); d != "" || got.Total != len(all) || got.Rewarded != len(want) {
		h.fatalf("BoardResults(%s, %s, %s): total %d rewarded %d, want %d and %d: %s", b.id, w.name, p.ID,
			got.Total, got.Rewarded, len(all), len(want), d)
	}
}

func (h *harness) checkBoardInfo(b *mBoard) {
	h.t.Helper()
	info, err := h.eng.Board(h.ctx, b.id)
	if err != nil {
		h.fatalf("Board(%s): %v", b.id, err)
	}
	if info.ID != b.id || info.Order != b.order || info.Ordering() != (&laurel.Board{Order: b.order, Subscore: b.sub}).Ordering() || info.Mode != b.mode || info.Keep != b.keep ||
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

// someHistogram returns a histogram to ask for: equal-width buckets, sometimes the default,
// or edges around the scores of all.
func (h *harness) someHistogram(all []laurel.Entry) laurel.Histogram {
	switch h.rng.IntN(3) {
	case 0:
		return laurel.Histogram{}
	case 1:
		return laurel.Histogram{Buckets: 1 + h.rng.IntN(12)}
	}
	e := h.rng.Int64N(40) - 20
	if len(all) > 0 {
		e = all[h.rng.IntN(len(all))].Score - h.rng.Int64N(10)
	}
	var edges []int64
	for range 2 + h.rng.IntN(5) {
		edges = append(edges, e)
		e += 1 + h.rng.Int64N(8)
	}
	return laurel.Histogram{Edges: edges}
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
	h.checkDistribution(q, h.someHistogram(x.all))
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
			var s, sub int64
			if len(x.all) > 0 && h.rng.IntN(3) > 0 {
				en := x.all[h.rng.IntN(len(x.all))]
				s, sub = en.Score+h.rng.Int64N(3)-1, en.Sub
			} else {
				s = h.rng.Int64N(60) - 10
			}
			if x.b != nil && x.b.sub != nil && h.rng.IntN(2) == 0 {
				sub += h.rng.Int64N(3) - 1
			}
			h.checkRankOf(q, s, sub)
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
				want = append(want, laurel.HistoryPoint{At: e.ts, Score: p.Score, Sub: p.Sub, Rank: p.Rank, Tag: tagJSON(e.tag)})
			}
		}
		if !known {
			continue // some of its points come from concurrent batches, whose order the model does not know
		}
		h.stats["history checked"]++
		if !slices.EqualFunc(got, want, samePoint) && len(got)+len(want) > 0 {
			h.fatalf("History(%s, %s, %q, limit %d) = %v, want %v", b.id, w.name, member, limit, got, want)
		}
	}
}

// checkAll compares every board with the model, and has the store check its invariants.
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

// badReads are queries the store must refuse.
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
