package http

import (
	"encoding/json"
	"net/http"

	"github.com/laurel/laurel"
)

// Flags and the review queue (docs/api.md, "Flags and the review queue").

type flagEventJSON struct {
	Rule  string `json:"rule"`
	ID    string `json:"id,omitempty"`
	Value int64  `json:"value"`
	TS    string `json:"ts"`
}

type flagJSON struct {
	ID       string          `json:"id"`
	Board    string          `json:"board"`
	Member   string          `json:"member"`
	Rule     string          `json:"rule,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	State    string          `json:"state"`
	Opened   string          `json:"opened"`
	Resolved string          `json:"resolved,omitempty"`
	Erased   bool            `json:"erased,omitempty"`
	Events   []flagEventJSON `json:"events"`
}

func flagOf(f *laurel.Flag) flagJSON {
	out := flagJSON{ID: f.ID, Board: f.Board, Member: f.Member, Rule: f.Rule, Reason: f.Reason, State: f.State,
		Opened: laurel.FormatTime(f.Opened), Erased: f.Erased, Events: make([]flagEventJSON, len(f.Events))}
	if f.Resolved != 0 {
		out.Resolved = laurel.FormatTime(f.Resolved)
	}
	for i, ev := range f.Events {
		out.Events[i] = flagEventJSON{Rule: ev.Rule, ID: ev.ID, Value: ev.Value, TS: laurel.FormatTime(ev.TS)}
	}
	return out
}

// EncodeFlagDelivery is the body of a delivery of a flag's notice: its type, the delivery's
// id and hook, and the flag as GET /v1/flags/{flag} shows it (webhook.Outbox.EncodeFlag).
func EncodeFlagDelivery(d laurel.FlagDelivery) ([]byte, error) {
	return json.Marshal(struct {
		Type     string   `json:"type"`
		Delivery string   `json:"delivery"`
		Hook     string   `json:"hook"`
		Flag     flagJSON `json:"flag"`
	}{d.Notice.Type, d.Delivery, d.Hook, flagOf(d.Notice.Flag)})
}

// flags returns the server's review queue, or answers that it has none.
func (s *Server) flags(w http.ResponseWriter, r *http.Request) laurel.FlagQueue {
	if s.cfg.Flags == nil {
		s.writeError(w, r, laurel.Errorf(laurel.ENotFound, "this server has no review queue: its store keeps no records"))
	}
	return s.cfg.Flags
}

func (s *Server) handleReportFlag(w http.ResponseWriter, r *http.Request) {
	fq := s.flags(w, r)
	if fq == nil {
		return
	}
	var in struct {
		Reason string `json:"reason"`
	}
	if err := s.readJSON(w, r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	board := r.PathValue("board")
	if _, err := s.svc.Board(r.Context(), board); err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := laurel.ReportFlag(r.Context(), fq, board, r.PathValue("member"), in.Reason)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.metrics.flagOpened(f)
	writeJSON(w, http.StatusOK, flagOf(f))
}

func (s *Server) handleFlags(w http.ResponseWriter, r *http.Request) {
	fq := s.flags(w, r)
	if fq == nil {
		return
	}
	v := r.URL.Query()
	limit, _, err := intParam(v, "limit", 100, 1, laurel.MaxFlagsPage)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f := laurel.FlagFilter{Board: v.Get("board"), Member: v.Get("member"), State: v.Get("state")}
	list, err := laurel.ListFlags(r.Context(), fq, f, v.Get("after"), int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Flags []flagJSON `json:"flags"`
	}{Flags: make([]flagJSON, len(list))}
	for i, fl := range list {
		out.Flags[i] = flagOf(fl)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleFlag(w http.ResponseWriter, r *http.Request) {
	fq := s.flags(w, r)
	if fq == nil {
		return
	}
	f, err := laurel.FlagByID(r.Context(), fq, r.PathValue("flag"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, flagOf(f))
}

func (s *Server) handleResolveFlag(w http.ResponseWriter, r *http.Request) {
	fq := s.flags(w, r)
	if fq == nil {
		return
	}
	var in struct {
		Action string `json:"action"`
		Erase  bool   `json:"erase"`
	}
	if err := s.readJSON(w, r, &in, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	f, resolved, err := laurel.ResolveFlag(r.Context(), s.svc, fq, r.PathValue("flag"), laurel.Resolution{Action: in.Action, Erase: in.Erase})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if resolved {
		s.metrics.flagResolved(f)
	}
	writeJSON(w, http.StatusOK, flagOf(f))
}
