package laureltest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/laurel/laurel"
)

// The operations: random writes, board changes and bad input, applied to both the store and
// the model.

type boardDef struct {
	id, order, mode, tz, week, late string
	sub                             string // the subscore's order; "" for none
	windows                         []string
	keep                            int
	min, max                        *int64
	valLo, valHi                    int64
	rewards                         string // the board's reward rules, as JSON
	// tournament: a daily one from an hour after the board's creation to 60 days after,
	// each day's run open for its first 20 hours of the board's clock
	tournament bool
}

var boardDefs = []boardDef{
	{id: "sum-utc", order: "desc", mode: "sum", tz: "UTC", week: "monday", late: "3h", windows: []string{"all", "day", "last7d", "hour"}, keep: 2, min: ptr[int64](-20), max: ptr[int64](50), valLo: -5, valHi: 20,
		rewards: `[{"window":"day","ranks":[1,2],"reward":{"gold":2}},{"window":"day","percent":40,"reward":{"gold":1}},{"window":"hour","ranks":[3,4],"reward":{"xp":9}}]`},
	{id: "best-ny", order: "asc", mode: "best", tz: "America/New_York", week: "sunday", late: "6h", windows: []string{"week", "all", "last3h", "day"}, keep: 1, valLo: 1, valHi: 40, tournament: true,
		rewards: `[{"window":"week","ranks":[1,1],"reward":{"crown":true}},{"window":"week","percent":50,"reward":{"silver":true}}]`},
	{id: "last-lh", order: "desc", mode: "last", tz: "Australia/Lord_Howe", week: "monday", late: "1d", windows: []string{"day", "last1d", "month"}, keep: 3, min: ptr[int64](0), max: ptr[int64](100), valLo: 0, valHi: 30},
	{id: "sum-ny", order: "asc", sub: "asc", mode: "sum", tz: "America/New_York", week: "monday", late: "2h", windows: []string{"hour", "last3h", "week"}, keep: 0, valLo: -5, valHi: 10},
	{id: "best-utc", order: "desc", sub: "asc", mode: "best", tz: "UTC", week: "tuesday", late: "2d", windows: []string{"last7d", "day"}, keep: 2, min: ptr[int64](0), max: ptr[int64](30), valLo: 0, valHi: 25},
	{id: "last-ny", order: "asc", sub: "desc", mode: "last", tz: "America/New_York", week: "monday", late: "2h", windows: []string{"hour", "all"}, keep: 3, valLo: -3, valHi: 12},
}

func (h *harness) createBoards() {
	for _, d := range boardDefs {
		spec := laurel.BoardSpec{Order: ptr(d.order), Mode: ptr(d.mode), Timezone: ptr(d.tz), WeekStart: ptr(d.week),
			LateLimit: ptr(d.late), Keep: ptr(d.keep), Windows: d.windows, MinValue: d.min, MaxValue: d.max}
		if d.sub != "" {
			spec.Subscore = ptr(d.sub)
		}
		if d.rewards != "" {
			if err := json.Unmarshal([]byte(d.rewards), &spec.Rewards); err != nil {
				h.fatalf("rewards of %s: %v", d.id, err)
			}
		}
		var tour *mTournament
		if d.tournament {
			tour = &mTournament{start: h.m.now + 3_600_000, end: h.m.now + 60*86_400_000, w: laurel.Window{Kind: laurel.WindowDay}, open: 20 * 3_600_000}
			spec.Tournament = &laurel.TournamentSpec{Start: ptr(laurel.FormatTime(tour.start)), End: ptr(laurel.FormatTime(tour.end)),
				Window: ptr("day"), Duration: ptr("20h")}
		}
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
		b := &mBoard{id: d.id, order: lb.Order, sub: lb.Subscore, mode: lb.Mode, tz: d.tz, cal: lb.Calendar(), keep: d.keep,
			min: d.min, max: d.max, created: h.m.now, ids: map[string]*mEvent{}, valLo: d.valLo, valHi: d.valHi,
			late: []lateStep{{from: h.m.now, limit: lb.LateLimit.Milliseconds()}}, keeps: []keepStep{{h.m.now, d.keep}},
			rewards: lb.Rewards, tournament: tour}
		for _, w := range lb.Windows {
			b.windows = append(b.windows, &mWindow{w: w, name: w.String(), addAt: h.m.now})
		}
		h.m.boards = append(h.m.boards, b)
		h.m.byID[b.id] = b
	}
}

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
			if h.rng.IntN(2) == 0 { // its time, even one late_limit refuses now: still a duplicate
				ev.HasTS, ev.TS = true, orig.ts
			}
			ev.Sub, ev.HasSub = orig.sub, orig.sub != 0 || b.sub != nil && h.rng.IntN(2) == 0
			return ev
		}
	}
	ev.Member = h.pickMember()
	ev.Value = b.valLo + h.rng.Int64N(b.valHi-b.valLo+1)
	ev.TS, ev.HasTS = h.genTS(b)
	h.genSub(b, &ev)
	if h.rng.IntN(2) == 0 {
		// A tag of its own on half the events, so that a tag from the wrong event shows.
		h.nextTag++
		ev.Tag = json.RawMessage(`{"n":` + strconv.Itoa(h.nextTag) + `}`)
	}
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

