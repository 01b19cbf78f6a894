package laurel

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cohorts split a board's periods into groups of at most Size members (docs/design.md,
// "Cohorts"): a member is placed in a cohort of the period of Window when its first event of
// that period arrives, and a read can be asked for the member's cohort, ranking it among its
// cohort only. Placement is first come, first served among the members of one placement key:
// all of them, or those whose profile has the same value at a metadata field (a skill
// bracket), or those of the same league tier (leagues.go).
type Cohorts struct {
	Window string
	Size   int
	By     string // "" (everyone together) or "metadata.<field>"; "tier" with Tiers
	// Leagues (leagues.go): the tiers, lowest first, and how many of a cohort move up and
	// down at each close.
	Tiers           []string
	Promote, Demote int
	DemoteAbsent    bool
}

// CohortsSpec is Cohorts in the API's words; an empty one removes them.
type CohortsSpec struct {
	Window       *string  `json:"window,omitempty"`
	Size         *int     `json:"size,omitempty"`
	By           *string  `json:"by,omitempty"`
	Tiers        []string `json:"tiers,omitempty"`
	Promote      *int     `json:"promote,omitempty"`
	Demote       *int     `json:"demote,omitempty"`
	DemoteAbsent *bool    `json:"demote_absent,omitempty"`
}

// Bounds of a cohort's size: a cohort is read as one lookup.
const (
	MinCohortSize = 2
	MaxCohortSize = MaxLookup
)

func cohortsOf(spec *CohortsSpec, b *Board) (*Cohorts, error) {
	if spec.Window == nil && spec.Size == nil && spec.By == nil && spec.Tiers == nil && spec.Promote == nil && spec.Demote == nil && spec.DemoteAbsent == nil {
		return nil, nil
	}
	c := &Cohorts{}
	if spec.Window == nil {
		return nil, FieldErrorf(EInvalid, "cohorts.window", "is required: the calendar window whose periods place members anew")
	}
	if w, ok := b.Window(*spec.Window); !ok || !w.IsCalendar() {
		return nil, FieldErrorf(EInvalid, "cohorts.window", "must be one of the board's calendar windows (hour, day, week, month, year)")
	}
	c.Window = *spec.Window
	if spec.Size == nil || *spec.Size < MinCohortSize || *spec.Size > MaxCohortSize {
		return nil, FieldErrorf(EInvalid, "cohorts.size", "must be %d to %d members", MinCohortSize, MaxCohortSize)
	}
	c.Size = *spec.Size
	if spec.By != nil {
		c.By = *spec.By
		field, isMeta := strings.CutPrefix(c.By, "metadata.")
		if !(isMeta && field != "" && len(field) <= 64 || c.By == "tier" && spec.Tiers != nil) {
			return nil, FieldErrorf(EInvalid, "cohorts.by", `must be "metadata.<field>", or "tier" with tiers; left out, everyone is placed together`)
		}
	}
	if spec.Tiers == nil {
		if spec.Promote != nil || spec.Demote != nil || spec.DemoteAbsent != nil {
			return nil, FieldErrorf(EInvalid, "cohorts.tiers", "promote, demote and demote_absent need tiers")
		}
		return c, nil
	}
	if c.By != "" && c.By != "tier" {
		return nil, FieldErrorf(EInvalid, "cohorts.by", "a league places members by tier")
	}
	c.By = "tier"
	if len(spec.Tiers) < 2 || len(spec.Tiers) > MaxTiers {
		return nil, FieldErrorf(EInvalid, "cohorts.tiers", "must list 2 to %d tiers, lowest first", MaxTiers)
	}
	for i, name := range spec.Tiers {
		if ValidateBoardID(name) != nil || len(name) > MaxTierName || slices.Contains(spec.Tiers[:i], name) {
			return nil, FieldErrorf(EInvalid, fmt.Sprintf("cohorts.tiers[%d]", i), "must be a distinct name of 1 to %d characters, [a-z0-9][a-z0-9_.-]*", MaxTierName)
		}
	}
	c.Tiers = slices.Clone(spec.Tiers)
	for _, f := range []struct {
		name string
		v    *int
		to   *int
	}{{"promote", spec.Promote, &c.Promote}, {"demote", spec.Demote, &c.Demote}} {
		if f.v != nil {
			if *f.v < 0 || *f.v > c.Size {
				return nil, FieldErrorf(EInvalid, "cohorts."+f.name, "must be 0 to the cohort's size (%d)", c.Size)
			}
			*f.to = *f.v
		}
	}
	c.DemoteAbsent = spec.DemoteAbsent != nil && *spec.DemoteAbsent
	return c, nil
}

