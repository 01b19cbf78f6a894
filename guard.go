package laurel

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"time"
)

// Guard is what a board refuses as implausible before it ranks (docs/design.md, "Guards"):
// events from member tokens (Trusted), too many events in an interval (Rate), more than a gain,
// or a jump in a best. Gain and jump are judged on the member's aggregate in one of the board's
// windows, in the span the event enters, rate on the member's events, as the write sees them:
// its earlier events, those of its batch before it included. The stores judge within the write
// that stages the event (StageEvent), so both decide the same.
type Guard struct {
	Trusted bool       // events only with a key: a member token's are refused
	Rate    *RateRule  // any board
	Gain    *GuardRule // sum boards only
	Jump    *GuardRule // best boards only
}

// GuardRule is one rule of a guard: its window, its limits and what breaking it does.
type GuardRule struct {
	Window  Window
	Max     int64 // gain: what a member gains in a span; jump: the amount, −1: no limit
	Percent int64 // jump only: how far, in percent of the previous best, a new best may beat it; 0: no limit
	Action  GuardAction
}

// RateRule is the rate rule of a guard: an event breaks it when the member has Max counted
// events already at times in the Interval that ends at the event's time (the interval's start
// excluded, its end included).
type RateRule struct {
	Max      int
	Interval time.Duration // whole milliseconds
	Action   GuardAction
}

// Since is the start, excluded, of the interval that an event at ts is judged in.
func (r *RateRule) Since(ts int64) int64 {
	if ts < math.MinInt64+r.Interval.Milliseconds() {
		return math.MinInt64
	}
	return ts - r.Interval.Milliseconds()
}

// GuardAction is what breaking a rule does.
type GuardAction uint8

const (
	// Refuse refuses the event and the rest of its write: nothing is stored.
	Refuse GuardAction = iota
	// Hold stores and counts the event, hides its member pending review and opens a flag
	// naming the event, all in the event's write (flags.go).
	Hold
)

func (a GuardAction) String() string {
	if a == Hold {
		return "hold"
	}
	return "refuse"
}

// GuardSpec is a guard in the API's words. On a board update it replaces the board's guard
// whole; an empty one removes it.
type GuardSpec struct {
	Trusted *bool          `json:"trusted,omitempty"`
	Rate    *RateSpec      `json:"rate,omitempty"`
	Gain    *GuardRuleSpec `json:"gain,omitempty"`
	Jump    *GuardRuleSpec `json:"jump,omitempty"`
}

// GuardRuleSpec is a rule in the API's words: gain takes max, jump amount and/or percent.
type GuardRuleSpec struct {
	Window  string  `json:"window"`
	Max     *int64  `json:"max,omitempty"`
	Amount  *int64  `json:"amount,omitempty"`
	Percent *int64  `json:"percent,omitempty"`
	Action  *string `json:"action,omitempty"`
}

// RateSpec is a rate rule in the API's words: at most max events of a member in any interval
// ("1m") that ends at one of them.
type RateSpec struct {
	Max      *int64  `json:"max,omitempty"`
	Interval string  `json:"interval"`
	Action   *string `json:"action,omitempty"`
}

// Bounds of a rate rule: PostgreSQL counts up to max events an interval it judges in, and the
// embedded store keeps the times of the members' events of the last interval and late_limit.
const (
	MaxRateEvents   = 100_000
	MaxRateInterval = 7 * 24 * time.Hour
)

// MaxGuardPercent bounds a jump's percent.
const MaxGuardPercent = 1_000_000

// guardOf checks spec against the board and returns its guard; nil for an empty spec.
func guardOf(spec *GuardSpec, b *Board) (*Guard, error) {
	g := &Guard{Trusted: spec.Trusted != nil && *spec.Trusted}
	var err error
	if spec.Rate != nil {
		if g.Rate, err = rateOf(spec.Rate); err != nil {
			return nil, err
		}
	}
	if spec.Gain != nil {
		if b.Mode != Sum {
			return nil, FieldErrorf(EInvalid, "guard.gain", "is for sum boards: a best or last score gains nothing")
		}
		if g.Gain, err = ruleOf("gain", spec.Gain, b); err != nil {
			return nil, err
		}
		if g.Gain.Max < 1 {
			return nil, FieldErrorf(EInvalid, "guard.gain.max", "must be at least 1: what a member may gain in a span of the window")
		}
	}
	if spec.Jump != nil {
		if b.Mode != Best {
			return nil, FieldErrorf(EInvalid, "guard.jump", "is for best boards: it compares a new best with the previous one")
		}
		if g.Jump, err = ruleOf("jump", spec.Jump, b); err != nil {
			return nil, err
		}
	}
	if !g.Trusted && g.Rate == nil && g.Gain == nil && g.Jump == nil {
		return nil, nil
	}
	return g, nil
}