// genSub gives an event on a board with a subscore one most of the time: a few values, so
// that equal scores differ by it and equal pairs happen too. Without one, the event carries 0.
func (h *harness) genSub(b *mBoard, ev *laurel.Event) {
	if b.sub != nil && h.rng.IntN(5) > 0 {
		ev.Sub, ev.HasSub = h.rng.Int64N(5)-2, true
	}
}

func fmtEvent(ev laurel.Event) string {
	s := fmt.Sprintf("{%s %q %d", ev.Board, ev.Member, ev.Value)
	if ev.HasSub {
		s += fmt.Sprintf(" sub=%d", ev.Sub)
	}
	if ev.HasTS {
		s += " ts=" + laurel.FormatTime(ev.TS)
	}
	if ev.ID != "" {
		s += " id=" + ev.ID
	}
	if ev.Tag != nil {
		s += " tag=" + string(ev.Tag)
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
			if b.sub == nil && h.rng.IntN(2) == 0 {
				ev.Sub, ev.HasSub = h.rng.Int64N(3), true // 0 too: the field itself is refused
				return "a subscore on a board without one"
			}
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
			ev.Sub, ev.HasSub = orig.sub, orig.sub != 0
			switch h.rng.IntN(4) {
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
			case 3:
				if b.sub == nil {
					continue
				}
				ev.Sub, ev.HasSub = orig.sub+1+h.rng.Int64N(2), true
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
	previous := h.m.standingsBefore(evs)
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
			if len(r.Entries) != 0 || len(r.Previous) != 0 {
				h.fatalf("Submit with NoRanks: result %d has entries %v, previous %v", i, r.Entries, r.Previous)
			}
			continue
		}
		if want := previous[i]; st[i] != laurel.StatusApplied {
			if len(r.Previous) != 0 {
				h.fatalf("Submit %s: result %d (%s) has previous %v, want none", fmtEvents(evs), i, st[i], r.Previous)
			}
		} else if !maps.Equal(r.Previous, want) {
			h.fatalf("Submit %s: result %d previous = %v, want %v (the member's standings before the batch)", fmtEvents(evs), i, r.Previous, want)
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
			if want := (laurel.Standing{Rank: all[idx].Rank, Score: all[idx].Score, Sub: all[idx].Sub}); got != want || !ok {
				h.fatalf("Submit %s: result %d entries[%s] = %+v (present %v), want %+v\nmodel ranking: %s",
					fmtEvents(evs), i, w.name, got, ok, want, fmtEntries(all, 10))
			}
		}
	}
}

// opConcurrent submits batches from several goroutines at once, so that a store that
// commits in groups does. Each goroutine has its own members and fresh ids, so the outcome
// does not depend on the order the store takes them in (last-mode ties by arrival only arise
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
				h.genSub(b, &ev)
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
	switch h.rng.IntN(4) {
	case 3:
		spec.Subscore = ptr("asc") // added to a board without one, or turned
		if b.sub != nil && *b.sub == laurel.Asc {
			spec.Subscore = ptr("desc")
		}
		what = "subscore"
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
