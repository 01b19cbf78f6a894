package laurel

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Order is the direction of a board's scores.
type Order uint8

const (
	Desc Order = iota // high is better
	Asc               // low is better: race times
)

func (o Order) String() string {
	if o == Asc {
		return "asc"
	}
	return "desc"
}

// Better reports whether score a ranks before score b on a board of this order.
func (o Order) Better(a, b int64) bool {
	if o == Asc {
		return a < b
	}
	return a > b
}

// Ordering is how a board ranks its entries: by score in Score's direction, then by
// subscore in Sub's, then by reached_at (earliest first), then by member id bytes
// (docs/design.md, "Order and ties"). On a board without a subscore (HasSub false) every
// subscore is 0, so that Sub never decides.
type Ordering struct {
	Score, Sub Order
	HasSub     bool
}

// Better reports whether (score, sub) ranks before (score2, sub2).
func (o Ordering) Better(score, sub, score2, sub2 int64) bool {
	if score != score2 {
		return o.Score.Better(score, score2)
	}
	return o.Sub.Better(sub, sub2)
}

// Mode is how a board aggregates a member's events into a score.
type Mode uint8

const (
	Sum  Mode = iota // events add up; negative values subtract
	Best             // the best value
	Last             // the value of the latest event by event time
)

func (m Mode) String() string {
	switch m {
	case Best:
		return "best"
	case Last:
		return "last"
	}
	return "sum"
}

// Limits of a board's configuration.
const (
	MaxWindows        = 8
	MaxBoardMetadata  = 4 << 10
	MaxKeep           = 1000
	MaxLateLimit      = 366 * 24 * time.Hour
	MaxTitle          = 256
	DefaultLateLimit  = 24 * time.Hour
	DefaultKeep       = 12
	MaxFutureSkew     = 5 * time.Minute // how far ahead of the server's clock an event may be
	defaultWindowName = "all"
)

// Board is a named ranking with a fixed configuration (docs/design.md).
type Board struct {
	ID    string
	Order Order
	// Subscore, when set, is the order of the board's second sort key: an event carries a
	// subscore, and entries with equal scores rank by it (docs/design.md, "Subscore").
	Subscore  *Order
	Mode      Mode
	Windows   []Window // 1 to MaxWindows, distinct; the first is the default for reads
	Timezone  string   // IANA name
	WeekStart time.Weekday
	LateLimit time.Duration
	Keep      int    // closed periods kept per calendar window
	MinValue  *int64 // bounds on an event's value, when set
	MaxValue  *int64
	Title     string
	Metadata  json.RawMessage // a JSON object
	Rewards   Rewards         // what the final ranks of closed periods earn (rewards.go)
	// Tournament, when set, bounds when events count and who may enter (tournament.go).
	Tournament *Tournament
	Cohorts    *Cohorts // when set, splits each period of a window into cohorts (cohorts.go)
	Guard      *Guard   // when set, what the board refuses as implausible (guard.go)
	CreatedAt  int64    // unix ms

	loc *time.Location
}

// Ordering returns how the board ranks its entries.
func (b *Board) Ordering() Ordering {
	o := Ordering{Score: b.Order}
	if b.Subscore != nil {
		o.Sub, o.HasSub = *b.Subscore, true
	}
	return o
}

// Calendar returns the board's calendar: its timezone and week start.
func (b *Board) Calendar() Calendar { return Calendar{Loc: b.loc, WeekStart: b.WeekStart} }

// Window returns the board's window with that name, and whether it has one.
func (b *Board) Window(name string) (Window, bool) {
	for _, w := range b.Windows {
		if w.String() == name {
			return w, true
		}
	}
	return Window{}, false
}