// rateOf checks a rate rule.
func rateOf(spec *RateSpec) (*RateRule, error) {
	if spec.Max == nil {
		return nil, FieldErrorf(EInvalid, "guard.rate.max", "is required: how many events a member may submit in an interval")
	}
	if *spec.Max < 1 || *spec.Max > MaxRateEvents {
		return nil, FieldErrorf(EInvalid, "guard.rate.max", "must be 1 to %d", MaxRateEvents)
	}
	d, err := ParseDuration(spec.Interval)
	if err != nil || d < time.Millisecond || d > MaxRateInterval || d%time.Millisecond != 0 {
		return nil, FieldErrorf(EInvalid, "guard.rate.interval", "must be a duration of whole milliseconds from 1ms to %s (\"1m\")", FormatDuration(MaxRateInterval))
	}
	action, err := actionOf("guard.rate", spec.Action)
	if err != nil {
		return nil, err
	}
	return &RateRule{Max: int(*spec.Max), Interval: d, Action: action}, nil
}

// actionOf reads a rule's action: refuse unless said.
func actionOf(field string, action *string) (GuardAction, error) {
	if action == nil {
		return Refuse, nil
	}
	switch *action {
	case "refuse":
		return Refuse, nil
	case "hold":
		return Hold, nil
	}
	return Refuse, FieldErrorf(EInvalid, field+".action", "must be refuse or hold")
}

// ruleOf checks what every rule has (its window and action) and the limits of its kind.
func ruleOf(kind string, spec *GuardRuleSpec, b *Board) (*GuardRule, error) {
	field := "guard." + kind
	w, ok := b.Window(spec.Window)
	if !ok {
		return nil, FieldErrorf(EInvalid, field+".window", "must be one of the board's windows: the rule holds in each of its spans")
	}
	action, err := actionOf(field, spec.Action)
	if err != nil {
		return nil, err
	}
	r := &GuardRule{Window: w, Action: action}
	switch kind {
	case "jump":
		if spec.Max != nil {
			return nil, FieldErrorf(EInvalid, field+".max", "a jump takes amount and percent")
		}
		if spec.Amount == nil && spec.Percent == nil {
			return nil, FieldErrorf(EInvalid, field, "needs amount, percent or both: how far a new best may beat the previous one")
		}
		r.Max = -1
		if spec.Amount != nil {
			if *spec.Amount < 0 {
				return nil, FieldErrorf(EInvalid, field+".amount", "must not be negative")
			}
			r.Max = *spec.Amount
		}
		if spec.Percent != nil {
			if *spec.Percent < 1 || *spec.Percent > MaxGuardPercent {
				return nil, FieldErrorf(EInvalid, field+".percent", "must be 1 to %d", MaxGuardPercent)
			}
			r.Percent = *spec.Percent
		}
	default:
		if spec.Amount != nil || spec.Percent != nil {
			return nil, FieldErrorf(EInvalid, field+".max", "a %s rule takes max, not amount or percent", kind)
		}
		if spec.Max == nil {
			return nil, FieldErrorf(EInvalid, field+".max", "is required")
		}
		r.Max = *spec.Max
	}
	return r, nil
}

// Spec returns the guard in the API's words.
func (g *Guard) Spec() *GuardSpec {
	s := &GuardSpec{Gain: g.Gain.spec(false), Jump: g.Jump.spec(true)}
	if g.Trusted {
		s.Trusted = ptr(true)
	}
	if r := g.Rate; r != nil {
		s.Rate = &RateSpec{Max: ptr(int64(r.Max)), Interval: FormatDuration(r.Interval), Action: ptr(r.Action.String())}
	}
	return s
}

func (r *GuardRule) spec(jump bool) *GuardRuleSpec {
	if r == nil {
		return nil
	}
	s := &GuardRuleSpec{Window: r.Window.String(), Action: ptr(r.Action.String())}
	switch {
	case !jump:
		s.Max = ptr(r.Max)
	default:
		if r.Max >= 0 {
			s.Amount = ptr(r.Max)
		}
		if r.Percent > 0 {
			s.Percent = ptr(r.Percent)
		}
	}
	return s
}

