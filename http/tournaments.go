package http

import (
	"net/http"

	"github.com/laurel/laurel"
)

// A tournament's entries (docs/api.md, "Tournaments"): joining a run, and a member's entry.

type runJSON struct {
	ID    string `json:"id"`
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

type entrantJSON struct {
	Board       string  `json:"board"`
	Member      string  `json:"member"`
	Run         runJSON `json:"run"`
	Joined      bool    `json:"joined"`
	JoinedAt    string  `json:"joined_at,omitempty"`
	Attempts    int     `json:"attempts"`
	MaxAttempts int     `json:"max_attempts,omitempty"`
	Members     *int    `json:"members,omitempty"`
	MaxMembers  int     `json:"max_members,omitempty"`
}

func entrantOf(e laurel.Entrant) entrantJSON {
	out := entrantJSON{Board: e.Board, Member: e.Member, Run: runJSON{ID: e.Run.ID}, Joined: e.Joined, Attempts: e.Attempts,
		MaxAttempts: e.MaxAttempts, MaxMembers: e.MaxMembers}
	if e.Run.Start != 0 {
		out.Run.Start = laurel.FormatTime(e.Run.Start)
	}
	if e.Run.End != 0 {
		out.Run.End = laurel.FormatTime(e.Run.End)
	}
	if e.Joined {
		out.JoinedAt = laurel.FormatTime(e.JoinedAt)
	}
	if e.Members >= 0 {
		out.Members = &e.Members
	}
	return out
}

// entries returns the server's tournaments and cohorts, or answers that it keeps none.
func (s *Server) entries(w http.ResponseWriter, r *http.Request) laurel.Contests {
	en, ok := s.svc.(laurel.Contests)
	if !ok {
		s.writeError(w, r, laurel.Errorf(laurel.ENotFound, "this server keeps no tournaments or cohorts"))
		return nil
	}
	if g := grantOf(r); g != nil && r.Method == http.MethodPost && r.PathValue("member") != g.member {
		s.writeError(w, r, laurel.FieldErrorf(laurel.EPermissionDenied, "member", "a member token acts for its own member (%q) only", g.member))
		return nil
	}
	return en
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	en := s.entries(w, r)
	if en == nil {
		return
	}
	e, created, err := en.Join(r.Context(), r.PathValue("board"), r.PathValue("member"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeMade(w, created, entrantOf(e))
}

func (s *Server) handleEntrant(w http.ResponseWriter, r *http.Request) {
	en := s.entries(w, r)
	if en == nil {
		return
	}
	e, err := en.Entrant(r.Context(), r.PathValue("board"), r.PathValue("member"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entrantOf(e))
}

type cohortJSON struct {
	Board   string   `json:"board"`
	Window  string   `json:"window"`
	Period  string   `json:"period"`
	ID      string   `json:"id"`
	Key     string   `json:"key"`
	Members []string `json:"members"`
}

func (s *Server) handleCohort(w http.ResponseWriter, r *http.Request) {
	en := s.entries(w, r)
	if en == nil {
		return
	}
	q, err := query(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := en.Cohort(r.Context(), q, r.PathValue("member"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cohortJSON{Board: c.Board, Window: c.Window, Period: c.Period, ID: c.ID, Key: c.Key, Members: c.Members})
}

type tierMoveJSON struct {
	Period string `json:"period"`
	From   string `json:"from"`
	To     string `json:"to"`
	Cohort string `json:"cohort,omitempty"`
	Rank   int    `json:"rank,omitempty"`
	Of     int    `json:"of,omitempty"`
}

type tierJSON struct {
	Board  string         `json:"board"`
	Member string         `json:"member"`
	Tier   string         `json:"tier"`
	Moves  []tierMoveJSON `json:"moves"`
}

func (s *Server) handleTier(w http.ResponseWriter, r *http.Request) {
	en := s.entries(w, r)
	if en == nil {
		return
	}
	tr, err := en.Tier(r.Context(), r.PathValue("board"), r.PathValue("member"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := tierJSON{Board: tr.Board, Member: tr.Member, Tier: tr.Tier, Moves: make([]tierMoveJSON, len(tr.Moves))}
	for i, m := range tr.Moves {
		out.Moves[i] = tierMoveJSON(m)
	}
	writeJSON(w, http.StatusOK, out)
}
