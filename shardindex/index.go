// Package shardindex is the protocol between the scale-out store and its ranked index: the
// store (postgres/) keeps the truth and steps the index after each commit; the index (redis/)
// ranks each board's members, its sets whole, changed by the board's shards (shard.go). It
// uses the domain's types (package laurel) and adds nothing to the domain: the root package
// does not know it, and neither the embedded store nor the HTTP layer uses it
// (docs/decisions.md, "The ranked index's protocol, a package of its own").
package shardindex

import (
	"context"
	"errors"

	"github.com/laurel/laurel"
)

// Index is the ranked index of the scale-out mode (docs/design.md): per board, one ordered set
// per open span of each window (an open calendar period, all, a rolling window's current
// span), each holding the (score, subscore, reached_at) of the members ranked there, hidden
// members left out. It is derived: the store keeps the truth, and its store writes the index
// after each commit, and can rebuild it from the store at any time.
//
// A board's members are split into shards (ShardOf), and each shard changes its own members
// in the board's sets, by steps of its own, each atomic, with a version of its own, so that
// the shards of one board change in parallel. A shard's version counts its steps; a step
// names the version it follows, so that a step lost in a crash is noticed and a late one is
// refused rather than applied out of order. Shard 0 also holds the board's state, opaque bytes
// the store needs to resolve a read without the store, stamped with the version of the step
// that recorded it; every other shard records the stamp of the state its members follow. The
// sets are the board's, whole: a rank is one search in one set. A read checks the stamp of
// every shard, so that it never mixes a state with members of another, nor reads a set while
// a shard is rebuilt in it.
type Index interface {
	// Apply makes steps of shards of a board of count shards, in order, in one atomic call:
	// each step is checked against its own shard's version and refused alone (Applied.Refused)
	// when the shard is not at its After — and a step that records the board's state also
	// when a step before it was refused, so that a read of a new state finds every other
	// shard at its stamp. A step made changes its shard as Step says. Afterwards, when no step
	// was refused, every shard of the board follows one stamp and none is below its floor,
	// it answers a in the whole board, all at one instant (Applied.Ranked); a shard found below
	// its floor is reported (Applied.Below) instead. Without steps it is a read of a alone.
	// It tells subscribers of each step made that is not Quiet. A shard that holds nothing is
	// at version 0. Versions below 0 are fences: a rebuild in progress sets one with its first
	// chunk and names it in the next, so that a flush or another rebuild meanwhile makes it
	// start again. One call costs one round trip however many shards it steps (docs/decisions.md,
	// "A write's shards in one script").
	Apply(ctx context.Context, board string, count int, order laurel.Ordering, steps []Step, a Asks) (Applied, error)
	// State returns the board's state and its stamp, and the version of shard 0; ok is false
	// when the index holds no state of the board (none was ever recorded, the board was
	// deleted, the index lost it, or a rebuild has not recorded it yet).
	State(ctx context.Context, board string) (s State, ok bool, err error)
	// Versions returns the version and stamp of each of a board's count shards.
	Versions(ctx context.Context, board string, count int) ([]Version, error)
	// Ranking reads one set of a board of count shards as of the state stamped stamp: its
	// reads return ErrStale once any shard follows another state.
	Ranking(board string, count int, order laurel.Ordering, set Set, stamp int64) laurel.Ranking
	// Totals returns how many members each set holds, as of the state stamped stamp.
	Totals(ctx context.Context, board string, count int, sets []Set, stamp int64) ([]int, error)
	// Delete removes one shard of a board from the index: its members from every set, its
	// version and stamp (of shard 0: the board's state too).
	Delete(ctx context.Context, board string, sh Shard) error
	// DeleteBoard removes everything the index holds of a board, whatever its shards.
	DeleteBoard(ctx context.Context, board string) error

	// Publish tells the subscribers of every node that something changed that may show on
	// any board (a profile, a hidden mark): with moved, something that may have moved any
	// member's entries (a hidden mark, an erasure); without, nothing that did (a name).
	Publish(ctx context.Context, moved bool) error
	// Subscribe calls changed with what each Apply that tells changed (its board and the
	// members it names, Update.Tell), or after a Publish with any board (Changed.Board "")
	// and, unless it moved entries, no member, on every node, until stop is called. changed
	// must return at once.
	Subscribe(changed func(laurel.Changed)) (stop func(), err error)
	// Ping reports whether the index answers, within ctx.
	Ping(ctx context.Context) error
}