// Spec returns the cohorts in the API's words.
func (c *Cohorts) Spec() *CohortsSpec {
	s := &CohortsSpec{Window: ptr(c.Window), Size: ptr(c.Size)}
	if c.By != "" {
		s.By = ptr(c.By)
	}
	if len(c.Tiers) > 0 {
		s.Tiers, s.Promote, s.Demote = slices.Clone(c.Tiers), ptr(c.Promote), ptr(c.Demote)
		if c.DemoteAbsent {
			s.DemoteAbsent = ptr(true)
		}
	}
	return s
}

// cohortPeriod returns the id of the period of b's cohort window that holds ts.
func (b *Board) cohortPeriod(ts int64) string {
	w, _ := b.Window(b.Cohorts.Window)
	return b.Calendar().PeriodAt(w, time.UnixMilli(ts)).ID
}

// Cohort is a member's cohort in a period of a board's cohort window.
type Cohort struct {
	Board, Window, Period string
	ID                    string   // "<key>/<n>", n from 1; key "all" when everyone is together
	Key                   string   // the placement key
	Members               []string // in order of placement
}

// Records of cohorts: a member's cohort in a period, a cohort's members, the cohort being
// filled for a placement key, "n count", and a member's standings in its cohort after its
// writes.
const (
	recCohortOf      = "cohort-of"      // board:period:member → cohort id
	recCohort        = "cohort"         // board:period:cohort → JSON list of members
	recCohortFill    = "cohort-fill"    // board:period:key → "n count"
	recCohortHistory = "cohort-history" // board:member:period → JSON [[at, score, rank], …], oldest first
)

// placeAll places the members of a submit's events on boards with cohorts, and records the
// standing in its cohort that each member's applied events left it with, as the store's rank
// history does for the whole board.
func (t *Competitions) placeAll(ctx context.Context, boards map[string]*Board, events []Event, results []EventResult, now int64) {
	type standing struct {
		b              *Board
		member, period string
		applied        bool  // an event of it was applied (not only retries)
		at             int64 // its latest applied event's time
	}
	var placed []standing // each (board, member, period) of the submit once
	for i, ev := range events {
		b := boards[ev.Board]
		if b == nil || b.Cohorts == nil {
			continue
		}
		ts := now
		if ev.HasTS {
			ts = ev.TS
		}
		period := b.cohortPeriod(ts)
		j := slices.IndexFunc(placed, func(s standing) bool { return s.b == b && s.member == ev.Member && s.period == period })
		if j < 0 {
			j = len(placed)
			placed = append(placed, standing{b: b, member: ev.Member, period: period})
		}
		if results[i].Status == StatusApplied {
			placed[j].applied, placed[j].at = true, max(placed[j].at, ts)
		}
	}
	for _, s := range placed {
		if t.place(ctx, s.b, s.member, s.period) != nil {
			return
		}
	}
	for _, s := range placed {
		if !s.applied {
			continue
		}
		q := Query{Board: s.b.ID, Window: s.b.Cohorts.Window, Period: s.period, Cohort: s.member}
		me, err := t.Member(ctx, q, s.member)
		if err != nil {
			continue // not ranked there (hidden): no point, as on the whole board
		}
		if t.appendPoint(ctx, s.b.ID+":"+s.member+":"+s.period, [3]int64{s.at, me.Entry.Score, int64(me.Entry.Rank)}) != nil {
			return
		}
	}
}

// appendPoint adds a point to a member's cohort history in one period, keeping the newest
// MaxHistoryLimit.
func (t *Competitions) appendPoint(ctx context.Context, key string, p [3]int64) error {
	for {
		raw, err := t.Records.Record(ctx, recCohortHistory, key)
		if err != nil && ErrorCode(err) != ENotFound {
			return err
		}
		var points [][3]int64
		if raw != nil {
			if err := json.Unmarshal(raw, &points); err != nil {
				return err
			}
		}
		points = append(points, p)
		if len(points) > MaxHistoryLimit {
			points = points[len(points)-MaxHistoryLimit:]
		}
		v, _ := json.Marshal(points)
		if ok, err := t.Records.SwapRecord(ctx, recCohortHistory, key, raw, v); err != nil || ok {
			return err
		}
	}
}