// AdmitWriter refuses what the board takes from no one: a member token's events on a
// trusted board, and a subscore on a board without one. Stores ask it before anything else
// of an event (its id included), so that a token learns nothing of the board's events and an
// event the board cannot hold is refused as such, a retry too.
func (b *Board) AdmitWriter(ev *Event, opts SubmitOptions) error {
	if opts.MemberToken && b.Guard != nil && b.Guard.Trusted {
		return breach(EPermissionDenied, "trusted", "board", "board %q takes events from the game's server only: a member token cannot submit to it", b.ID)
	}
	if ev.HasSub && b.Subscore == nil {
		return FieldErrorf(EInvalid, "subscore", "board %q has no subscore", b.ID)
	}
	return nil
}

// judgeRate returns the breach of the guard's rate rule by an event at ts, asking aggs how
// many events the member has in its interval; nil when it breaks none (or has none).
func (g *Guard) judgeRate(ctx context.Context, aggs Aggregates, member string, ts int64) (*Error, *RateRule, error) {
	r := g.Rate
	if r == nil {
		return nil, nil, nil
	}
	n, err := aggs.CountEvents(ctx, member, r.Since(ts), ts, r.Max)
	if err != nil || n < r.Max {
		return nil, nil, err
	}
	return breach(EGuardRefused, "rate", "ts", "a member submits at most %d events in %s", r.Max, FormatDuration(r.Interval)), r, nil
}

// judge returns the breach of a rule of window w by an event of value that takes the member's
// aggregate in the span it enters from before to after, and the rule broken; nil when it
// breaks none.
func (g *Guard) judge(b *Board, w Window, before, after Agg, value int64) (*Error, *GuardRule) {
	if r := g.Gain; r != nil && r.Window == w && gains(b.Order, value) && beyond(b.Order, after.Score, r.Max) {
		return breach(EGuardRefused, "gain", "value", "a member gains at most %d in a span of window %s", r.Max, w), r
	}
	if r := g.Jump; r != nil && r.Window == w && before.Present() && b.Order.Better(value, before.Score) && r.jumps(before.Score, value) {
		return breach(EGuardRefused, "jump", "value", "a new best beats the member's previous best (%d) in window %s by %s", before.Score, w, r.limits()), r
	}
	return nil, nil
}

// HoldsEvents reports whether a rule of the guard holds events rather than refusing them.
func (g *Guard) HoldsEvents() bool {
	return g != nil && (g.Rate != nil && g.Rate.Action == Hold || g.Gain != nil && g.Gain.Action == Hold || g.Jump != nil && g.Jump.Action == Hold)
}

// breach is the error of an event that breaks a rule of the guard: its message names the
// rule, as GuardRuleOf reads it.
func breach(code, rule, field, format string, args ...any) *Error {
	return FieldErrorf(code, field, "breaks the board's %s rule: %s", rule, fmt.Sprintf(format, args...))
}

// GuardRuleOf returns the rule of a guard that refused a write with err ("trusted", "gain",
// "rate", "jump"), or "" when err is not a guard's refusal.
func GuardRuleOf(err error) string {
	if c := ErrorCode(err); c != EGuardRefused && c != EPermissionDenied {
		return ""
	}
	rest, ok := strings.CutPrefix(ErrorMessage(err), "breaks the board's ")
	if !ok {
		return ""
	}
	rule, _, _ := strings.Cut(rest, " rule: ")
	return rule
}

// gains reports whether a value moves a sum the board's way: up on desc, down on asc.
func gains(o Order, value int64) bool { return o.Better(value, 0) }

// beyond reports whether a sum has moved more than max (≥ 1) the board's way from 0.
func beyond(o Order, score, max int64) bool {
	if o == Asc {
		return score < -max
	}
	return score > max
}

// jumps reports whether best, beating prev, beats it by more than the rule allows: more than
// Max, or more than Percent percent of |prev|, computed exactly in 128 bits.
func (r *GuardRule) jumps(prev, best int64) bool {
	diff := absDiff(prev, best)
	if r.Max >= 0 && diff > uint64(r.Max) {
		return true
	}
	if r.Percent > 0 {
		hi1, lo1 := bits.Mul64(diff, 100)
		hi2, lo2 := bits.Mul64(absDiff(prev, 0), uint64(r.Percent))
		return hi1 > hi2 || hi1 == hi2 && lo1 > lo2
	}
	return false
}

func (r *GuardRule) limits() string {
	switch {
	case r.Max >= 0 && r.Percent > 0:
		return fmt.Sprintf("more than %d or %d%%", r.Max, r.Percent)
	case r.Max >= 0:
		return fmt.Sprintf("more than %d", r.Max)
	}
	return fmt.Sprintf("more than %d%%", r.Percent)
}

// absDiff is |a − b|, which an int64 may not hold.
func absDiff(a, b int64) uint64 {
	if a > b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}
