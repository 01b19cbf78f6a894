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

// contest answers a route of tournaments, cohorts or tiers with what do makes of the
// server's Contests for the path's board and member: 201 when made is true, else 200; or says
// that the server keeps none, or that a member token acts for another member.
func (s *Server) contest(w http.ResponseWriter, r *http.Request, do func(c laurel.Contests, board, member string) (made bool, body any, err error)) {
	c := s.cfg.Contests
	if c == nil {
		s.writeError(w, r, laurel.Errorf(laurel.ENotFound, "this server keeps no tournaments or cohorts"))
		return
	}
	member := r.PathValue("member")
	if g := grantOf(r); g != nil && r.Method == http.MethodPost && member != g.member {
		s.writeError(w, r, laurel.FieldErrorf(laurel.EPermissionDenied, "member", "a member token acts for its own member (%q) only", g.member))
		return
	}
	made, body, err := do(c, r.PathValue("board"), member)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeMade(w, made, body)
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	s.contest(w, r, func(c laurel.Contests, board, member string) (bool, any, error) {
		e, created, err := c.Join(r.Context(), board, member)
		return created, entrantOf(e), err
	})
}

func (s *Server) handleEntrant(w http.ResponseWriter, r *http.Request) {
	s.contest(w, r, func(c laurel.Contests, board, member string) (bool, any, error) {
		e, err := c.Entrant(r.Context(), board, member)
		return false, entrantOf(e), err
	})
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
	s.contest(w, r, func(c laurel.Contests, _, member string) (bool, any, error) {
		q, err := query(r)
		if err != nil {
			return false, nil, err
		}
		co, err := c.Cohort(r.Context(), q, member)
		return false, cohortJSON{Board: co.Board, Window: co.Window, Period: co.Period, ID: co.ID, Key: co.Key, Members: co.Members}, err
	})
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
	s.contest(w, r, func(c laurel.Contests, board, member string) (bool, any, error) {
		tr, err := c.Tier(r.Context(), board, member)
		out := tierJSON{Board: tr.Board, Member: tr.Member, Tier: tr.Tier, Moves: make([]tierMoveJSON, len(tr.Moves))}
		for i, m := range tr.Moves {
			out.Moves[i] = tierMoveJSON(m)
		}
		return false, out, err
	})
}
