package laurel

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// Flag is a member held for review on a board (docs/design.md, "Guards"): by a hold rule of
// the board's guard, naming the events that broke it, or by the game, with a reason. While a
// flag is open its member is hidden; a person resolves it: cleared (unhidden, the events
// stand) or confirmed (its events retracted, the member kept hidden or erased).
type Flag struct {
	ID       string      `json:"id"`
	Board    string      `json:"board"`
	Member   string      `json:"member"`
	Rule     string      `json:"rule,omitempty"`   // the first rule that held the member
	Reason   string      `json:"reason,omitempty"` // the game's, for a flag it reported
	Events   []FlagEvent `json:"events,omitempty"`
	Opened   int64       `json:"opened"`
	State    string      `json:"state"`
	Resolved int64       `json:"resolved,omitempty"`
	Erased   bool        `json:"erased,omitempty"` // confirmed with the member erased
}

// FlagEvent is an event a hold rule held: the rule it broke, and what names the event (its
// id, when it has one).
type FlagEvent struct {
	Rule  string `json:"rule"`
	ID    string `json:"id,omitempty"`
	Value int64  `json:"value"`
	TS    int64  `json:"ts"`
}

// A flag's states.
const (
	FlagOpen      = "open"
	FlagCleared   = "cleared"
	FlagConfirmed = "confirmed"
)

// A flag is kept in Records under two kinds: FlagKind holds each flag by its id, which sorts
// by when it was opened; OpenFlagKind holds the id of a member's open flag on a board, under
// OpenFlagKey, so that a member has at most one open flag a board and a write finds it.
const (
	FlagKind     = "flag"
	OpenFlagKind = "flag.open"
)

// OpenFlagKey is the key of a member's open flag on a board; a member's keys share the
// prefix member + "/" (a member id has no '/').
func OpenFlagKey(board, member string) string { return member + "/" + board }

// NewFlagID returns the id of a flag opened at now: its time in hex, then random bits, so
// that ids sort by when they were opened and two never meet.
func NewFlagID(now int64) string { return fmt.Sprintf("%012x%08x", now, rand.Uint32()) }

// HeldEvent is an event a rule held, as a write stages it.
type HeldEvent struct {
	Board, Member string
	Event         FlagEvent
}

// OpenFlags returns the flags the holds of one write open or add to, in the order of their
// first hold: a member's open flag on the board (found by open, which returns nil for none)
// takes the events, else a new flag opened at now.
func OpenFlags(holds []HeldEvent, now int64, open func(board, member string) (*Flag, error)) ([]*Flag, error) {
	var out []*Flag
	for _, h := range holds {
		var f *Flag
		for _, g := range out {
			if g.Board == h.Board && g.Member == h.Member {
				f = g
			}
		}
		if f == nil {
			var err error
			if f, err = open(h.Board, h.Member); err != nil {
				return nil, err
			}
			if f == nil {
				f = &Flag{ID: NewFlagID(now), Board: h.Board, Member: h.Member, Rule: h.Event.Rule, Opened: now, State: FlagOpen}
			}
			out = append(out, f)
		}
		f.Events = append(f.Events, h.Event)
	}
	return out, nil
}

// Records returns what a store keeps of f: the flag, and, while it is open, the member's
// open flag on its board (nil Value: no longer).
func (f *Flag) Records() (flag, open Record) {
	v, err := json.Marshal(f)
	if err != nil {
		panic("laurel: encoding a flag: " + err.Error())
	}
	flag, open = Record{Key: f.ID, Value: v}, Record{Key: OpenFlagKey(f.Board, f.Member)}
	if f.State == FlagOpen {
		open.Value = []byte(f.ID)
	}
	return flag, open
}

// DecodeFlag reads a flag as Records keeps it.
func DecodeFlag(v []byte) (*Flag, error) {
	f := new(Flag)
	if err := json.Unmarshal(v, f); err != nil {
		return nil, fmt.Errorf("laurel: decoding a flag: %w", err)
	}
	return f, nil
}
