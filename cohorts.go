package laurel

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Cohorts split a board's periods into groups of at most Size members (docs/design.md,
// "Cohorts"): a member is placed in a cohort of the period of Window when its first event of
// that period arrives, and a read can be asked for the member's cohort, ranking it among its
// cohort only. Placement is first come, first served among the members of one placement key:
// all of them, or those whose profile has the same value at a metadata field (a skill
// bracket), or those of the same league tier (leagues.go). Package competition keeps them.
type Cohorts struct {
	Window string
	Size   int
	By     string // "" (everyone together) or "metadata.<field>"; "tier" with Tiers
	// Leagues (leagues.go): the tiers, lowest first, and how many of a cohort move up and
	// down at each close.
	Tiers           []string
	Promote, Demote int
	DemoteAbsent    bool
}

// CohortsSpec is Cohorts in the API's words; an empty one removes them.
type CohortsSpec struct {
	Window       *string  `json:"window,omitempty"`
	Size         *int     `json:"size,omitempty"`
	By           *string  `json:"by,omitempty"`
	Tiers        []string `json:"tiers,omitempty"`
	Promote      *int     `json:"promote,omitempty"`
	Demote       *int     `json:"demote,omitempty"`
	DemoteAbsent *bool    `json:"demote_absent,omitempty"`
}

// Bounds of a cohort's size: a cohort is read as one lookup.
const (
	MinCohortSize = 2
	MaxCohortSize = MaxLookup
)

func cohortsOf(spec *CohortsSpec, b *Board) (*Cohorts, error) {
	if spec.Window == nil && spec.Size == nil && spec.By == nil && spec.Tiers == nil && spec.Promote == nil && spec.Demote == nil && spec.DemoteAbsent == nil {
		return nil, nil
	}
	c := &Cohorts{}
	if spec.Window == nil {
		return nil, FieldErrorf(EInvalid, "cohorts.window", "is required: the calendar window whose periods place members anew")
	}
	if w, ok := b.Window(*spec.Window); !ok || !w.IsCalendar() {
		return nil, FieldErrorf(EInvalid, "cohorts.window", "must be one of the board's calendar windows (hour, day, week, month, year)")
	}
	c.Window = *spec.Window
	if spec.Size == nil || *spec.Size < MinCohortSize || *spec.Size > MaxCohortSize {
		return nil, FieldErrorf(EInvalid, "cohorts.size", "must be %d to %d members", MinCohortSize, MaxCohortSize)
	}
	c.Size = *spec.Size
	if spec.By != nil {
		c.By = *spec.By
		field, isMeta := strings.CutPrefix(c.By, "metadata.")
		if !(isMeta && field != "" && len(field) <= 64 || c.By == "tier" && spec.Tiers != nil) {
			return nil, FieldErrorf(EInvalid, "cohorts.by", `must be "metadata.<field>", or "tier" with tiers; left out, everyone is placed together`)
		}
	}
	if spec.Tiers == nil {
		if spec.Promote != nil || spec.Demote != nil || spec.DemoteAbsent != nil {
			return nil, FieldErrorf(EInvalid, "cohorts.tiers", "promote, demote and demote_absent need tiers")
		}
		return c, nil
	}
	if c.By != "" && c.By != "tier" {
		return nil, FieldErrorf(EInvalid, "cohorts.by", "a league places members by tier")
	}
	c.By = "tier"
	if len(spec.Tiers) < 2 || len(spec.Tiers) > MaxTiers {
		return nil, FieldErrorf(EInvalid, "cohorts.tiers", "must list 2 to %d tiers, lowest first", MaxTiers)
	}
	for i, name := range spec.Tiers {
		if ValidateBoardID(name) != nil || len(name) > MaxTierName || slices.Contains(spec.Tiers[:i], name) {
			return nil, FieldErrorf(EInvalid, fmt.Sprintf("cohorts.tiers[%d]", i), "must be a distinct name of 1 to %d characters, [a-z0-9][a-z0-9_.-]*", MaxTierName)
		}
	}
	c.Tiers = slices.Clone(spec.Tiers)
	for _, f := range []struct {
		name string
		v    *int
		to   *int
	}{{"promote", spec.Promote, &c.Promote}, {"demote", spec.Demote, &c.Demote}} {
		if f.v != nil {
			if *f.v < 0 || *f.v > c.Size {
				return nil, FieldErrorf(EInvalid, "cohorts."+f.name, "must be 0 to the cohort's size (%d)", c.Size)
			}
			*f.to = *f.v
		}
	}
	c.DemoteAbsent = spec.DemoteAbsent != nil && *spec.DemoteAbsent
	return c, nil
}

// Spec returns the cohorts in the API's words.
func (c *Cohorts) Spec() *CohortsSpec {
	s := &CohortsSpec{Window: ptr(c.Window), Size: ptr(c.Size)}
	if c.By != "" {
		s.By = ptr(c.By)
	}
	if len(c.Tiers) > 0 {
		s.Tiers, s.Promote, s.Demote = slices.Clone(c.Tiers), ptr(c.Promote), ptr(c.Demote)
		if c.DemoteAbsent {
			s.DemoteAbsent = ptr(true)
		}
	}
	return s
}

// CohortPeriod returns the id of the period of b's cohort window that holds ts.
func (b *Board) CohortPeriod(ts int64) string {
	w, _ := b.Window(b.Cohorts.Window)
	return b.Calendar().PeriodAt(w, time.UnixMilli(ts)).ID
}

// Cohort is a member's cohort in a period of a board's cohort window.
type Cohort struct {
	Board, Window, Period string
	ID                    string   // "<key>/<n>", n from 1; key "all" when everyone is together
	Key                   string   // the placement key
	Members               []string // in order of placement
}
