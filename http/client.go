package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/laurel/laurel"
)

// Client is laurel.Service over the HTTP API (docs/api.md): each method calls its endpoint, and
// every error the server answers comes back as a *laurel.Error with the code, message and
// field of its body, so laurel.ErrorCode reads it as it reads the store's. Failures of the
// transport and answers that are not laurel's are plain errors: laurel.ErrorCode says
// internal.
//
// What the API does not carry the client cannot give back: an EventResult's Board is the
// board of its event, and a PeriodInfo holds what its JSON holds (a page's or member
// entry's period total is the read's total; a board's current periods have no Closed). When
// a call has several bad arguments, which one is reported may differ from the store's
// choice, as the server checks some of them before the service does.
type Client struct {
	URL        string       // the server's base URL, such as http://127.0.0.1:7300
	Key        string       // sent as "Authorization: Bearer <Key>" when set
	HTTPClient *http.Client // nil: http.DefaultClient
}

var _ laurel.Service = (*Client)(nil)

// ClientOption configures a Client made by NewClient.
type ClientOption func(*Client)

// WithKey sets the API key the client sends.
func WithKey(key string) ClientOption { return func(c *Client) { c.Key = key } }

// WithHTTPClient sets the http.Client the client sends its requests with.
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.HTTPClient = hc } }

// NewClient returns a client of the server at baseURL.
func NewClient(baseURL string, opts ...ClientOption) *Client {
	c := &Client{URL: strings.TrimRight(baseURL, "/")}
	for _, o := range opts {
		o(c)
	}
	return c
}

// seg escapes one path segment. "." and ".." are escaped too, so that path cleaning (here or
// in a proxy) does not read them as directories.
func seg(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

// do sends a request and decodes a JSON answer into out (when not nil). It returns the
// status of a successful answer.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	u := strings.TrimRight(c.URL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("laurel http: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, fmt.Errorf("laurel http: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("laurel http: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, fmt.Errorf("laurel http: %s %s: reading the answer: %w", method, path, err)
	}
	if res.StatusCode >= 300 {
		return 0, answerError(method, path, res, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return 0, fmt.Errorf("laurel http: %s %s: bad answer: %w", method, path, err)
		}
	}
	return res.StatusCode, nil
}

// answerError reads the error of an answer: the *laurel.Error of its body, or, when the body
// is not laurel's, a plain error (internal) or the code its status stands for.
func answerError(method, path string, res *http.Response, raw []byte) error {
	var body errorBody
	if err := json.Unmarshal(raw, &body); err == nil && body.Error.Code != "" {
		return errorFrom(body.Error)
	}
	code := codeOf(res.StatusCode)
	if code == laurel.EInternal {
		return fmt.Errorf("laurel http: %s %s: status %s", method, path, res.Status)
	}
	return laurel.Errorf(code, "%s %s: status %s", method, path, res.Status)
}

// Boards.

func boardPath(id string) string { return "/v1/boards/" + seg(id) }

// PutBoard creates or updates a board: PUT /v1/boards/{board}.
func (c *Client) PutBoard(ctx context.Context, id string, spec laurel.BoardSpec) (laurel.BoardInfo, bool, error) {
	if err := laurel.ValidateBoardID(id); err != nil {
		return laurel.BoardInfo{}, false, err
	}
	var out boardJSON
	status, err := c.do(ctx, http.MethodPut, boardPath(id), nil, boardSpecJSON{BoardSpec: spec, Windows: spec.Windows}, &out)
	if err != nil {
		return laurel.BoardInfo{}, false, err
	}
	b, err := boardFrom(out)
	return b, status == http.StatusCreated, err
}

// Board returns a board: GET /v1/boards/{board}.
func (c *Client) Board(ctx context.Context, id string) (laurel.BoardInfo, error) {
	if err := laurel.ValidateBoardID(id); err != nil {
		return laurel.BoardInfo{}, err
	}
	var out boardJSON
	if _, err := c.do(ctx, http.MethodGet, boardPath(id), nil, nil, &out); err != nil {
		return laurel.BoardInfo{}, err
	}
	return boardFrom(out)
}

