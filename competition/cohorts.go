package competition

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/laurel/laurel"
)

// Records of cohorts: a member's cohort in a period, a cohort's members, the cohort being
// filled for a placement key, "n count", a member's standings in its cohort after its writes,
// and a board's cohorts once removed.
const (
	recCohortOf      = "cohort-of"       // board:period:member → cohort id
	recCohort        = "cohort"          // board:period:cohort → JSON list of members
	recCohortFill    = "cohort-fill"     // board:period:key → "n count"
	recCohortHistory = "cohort-history"  // board:member:period → JSON [[at, score, rank], …], oldest first
	recCohortsGone   = "cohorts-removed" // board → JSON laurel.Cohorts, as they were when removed
)

// cohortsOf returns the cohorts of b, or, once they are removed ({}), those whose placements
// stay readable (docs/api.md) until cohorts are set again (new members are placed by
// b.Cohorts only); nil when it has neither.
func (s *Service) cohortsOf(ctx context.Context, b *laurel.Board) (*laurel.Cohorts, error) {
	if b.Cohorts != nil {
		return b.Cohorts, nil
	}
	raw, err := s.Records.Record(ctx, recCohortsGone, b.ID)
	if laurel.ErrorCode(err) == laurel.ENotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c laurel.Cohorts
	return &c, json.Unmarshal(raw, &c)
}

// readCohortsOf is cohortsOf for a read about cohorts: a board with neither is EInvalid.
func (s *Service) readCohortsOf(ctx context.Context, b *laurel.Board) (*laurel.Cohorts, error) {
	c, err := s.cohortsOf(ctx, b)
	if err == nil && c == nil {
		err = laurel.FieldErrorf(laurel.EInvalid, "cohort", "board %q has no cohorts", b.ID)
	}
	return c, err
}

// keepRemoved keeps the cohorts a board change removed, before, readable; a change that sets
// cohorts forgets those removed before.
func (s *Service) keepRemoved(ctx context.Context, board string, before, after *laurel.Cohorts) error {
	switch {
	case after != nil:
		return laurel.DeleteRecord(ctx, s.Records, recCohortsGone, board)
	case before == nil:
		return nil
	}
	v, err := json.Marshal(before)
	if err != nil {
		return err
	}
	for {
		old, err := s.Records.Record(ctx, recCohortsGone, board)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
			return err
		}
		if ok, err := s.Records.SwapRecord(ctx, recCohortsGone, board, old, v); err != nil || ok {
			return err
		}
	}
}

// placeAll places the members of a submit's events on boards with cohorts, and records the
// standing in its cohort that each member's applied events left it with, as the store's rank
// history does for the whole board.
func (s *Service) placeAll(ctx context.Context, boards map[string]*laurel.Board, events []laurel.Event, results []laurel.EventResult, now int64) {
	type standing struct {
		b              *laurel.Board
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
		period := b.CohortPeriod(ts)
		j := slices.IndexFunc(placed, func(st standing) bool { return st.b == b && st.member == ev.Member && st.period == period })
		if j < 0 {
			j = len(placed)
			placed = append(placed, standing{b: b, member: ev.Member, period: period})
		}
		if results[i].Status == laurel.StatusApplied {
			placed[j].applied, placed[j].at = true, max(placed[j].at, ts)
		}
	}
	for _, st := range placed {
		if s.place(ctx, st.b, st.member, st.period) != nil {
			return
		}
	}
	for _, st := range placed {
		if !st.applied {
			continue
		}
		q := laurel.Query{Board: st.b.ID, Window: st.b.Cohorts.Window, Period: st.period, Cohort: st.member}
		me, err := s.Member(ctx, q, st.member)
		if err != nil {
			continue // not ranked there (hidden): no point, as on the whole board
		}
		if s.appendPoint(ctx, st.b.ID+":"+st.member+":"+st.period, [3]int64{st.at, me.Entry.Score, int64(me.Entry.Rank)}) != nil {
			return
		}
	}
}

