package laurel

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ValidateEvents checks a submit's events as far as that can be done without their boards:
// their number, board ids, members, ids and names. A bad event is named by its index.
func ValidateEvents(events []Event) error {
	if len(events) == 0 {
		return FieldErrorf(EInvalid, "events", "must hold at least one event")
	}
	if len(events) > MaxBatch {
		return FieldErrorf(ETooLarge, "events", "must hold at most %d events", MaxBatch)
	}
	for i := range events {
		if err := validateEvent(&events[i]); err != nil {
			return InEvent(i, err)
		}
	}
	return nil
}

func validateEvent(ev *Event) error {
	if err := ValidateBoardID(ev.Board); err != nil {
		return FieldErrorf(EInvalid, "board", "%s", ErrorMessage(err))
	}
	if err := ValidateMember("member", ev.Member); err != nil {
		return err
	}
	if err := ValidateEventID("id", ev.ID); err != nil {
		return err
	}
	if ev.Name != nil {
		if err := ValidateName("name", *ev.Name); err != nil {
			return err
		}
	}
	tag, err := NormalizeTag("tag", ev.Tag)
	ev.Tag = tag
	return err
}

// InEvent names the event of a batch that err is about: field "value" becomes
// "events[3].value". Field names are built only for the error, not for every event.
func InEvent(i int, err error) error {
	var le *Error
	if !errors.As(err, &le) || le.Field == "" {
		return err
	}
	return &Error{Code: le.Code, Message: le.Message, Field: fmt.Sprintf("events[%d].%s", i, le.Field)}
}

// Admit checks an event against its board at now (the value's bounds, how far ahead of the
// clock or, unless imported, behind it its time is, and a tournament's times) and returns the
// event's time.
func (b *Board) Admit(ev *Event, now int64, imported bool) (ts int64, err error) {
	if b.MinValue != nil && ev.Value < *b.MinValue || b.MaxValue != nil && ev.Value > *b.MaxValue {
		return 0, FieldErrorf(EInvalid, "value", "must lie within the board's bounds%s", b.bounds())
	}
	if !ev.HasTS {
		return b.admitTime(now)
	}
	if ev.TS > now+MaxFutureSkew.Milliseconds() {
		return 0, FieldErrorf(EInvalid, "ts", "is more than %s ahead of the server's clock", FormatDuration(MaxFutureSkew))
	}
	if ev.TS < now-b.LateLimit.Milliseconds() && !imported {
		return 0, FieldErrorf(ETooLate, "ts", "is older than the board's late_limit (%s)", FormatDuration(b.LateLimit))
	}
	return b.admitTime(ev.TS)
}

// admitTime checks an event's time against the board's tournament.
func (b *Board) admitTime(ts int64) (int64, error) {
	if b.Tournament != nil {
		if _, err := b.RunAt(ts); err != nil {
			return 0, err
		}
	}
	return ts, nil
}

func (b *Board) bounds() string {
	switch {
	case b.MinValue != nil && b.MaxValue != nil:
		return fmt.Sprintf(" %d to %d", *b.MinValue, *b.MaxValue)
	case b.MinValue != nil:
		return fmt.Sprintf(": at least %d", *b.MinValue)
	case b.MaxValue != nil:
		return fmt.Sprintf(": at most %d", *b.MaxValue)
	}
	return ""
}

// Repeats reports whether ev repeats the counted event with its id (member, value, time):
// then it is a duplicate and changes nothing. A retry that leaves ts to the server repeats it
// whatever the time; anything else with the same id is a conflict. Stores ask it before they
// Admit ev: a retry is a duplicate even once late_limit, a bound or a tournament's run would
// refuse it as a new event (it was stored; an error would say it was not).
func (ev *Event) Repeats(member string, value, sub, at int64) bool {
	return member == ev.Member && value == ev.Value && sub == ev.Sub && (!ev.HasTS || at == ev.TS)
}

// ErrIDConflict is the error of an event whose id was already used with other content.
func ErrIDConflict(id string) error {
	return FieldErrorf(EConflict, "id", "event id %q was already used with other content", id)
}

// WindowError names the field of an error from folding an event into a window: an overflow
// is about the value, a closed period about the time.
func WindowError(err error) error {
	switch ErrorCode(err) {
	case EInvalid:
		return FieldErrorf(EInvalid, "value", "%s", ErrorMessage(err))
	case ETooLate:
		return FieldErrorf(ETooLate, "ts", "%s", ErrorMessage(err))
	}
	return err
}

// Event is one score event sent to a board (docs/design.md, "Event").
type Event struct {
	Board  string // the board; set by the caller for a single-board submit too
	Member string
	Value  int64
	// Sub is the event's subscore, on a board that declares one (HasSub: it was sent; an
	// event without one carries 0). A board without a subscore refuses one.
	Sub    int64
	HasSub bool
	TS     int64  // event time in unix ms; meaningful only when HasTS
	HasTS  bool   // false: the server's clock at receipt
	ID     string // optional; makes the event idempotent and retractable
	Name   *string
	// Tag is a small JSON value the event carries (compact, at most MaxTag bytes; nil for
	// none): what the score was made with (docs/design.md, "Tags").
	Tag json.RawMessage
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
	// Previous is the member's standing in each window's current period before the write
	// (the whole batch), where it had one; applied events only (docs/design.md, "Where the
	// member came from").
	Previous map[string]Standing
	// Flag is the id of the flag that holds the event for review, when a hold rule of its
	// board's guard held it: its member is hidden (docs/design.md, "Guards"). Rule is the
	// rule that held it.
	Flag, Rule string
}

// Standing is a member's rank and score in one window's current period.
type Standing struct {
	Rank  int
	Score int64
	Sub   int64 // the subscore, on a board that has one
}

// SubmitOptions tune a submit.
type SubmitOptions struct {
	NoRanks bool // leave EventResult.Entries empty (the API's ?ranks=false)
	// Import lifts the board's late_limit (docs/design.md: a bulk import with the admin key);
	// an event in a closed period is still too_late. Callers grant it to admins only.
	Import bool
	// MemberToken says the events come with a member token: a trusted board refuses them
	// (Board.AdmitWriter).
	MemberToken bool
}
