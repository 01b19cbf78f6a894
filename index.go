package laurel

import (
	"context"
	"errors"
)

// Index is the ranked index of the scale-out mode (docs/design.md): per board, one ordered set
// per open span of each window (an open calendar period, all, a rolling window's current
// span), each holding the (score, reached_at) of the members ranked there, hidden members
// left out. It is derived: the store keeps the truth, and its store writes the index after
// each commit, one step per board, and can rebuild it from the store at any time.
//
// With each step the index records the board's version, which the store counts too, and
// optionally the board's state, opaque bytes the store needs to resolve a read without the
// store. A step names the version it follows, so that a step lost in a crash is noticed and
// a late one is refused rather than applied out of order.
type Index interface {
	// Apply changes a board's sets in one atomic step: it checks that the index is at
	// u.After, drops the sets of u.Drops, makes the changes of u.Changes in order, and
	// records u.Version and, when u.State is not nil, the state with u.Version as its stamp.
	// Afterwards it reads the entries of u.Read, and tells subscribers that the board
	// changed. When the index is not at u.After it changes nothing and returns
	// ErrIndexStale. An index that holds nothing of the board is at version 0. Versions
	// below 0 are fences: a rebuild in progress sets one with its first chunk and names it
	// in the next, so that a flush or another rebuild meanwhile makes it start again.
	Apply(ctx context.Context, board string, order Order, u IndexUpdate) ([]IndexEntry, error)
	// State returns the board's state and its stamp, and the version of the last step; ok is
	// false when the index holds no state of the board (none was ever recorded, the board
	// was deleted, the index lost it, or a rebuild has not recorded it yet).
	State(ctx context.Context, board string) (s IndexState, ok bool, err error)
	// Ranking reads one set of the board as of the state stamped stamp: its reads return
	// ErrIndexStale once a step has set another state. Its ranks count the set's members.
	Ranking(ctx context.Context, board string, order Order, set IndexSet, stamp int64) Ranking
	// Totals returns how many members each set holds, as of the state stamped stamp.
	Totals(ctx context.Context, board string, sets []IndexSet, stamp int64) ([]int, error)
	// Delete removes everything the index holds of a board.
	Delete(ctx context.Context, board string) error

	// Publish tells the subscribers of every node that something changed that may show on
	// any board (a profile, a hidden mark).
	Publish(ctx context.Context) error
	// Subscribe calls changed with the board each Apply changed, or "" after a Publish, on
	// every node, until stop is called. changed must return at once.
	Subscribe(changed func(board string)) (stop func(), err error)
	// Ping reports whether the index answers, within ctx.
	Ping(ctx context.Context) error
}

// ErrIndexStale is what the index answers when its board is not where the caller expected:
// a step after a lost one, or a read after the state it was resolved from changed. The
// store resolves again, or rebuilds the board's index from the store.
var ErrIndexStale = errors.New("laurel: the index changed or missed a step")

// IndexSet names one ordered set of a board: a window and the start of its span (unix ms):
// a calendar period's start, 0 for all and for a rolling window's current span.
type IndexSet struct {
	Window string
	Start  int64
}

// IndexState is what the index recorded of a board.
type IndexState struct {
	State   []byte
	Stamp   int64 // the version of the step that recorded State
	Version int64 // the version of the last step
}

// IndexChange puts a member in a set with a score and reached_at, or removes it from the set
// (Remove; a member not there is no error).
type IndexChange struct {
	Set       IndexSet
	Member    string
	Score, At int64
	Remove    bool
}

// IndexRead asks for a member's entry in a set after a step.
type IndexRead struct {
	Set    IndexSet
	Member string
}

// IndexEntry is a member's entry in a set; Rank is 0 when the member is not in it.
type IndexEntry struct {
	Rank      int
	Score, At int64
}

// IndexUpdate is one step of Index.Apply.
type IndexUpdate struct {
	After   int64 // the version the index must be at
	Version int64 // the version it is at afterwards, at least After (equal while rebuilding)
	State   []byte
	Drops   []IndexSet
	Changes []IndexChange
	Read    []IndexRead
}