// appendPoint adds a point to a member's cohort history in one period, keeping the newest
// MaxHistoryLimit.
func (s *Service) appendPoint(ctx context.Context, key string, p [3]int64) error {
	for {
		raw, err := s.Records.Record(ctx, recCohortHistory, key)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
			return err
		}
		var points [][3]int64
		if raw != nil {
			if err := json.Unmarshal(raw, &points); err != nil {
				return err
			}
		}
		points = append(points, p)
		if len(points) > laurel.MaxHistoryLimit {
			points = points[len(points)-laurel.MaxHistoryLimit:]
		}
		v, _ := json.Marshal(points)
		if ok, err := s.Records.SwapRecord(ctx, recCohortHistory, key, raw, v); err != nil || ok {
			return err
		}
	}
}

// CohortHistory returns a member's points in its cohorts, newest first, at most limit: after
// each of its writes (a submit), its score and its rank within its cohort of that period, at
// the time of its latest event there. Later periods come first; within one, later writes.
func (s *Service) CohortHistory(ctx context.Context, board, window, member string, limit int) ([]laurel.HistoryPoint, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return nil, err
	}
	if limit < 1 || limit > laurel.MaxHistoryLimit {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "limit", "must be 1 to %d", laurel.MaxHistoryLimit)
	}
	info, err := s.Service.Board(ctx, board)
	if err != nil {
		return nil, err
	}
	c, err := s.readCohortsOf(ctx, &info.Board)
	if err != nil {
		return nil, err
	}
	if window != "" && window != c.Window {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "window", "board %q places cohorts by %s: read that window", board, c.Window)
	}
	// Records come in period order; within one, points in the order of their writes. Newest
	// first is the reverse of both.
	prefix := board + ":" + member + ":"
	var periods [][]laurel.HistoryPoint
	err = laurel.EachRecord(ctx, s.Records, recCohortHistory, prefix, "", func(r laurel.Record) (bool, error) {
		if strings.Contains(strings.TrimPrefix(r.Key, prefix), ":") {
			return true, nil // a member whose id goes on past this one's, with a colon
		}
		var points [][3]int64
		if err := json.Unmarshal(r.Value, &points); err != nil {
			return false, err
		}
		hp := make([]laurel.HistoryPoint, len(points))
		for i, p := range points {
			hp[len(points)-1-i] = laurel.HistoryPoint{At: p[0], Score: p[1], Rank: int(p[2])}
		}
		periods = append(periods, hp)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	var out []laurel.HistoryPoint
	for _, hp := range slices.Backward(periods) {
		out = append(out, hp...)
	}
	return out[:min(len(out), limit)], nil
}

// place puts member in a cohort of the period of b's cohort window, unless it has one; a
// crash between its steps is repaired at the member's next event.
func (s *Service) place(ctx context.Context, b *laurel.Board, member, period string) error {
	c := b.Cohorts
	base := b.ID + ":" + period + ":"
	raw, err := s.Records.Record(ctx, recCohortOf, base+member)
	if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
		return err
	}
	id := string(raw)
	if raw == nil {
		key, err := s.placementKey(ctx, b, member)
		if err != nil {
			return err
		}
		if id, err = s.fill(ctx, base+url.QueryEscape(key), key, c.Size); err != nil {
			return err
		}
		ok, err := s.Records.SwapRecord(ctx, recCohortOf, base+member, nil, []byte(id))
		if err != nil {
			return err
		}
		if !ok { // placed meanwhile by another request of the member: its place counts
			if raw, err = s.Records.Record(ctx, recCohortOf, base+member); err != nil {
				return err
			}
			id = string(raw)
		}
	}
	return s.join(ctx, base+id, member)
}