// CohortHistory returns a member's points in its cohorts, newest first, at most limit: after
// each of its writes (a submit), its score and its rank within its cohort of that period, at
// the time of its latest event there. Later periods come first; within one, later writes.
func (t *Competitions) CohortHistory(ctx context.Context, board, window, member string, limit int) ([]HistoryPoint, error) {
	if err := ValidateMember("member", member); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return nil, FieldErrorf(EInvalid, "limit", "must be 1 to %d", MaxHistoryLimit)
	}
	info, err := t.Service.Board(ctx, board)
	if err != nil {
		return nil, err
	}
	c := info.Cohorts
	if c == nil {
		return nil, FieldErrorf(EInvalid, "cohort", "board %q has no cohorts", board)
	}
	if window != "" && window != c.Window {
		return nil, FieldErrorf(EInvalid, "window", "board %q places cohorts by %s: read that window", board, c.Window)
	}
	// Records come in period order; within one, points in the order of their writes. Newest
	// first is the reverse of both.
	prefix := board + ":" + member + ":"
	var periods [][]HistoryPoint
	err = eachRecord(ctx, t.Records, recCohortHistory, prefix, "", func(r Record) (bool, error) {
		if strings.Contains(strings.TrimPrefix(r.Key, prefix), ":") {
			return true, nil // a member whose id goes on past this one's, with a colon
		}
		var points [][3]int64
		if err := json.Unmarshal(r.Value, &points); err != nil {
			return false, err
		}
		hp := make([]HistoryPoint, len(points))
		for i, p := range points {
			hp[len(points)-1-i] = HistoryPoint{At: p[0], Score: p[1], Rank: int(p[2])}
		}
		periods = append(periods, hp)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	var out []HistoryPoint
	for _, hp := range slices.Backward(periods) {
		out = append(out, hp...)
	}
	return out[:min(len(out), limit)], nil
}

// place puts member in a cohort of the period of b's cohort window, unless it has one; a
// crash between its steps is repaired at the member's next event.
func (t *Competitions) place(ctx context.Context, b *Board, member, period string) error {
	c := b.Cohorts
	base := b.ID + ":" + period + ":"
	raw, err := t.Records.Record(ctx, recCohortOf, base+member)
	if err != nil && ErrorCode(err) != ENotFound {
		return err
	}
	id := string(raw)
	if raw == nil {
		key, err := t.placementKey(ctx, b, member)
		if err != nil {
			return err
		}
		if id, err = t.fill(ctx, base+url.QueryEscape(key), key, c.Size); err != nil {
			return err
		}
		ok, err := t.Records.SwapRecord(ctx, recCohortOf, base+member, nil, []byte(id))
		if err != nil {
			return err
		}
		if !ok { // placed meanwhile by another request of the member: its place counts
			if raw, err = t.Records.Record(ctx, recCohortOf, base+member); err != nil {
				return err
			}
			id = string(raw)
		}
	}
	return t.join(ctx, base+id, member)
}

// fill takes a place in the cohort being filled for key and returns the cohort's id.
func (t *Competitions) fill(ctx context.Context, fillKey, key string, size int) (string, error) {
	for {
		raw, err := t.Records.Record(ctx, recCohortFill, fillKey)
		if err != nil && ErrorCode(err) != ENotFound {
			return "", err
		}
		n, count := 1, 0
		if raw != nil {
			if _, err := fmt.Sscanf(string(raw), "%d %d", &n, &count); err != nil {
				return "", err
			}
		}
		if count == size {
			n, count = n+1, 0
		}
		next := []byte(strconv.Itoa(n) + " " + strconv.Itoa(count+1))
		ok, err := t.Records.SwapRecord(ctx, recCohortFill, fillKey, raw, next)
		if err != nil {
			return "", err
		}
		if ok {
			return url.QueryEscape(key) + "/" + strconv.Itoa(n), nil
		}
	}
}

// join adds member to a cohort's list, unless it is there.
func (t *Competitions) join(ctx context.Context, cohortKey, member string) error {
	for {
		raw, members, err := t.cohortMembers(ctx, cohortKey)
		if err != nil || slices.Contains(members, member) {
			return err
		}
		v, _ := json.Marshal(append(members, member))
		if ok, err := t.Records.SwapRecord(ctx, recCohort, cohortKey, raw, v); err != nil || ok {
			return err
		}
	}
}

// leave takes member out of the lists of the cohorts of a period (prefix board:period:).
func (t *Competitions) leave(ctx context.Context, prefix, member string) error {
	ids, err := t.cohortIDs(ctx, prefix)
	if err != nil {
		return err
	}
	for _, id := range ids {
		for {
			raw, members, err := t.cohortMembers(ctx, prefix+id)
			if err != nil {
				return err
			}
			i := slices.Index(members, member)
			if i < 0 {
				break
			}
			v, _ := json.Marshal(slices.Delete(members, i, i+1))
			if ok, err := t.Records.SwapRecord(ctx, recCohort, prefix+id, raw, v); err != nil {
				return err
			} else if ok {
				break
			}
		}
	}
	return nil
}

func (t *Competitions) cohortMembers(ctx context.Context, cohortKey string) ([]byte, []string, error) {
	raw, err := t.Records.Record(ctx, recCohort, cohortKey)
	if ErrorCode(err) == ENotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var members []string
	return raw, members, json.Unmarshal(raw, &members)
}

// placementKey is the key a member is placed by: "all", its profile's metadata field, or its
// league tier.
func (t *Competitions) placementKey(ctx context.Context, b *Board, member string) (string, error) {
	by := b.Cohorts.By
	switch by {
	case "":
		return "all", nil
	case "tier":
		return t.tierNow(ctx, b, member)
	}
	p, err := t.Service.Profile(ctx, member)
	if ErrorCode(err) == ENotFound {
		return "none", nil
	}
	if err != nil {
		return "", err
	}
	var md map[string]json.RawMessage
	if err := json.Unmarshal(p.Metadata, &md); err != nil {
		return "none", nil
	}
	v, ok := md[strings.TrimPrefix(by, "metadata.")]
	if !ok {
		return "none", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v) // a number, a boolean: its JSON
	}
	if s == "" || len(s) > 64 {
		return "none", nil
	}
	return s, nil
}

