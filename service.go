package laurel

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Event is one score event sent to a board (docs/design.md, "Event").
type Event struct {
	Board  string // the board; set by the caller for a single-board submit too
	Member string
	Value  int64
	TS     int64  // event time in unix ms; meaningful only when HasTS
	HasTS  bool   // false: the server's clock at receipt
	ID     string // optional; makes the event idempotent and retractable
	Name   *string
}

// Event statuses in a submit's results.
const (
	StatusApplied   = "applied"
	StatusDuplicate = "duplicate"
)

// EventResult is what one submitted event did.
type EventResult struct {
	Board   string
	Member  string
	ID      string
	Status  string // StatusApplied or StatusDuplicate
	Entries map[string]Standing
}

// Standing is a member's rank and score in one window's current period.
type Standing struct {
	Rank  int
	Score int64
}

// SubmitOptions tune a submit.
type SubmitOptions struct {
	NoRanks bool // leave EventResult.Entries empty (the API's ?ranks=false)
	// Import lifts the board's late_limit (docs/design.md: a bulk import with the admin key);
	// an event in a closed period is still too_late. Callers grant it to admins only.
	Import bool
}

// Entry is one member's place in a ranking.
type Entry struct {
	Rank      int
	Member    string
	Score     int64
	ReachedAt int64 // unix ms
	Name      string
	Metadata  json.RawMessage // set only when the read asked for metadata
}

// PeriodInfo describes the span a read was answered from: a calendar period (ID set, bounded
// unless ID is "all"), or a rolling window's span at the instant read (no ID).
type PeriodInfo struct {
	ID         string
	Start, End int64 // unix ms; both zero for "all"
	Closed     bool
	Total      int // in Periods and Board.Current
}

// Page is a run of entries in rank order from one span.
type Page struct {
	Board   string
	Window  string
	Period  PeriodInfo
	Total   int
	Entries []Entry
}

// MemberEntry is one member's entry with the span it was read from.
type MemberEntry struct {
	Board  string
	Window string
	Period PeriodInfo
	Total  int
	Entry  Entry
}

// Query says what to read: a board's window (empty: its first) at an instant (HasAt; default
// now) or a calendar period by id. Giving both At and Period is EInvalid.
type Query struct {
	Board    string
	Window   string
	At       int64
	HasAt    bool
	Period   string
	Metadata bool // include members' profile metadata in entries
	// Cohort, when set, reads that member's cohort (cohorts.go) instead of the whole board;
	// a store alone keeps no cohorts and refuses it.
	Cohort string
}

// ScoreRange limits a page to entries whose score lies in [Min, Max], when Has* is set.
type ScoreRange struct {
	Min, Max       int64
	HasMin, HasMax bool
}

// BoardInfo is a board's configuration with, per window, its current period and total.
type BoardInfo struct {
	Board
	Current map[string]PeriodInfo
}

// Profile is a member's profile, shared by all boards.
type Profile struct {
	Member   string
	Name     string
	Metadata json.RawMessage
	Hidden   bool
}

// ProfileSpec sets a profile: a nil field keeps its current value.
type ProfileSpec struct {
	Name     *string
	Metadata json.RawMessage
}

// Read limits (docs/api.md).
const (
	DefaultPageLimit = 10
	MaxPageLimit     = 1000
	DefaultRadius    = 5
	MaxRadius        = 100
	MaxLookup        = 1000
	MaxBatch         = 1000

	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 1000
	DefaultStreamLimit  = 10
	MaxStreamLimit      = 100
)

// HistoryPoint is a member's score and rank in a window right after one of its events: the
// standing its write answered with, in the window's current period at that moment.
type HistoryPoint struct {
	At    int64 // the event's time, unix ms
	Score int64
	Rank  int
}

// Watcher is implemented by a Service that can tell when boards change, so that live streams
// need not poll. Watch calls changed after every change is applied, with the boards it may
// have altered; nil means any board (a profile or a hidden flag changed). changed runs on the
// service's writer, so it must return at once. The returned function stops the calls.
type Watcher interface {
	Watch(changed func(boards []string)) (stop func())
}

// Watchers is the list of functions a Watcher calls: a store keeps one, hands Watch on to
// it, and calls Notify after each change. The zero value is an empty list.
type Watchers struct {
	mu   sync.Mutex
	m    map[int]func(boards []string)
	next int
}

// Watch adds changed to the list until stop is called.
func (w *Watchers) Watch(changed func(boards []string)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[int]func([]string))
	}
	w.next++
	id := w.next
	w.m[id] = changed
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.m, id)
	}
}

// Notify calls every function of the list with the boards that boards returns (nil: any
// board), and calls boards only when the list is not empty.
func (w *Watchers) Notify(boards func() []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) == 0 {
		return
	}
	b := boards()
	for _, f := range w.m {
		f(b)
	}
}

// Service is laurel: the model of docs/design.md behind one interface, implemented by the
// embedded store and by the scale-out one. Every error is an *Error with a code, or internal.
type Service interface {
	PutBoard(ctx context.Context, id string, spec BoardSpec) (b BoardInfo, created bool, err error)
	Board(ctx context.Context, id string) (BoardInfo, error)
	Boards(ctx context.Context) ([]BoardInfo, error)
	DeleteBoard(ctx context.Context, id string) error

	// Submit applies events, possibly on several boards, atomically: all or none.
	Submit(ctx context.Context, events []Event, opts SubmitOptions) ([]EventResult, error)
	Retract(ctx context.Context, board, id string) error

	Page(ctx context.Context, q Query, offset, limit int, r ScoreRange) (Page, error)
	Member(ctx context.Context, q Query, member string) (MemberEntry, error)
	Around(ctx context.Context, q Query, member string, radius int) (Page, error)
	Lookup(ctx context.Context, q Query, members []string) (Page, error)
	// RankOf returns the rank a member reaching score now would get, and the total.
	RankOf(ctx context.Context, q Query, score int64) (rank, total int, err error)
	Periods(ctx context.Context, board, window string) ([]PeriodInfo, error)
	// History returns a member's points in window, newest first, at most limit of them.
	History(ctx context.Context, board, window, member string, limit int) ([]HistoryPoint, error)

	PutProfile(ctx context.Context, member string, spec ProfileSpec) (Profile, error)
	Profile(ctx context.Context, member string) (Profile, error)
	DeleteMember(ctx context.Context, member string) error
	Hide(ctx context.Context, member string) error
	Unhide(ctx context.Context, member string) error
}

// AfterWrite is the context of what follows a write that was stored (the index brought along,
// what competitions keep cleared): not cancelled with ctx, since an error now would tell the
// caller that what is stored was not, but ending at ctx's deadline or grace from now,
// whichever is later (the request's deadline may be spent by a backend that failed). Without
// a deadline it has none either.
func AfterWrite(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	c := context.WithoutCancel(ctx)
	d, ok := ctx.Deadline()
	if !ok {
		return c, func() {}
	}
	if soon := time.Now().Add(grace); d.Before(soon) {
		d = soon
	}
	return context.WithDeadline(c, d)
}
