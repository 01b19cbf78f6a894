package http

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/laurel/laurel"
)

// The results of closed periods, and the webhooks that deliver them (docs/api.md,
// "Results and webhooks").

type rewardedJSON struct {
	entryJSON
	Reward json.RawMessage `json:"reward"`
	Cohort string          `json:"cohort,omitempty"`
}

// periodResultsJSON is the body of GET …/periods/{period}/results, and of a delivery with its
// delivery fields set.
type periodResultsJSON struct {
	Type     string         `json:"type,omitempty"`     // deliveries: "period.results"
	Delivery string         `json:"delivery,omitempty"` // deliveries: the id a receiver dedupes by
	Hook     string         `json:"hook,omitempty"`
	Part     int            `json:"part,omitempty"` // deliveries: 1 … parts
	Parts    int            `json:"parts,omitempty"`
	Board    string         `json:"board"`
	Window   string         `json:"window"`
	Period   periodJSON     `json:"period"`
	Total    int            `json:"total"`
	Rewarded int            `json:"rewarded"`
	Results  []rewardedJSON `json:"results"`
}

func periodResultsOf(r laurel.Results) periodResultsJSON {
	out := periodResultsJSON{Board: r.Board, Window: r.Window, Period: periodOf(r.Period, true, false), Total: r.Total,
		Rewarded: r.Rewarded, Results: make([]rewardedJSON, len(r.Results))}
	for i, res := range r.Results {
		out.Results[i] = rewardedJSON{entryOf(res.Entry, r.HasSub), res.Reward, res.Cohort}
	}
	return out
}

// EncodeDelivery is the body of a webhook delivery: the results as GET …/results shows them,
// with the delivery's id, hook and part (webhook.Outbox.Encode).
func EncodeDelivery(p laurel.ResultsPart) ([]byte, error) {
	out := periodResultsOf(p.Results)
	out.Type, out.Delivery, out.Hook, out.Part, out.Parts = "period.results", p.Delivery, p.Hook, p.Part, p.Parts
	return json.Marshal(out)
}

func (s *Server) handleResults(w http.ResponseWriter, r *http.Request) {
	board := r.PathValue("board")
	if err := laurel.ValidateBoardID(board); err != nil {
		s.writeError(w, r, err)
		return
	}
	v := r.URL.Query()
	offset, _, err := intParam(v, "offset", 0, 0, 1<<31-1)
	var limit int64
	if err == nil {
		limit, _, err = intParam(v, "limit", laurel.DefaultPageLimit, 1, laurel.MaxPageLimit)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	results := func(ctx context.Context, board, window, period string, offset, limit int) (laurel.Results, error) {
		return laurel.BoardResults(ctx, s.svc, board, window, period, offset, limit)
	}
	if s.cfg.Contests != nil {
		results = s.cfg.Contests.Results
	}
	res, err := results(r.Context(), board, v.Get("window"), r.PathValue("period"), int(offset), int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, periodResultsOf(res))
}

// hookJSON is a hook as the API shows it: never its secret.
type hookJSON struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Boards    []string `json:"boards"`
	Flags     bool     `json:"flags"`
	CreatedAt string   `json:"created_at"`
}

func hookOf(h laurel.Hook) hookJSON {
	return hookJSON{ID: h.ID, URL: h.URL, Boards: append([]string{}, h.Boards...), Flags: h.Flags, CreatedAt: laurel.FormatTime(h.CreatedAt)}
}

type deliveryJSON struct {
	ID          string          `json:"id"`
	Hook        string          `json:"hook"`
	Board       string          `json:"board"`
	Window      string          `json:"window"`
	Period      string          `json:"period"`
	Part        int             `json:"part"`
	Parts       int             `json:"parts"`
	State       string          `json:"state"`
	Attempts    int             `json:"attempts"`
	NextAttempt string          `json:"next_attempt_at,omitempty"`
	LastStatus  int             `json:"last_status,omitempty"`
	LastError   string          `json:"last_error,omitempty"`
	CreatedAt   string          `json:"created_at"`
	DeliveredAt string          `json:"delivered_at,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

func deliveryOf(d laurel.Delivery, body bool) deliveryJSON {
	out := deliveryJSON{ID: d.ID, Hook: d.Hook, Board: d.Board, Window: d.Window, Period: d.Period, Part: d.Part,
		Parts: d.Parts, State: d.State, Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError,
		CreatedAt: laurel.FormatTime(d.CreatedAt)}
	if d.State == laurel.DeliveryPending {
		out.NextAttempt = laurel.FormatTime(d.NextAt)
	}
	if d.DeliveredAt != 0 {
		out.DeliveredAt = laurel.FormatTime(d.DeliveredAt)
	}
	if body {
		out.Body = d.Body
	}
	return out
}

// hooks returns the server's hooks, or answers that it has none.
func (s *Server) hooks(w http.ResponseWriter, r *http.Request) laurel.Webhooks {
	if s.cfg.Hooks == nil {
		s.writeError(w, r, laurel.Errorf(laurel.ENotFound, "this server has no webhooks: its store keeps no records"))
	}
	return s.cfg.Hooks
}

func (s *Server) handlePutHook(w http.ResponseWriter, r *http.Request) {
	hs := s.hooks(w, r)
	if hs == nil {
		return
	}
	var spec laurel.HookSpec
	if err := s.readJSON(w, r, &spec, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	h, created, err := hs.Put(r.Context(), r.PathValue("hook"), spec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeMade(w, created, hookOf(h))
}

func (s *Server) handleHooks(w http.ResponseWriter, r *http.Request) {
	hs := s.hooks(w, r)
	if hs == nil {
		return
	}
	list, err := hs.List(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Hooks []hookJSON `json:"hooks"`
	}{Hooks: make([]hookJSON, len(list))}
	for i, h := range list {
		out.Hooks[i] = hookOf(h)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleHook(w http.ResponseWriter, r *http.Request) {
	hs := s.hooks(w, r)
	if hs == nil {
		return
	}
	h, err := hs.Hook(r.Context(), r.PathValue("hook"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hookOf(h))
}

func (s *Server) handleDeleteHook(w http.ResponseWriter, r *http.Request) {
	hs := s.hooks(w, r)
	if hs == nil {
		return
	}
	if err := hs.Delete(r.Context(), r.PathValue("hook")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleDeliveries(w http.ResponseWriter, r *http.Request) {
	hs := s.hooks(w, r)
	if hs == nil {
		return
	}
	v := r.URL.Query()
	limit, _, err := intParam(v, "limit", 100, 1, laurel.MaxPageLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := hs.Deliveries(r.Context(), r.PathValue("hook"), v.Get("state"), v.Get("after"), int(limit))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}{Deliveries: make([]deliveryJSON, len(list))}
	for i, d := range list {
		out.Deliveries[i] = deliveryOf(d, false)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleDelivery(w http.ResponseWriter, r *http.Request) {
	hs := s.hooks(w, r)
	if hs == nil {
		return
	}
	d, err := hs.Delivery(r.Context(), r.PathValue("hook"), r.PathValue("delivery"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deliveryOf(d, true))
}

func (s *Server) handleReplay(w http.ResponseWriter, r *http.Request) {
	hs := s.hooks(w, r)
	if hs == nil {
		return
	}
	if _, err := hs.Hook(r.Context(), r.PathValue("hook")); err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := hs.Replay(r.Context(), r.PathValue("hook"), r.PathValue("delivery"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deliveryOf(d, false))
}