// Cohort returns member's cohort in the period of board's cohort window that q reads (its
// period, or the one at its instant; now by default).
func (t *Competitions) Cohort(ctx context.Context, q Query, member string) (Cohort, error) {
	if err := ValidateMember("member", member); err != nil {
		return Cohort{}, err
	}
	info, err := t.Service.Board(ctx, q.Board)
	if err != nil {
		return Cohort{}, err
	}
	return t.cohortOf(ctx, &info.Board, q, member)
}

// cohortOf is Cohort on board b, read already.
func (t *Competitions) cohortOf(ctx context.Context, b *Board, q Query, member string) (Cohort, error) {
	c := b.Cohorts
	if c == nil {
		return Cohort{}, FieldErrorf(EInvalid, "cohort", "board %q has no cohorts", b.ID)
	}
	if q.Window != "" && q.Window != c.Window {
		return Cohort{}, FieldErrorf(EInvalid, "window", "board %q places cohorts by %s: read that window", b.ID, c.Window)
	}
	var period string
	if q.Period != "" {
		w, _ := b.Window(c.Window)
		p, err := b.Calendar().ParsePeriod(w, q.Period)
		if err != nil {
			return Cohort{}, FieldErrorf(EInvalid, "period", "%s", ErrorMessage(err))
		}
		period = p.ID
	} else {
		at := t.now()
		if q.HasAt {
			at = q.At
		}
		period = b.cohortPeriod(at)
	}
	base := b.ID + ":" + period + ":"
	raw, err := t.Records.Record(ctx, recCohortOf, base+member)
	if ErrorCode(err) == ENotFound {
		return Cohort{}, FieldErrorf(ENotFound, "cohort", "%q has no cohort in period %s of board %q", member, period, b.ID)
	}
	if err != nil {
		return Cohort{}, err
	}
	_, members, err := t.cohortMembers(ctx, base+string(raw))
	if err != nil {
		return Cohort{}, err
	}
	key, _, _ := strings.Cut(string(raw), "/")
	key, _ = url.QueryUnescape(key)
	return Cohort{Board: b.ID, Window: c.Window, Period: period, ID: string(raw), Key: key, Members: members}, nil
}

// cohortReader resolves a read of a member's cohort: the members of the cohort, read from the
// store as one lookup, are the ranking.
type cohortReader struct {
	t      *Competitions
	member string // whose cohort
}

func (r cohortReader) Read(ctx context.Context, q Query, fn func(Reading) error) error {
	if err := ValidateMember("member", r.member); err != nil {
		return err
	}
	info, err := r.t.Service.Board(ctx, q.Board)
	if err != nil {
		return err
	}
	c, err := r.t.cohortOf(ctx, &info.Board, q, r.member)
	if err != nil {
		return err
	}
	q.Window = c.Window
	page, err := r.t.Service.Lookup(ctx, q, c.Members)
	if err != nil {
		return err
	}
	at := r.t.now()
	if q.HasAt {
		at = q.At
	}
	return fn(Reading{Board: q.Board, Window: c.Window, Order: info.Order, At: at, Period: page.Period,
		Ranking: NewSortedRanking(info.Order, page.Entries),
		Fill:    func([]Entry, bool) error { return nil }}) // the lookup filled them
}