// fill takes a place in the cohort being filled for key and returns the cohort's id.
func (s *Service) fill(ctx context.Context, fillKey, key string, size int) (string, error) {
	for {
		raw, err := s.Records.Record(ctx, recCohortFill, fillKey)
		if err != nil && laurel.ErrorCode(err) != laurel.ENotFound {
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
		ok, err := s.Records.SwapRecord(ctx, recCohortFill, fillKey, raw, next)
		if err != nil {
			return "", err
		}
		if ok {
			return url.QueryEscape(key) + "/" + strconv.Itoa(n), nil
		}
	}
}

// join adds member to a cohort's list, unless it is there.
func (s *Service) join(ctx context.Context, cohortKey, member string) error {
	for {
		raw, members, err := s.cohortMembers(ctx, cohortKey)
		if err != nil || slices.Contains(members, member) {
			return err
		}
		v, _ := json.Marshal(append(members, member))
		if ok, err := s.Records.SwapRecord(ctx, recCohort, cohortKey, raw, v); err != nil || ok {
			return err
		}
	}
}

// leave takes member out of the lists of the cohorts of a period (prefix board:period:).
func (s *Service) leave(ctx context.Context, prefix, member string) error {
	ids, err := s.cohortIDs(ctx, prefix)
	if err != nil {
		return err
	}
	for _, id := range ids {
		for {
			raw, members, err := s.cohortMembers(ctx, prefix+id)
			if err != nil {
				return err
			}
			i := slices.Index(members, member)
			if i < 0 {
				break
			}
			v, _ := json.Marshal(slices.Delete(members, i, i+1))
			if ok, err := s.Records.SwapRecord(ctx, recCohort, prefix+id, raw, v); err != nil {
				return err
			} else if ok {
				break
			}
		}
	}
	return nil
}

func (s *Service) cohortMembers(ctx context.Context, cohortKey string) ([]byte, []string, error) {
	raw, err := s.Records.Record(ctx, recCohort, cohortKey)
	if laurel.ErrorCode(err) == laurel.ENotFound {
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
func (s *Service) placementKey(ctx context.Context, b *laurel.Board, member string) (string, error) {
	by := b.Cohorts.By
	switch by {
	case "":
		return "all", nil
	case "tier":
		return s.tierNow(ctx, b, member)
	}
	p, err := s.Service.Profile(ctx, member)
	if laurel.ErrorCode(err) == laurel.ENotFound {
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
	var key string
	if json.Unmarshal(v, &key) != nil {
		key = string(v) // a number, a boolean: its JSON
	}
	if key == "" || len(key) > 64 {
		return "none", nil
	}
	return key, nil
}

// Cohort returns member's cohort in the period of board's cohort window that q reads (its
// period, or the one at its instant; now by default).
func (s *Service) Cohort(ctx context.Context, q laurel.Query, member string) (laurel.Cohort, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Cohort{}, err
	}
	info, err := s.Service.Board(ctx, q.Board)
	if err != nil {
		return laurel.Cohort{}, err
	}
	return s.cohortOf(ctx, &info.Board, q, member)
}

// cohortOf is Cohort on board b, read already.
func (s *Service) cohortOf(ctx context.Context, b *laurel.Board, q laurel.Query, member string) (laurel.Cohort, error) {
	c, err := s.readCohortsOf(ctx, b)
	if err != nil {
		return laurel.Cohort{}, err
	}
	if q.Window != "" && q.Window != c.Window {
		return laurel.Cohort{}, laurel.FieldErrorf(laurel.EInvalid, "window", "board %q places cohorts by %s: read that window", b.ID, c.Window)
	}
	w, _ := b.Window(c.Window)
	var period string
	if q.Period != "" {
		p, err := b.Calendar().ParsePeriod(w, q.Period)
		if err != nil {
			return laurel.Cohort{}, laurel.FieldErrorf(laurel.EInvalid, "period", "%s", laurel.ErrorMessage(err))
		}
		period = p.ID
	} else {
		at := s.now()
		if q.HasAt {
			at = q.At
		}
		period = b.Calendar().PeriodAt(w, time.UnixMilli(at)).ID
	}
	base := b.ID + ":" + period + ":"
	raw, err := s.Records.Record(ctx, recCohortOf, base+member)
	if laurel.ErrorCode(err) == laurel.ENotFound {
		return laurel.Cohort{}, laurel.FieldErrorf(laurel.ENotFound, "cohort", "%q has no cohort in period %s of board %q", member, period, b.ID)
	}
	if err != nil {
		return laurel.Cohort{}, err
	}
	_, members, err := s.cohortMembers(ctx, base+string(raw))
	if err != nil {
		return laurel.Cohort{}, err
	}
	key, _, _ := strings.Cut(string(raw), "/")
	key, _ = url.QueryUnescape(key)
	return laurel.Cohort{Board: b.ID, Window: c.Window, Period: period, ID: string(raw), Key: key, Members: members}, nil
}

// cohortReader resolves a read of a member's cohort: the members of the cohort, read from the
// store as one lookup, are the ranking.
type cohortReader struct {
	svc    *Service
	member string // whose cohort
}

func (r cohortReader) Read(ctx context.Context, q laurel.Query, fn func(laurel.Reading) error) error {
	if err := laurel.ValidateMember("member", r.member); err != nil {
		return err
	}
	info, err := r.svc.Service.Board(ctx, q.Board)
	if err != nil {
		return err
	}
	c, err := r.svc.cohortOf(ctx, &info.Board, q, r.member)
	if err != nil {
		return err
	}
	q.Window = c.Window
	page, err := r.svc.Service.Lookup(ctx, q, c.Members)
	if err != nil {
		return err
	}
	at := r.svc.now()
	if q.HasAt {
		at = q.At
	}
	return fn(laurel.Reading{Board: q.Board, Window: c.Window, Order: info.Ordering(), At: at, Period: page.Period,
		Ranking: laurel.NewSortedRanking(info.Ordering(), page.Entries),
		Fill:    func([]laurel.Entry, bool) error { return nil }}) // the lookup filled them
}

// cohortReads are the API's reads within q's cohort, and the query they take.
func (s *Service) cohortReads(q laurel.Query) (laurel.Reads, laurel.Query) {
	r := laurel.Reads{Reader: cohortReader{s, q.Cohort}}
	q.Cohort = ""
	return r, q
}

// Page reads a page of the board, or of q.Cohort's cohort.
func (s *Service) Page(ctx context.Context, q laurel.Query, offset, limit int, r laurel.ScoreRange) (laurel.Page, error) {
	if q.Cohort == "" {
		return s.Service.Page(ctx, q, offset, limit, r)
	}
	cr, q := s.cohortReads(q)
	return cr.Page(ctx, q, offset, limit, r)
}

// Member reads a member's entry on the board, or in q.Cohort's cohort.
func (s *Service) Member(ctx context.Context, q laurel.Query, member string) (laurel.MemberEntry, error) {
	if q.Cohort == "" {
		return s.Service.Member(ctx, q, member)
	}
	cr, q := s.cohortReads(q)
	return cr.Member(ctx, q, member)
}

// Around reads the entries around a member on the board, or in q.Cohort's cohort.
func (s *Service) Around(ctx context.Context, q laurel.Query, member string, radius int) (laurel.Page, error) {
	if q.Cohort == "" {
		return s.Service.Around(ctx, q, member, radius)
	}
	cr, q := s.cohortReads(q)
	return cr.Around(ctx, q, member, radius)
}

// Lookup reads members' entries on the board, or in q.Cohort's cohort.
func (s *Service) Lookup(ctx context.Context, q laurel.Query, members []string) (laurel.Page, error) {
	if q.Cohort == "" {
		return s.Service.Lookup(ctx, q, members)
	}
	cr, q := s.cohortReads(q)
	return cr.Lookup(ctx, q, members)
}

// RankOf reads the rank a score would get on the board, or in q.Cohort's cohort.
func (s *Service) RankOf(ctx context.Context, q laurel.Query, score, sub int64) (int, int, error) {
	if q.Cohort == "" {
		return s.Service.RankOf(ctx, q, score, sub)
	}
	cr, q := s.cohortReads(q)
	return cr.RankOf(ctx, q, score, sub)
}

// Distribution reads the histogram of the board's scores, or of q.Cohort's cohort.
func (s *Service) Distribution(ctx context.Context, q laurel.Query, h laurel.Histogram) (laurel.Distribution, error) {
	if q.Cohort == "" {
		return s.Service.Distribution(ctx, q, h)
	}
	cr, q := s.cohortReads(q)
	return cr.Distribution(ctx, q, h)
}

// cohortIDs lists the cohorts of a period (prefix board:period:), by key, then number.
func (s *Service) cohortIDs(ctx context.Context, prefix string) ([]string, error) {
	var ids []string
	err := laurel.EachRecord(ctx, s.Records, recCohort, prefix, "", func(r laurel.Record) (bool, error) {
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
