package postgres

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// state is what a board is, beyond its events and aggregates: its configuration, each
// window's open spans and kept closed periods, and the next instant it has work. The store
// keeps it in the board's row; the index keeps a copy, so that reads need not ask the store.
type state struct {
	Config   laurel.BoardRecord `json:"config"`
	Windows  []windowState      `json:"windows"` // in the order of the board's windows
	Deadline int64              `json:"deadline"`
	Shards   int                `json:"shards,omitempty"` // how many shards hold its members; 0 is 1

	cfg laurel.Board // Config, applied
}

// windowState is one window's part of a board's state.
type windowState struct {
	Name  string       `json:"name"`
	Marks laurel.Marks `json:"marks"`
	// Open holds a calendar window's open periods that have data, oldest first, and a rolling
	// window's current span; it is empty for all.
	Open []laurel.Span `json:"open,omitempty"`
	// Closed holds a calendar window's kept closed periods, newest first.
	Closed []closedPeriod `json:"closed,omitempty"`
	// DropAt is when the oldest kept closed period is dropped; NoTime when none is kept.
	DropAt int64 `json:"drop_at"`

	w laurel.Window
}

type closedPeriod struct {
	ID    string `json:"id"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Total int    `json:"total"` // ranked when it closed, hidden members included
}

func (cp closedPeriod) Bounds() laurel.Span { return laurel.Span{Start: cp.Start, End: cp.End} }

// currentSpan is the span under which the store keeps a rolling window's aggregates over its
// current span, beside its buckets.
const currentSpan = math.MinInt64

// shards returns how many shards hold the board's members.
func (st *state) shards() int { return max(st.Shards, 1) }

// shard names shard i of the board.
func (st *state) shard(i int) shardindex.Shard {
	return shardindex.Shard{Number: i, Count: st.shards()}
}

// newState is the state of a board of that many shards created with cfg at now.
func newState(cfg laurel.Board, shards int, now int64) *state {
	st := &state{Config: cfg.Record(), cfg: cfg, Shards: shards}
	for _, w := range cfg.Windows {
		st.Windows = append(st.Windows, newWindowState(&cfg, w, now))
	}
	st.updateDeadline()
	return st
}

func newWindowState(cfg *laurel.Board, w laurel.Window, now int64) windowState {
	ws := windowState{Name: w.String(), Marks: laurel.NoMarks, DropAt: laurel.NoTime, w: w}
	if w.IsRolling() {
		s, e := cfg.Calendar().Span(w, time.UnixMilli(now))
		ws.Open = []laurel.Span{{Start: s.UnixMilli(), End: e.UnixMilli()}}
	}
	return ws
}

// setConfig makes cfg the board's configuration, keeping the windows it already has and
// adding new ones (the caller computes them).
func (st *state) setConfig(cfg laurel.Board) {
	st.Config, st.cfg = cfg.Record(), cfg
}

func (st *state) encode() []byte {
	v, err := json.Marshal(st)
	if err != nil {
		panic("postgres: encoding a board's state: " + err.Error())
	}
	return v
}

func decodeState(id string, v []byte) (*state, error) {
	st := new(state)
	if err := json.Unmarshal(v, st); err != nil {
		return nil, err
	}
	cfg, err := st.Config.Board(id)
	if err != nil {
		return nil, err
	}
	st.cfg = cfg
	for i := range st.Windows {
		w, err := laurel.ParseWindow(st.Windows[i].Name)
		if err != nil {
			return nil, err
		}
		st.Windows[i].w = w
	}
	return st, nil
}

// clone returns a copy of st that a step may change: a step changes its windows' spans and
// marks, and replaces its configuration, never changing one in place, so the configuration
// is shared.
func (st *state) clone() *state {
	c := *st
	c.Windows = slices.Clone(st.Windows)
	for i := range c.Windows {
		ws := &c.Windows[i]
		ws.Open, ws.Closed = slices.Clone(ws.Open), slices.Clone(ws.Closed)
	}
	return &c
}

// window returns the board's window with that name, or nil.
func (st *state) window(name string) *windowState {
	for i := range st.Windows {
		if st.Windows[i].Name == name {
			return &st.Windows[i]
		}
	}
	return nil
}

// updateDeadline notes when the board next has a period to close, a closed period to drop
// or a rolling bucket to leave.
func (st *state) updateDeadline() {
	d := int64(laurel.NoTime)
	for i := range st.Windows {
		ws := &st.Windows[i]
		var oldest laurel.Span
		if len(ws.Open) > 0 {
			oldest = ws.Open[0]
		}
		d = laurel.Earliest(d, laurel.Deadline(&st.cfg, ws.w, oldest, len(ws.Open) > 0, ws.DropAt))
	}
	st.Deadline = d
}

// due reports whether the board has work to do at now before it can be read.
func (st *state) due(now int64) bool { return laurel.Due(st.Deadline, now) }

// openAt reports whether a calendar window has an open period with data starting at start.
func (ws *windowState) openAt(start int64) bool {
	_, ok := slices.BinarySearchFunc(ws.Open, start, func(sp laurel.Span, t int64) int { return cmp.Compare(sp.Start, t) })
	return ok
}

// addOpen notes that the calendar period [start, end) has data; it reports whether it is new.
func (ws *windowState) addOpen(start, end int64) bool {
	i, ok := slices.BinarySearchFunc(ws.Open, start, func(sp laurel.Span, t int64) int { return cmp.Compare(sp.Start, t) })
	if ok {
		return false
	}
	ws.Open = slices.Insert(ws.Open, i, laurel.Span{Start: start, End: end})
	return true
}

// indexSet returns the index's set that holds the aggregate of span in ws, and whether the
// index holds one: open calendar periods, all and a rolling window's current span are
// ranked; rolling buckets are not.
func (ws *windowState) indexSet(sp int64) (shardindex.Set, bool) {
	switch {
	case ws.w.IsRolling():
		return shardindex.Set{Window: ws.Name}, sp == currentSpan
	case ws.w.Kind == laurel.WindowAll:
		return shardindex.Set{Window: ws.Name}, true
	}
	return shardindex.Set{Window: ws.Name, Start: sp}, true
}

// rankedSpans lists the spans of ws whose aggregates the index ranks: its open periods, all's
// one span, or its current span.
func (ws *windowState) rankedSpans() []int64 {
	switch {
	case ws.w.IsCalendar():
		spans := make([]int64, len(ws.Open))
		for i, sp := range ws.Open {
			spans[i] = sp.Start
		}
		return spans
	case ws.w.IsRolling():
		return []int64{currentSpan}
	}
	return []int64{0}
}

// currentSet returns the set of ws that a read at now sees, and whether it exists.
func (st *state) currentSet(ws *windowState, now int64) (shardindex.Set, bool) {
	switch {
	case ws.w.IsCalendar():
		start := st.cfg.Calendar().PeriodAt(ws.w, time.UnixMilli(now)).Start.UnixMilli()
		return shardindex.Set{Window: ws.Name, Start: start}, ws.openAt(start)
	}
	return shardindex.Set{Window: ws.Name}, true
}

// stateCache keeps the last state parsed per board, so that a read parses a board's state
// only when it changed.
type stateCache struct{ boardMap[cachedState] }

type cachedState struct {
	raw []byte
	st  *state
}

// parse returns the state encoded in raw. The state returned is shared: callers must not
// change it.
func (c *stateCache) parse(board string, raw []byte) (*state, error) {
	if cs, ok := c.get(board); ok && bytes.Equal(cs.raw, raw) {
		return cs.st, nil
	}
	st, err := decodeState(board, raw)
	if err != nil {
		return nil, err
	}
	c.put(board, cachedState{raw: bytes.Clone(raw), st: st})
	return st, nil
}

// seenState is the state a read last found in the index for a board, and its stamp
// (resolveAhead).
type seenState struct {
	raw   []byte
	st    *state
	stamp int64
}

// boardMap is what a node keeps per board for itself, shared by its goroutines. It forgets
// everything once it holds more boards than boardMapMax: what it keeps can be read again.
type boardMap[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

const boardMapMax = 10_000

func (c *boardMap[V]) get(board string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[board]
	return v, ok
}

func (c *boardMap[V]) put(board string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) > boardMapMax {
		c.m = make(map[string]V)
	}
	c.m[board] = v
}

func (c *boardMap[V]) forget(board string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, board)
}