// BoardSpec is a request to create or update a board: every field is optional. On create, a
// missing field takes its default; on update, it keeps the board's current value.
type BoardSpec struct {
	Order     *string         `json:"order,omitempty"`
	Subscore  *string         `json:"subscore,omitempty"` // "asc" or "desc"; "" for none
	Mode      *string         `json:"mode,omitempty"`
	Windows   []string        `json:"windows,omitempty"`
	Timezone  *string         `json:"timezone,omitempty"`
	WeekStart *string         `json:"week_start,omitempty"`
	LateLimit *string         `json:"late_limit,omitempty"`
	Keep      *int            `json:"keep,omitempty"`
	MinValue  *int64          `json:"min_value,omitempty"`
	MaxValue  *int64          `json:"max_value,omitempty"`
	Title     *string         `json:"title,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Rewards   Rewards         `json:"rewards,omitzero"`
	// Tournament and Cohorts replace the board's whole; an empty object removes them.
	Tournament *TournamentSpec `json:"tournament,omitempty"`
	Cohorts    *CohortsSpec    `json:"cohorts,omitempty"`
	Guard      *GuardSpec      `json:"guard,omitempty"`
}

// Apply returns the board that spec makes of current (nil: a new board with that id, created
// at now). An invalid field is EInvalid; a change to an immutable field is EConflict; windows
// may be added but not removed.
func (spec *BoardSpec) Apply(id string, current *Board, now int64) (Board, error) {
	if err := ValidateBoardID(id); err != nil {
		return Board{}, err
	}
	var b Board
	if current != nil {
		b = *current
		b.Windows = slices.Clone(current.Windows)
	} else {
		b = Board{ID: id, Order: Desc, Mode: Sum, Windows: []Window{{Kind: WindowAll}}, Timezone: "UTC",
			WeekStart: time.Monday, LateLimit: DefaultLateLimit, Keep: DefaultKeep, Metadata: json.RawMessage("{}"), CreatedAt: now}
	}
	immutable := func(field string, changed bool) error {
		if current != nil && changed {
			return FieldErrorf(EConflict, field, "cannot change once the board exists")
		}
		return nil
	}
	if spec.Order != nil {
		o, err := parseOrder(*spec.Order)
		if err == nil {
			err = immutable("order", o != b.Order)
		}
		if err != nil {
			return Board{}, err
		}
		b.Order = o
	}
	if spec.Subscore != nil {
		var sub *Order
		if *spec.Subscore != "" {
			o, err := parseOrder(*spec.Subscore)
			if err != nil {
				return Board{}, FieldErrorf(EInvalid, "subscore", "must be desc or asc")
			}
			sub = &o
		}
		if err := immutable("subscore", !equalPtr(sub, b.Subscore)); err != nil {
			return Board{}, err
		}
		b.Subscore = sub
	}
	if spec.Mode != nil {
		m, err := parseMode(*spec.Mode)
		if err == nil {
			err = immutable("mode", m != b.Mode)
		}
		if err != nil {
			return Board{}, err
		}
		b.Mode = m
	}
	if spec.Timezone != nil {
		if _, err := LoadTimezone(*spec.Timezone); err != nil {
			return Board{}, err
		}
		if err := immutable("timezone", *spec.Timezone != b.Timezone); err != nil {
			return Board{}, err
		}
		b.Timezone = *spec.Timezone
	}
	if spec.WeekStart != nil {
		d, err := ParseWeekday(*spec.WeekStart)
		if err != nil {
			return Board{}, FieldErrorf(EInvalid, "week_start", "must be monday … sunday")
		}
		if err := immutable("week_start", d != b.WeekStart); err != nil {
			return Board{}, err
		}
		b.WeekStart = d
	}
	if spec.Windows != nil {
		ws, err := parseWindows(spec.Windows)
		if err != nil {
			return Board{}, err
		}
		for _, old := range b.Windows {
			if current != nil && !slices.Contains(ws, old) {
				return Board{}, FieldErrorf(EConflict, "windows", "window %s cannot be removed", old)
			}
		}
		b.Windows = ws
	}
	if spec.LateLimit != nil {
		d, err := ParseDuration(*spec.LateLimit)
		if err != nil || d > MaxLateLimit {
			return Board{}, FieldErrorf(EInvalid, "late_limit", "must be a positive duration such as 90s, 1h or 7d, at most 366d")
		}
		b.LateLimit = d
	}
	if spec.Keep != nil {
		if *spec.Keep < 0 || *spec.Keep > MaxKeep {
			return Board{}, FieldErrorf(EInvalid, "keep", "must be 0 to %d", MaxKeep)
		}
		b.Keep = *spec.Keep
	}
	if spec.MinValue != nil {
		b.MinValue = ptr(*spec.MinValue)
	}
	if spec.MaxValue != nil {
		b.MaxValue = ptr(*spec.MaxValue)
	}
	if b.MinValue != nil && b.MaxValue != nil && *b.MinValue > *b.MaxValue {
		return Board{}, FieldErrorf(EInvalid, "min_value", "must not exceed max_value")
	}
	if spec.Title != nil {
		if err := validateText("title", *spec.Title, MaxTitle); err != nil {
			return Board{}, err
		}
		b.Title = *spec.Title
	}
	if spec.Metadata != nil {
		m, err := ValidateMetadata("metadata", spec.Metadata, MaxBoardMetadata)
		if err != nil {
			return Board{}, err
		}
		b.Metadata = m
	}
	if spec.Rewards != nil {
		b.Rewards = spec.Rewards
	}
	if len(b.Rewards) > 0 {
		// Checked on every change: a reward's window must remain one of the board's.
		rs, err := validateRewards(b.Rewards, &b)
		if err != nil {
			return Board{}, err
		}
		b.Rewards = rs
	} else {
		b.Rewards = nil
	}
	if spec.Tournament != nil {
		t, err := tournamentOf(spec.Tournament, &b)
		if err != nil {
			return Board{}, err
		}
		b.Tournament = t
	}
	if spec.Cohorts != nil {
		c, err := cohortsOf(spec.Cohorts, &b)
		if err != nil {
			return Board{}, err
		}
		b.Cohorts = c
	}
	if spec.Guard != nil {
		g, err := guardOf(spec.Guard, &b)
		if err != nil {
			return Board{}, err
		}
		b.Guard = g
	}
	for i, r := range b.Rewards {
		if r.Tier != "" && (b.Cohorts == nil || r.Window != b.Cohorts.Window || !slices.Contains(b.Cohorts.Tiers, r.Tier)) {
			return Board{}, FieldErrorf(EInvalid, fmt.Sprintf("rewards[%d].tier", i), "must be a tier of the board's cohorts, in their window")
		}
	}
	loc, err := LoadTimezone(b.Timezone)
	if err != nil {
		return Board{}, err
	}
	b.loc = loc
	return b, nil
}

// Spec returns the board's whole configuration in the API's words. Applied to no board with
// the board's id and creation time, it gives the board back: the store keeps boards so, the
// HTTP API shows them so, and its client reads them back so.
func (b *Board) Spec() BoardSpec {
	s := BoardSpec{
		Order: ptr(b.Order.String()), Mode: ptr(b.Mode.String()), Timezone: ptr(b.Timezone),
		WeekStart: ptr(FormatWeekday(b.WeekStart)), LateLimit: ptr(FormatDuration(b.LateLimit)),
		Keep: ptr(b.Keep), MinValue: b.MinValue, MaxValue: b.MaxValue, Title: ptr(b.Title),
		Metadata: b.Metadata, Rewards: b.Rewards,
	}
	if b.Subscore != nil {
		s.Subscore = ptr(b.Subscore.String())
	}
	if b.Tournament != nil {
		s.Tournament = b.Tournament.Spec()
	}
	if b.Cohorts != nil {
		s.Cohorts = b.Cohorts.Spec()
	}
	if b.Guard != nil {
		s.Guard = b.Guard.Spec()
	}
	for _, w := range b.Windows {
		s.Windows = append(s.Windows, w.String())
	}
	if len(s.Metadata) == 0 {
		s.Metadata = json.RawMessage("{}")
	}
	return s
}

// BoardRecord is a board as every store keeps it: its configuration in the API's words and
// when it was created. Its JSON is the stored form, in both stores.
type BoardRecord struct {
	BoardSpec
	CreatedAt int64 `json:"created_at"`
}

// Record returns the board as stored.
func (b *Board) Record() BoardRecord { return BoardRecord{b.Spec(), b.CreatedAt} }

// Board returns the board a record keeps, under its id.
func (r BoardRecord) Board(id string) (Board, error) { return r.Apply(id, nil, r.CreatedAt) }

// Restore prepares a board read back from storage for use, as Apply does for a new one.
func (b *Board) Restore() error {
	loc, err := LoadTimezone(b.Timezone)
	if err != nil {
		return err
	}
	b.loc = loc
	return nil
}

// LoadTimezone returns the location of an IANA zone name.
func LoadTimezone(name string) (*time.Location, error) {
	// time.LoadLocation takes "" and "Local" to mean the server's zone, which a board must
	// never silently follow.
	if name == "" || name == "Local" {
		return nil, FieldErrorf(EInvalid, "timezone", "must be an IANA zone name such as UTC or Europe/Berlin")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, FieldErrorf(EInvalid, "timezone", "unknown zone %q", name)
	}
	return loc, nil
}

func parseOrder(s string) (Order, error) {
	switch s {
	case "desc":
		return Desc, nil
	case "asc":
		return Asc, nil
	}
	return 0, FieldErrorf(EInvalid, "order", "must be desc or asc")
}

func parseMode(s string) (Mode, error) {
	switch s {
	case "sum":
		return Sum, nil
	case "best":
		return Best, nil
	case "last":
		return Last, nil
	}
	return 0, FieldErrorf(EInvalid, "mode", "must be sum, best or last")
}

func parseWindows(names []string) ([]Window, error) {
	if len(names) == 0 || len(names) > MaxWindows {
		return nil, FieldErrorf(EInvalid, "windows", "must list 1 to %d windows", MaxWindows)
	}
	ws := make([]Window, 0, len(names))
	for i, name := range names {
		w, err := ParseWindow(name)
		if err != nil {
			return nil, FieldErrorf(EInvalid, fmt.Sprintf("windows[%d]", i), "%s", ErrorMessage(err))
		}
		if slices.Contains(ws, w) {
			return nil, FieldErrorf(EInvalid, fmt.Sprintf("windows[%d]", i), "window %s is listed twice", name)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func ptr[T any](v T) *T { return &v }

// BoardInfo is a board's configuration with, per window, its current period and total.
type BoardInfo struct {
	Board
	Current map[string]PeriodInfo
}

// equalPtr reports whether a and b are both nil or point to equal values.
func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
