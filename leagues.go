package laurel

// Leagues are cohorts placed by tier (docs/design.md, "Leagues"): a board's Cohorts with Tiers
// set place each member among the members of its tier, and each closed period of the cohort
// window moves the first Promote of each cohort up a tier and the last Demote down one.
// Package competition keeps the tiers; these are what the API reads of them.

// Limits of tiers.
const (
	MaxTiers     = 20
	MaxTierName  = 32
	MaxTierMoves = 50 // moves kept in a member's tier history
)

// TierMove is what one closed period did to a member's tier.
type TierMove struct {
	Period string `json:"period"`
	From   string `json:"from"`
	To     string `json:"to"`
	Cohort string `json:"cohort,omitempty"` // "" when the member did not play
	Rank   int    `json:"rank,omitempty"`   // within its cohort
	Of     int    `json:"of,omitempty"`     // members ranked in its cohort
}

// Tier is a member's tier on a board with leagues, as of the periods closed so far.
type Tier struct {
	Board, Member string
	Tier          string
	Moves         []TierMove // newest first
}
