package laurel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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
	// Confirming marks an open flag whose confirmation began: some of its events may be
	// retracted already, so that only a confirmation may end it.
	Confirming bool `json:"confirming,omitempty"`

	// opened is set on a flag a write opens (not kept): its notice says so; quiet on a write
	// that tells the game nothing (the confirming mark).
	opened, quiet bool
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

// A flag is kept in Records under three kinds: FlagKind holds each flag by its id, which
// sorts by when it was opened; OpenFlagKind holds the id of a member's open flag on a board,
// under OpenFlagKey, so that a member has at most one open flag a board and a write finds it;
// FlagStateKind lists the ids by state (state/id), so that the open ones are listed without
// reading every flag resolved before.
const (
	FlagKind      = "flag"
	OpenFlagKind  = "flag.open"
	FlagStateKind = "flag.state"
	// FlagNoticeKind holds what each write did to flags, to be told to the webhooks that ask
	// (package webhook): a queue, by keys that sort by when they were written.
	FlagNoticeKind = "flag.notice"
)

// FlagNotice is what a write did to a flag: opened it, held more events in it (held), or
// resolved it, and the flag as the write left it.
type FlagNotice struct {
	Type string `json:"type"` // "flag.opened", "flag.held" or "flag.resolved"
	Flag *Flag  `json:"flag"`
}

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
				f = &Flag{ID: NewFlagID(now), Board: h.Board, Member: h.Member, Rule: h.Event.Rule, Opened: now, State: FlagOpen, opened: true}
			}
			out = append(out, f)
		}
		f.Events = append(f.Events, h.Event)
	}
	return out, nil
}

// KindRecord is a record of a kind that a write sets, or deletes (Value nil).
type KindRecord struct {
	Kind string
	Record
}

// Records returns what a write of f at now sets and deletes: the flag, the member's open flag
// on its board (deleted once resolved), the flag's place by state, and the notice of what the
// write did to it (FlagNoticeKind). A flag a write changes was open before (ChangeFlags
// changes open flags only).
func (f *Flag) Records(now int64) []KindRecord {
	v, err := json.Marshal(f)
	if err != nil {
		panic("laurel: encoding a flag: " + err.Error())
	}
	n := FlagNotice{Type: "flag.resolved", Flag: f}
	switch {
	case f.opened:
		n.Type = "flag.opened"
	case f.State == FlagOpen:
		n.Type = "flag.held"
	}
	notice, err := json.Marshal(n)
	if err != nil {
		panic("laurel: encoding a flag's notice: " + err.Error())
	}
	out := []KindRecord{{FlagKind, Record{f.ID, v}}, {FlagStateKind, Record{f.State + "/" + f.ID, []byte(f.ID)}}}
	if !f.quiet {
		out = append(out, KindRecord{FlagNoticeKind, Record{NewFlagID(now), notice}})
	}
	open := KindRecord{OpenFlagKind, Record{Key: OpenFlagKey(f.Board, f.Member)}}
	if f.State == FlagOpen {
		open.Value = []byte(f.ID)
	} else {
		out = append(out, KindRecord{FlagStateKind, Record{Key: FlagOpen + "/" + f.ID}})
	}
	return append(out, open)
}

// DecodeFlag reads a flag as Records keeps it.
func DecodeFlag(v []byte) (*Flag, error) {
	f := new(Flag)
	if err := json.Unmarshal(v, f); err != nil {
		return nil, fmt.Errorf("laurel: decoding a flag: %w", err)
	}
	return f, nil
}

// FlagStore is what a store does for the review queue: a change of a member's open flags and
// of its hidden mark, in one write that no hold of the member's events interleaves with.
type FlagStore interface {
	// ChangeFlags calls change with the store's clock and the member's open flags on every
	// board, and writes the flags it returns (a flag no longer open leaves its member's open
	// flags) and, when hide is not nil, the member's hidden mark, all in one write. An error
	// of change is returned as it is, and nothing is written.
	ChangeFlags(ctx context.Context, member string, change func(now int64, open []*Flag) (write []*Flag, hide *bool, err error)) error
}

