package http

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/http/internal/wire"
)

// Boards.

func (s *Server) handleBoards(w http.ResponseWriter, r *http.Request) {
	boards, err := s.svc.Boards(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Boards []boardJSON `json:"boards"`
	}{Boards: make([]boardJSON, len(boards))}
	for i, b := range boards {
		out.Boards[i] = boardOf(b)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handlePutBoard(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("board")
	var spec laurel.BoardSpec
	if err := s.readJSON(w, r, &spec, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, created, err := s.svc.PutBoard(r.Context(), id, spec)
	s.subs.forget(id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeMade(w, created, boardOf(b))
}

func (s *Server) handleBoard(w http.ResponseWriter, r *http.Request) {
	b, err := s.svc.Board(r.Context(), r.PathValue("board"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, boardOf(b))
}

// handleDeleteBoard deletes the board, then what the webhooks keep of it (its competitions'
// state goes with the board, in the Service that keeps them).
func (s *Server) handleDeleteBoard(w http.ResponseWriter, r *http.Request) {
	board := r.PathValue("board")
	err := s.svc.DeleteBoard(r.Context(), board)
	s.subs.forget(board)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.cfg.Hooks != nil {
		ctx, cancel := laurel.AfterWrite(r.Context(), laurel.AfterWriteGrace)
		defer cancel()
		if err := s.cfg.Hooks.ForgetBoard(ctx, board); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// Events.

func (s *Server) handleBoardEvents(w http.ResponseWriter, r *http.Request) {
	board := r.PathValue("board")
	if err := laurel.ValidateBoardID(board); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.submit(w, r, board)
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) { s.submit(w, r, "") }

func (s *Server) submit(w http.ResponseWriter, r *http.Request, board string) {
	ranks, err := boolParam(r.URL.Query(), "ranks", true)
	var imported bool
	if err == nil {
		imported, err = boolParam(r.URL.Query(), "import", false)
	}
	if err == nil && imported && !s.admin(r) {
		// docs/design.md: bulk import with the admin key may bypass late_limit.
		err = laurel.FieldErrorf(laurel.EPermissionDenied, "import", "importing past late_limit takes the admin scope")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	events, single, err := wire.DecodeEvents(body, board)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	g := grantOf(r)
	if g != nil {
		if err := g.allowsEvents(events); err != nil {
			s.writeError(w, r, fixEventField(err, single, board != ""))
			return
		}
	}
	results, err := s.svc.Submit(r.Context(), events, laurel.SubmitOptions{NoRanks: !ranks, Import: imported, MemberToken: g != nil})
	if err != nil {
		if rule := laurel.GuardRuleOf(err); rule != "" {
			if i := eventIndex(err); i < len(events) {
				s.metrics.guardRefused.WithLabelValues(events[i].Board, rule).Inc()
			}
		}
		s.writeError(w, r, fixEventField(err, single, board != ""))
		return
	}
	var applied, duplicates int
	for _, res := range results {
		if res.Flag != "" {
			s.metrics.held.WithLabelValues(res.Board, res.Rule).Inc()
		}
		if res.Status == laurel.StatusDuplicate {
			duplicates++
		} else {
			applied++
		}
	}
	s.metrics.eventsApplied.Add(float64(applied))
	s.metrics.eventsDuplicate.Add(float64(duplicates))
	var subs map[string]bool
	if ranks {
		subs = s.subs.ofResults(r.Context(), results)
	}
	writeResults(w, results, ranks, subs)
}

func (s *Server) handleRetract(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Retract(r.Context(), r.PathValue("board"), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "retracted"})
}

// Reads.

// query reads the parameters every read takes: window, at or period, metadata.
func query(r *http.Request) (laurel.Query, error) {
	v := r.URL.Query()
	q := laurel.Query{Board: r.PathValue("board"), Window: v.Get("window"), Period: v.Get("period")}
	if at := v.Get("at"); at != "" {
		t, err := laurel.ParseTime(at)
		if err != nil {
			return q, laurel.FieldErrorf(laurel.EInvalid, "at", "%s", laurel.ErrorMessage(err))
		}
		q.At, q.HasAt = t, true
	}
	if q.HasAt && q.Period != "" {
		return q, laurel.FieldErrorf(laurel.EInvalid, "period", "give either at or period, not both")
	}
	md, err := boolParam(v, "metadata", false)
	if err != nil {
		return q, err
	}
	q.Metadata = md
	if c := v.Get("cohort"); c != "" {
		if err := laurel.ValidateMember("cohort", c); err != nil {
			return q, err
		}
		q.Cohort = c
	}
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return q, err
	}
	return q, nil
}

func boolParam(v url.Values, name string, def bool) (bool, error) {
	s := v.Get(name)
	if s == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return def, laurel.FieldErrorf(laurel.EInvalid, name, "must be true or false")
	}
	return b, nil
}

// intParam reads an integer parameter within [min, max].
func intParam(v url.Values, name string, def, min, max int64) (int64, bool, error) {
	s := v.Get(name)
	if s == "" {
		return def, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min || n > max {
		return def, false, laurel.FieldErrorf(laurel.EInvalid, name, "must be an integer from %d to %d", min, max)
	}
	return n, true, nil
}

func (s *Server) handleEntries(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := r.URL.Query()
	var sr laurel.ScoreRange
	offset, _, err := intParam(v, "offset", 0, 0, 1<<31-1)
	var limit int64
	if err == nil {
		limit, _, err = intParam(v, "limit", laurel.DefaultPageLimit, 1, laurel.MaxPageLimit)
	}
	if err == nil {
		sr.Min, sr.HasMin, err = intParam(v, "min_score", 0, -1<<63, 1<<63-1)
	}
	if err == nil {
		sr.Max, sr.HasMax, err = intParam(v, "max_score", 0, -1<<63, 1<<63-1)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.svc.Page(r.Context(), q, int(offset), int(limit), sr)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePage(w, page)
}

func (s *Server) handleMemberEntry(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	me, err := s.svc.Member(r.Context(), q, r.PathValue("member"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeMemberEntry(w, me)
}

func (s *Server) handleAround(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	radius, _, err := intParam(r.URL.Query(), "radius", laurel.DefaultRadius, 0, laurel.MaxRadius)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.svc.Around(r.Context(), q, r.PathValue("member"), int(radius))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePage(w, page)
}

func (s *Server) handleLookup(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in struct {
		Members []string `json:"members"`
		Window  *string  `json:"window"`
		At      *string  `json:"at"`
		Period  *string  `json:"period"`
	}
	if err := s.readJSON(w, r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Members == nil {
		s.writeError(w, r, laurel.FieldErrorf(laurel.EInvalid, "members", "is required"))
		return
	}
	if len(in.Members) > laurel.MaxLookup {
		s.writeError(w, r, laurel.FieldErrorf(laurel.ETooLarge, "members", "must list at most %d members", laurel.MaxLookup))
		return
	}
	// Each may come in the query or the body, not both: one would be read, the other not.
	v := r.URL.Query()
	for field, inBody := range map[string]bool{"window": in.Window != nil, "at": in.At != nil, "period": in.Period != nil} {
		if inBody && v.Has(field) {
			s.writeError(w, r, laurel.FieldErrorf(laurel.EInvalid, field, "give %s in the query or the body, not both", field))
			return
		}
	}
	if in.Window != nil {
		q.Window = *in.Window
	}
	if in.At != nil {
		t, err := laurel.ParseTime(*in.At)
		if err != nil {
			s.writeError(w, r, laurel.FieldErrorf(laurel.EInvalid, "at", "%s", laurel.ErrorMessage(err)))
			return
		}
		q.At, q.HasAt = t, true
	}
	if in.Period != nil {
		q.Period = *in.Period
	}
	if q.HasAt && q.Period != "" {
		s.writeError(w, r, laurel.FieldErrorf(laurel.EInvalid, "period", "give either at or period, not both"))
		return
	}
	page, err := s.svc.Lookup(r.Context(), q, in.Members)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePage(w, page)
}

func (s *Server) handleRank(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	score, has, err := intParam(r.URL.Query(), "score", 0, -1<<63, 1<<63-1)
	if err == nil && !has {
		err = laurel.FieldErrorf(laurel.EInvalid, "score", "is required")
	}
	var sub int64
	if err == nil {
		sub, _, err = intParam(r.URL.Query(), "subscore", 0, -1<<63, 1<<63-1)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rank, total, err := s.svc.RankOf(r.Context(), q, score, sub)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"rank": rank, "total": total})
}

func (s *Server) handleDistribution(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := r.URL.Query()
	var h laurel.Histogram
	n, _, err := intParam(v, "buckets", 0, 1, laurel.MaxBuckets)
	h.Buckets = int(n)
	if err == nil && v.Has("edges") {
		h.Edges, err = laurel.ParseEdges(v.Get("edges"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.svc.Distribution(r.Context(), q, h)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, distributionOf(d))
}

func (s *Server) handlePeriods(w http.ResponseWriter, r *http.Request) {
	board := r.PathValue("board")
	if err := laurel.ValidateBoardID(board); err != nil {
		s.writeError(w, r, err)
		return
	}
	periods, err := s.svc.Periods(r.Context(), board, r.URL.Query().Get("window"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Periods []periodJSON `json:"periods"`
	}{Periods: make([]periodJSON, len(periods))}
	for i, p := range periods {
		out.Periods[i] = periodOf(p, true, true)
	}
	writeJSON(w, http.StatusOK, out)
}

// Members.

func (s *Server) handlePutProfile(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name     *string         `json:"name"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := s.readJSON(w, r, &in, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.svc.PutProfile(r.Context(), r.PathValue("member"), laurel.ProfileSpec{Name: in.Name, Metadata: in.Metadata})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, profileOf(p))
}

func (s *Server) handleProfile(w http.ResponseWriter, r *http.Request) {
	p, err := s.svc.Profile(r.Context(), r.PathValue("member"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, profileOf(p))
}

func (s *Server) handleDeleteMember(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.DeleteMember(r.Context(), r.PathValue("member")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleHide(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Hide(r.Context(), r.PathValue("member")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": r.PathValue("member"), "hidden": true})
}

func (s *Server) handleUnhide(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Unhide(r.Context(), r.PathValue("member")); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": r.PathValue("member"), "hidden": false})
}