// Boards lists the boards: GET /v1/boards.
func (c *Client) Boards(ctx context.Context) ([]laurel.BoardInfo, error) {
	var out struct {
		Boards []boardJSON `json:"boards"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/v1/boards", nil, nil, &out); err != nil {
		return nil, err
	}
	boards := make([]laurel.BoardInfo, len(out.Boards))
	for i, b := range out.Boards {
		var err error
		if boards[i], err = boardFrom(b); err != nil {
			return nil, err
		}
	}
	return boards, nil
}

// DeleteBoard deletes a board: DELETE /v1/boards/{board}.
func (c *Client) DeleteBoard(ctx context.Context, id string) error {
	if err := laurel.ValidateBoardID(id); err != nil {
		return err
	}
	_, err := c.do(ctx, http.MethodDelete, boardPath(id), nil, nil, nil)
	return err
}

// Events.

// Submit sends events as one batch: to POST /v1/boards/{board}/events when they all go to
// one (valid) board, to POST /v1/events otherwise.
func (c *Client) Submit(ctx context.Context, events []laurel.Event, opts laurel.SubmitOptions) ([]laurel.EventResult, error) {
	board := ""
	if len(events) > 0 && laurel.ValidateBoardID(events[0].Board) == nil {
		board = events[0].Board
		for _, ev := range events[1:] {
			if ev.Board != board {
				board = ""
				break
			}
		}
	}
	in := eventsJSON{Events: make([]eventJSON, len(events))}
	for i, ev := range events {
		ej := eventJSON{Member: ev.Member, Value: ev.Value, ID: ev.ID, Name: ev.Name, Tag: ev.Tag}
		if board == "" {
			ej.Board = &events[i].Board
		}
		if ev.HasSub {
			ej.Sub = &events[i].Sub
		}
		if ev.HasTS {
			ej.TS = laurel.FormatTime(ev.TS)
		}
		in.Events[i] = ej
	}
	path := "/v1/events"
	if board != "" {
		path = boardPath(board) + "/events"
	}
	query := url.Values{}
	if opts.NoRanks {
		query.Set("ranks", "false")
	}
	if opts.Import {
		query.Set("import", "true")
	}
	var out struct {
		Results []resultJSON `json:"results"`
	}
	if _, err := c.do(ctx, http.MethodPost, path, query, in, &out); err != nil {
		// With the board in the path, the server names the board of the events "board":
		// the first event is the one the service would have named.
		var e *laurel.Error
		if board != "" && errors.As(err, &e) && e.Field == "board" {
			e.Field = "events[0].board"
		}
		return nil, err
	}
	if len(out.Results) != len(events) {
		return nil, fmt.Errorf("laurel http: POST %s: %d results for %d events", path, len(out.Results), len(events))
	}
	results := make([]laurel.EventResult, len(events))
	for i, r := range out.Results {
		results[i] = resultFrom(r, events[i].Board)
	}
	return results, nil
}

// Retract retracts an event: DELETE /v1/boards/{board}/events/{id}.
func (c *Client) Retract(ctx context.Context, board, id string) error {
	if err := laurel.ValidateRetract(board, id); err != nil {
		return err
	}
	_, err := c.do(ctx, http.MethodDelete, boardPath(board)+"/events/"+seg(id), nil, nil, nil)
	return err
}

// Reads.

// readQuery returns the parameters of q that every read takes.
func readQuery(q laurel.Query) url.Values {
	v := url.Values{}
	if q.Window != "" {
		v.Set("window", q.Window)
	}
	if q.HasAt {
		v.Set("at", laurel.FormatTime(q.At))
	}
	if q.Period != "" {
		v.Set("period", q.Period)
	}
	if q.Metadata {
		v.Set("metadata", "true")
	}
	return v
}

// Page reads consecutive ranks: GET /v1/boards/{board}/entries. A zero limit is the default.
func (c *Client) Page(ctx context.Context, q laurel.Query, offset, limit int, r laurel.ScoreRange) (laurel.Page, error) {
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return laurel.Page{}, err
	}
	v := readQuery(q)
	if offset != 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if limit != 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if r.HasMin {
		v.Set("min_score", strconv.FormatInt(r.Min, 10))
	}
	if r.HasMax {
		v.Set("max_score", strconv.FormatInt(r.Max, 10))
	}
	var out pageJSON
	if _, err := c.do(ctx, http.MethodGet, boardPath(q.Board)+"/entries", v, nil, &out); err != nil {
		return laurel.Page{}, err
	}
	return pageFrom(out)
}

func memberPath(board, member string) string { return boardPath(board) + "/members/" + seg(member) }

// Member reads one member's entry: GET /v1/boards/{board}/members/{member}.
func (c *Client) Member(ctx context.Context, q laurel.Query, member string) (laurel.MemberEntry, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.MemberEntry{}, err
	}
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return laurel.MemberEntry{}, err
	}
	var out memberEntryJSON
	if _, err := c.do(ctx, http.MethodGet, memberPath(q.Board, member), readQuery(q), nil, &out); err != nil {
		return laurel.MemberEntry{}, err
	}
	return memberEntryFrom(out)
}

// Around reads the entries around a member: GET /v1/boards/{board}/members/{member}/around.
func (c *Client) Around(ctx context.Context, q laurel.Query, member string, radius int) (laurel.Page, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Page{}, err
	}
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return laurel.Page{}, err
	}
	v := readQuery(q)
	v.Set("radius", strconv.Itoa(radius))
	var out pageJSON
	if _, err := c.do(ctx, http.MethodGet, memberPath(q.Board, member)+"/around", v, nil, &out); err != nil {
		return laurel.Page{}, err
	}
	return pageFrom(out)
}

// Lookup reads the entries of some members: POST /v1/boards/{board}/lookup.
func (c *Client) Lookup(ctx context.Context, q laurel.Query, members []string) (laurel.Page, error) {
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return laurel.Page{}, err
	}
	in := lookupJSON{Members: members}
	if in.Members == nil {
		in.Members = []string{}
	}
	if q.Window != "" {
		in.Window = &q.Window
	}
	if q.HasAt {
		at := laurel.FormatTime(q.At)
		in.At = &at
	}
	if q.Period != "" {
		in.Period = &q.Period
	}
	var v url.Values
	if q.Metadata {
		v = url.Values{"metadata": {"true"}}
	}
	var out pageJSON
	if _, err := c.do(ctx, http.MethodPost, boardPath(q.Board)+"/lookup", v, in, &out); err != nil {
		return laurel.Page{}, err
	}
	return pageFrom(out)
}

// RankOf reads the rank that a score and subscore would get:
// GET /v1/boards/{board}/rank?score=N&subscore=M.
func (c *Client) RankOf(ctx context.Context, q laurel.Query, score, sub int64) (int, int, error) {
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return 0, 0, err
	}
	v := readQuery(q)
	v.Set("score", strconv.FormatInt(score, 10))
	if sub != 0 {
		v.Set("subscore", strconv.FormatInt(sub, 10))
	}
	var out struct {
		Rank  int `json:"rank"`
		Total int `json:"total"`
	}
	if _, err := c.do(ctx, http.MethodGet, boardPath(q.Board)+"/rank", v, nil, &out); err != nil {
		return 0, 0, err
	}
	return out.Rank, out.Total, nil
}

// Distribution reads the histogram of a span's scores: GET /v1/boards/{board}/distribution.
func (c *Client) Distribution(ctx context.Context, q laurel.Query, h laurel.Histogram) (laurel.Distribution, error) {
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return laurel.Distribution{}, err
	}
	v := readQuery(q)
	if h.Buckets != 0 {
		v.Set("buckets", strconv.Itoa(h.Buckets))
	}
	if len(h.Edges) > 0 {
		edges := make([]string, len(h.Edges))
		for i, e := range h.Edges {
			edges[i] = strconv.FormatInt(e, 10)
		}
		v.Set("edges", strings.Join(edges, ","))
	}
	var out distributionJSON
	if _, err := c.do(ctx, http.MethodGet, boardPath(q.Board)+"/distribution", v, nil, &out); err != nil {
		return laurel.Distribution{}, err
	}
	return distributionFrom(out)
}

// Periods lists a window's kept periods: GET /v1/boards/{board}/periods.
func (c *Client) Periods(ctx context.Context, board, window string) ([]laurel.PeriodInfo, error) {
	if err := laurel.ValidateBoardID(board); err != nil {
		return nil, err
	}
	var v url.Values
	if window != "" {
		v = url.Values{"window": {window}}
	}
	var out struct {
		Periods []periodJSON `json:"periods"`
	}
	if _, err := c.do(ctx, http.MethodGet, boardPath(board)+"/periods", v, nil, &out); err != nil {
		return nil, err
	}
	periods := make([]laurel.PeriodInfo, len(out.Periods))
	for i, p := range out.Periods {
		var err error
		if periods[i], err = periodFrom(p); err != nil {
			return nil, err
		}
	}
	return periods, nil
}

// History returns a member's rank history in window, newest first.
func (c *Client) History(ctx context.Context, board, window, member string, limit int) ([]laurel.HistoryPoint, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return nil, err
	}
	if err := laurel.ValidateBoardID(board); err != nil {
		return nil, err
	}
	v := url.Values{"limit": {strconv.Itoa(limit)}}
	if window != "" {
		v.Set("window", window)
	}
	var out historyJSON
	if _, err := c.do(ctx, http.MethodGet, memberPath(board, member)+"/history", v, nil, &out); err != nil {
		return nil, err
	}
	points := make([]laurel.HistoryPoint, len(out.Points))
	for i, p := range out.Points {
		at, err := timeFrom("points.at", p.At)
		if err != nil {
			return nil, err
		}
		points[i] = laurel.HistoryPoint{At: at, Score: p.Score, Rank: p.Rank, Tag: p.Tag}
		if p.Sub != nil {
			points[i].Sub = *p.Sub
		}
	}
	return points, nil
}

// Members.

func profilePath(member string) string { return "/v1/members/" + seg(member) }

// PutProfile sets a member's profile: PUT /v1/members/{member}.
func (c *Client) PutProfile(ctx context.Context, member string, spec laurel.ProfileSpec) (laurel.Profile, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Profile{}, err
	}
	var out profileJSON
	in := profileSpecJSON{Name: spec.Name, Metadata: spec.Metadata}
	if _, err := c.do(ctx, http.MethodPut, profilePath(member), nil, in, &out); err != nil {
		return laurel.Profile{}, err
	}
	return profileFrom(out), nil
}

// Profile reads a member's profile: GET /v1/members/{member}.
func (c *Client) Profile(ctx context.Context, member string) (laurel.Profile, error) {
	if err := laurel.ValidateMember("member", member); err != nil {
		return laurel.Profile{}, err
	}
	var out profileJSON
	if _, err := c.do(ctx, http.MethodGet, profilePath(member), nil, nil, &out); err != nil {
		return laurel.Profile{}, err
	}
	return profileFrom(out), nil
}

// DeleteMember erases a member everywhere: DELETE /v1/members/{member}.
func (c *Client) DeleteMember(ctx context.Context, member string) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	_, err := c.do(ctx, http.MethodDelete, profilePath(member), nil, nil, nil)
	return err
}

// Hide leaves a member out of every ranking: POST /v1/members/{member}/hide.
func (c *Client) Hide(ctx context.Context, member string) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	_, err := c.do(ctx, http.MethodPost, profilePath(member)+"/hide", nil, nil, nil)
	return err
}

// Unhide puts a hidden member back: POST /v1/members/{member}/unhide.
func (c *Client) Unhide(ctx context.Context, member string) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	_, err := c.do(ctx, http.MethodPost, profilePath(member)+"/unhide", nil, nil, nil)
	return err
}