// cohortReads are the API's reads within q's cohort, and the query they take.
func (t *Competitions) cohortReads(q Query) (Reads, Query) {
	r := Reads{Reader: cohortReader{t, q.Cohort}}
	q.Cohort = ""
	return r, q
}

// Page reads a page of the board, or of q.Cohort's cohort.
func (t *Competitions) Page(ctx context.Context, q Query, offset, limit int, r ScoreRange) (Page, error) {
	if q.Cohort == "" {
		return t.Service.Page(ctx, q, offset, limit, r)
	}
	cr, q := t.cohortReads(q)
	return cr.Page(ctx, q, offset, limit, r)
}

// Member reads a member's entry on the board, or in q.Cohort's cohort.
func (t *Competitions) Member(ctx context.Context, q Query, member string) (MemberEntry, error) {
	if q.Cohort == "" {
		return t.Service.Member(ctx, q, member)
	}
	cr, q := t.cohortReads(q)
	return cr.Member(ctx, q, member)
}

// Around reads the entries around a member on the board, or in q.Cohort's cohort.
func (t *Competitions) Around(ctx context.Context, q Query, member string, radius int) (Page, error) {
	if q.Cohort == "" {
		return t.Service.Around(ctx, q, member, radius)
	}
	cr, q := t.cohortReads(q)
	return cr.Around(ctx, q, member, radius)
}

// Lookup reads members' entries on the board, or in q.Cohort's cohort.
func (t *Competitions) Lookup(ctx context.Context, q Query, members []string) (Page, error) {
	if q.Cohort == "" {
		return t.Service.Lookup(ctx, q, members)
	}
	cr, q := t.cohortReads(q)
	return cr.Lookup(ctx, q, members)
}

// RankOf reads the rank a score would get on the board, or in q.Cohort's cohort.
func (t *Competitions) RankOf(ctx context.Context, q Query, score int64) (int, int, error) {
	if q.Cohort == "" {
		return t.Service.RankOf(ctx, q, score)
	}
	cr, q := t.cohortReads(q)
	return cr.RankOf(ctx, q, score)
}

func (t *Competitions) competitions() *Competitions { return t }

// results are a closed period's results: on the whole board, or cohort by cohort when the
// period is one of the board's cohort window.
func (t *Competitions) results(ctx context.Context, board, window, period string, offset, limit int) (Results, error) {
	info, err := t.Service.Board(ctx, board)
	if err != nil {
		return Results{}, err
	}
	c := info.Cohorts
	if c == nil || window != c.Window && !(window == "" && info.Windows[0].String() == c.Window) {
		return boardResults(ctx, t.Service, board, window, period, offset, limit)
	}
	// The period's header and total, and whether it closed, from the whole board.
	head, err := boardResults(ctx, t.Service, board, window, period, 0, 1)
	if err != nil {
		return Results{}, err
	}
	res := Results{Board: head.Board, Window: head.Window, Period: head.Period, Total: head.Total}
	ids, err := t.cohortIDs(ctx, board+":"+head.Period.ID+":")
	if err != nil {
		return Results{}, err
	}
	for _, id := range ids {
		_, members, err := t.cohortMembers(ctx, board+":"+head.Period.ID+":"+id)
		if err != nil {
			return Results{}, err
		}
		page, err := t.Service.Lookup(ctx, Query{Board: board, Window: head.Window, Period: head.Period.ID}, members)
		if err != nil {
			return Results{}, err
		}
		tier := ""
		if len(c.Tiers) > 0 {
			tier, _, _ = strings.Cut(id, "/")
		}
		for i, en := range page.Entries {
			en.Rank = i + 1
			if reward, ok := info.Rewards.ForTier(head.Window, tier, en.Rank, len(page.Entries)); ok {
				res.Rewarded++
				res.Results = append(res.Results, Result{Entry: en, Reward: reward, Cohort: id})
			}
		}
	}
	return res.window(offset, limit), nil
}

// cohortIDs lists the cohorts of a period (prefix board:period:), by key, then number.
func (t *Competitions) cohortIDs(ctx context.Context, prefix string) ([]string, error) {
	var ids []string
	err := eachRecord(ctx, t.Records, recCohort, prefix, "", func(r Record) (bool, error) {
		ids = append(ids, strings.TrimPrefix(r.Key, prefix))
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ids, func(a, b string) int {
		ka, na, _ := strings.Cut(a, "/")
		kb, nb, _ := strings.Cut(b, "/")
		if ka != kb {
			return strings.Compare(ka, kb)
		}
		x, _ := strconv.Atoi(na)
		y, _ := strconv.Atoi(nb)
		return x - y
	})
	return ids, nil
}
