package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"

	"github.com/laurel/laurel"
)

// errorJSON is the body of every error: {"error": {"code", "message", "field"}}.
type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

var internalBody = errorBody{Error: errorJSON{Code: laurel.EInternal, Message: "internal error"}}

// statuses are the HTTP statuses of the error codes (docs/api.md "Errors"); the server answers
// with them and the client reads them back.
var statuses = map[string]int{
	laurel.EInvalid:          http.StatusBadRequest,
	laurel.ETooLate:          http.StatusBadRequest,
	laurel.EUnauthenticated:  http.StatusUnauthorized,
	laurel.EPermissionDenied: http.StatusForbidden,
	laurel.ENotFound:         http.StatusNotFound,
	laurel.EMethodNotAllowed: http.StatusMethodNotAllowed,
	laurel.EConflict:         http.StatusConflict,
	laurel.EGuardRefused:     http.StatusUnprocessableEntity,
	laurel.ETooLarge:         http.StatusRequestEntityTooLarge,
	laurel.ERateLimited:      http.StatusTooManyRequests,
	laurel.EUnavailable:      http.StatusServiceUnavailable,
	laurel.EOutcomeUnknown:   http.StatusServiceUnavailable,
	laurel.EInternal:         http.StatusInternalServerError,
}

// statusOf maps an error code to its HTTP status; an unknown code is internal.
func statusOf(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// codeOf is the inverse of statusOf for the statuses that one code alone has (400 stands for
// two); any other status is internal. A 503 is unavailable: only laurel's own body says that
// a write's outcome is unknown.
func codeOf(status int) string {
	code := laurel.EInternal
	for c, s := range statuses {
		if s == status && c != laurel.EOutcomeUnknown {
			if code != laurel.EInternal {
				return laurel.EInternal
			}
			code = c
		}
	}
	return code
}

// writeError answers with err's code, status and message; an internal error is logged and
// answered without details.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if isTimedOut(r, err) {
		err = laurel.Errorf(laurel.EUnavailable, "the store did not answer within %v; try again", s.cfg.RequestTimeout)
	}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		s.log.Error("out of file descriptors", "route", r.Pattern, "error", err)
		err = laurel.Errorf(laurel.EUnavailable, "the server is out of file descriptors; try again")
	}
	code := laurel.ErrorCode(err)
	if code == laurel.EInternal {
		if isClientGone(r, err) {
			s.log.Debug("client gone", "route", r.Pattern, "error", err)
		} else {
			s.log.Error("internal error", "route", r.Pattern, "error", err)
		}
		writeJSON(w, http.StatusInternalServerError, internalBody)
		return
	}
	if code == laurel.EUnavailable || code == laurel.EOutcomeUnknown {
		// The store or its backend failed or is recovering: a client may try again soon.
		w.Header().Set("Retry-After", "1")
	}
	writeErrorJSON(w, statusOf(code), errorOf(err))
}

// writeErrorJSON answers with an error body. Unlike answers, which encoding/json's rules
// shape byte for byte, a message is written as it reads: "<week>", not "\u003cweek\u003e".
func writeErrorJSON(w http.ResponseWriter, status int, e errorJSON) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(errorBody{Error: e}); err != nil {
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// errorOf is the body of an error that is not internal: its code, its field, and a message
// that names the field.
func errorOf(err error) errorJSON {
	body := errorJSON{Code: laurel.ErrorCode(err), Message: laurel.ErrorMessage(err)}
	var e *laurel.Error
	if errors.As(err, &e) {
		body.Field = e.Field
	}
	if body.Field != "" && !strings.HasPrefix(body.Message, body.Field+":") {
		body.Message = body.Field + ": " + body.Message
	}
	return body
}

// writeMade answers with v, 201 when the request made what it shows, else 200.
func writeMade(w http.ResponseWriter, created bool, v any) {
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, v)
}

// writeJSON answers with status and v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value written is built here from plain types; this cannot happen.
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// periodJSON is a period as docs/api.md shows it; which fields appear depends on the context.
type periodJSON struct {
	ID     string  `json:"id,omitempty"`
	Start  *string `json:"start,omitempty"`
	End    *string `json:"end,omitempty"`
	Closed *bool   `json:"closed,omitempty"`
	Total  *int    `json:"total,omitempty"`
}