// FlagFilter selects flags in a list: each field, when set, must match.
type FlagFilter struct {
	Board, Member, State string
}

// MaxFlagsPage bounds a page of flags.
const MaxFlagsPage = 1000

// ListFlags returns the flags that f selects, in id order (the order they were opened), after
// the id after ("": from the first), at most limit of them.
func ListFlags(ctx context.Context, rec Records, f FlagFilter, after string, limit int) ([]*Flag, error) {
	if f.State != "" && f.State != FlagOpen && f.State != FlagCleared && f.State != FlagConfirmed {
		return nil, FieldErrorf(EInvalid, "state", "must be open, cleared or confirmed")
	}
	if limit < 1 || limit > MaxFlagsPage {
		return nil, FieldErrorf(EInvalid, "limit", "must be 1 to %d", MaxFlagsPage)
	}
	var out []*Flag
	// By state, the state's list of ids; else every flag.
	kind, prefix := FlagKind, ""
	if f.State != "" {
		kind, prefix = FlagStateKind, f.State+"/"
		if after != "" {
			after = prefix + after
		}
	}
	err := EachRecord(ctx, rec, kind, prefix, after, func(r Record) (bool, error) {
		var fl *Flag
		var err error
		if kind == FlagKind {
			fl, err = DecodeFlag(r.Value)
		} else {
			fl, err = FlagByID(ctx, rec, string(r.Value))
		}
		if err != nil {
			return false, err
		}
		if (f.Board == "" || fl.Board == f.Board) && (f.Member == "" || fl.Member == f.Member) && (f.State == "" || fl.State == f.State) {
			out = append(out, fl)
		}
		return len(out) < limit, nil
	})
	return out, err
}

// ReportFlag holds a member on a board for review at the game's word, with its reason: the
// member is hidden and a flag opened, or its open flag on the board returned as it is.
func ReportFlag(ctx context.Context, fs FlagStore, board, member, reason string) (*Flag, error) {
	if err := ValidateBoardID(board); err != nil {
		return nil, err
	}
	if err := ValidateMember("member", member); err != nil {
		return nil, err
	}
	if reason == "" {
		return nil, FieldErrorf(EInvalid, "reason", "is required: what the game's anti-cheat saw")
	}
	if err := validateText("reason", reason, MaxFlagReason); err != nil {
		return nil, err
	}
	var out *Flag
	err := fs.ChangeFlags(ctx, member, func(now int64, open []*Flag) ([]*Flag, *bool, error) {
		for _, f := range open {
			if f.Board == board {
				out = f
				return nil, ptr(true), nil
			}
		}
		out = &Flag{ID: NewFlagID(now), Board: board, Member: member, Reason: reason, Opened: now, State: FlagOpen, opened: true}
		return []*Flag{out}, ptr(true), nil
	})
	return out, err
}

// MaxFlagReason bounds the reason of a flag the game reports.
const MaxFlagReason = 512

// Resolution is what a person decided of a flag.
type Resolution struct {
	Action string // "clear" or "confirm"
	Erase  bool   // confirm: erase the member (everywhere), not only keep it hidden
}

