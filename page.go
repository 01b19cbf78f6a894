package laurel

import "encoding/json"

// Entry is one member's place in a ranking.
type Entry struct {
	Rank      int
	Member    string
	Score     int64
	Sub       int64 // the subscore, on a board that has one (0 otherwise)
	ReachedAt int64 // unix ms
	Name      string
	Metadata  json.RawMessage // set only when the read asked for metadata
	// Percentile is set by the reads about members (member, around, lookup): the share of
	// the others ranked with it that the entry beats (Percentile).
	Percentile *float64
	// Tag is the tag of the event that made the entry's score (TagOf); nil for none.
	Tag json.RawMessage
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
	HasSub  bool // the board has a subscore: its entries show theirs
}

// MemberEntry is one member's entry with the span it was read from.
type MemberEntry struct {
	Board  string
	Window string
	Period PeriodInfo
	Total  int
	Entry  Entry
	HasSub bool // as Page's
}

// HistoryPoint is a member's score and rank in a window right after one of its events: the
// standing its write answered with, in the window's current period at that moment.
type HistoryPoint struct {
	At    int64 // the event's time, unix ms
	Score int64
	Sub   int64 // the subscore, on a board that has one
	Rank  int
	Tag   json.RawMessage // the event's tag; nil for none
}