// periodOf encodes p: {"id": "all"} for all, start and end only for a rolling span, id,
// start and end for a calendar period, plus closed and total when asked.
func periodOf(p laurel.PeriodInfo, closed, total bool) periodJSON {
	out := periodJSON{ID: p.ID}
	if p.ID != "all" {
		start, end := laurel.FormatTime(p.Start), laurel.FormatTime(p.End)
		out.Start, out.End = &start, &end
	}
	if closed && p.ID != "" && p.ID != "all" {
		c := p.Closed
		out.Closed = &c
	}
	if total {
		t := p.Total
		out.Total = &t
	}
	return out
}

type entryJSON struct {
	Rank       int             `json:"rank"`
	Member     string          `json:"member"`
	Score      int64           `json:"score"`
	Sub        *int64          `json:"subscore,omitempty"` // on a board with a subscore
	ReachedAt  string          `json:"reached_at"`
	Percentile *float64        `json:"percentile,omitempty"`
	Name       string          `json:"name,omitempty"`
	Tag        json.RawMessage `json:"tag,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// entryOf encodes e, with its subscore when its board has one (hasSub).
func entryOf(e laurel.Entry, hasSub bool) entryJSON {
	return entryJSON{Rank: e.Rank, Member: e.Member, Score: e.Score, Sub: subOf(e.Sub, hasSub), ReachedAt: laurel.FormatTime(e.ReachedAt), Percentile: e.Percentile, Name: e.Name, Tag: e.Tag, Metadata: e.Metadata}
}

// subOf is the subscore sub as an answer shows it: on a board with one (hasSub), even 0;
// nowhere else.
func subOf(sub int64, hasSub bool) *int64 {
	if !hasSub {
		return nil
	}
	return &sub
}

type pageJSON struct {
	Board   string      `json:"board"`
	Window  string      `json:"window"`
	Period  periodJSON  `json:"period"`
	Total   int         `json:"total"`
	Entries []entryJSON `json:"entries"`
}

func pageOf(p laurel.Page) pageJSON {
	out := pageJSON{Board: p.Board, Window: p.Window, Period: periodOf(p.Period, true, false), Total: p.Total, Entries: make([]entryJSON, len(p.Entries))}
	for i, e := range p.Entries {
		out.Entries[i] = entryOf(e, p.HasSub)
	}
	return out
}

type memberEntryJSON struct {
	Board  string     `json:"board"`
	Window string     `json:"window"`
	Period periodJSON `json:"period"`
	Total  int        `json:"total"`
	Entry  entryJSON  `json:"entry"`
}

func memberEntryOf(me laurel.MemberEntry) memberEntryJSON {
	return memberEntryJSON{Board: me.Board, Window: me.Window, Period: periodOf(me.Period, true, false),
		Total: me.Total, Entry: entryOf(me.Entry, me.HasSub)}
}

type bucketJSON struct {
	Min   int64 `json:"min"`
	Max   int64 `json:"max"`
	Count int   `json:"count"`
}

type distributionJSON struct {
	Board   string       `json:"board"`
	Window  string       `json:"window"`
	Period  periodJSON   `json:"period"`
	Total   int          `json:"total"`
	Buckets []bucketJSON `json:"buckets"`
}

func distributionOf(d laurel.Distribution) distributionJSON {
	out := distributionJSON{Board: d.Board, Window: d.Window, Period: periodOf(d.Period, true, false), Total: d.Total,
		Buckets: make([]bucketJSON, len(d.Buckets))}
	for i, b := range d.Buckets {
		out.Buckets[i] = bucketJSON{Min: b.Min, Max: b.Max, Count: b.Count}
	}
	return out
}

func distributionFrom(d distributionJSON) (laurel.Distribution, error) {
	period, err := periodFrom(d.Period)
	if err != nil {
		return laurel.Distribution{}, err
	}
	period.Total = d.Total
	out := laurel.Distribution{Board: d.Board, Window: d.Window, Period: period, Total: d.Total}
	for _, b := range d.Buckets {
		out.Buckets = append(out.Buckets, laurel.Bucket{Min: b.Min, Max: b.Max, Count: b.Count})
	}
	return out, nil
}

type currentJSON struct {
	Period periodJSON `json:"period"`
	Total  int        `json:"total"`
}

// boardJSON is a board as docs/api.md shows it: its id, its whole configuration (laurel's own
// BoardSpec, every field set), when it was created, and its current periods.
type boardJSON struct {
	ID string `json:"id"`
	laurel.BoardSpec
	CreatedAt string                 `json:"created_at"`
	Current   map[string]currentJSON `json:"current"`
}

func boardOf(b laurel.BoardInfo) boardJSON {
	out := boardJSON{ID: b.ID, BoardSpec: b.Spec(), CreatedAt: laurel.FormatTime(b.CreatedAt),
		Current: make(map[string]currentJSON, len(b.Current))}
	for name, p := range b.Current {
		out.Current[name] = currentJSON{Period: periodOf(p, false, false), Total: p.Total}
	}
	return out
}

type standingJSON struct {
	Rank     int           `json:"rank"`
	Score    int64         `json:"score"`
	Sub      *int64        `json:"subscore,omitempty"` // on a board with a subscore
	Previous *standingJSON `json:"previous,omitempty"`
}

type resultJSON struct {
	Member  string                  `json:"member"`
	ID      string                  `json:"id,omitempty"`
	Status  string                  `json:"status"`
	Flag    string                  `json:"flag,omitempty"` // held for review by this flag
	Entries map[string]standingJSON `json:"entries,omitzero"`
}

type resultsJSON struct {
	Results []resultJSON `json:"results"`
}

// resultsOf is the answer of a submit; entries are left out unless ranks. The standings on
// the boards of subs (those with a subscore) show their subscores.
func resultsOf(results []laurel.EventResult, ranks bool, subs map[string]bool) resultsJSON {
	out := resultsJSON{Results: make([]resultJSON, len(results))}
	for i, res := range results {
		rj := resultJSON{Member: res.Member, ID: res.ID, Status: res.Status, Flag: res.Flag}
		if ranks {
			hasSub := subs[res.Board]
			rj.Entries = make(map[string]standingJSON, len(res.Entries))
			for name, st := range res.Entries {
				sj := standingJSON{Rank: st.Rank, Score: st.Score, Sub: subOf(st.Sub, hasSub)}
				if prev, ok := res.Previous[name]; ok {
					sj.Previous = &standingJSON{Rank: prev.Rank, Score: prev.Score, Sub: subOf(prev.Sub, hasSub)}
				}
				rj.Entries[name] = sj
			}
		}
		out.Results[i] = rj
	}
	return out
}

type profileJSON struct {
	Member   string          `json:"member"`
	Name     string          `json:"name"`
	Metadata json.RawMessage `json:"metadata"`
	Hidden   bool            `json:"hidden"`
}

func profileOf(p laurel.Profile) profileJSON {
	out := profileJSON{Member: p.Member, Name: p.Name, Metadata: p.Metadata, Hidden: p.Hidden}
	if len(out.Metadata) == 0 {
		out.Metadata = json.RawMessage("{}")
	}
	return out
}

// The inverses of the encoders above, for the Client: each reads back what its encoder
// wrote. What an encoder leaves out stays zero, except where the JSON still says it (a page's
// period total is the page's total).

// errorFrom reads an error body back into the *laurel.Error that writeError answered with,
// removing the "field: " prefix that writeError adds to the message.
func errorFrom(e errorJSON) *laurel.Error {
	msg := e.Message
	if e.Field != "" {
		msg = strings.TrimPrefix(msg, e.Field+": ")
	}
	return &laurel.Error{Code: e.Code, Message: msg, Field: e.Field}
}

// timeFrom reads a time that the server wrote; field names it in the error.
func timeFrom(field, s string) (int64, error) {
	t, err := laurel.ParseTime(s)
	if err != nil {
		return 0, fmt.Errorf("laurel http: bad %s in answer: %w", field, err)
	}
	return t, nil
}

func periodFrom(p periodJSON) (laurel.PeriodInfo, error) {
	out := laurel.PeriodInfo{ID: p.ID}
	var err error
	if p.Start != nil {
		if out.Start, err = timeFrom("period.start", *p.Start); err != nil {
			return out, err
		}
	}
	if p.End != nil {
		if out.End, err = timeFrom("period.end", *p.End); err != nil {
			return out, err
		}
	}
	if p.Closed != nil {
		out.Closed = *p.Closed
	}
	if p.Total != nil {
		out.Total = *p.Total
	}
	return out, nil
}

func entryFrom(e entryJSON) (laurel.Entry, error) {
	at, err := timeFrom("reached_at", e.ReachedAt)
	var sub int64
	if e.Sub != nil {
		sub = *e.Sub
	}
	return laurel.Entry{Rank: e.Rank, Member: e.Member, Score: e.Score, Sub: sub, ReachedAt: at, Percentile: e.Percentile, Name: e.Name, Tag: e.Tag, Metadata: e.Metadata}, err
}

func pageFrom(p pageJSON) (laurel.Page, error) {
	period, err := periodFrom(p.Period)
	if err != nil {
		return laurel.Page{}, err
	}
	period.Total = p.Total
	// A page without entries does not say whether its board has a subscore: HasSub stays false.
	out := laurel.Page{Board: p.Board, Window: p.Window, Period: period, Total: p.Total}
	if len(p.Entries) > 0 {
		out.HasSub = p.Entries[0].Sub != nil
		out.Entries = make([]laurel.Entry, len(p.Entries))
	}
	for i, e := range p.Entries {
		if out.Entries[i], err = entryFrom(e); err != nil {
			return laurel.Page{}, err
		}
	}
	return out, nil
}

func memberEntryFrom(m memberEntryJSON) (laurel.MemberEntry, error) {
	period, err := periodFrom(m.Period)
	if err != nil {
		return laurel.MemberEntry{}, err
	}
	period.Total = m.Total
	e, err := entryFrom(m.Entry)
	if err != nil {
		return laurel.MemberEntry{}, err
	}
	return laurel.MemberEntry{Board: m.Board, Window: m.Window, Period: period, Total: m.Total, Entry: e, HasSub: m.Entry.Sub != nil}, nil
}

func boardFrom(b boardJSON) (laurel.BoardInfo, error) {
	created, err := timeFrom("created_at", b.CreatedAt)
	if err != nil {
		return laurel.BoardInfo{}, err
	}
	board, err := b.Apply(b.ID, nil, created)
	if err != nil {
		return laurel.BoardInfo{}, fmt.Errorf("laurel http: bad board in answer: %w", err)
	}
	out := laurel.BoardInfo{Board: board}
	out.Current = make(map[string]laurel.PeriodInfo, len(b.Current))
	for name, c := range b.Current {
		p, err := periodFrom(c.Period)
		if err != nil {
			return laurel.BoardInfo{}, err
		}
		p.Total = c.Total
		out.Current[name] = p
	}
	return out, nil
}

// resultFrom reads one result of a submit; the answer does not name the board, which the
// caller knows from the event.
func resultFrom(r resultJSON, board string) laurel.EventResult {
	out := laurel.EventResult{Board: board, Member: r.Member, ID: r.ID, Status: r.Status, Flag: r.Flag}
	if r.Entries != nil {
		out.Entries = make(map[string]laurel.Standing, len(r.Entries))
		for name, st := range r.Entries {
			out.Entries[name] = standingFrom(st)
			if st.Previous != nil {
				if out.Previous == nil {
					out.Previous = make(map[string]laurel.Standing)
				}
				out.Previous[name] = standingFrom(*st.Previous)
			}
		}
	}
	return out
}

func standingFrom(st standingJSON) laurel.Standing {
	out := laurel.Standing{Rank: st.Rank, Score: st.Score}
	if st.Sub != nil {
		out.Sub = *st.Sub
	}
	return out
}

func profileFrom(p profileJSON) laurel.Profile {
	return laurel.Profile{Member: p.Member, Name: p.Name, Metadata: p.Metadata, Hidden: p.Hidden}
}