// ResolveFlag resolves the flag id: clear unhides its member (unless another flag of the
// member is open) and its events stand; confirm retracts its events that have ids, exactly as
// a retraction does, and keeps the member hidden, or erases it. Resolving a flag again the
// same way answers it as it is (resolved false); the other way is a conflict. A confirmation
// marks the flag (Confirming) before its first retraction, so that one cut off midway is
// finished by confirming again and never undone by a clear that would leave its events
// half retracted.
func ResolveFlag(ctx context.Context, svc Service, fq FlagQueue, id string, res Resolution) (f *Flag, resolved bool, err error) {
	state := map[string]string{"clear": FlagCleared, "confirm": FlagConfirmed}[res.Action]
	if state == "" {
		return nil, false, FieldErrorf(EInvalid, "action", "must be clear or confirm")
	}
	if res.Erase && state != FlagConfirmed {
		return nil, false, FieldErrorf(EInvalid, "erase", "is for confirm: a cleared member stays")
	}
	for {
		f, err = FlagByID(ctx, fq, id)
		if err != nil {
			return nil, false, err
		}
		if f.State != FlagOpen {
			if f.State != state || f.Erased != res.Erase {
				return nil, false, Errorf(EConflict, "flag %s is already %s", id, f.State)
			}
			if f.Erased { // a resolution cut off before the erasure finishes it
				return f, false, svc.DeleteMember(ctx, f.Member)
			}
			return f, false, nil
		}
		if f.Confirming && state != FlagConfirmed {
			return nil, false, Errorf(EConflict, "flag %s is being confirmed (its events may be retracted already): confirm it to finish", id)
		}
		if state == FlagConfirmed {
			if !f.Confirming {
				err := changeOpenFlag(ctx, fq, f, func(o *Flag, _ int64, _ []*Flag) *bool {
					o.Confirming, o.quiet = true, true
					return nil
				})
				if errors.Is(err, errFlagMoved) {
					continue
				}
				if err != nil {
					return nil, false, err
				}
			}
			for _, ev := range f.Events {
				if ev.ID == "" {
					continue
				}
				if err := svc.Retract(ctx, f.Board, ev.ID); err != nil && ErrorCode(err) != ENotFound {
					return nil, false, err
				}
			}
		}
		var out *Flag
		err = changeOpenFlag(ctx, fq, f, func(o *Flag, now int64, open []*Flag) *bool {
			out = o
			out.State, out.Resolved, out.Erased, out.Confirming = state, now, res.Erase, false
			if state == FlagCleared && len(open) == 1 {
				return ptr(false)
			}
			return nil
		})
		if errors.Is(err, errFlagMoved) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if res.Erase {
			if err := svc.DeleteMember(ctx, f.Member); err != nil {
				return nil, false, err
			}
		}
		return out, true, nil
	}
}

var errFlagMoved = errors.New("laurel: the flag changed while it was resolved")

// changeOpenFlag writes f, open still and holding the events it held when read, as change
// leaves it, with the hidden mark change returns; errFlagMoved when it was resolved meanwhile
// or held more events.
func changeOpenFlag(ctx context.Context, fq FlagStore, f *Flag, change func(o *Flag, now int64, open []*Flag) (hide *bool)) error {
	return fq.ChangeFlags(ctx, f.Member, func(now int64, open []*Flag) ([]*Flag, *bool, error) {
		i := slices.IndexFunc(open, func(o *Flag) bool { return o.ID == f.ID })
		if i < 0 || len(open[i].Events) != len(f.Events) {
			return nil, nil, errFlagMoved // resolved meanwhile, or it held more events: read it again
		}
		hide := change(open[i], now, open)
		return []*Flag{open[i]}, hide, nil
	})
}

// FlagByID returns the flag id, or ENotFound.
func FlagByID(ctx context.Context, rec Records, id string) (*Flag, error) {
	if err := ValidateRecordKey(id); err != nil {
		return nil, FieldErrorf(EInvalid, "flag", "is not a flag's id")
	}
	v, err := rec.Record(ctx, FlagKind, id)
	if ErrorCode(err) == ENotFound {
		return nil, FieldErrorf(ENotFound, "flag", "no flag %q", id)
	}
	if err != nil {
		return nil, err
	}
	return DecodeFlag(v)
}

// FlagQueue is what a store gives the review queue: its records, where flags are kept, and
// the changes of flags with hidden marks.
type FlagQueue interface {
	Records
	FlagStore
}