// ErrStale is what the index answers when its board is not where the caller expected:
// a step after a lost one, or a read after the state it was resolved from changed. The
// store resolves again, or rebuilds the board's index from the store.
var ErrStale = errors.New("laurel: the index changed or missed a step")

// Set names one ordered set of a board: a window and the start of its span (unix ms):
// a calendar period's start, 0 for all and for a rolling window's current span.
type Set struct {
	Window string
	Start  int64
}

// State is what the index recorded of a board.
type State struct {
	State   []byte
	Stamp   int64 // the version of shard 0's step that recorded State
	Version int64 // the version of shard 0's last step
}

// Version is where a shard of a board is: the version of its last step and the stamp of
// the state its sets follow (0 and 0 when it holds nothing).
type Version struct {
	Version, Stamp int64
}

// ApplyOne makes one step of shard sh with x.Apply, asking a, and returns ErrStale when the
// shard refused it.
func ApplyOne(ctx context.Context, x Index, board string, sh Shard, order laurel.Ordering, u Update, a Asks) (Applied, error) {
	got, err := x.Apply(ctx, board, sh.Count, order, []Step{{Shard: sh.Number, Update: u}}, a)
	if err == nil && len(got.Refused) > 0 {
		return Applied{}, ErrStale
	}
	return got, err
}

// Key is an entry's place in a set, to count the entries before it. Sub is 0 on a board
// without a subscore, as in Change and Entry.
type Key struct {
	Set            Set
	Score, Sub, At int64
	Member         string
}

// Change puts a member in a set with a score, subscore and reached_at, or removes it from
// the set (Remove; a member not there is no error).
type Change struct {
	Set            Set
	Member         string
	Score, Sub, At int64
	Remove         bool
}

// Read asks for a member's entry in a set after a step. With Expect, the entry the caller
// expects (Score, Sub, At: as its step left it) is looked for first, which costs the index
// one lookup less when it is still there.
type Read struct {
	Set            Set
	Member         string
	Expect         bool
	Score, Sub, At int64
}

// Entry is a member's entry in a set; Rank is 0 when the member is not in it.
type Entry struct {
	Rank           int
	Score, Sub, At int64
}

// Step is one shard's step of Index.Apply.
type Step struct {
	Shard int
	Update
}

// Update is what a step does to its shard: it checks that the shard is at After, drops the
// shard's members from the sets of Drops, makes Changes in order (each of a member of the
// shard; a member's last change in a set is the one made), and records Version; when State
// is not nil (shard 0 only) it records the state, stamped Stamp (Version when 0), and
// otherwise, when Stamp is not 0, Stamp as the shard's stamp.
type Update struct {
	After   int64 // the version the shard must be at
	Version int64 // the version it is at afterwards, at least After (equal while rebuilding)
	State   []byte
	Stamp   int64 // when not 0: the stamp of the state the shard follows (of State, when given)
	Quiet   bool  // subscribers are not told: another shard's step of the same write tells them
	// Tell are the members the subscribers are told the write moved, in every shard of the
	// board; nil: any member.
	Tell    []string
	Drops   []Set
	Changes []Change
}

// Asks are what Apply reads in the whole board after its steps.
type Asks struct {
	// Floors are versions that shards must be at least at for the reads to be answered: a
	// shard the store committed steps of that the index may have missed.
	Floors []Floor
	Read   []Read
	// Count are entries whose rank in the whole board is asked (a member's entry before a
	// step, prior.go in postgres): the entries of their set before each.
	Count []Key
}

// Floor is a version a shard must be at least at.
type Floor struct {
	Shard   int
	Version int64
}

// Applied is what Index.Apply did and read: the shards it refused, ranks in the whole board.
type Applied struct {
	// Refused are the shards whose steps were not made, in the order of the steps.
	Refused []int
	// Ranked is false when Apply did not answer (a step was refused, a shard of the board
	// followed another stamp, a shard was below its floor, or nothing was asked); Read and
	// Before are then nil.
	Ranked bool
	Below  []int   // the shards found below their floors
	Read   []Entry // an entry for each Read
	Before []int   // for each Count, the entries of its set before it
}
