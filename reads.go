package laurel

import "context"

// Reading is a read resolved by a store: the ranking that answers it (chosen by Plan) and
// what describes it.
type Reading struct {
	Board   string
	Window  string // the window's name
	Order   Ordering
	At      int64 // the instant read, unix ms
	Period  PeriodInfo
	Ranking Ranking
	// Fill adds profiles to entries: names, and metadata when asked.
	Fill func(entries []Entry, metadata bool) error
}

// Reader is what a store does for the reads of the API: resolve a query into a Reading.
type Reader interface {
	// Read resolves q and calls fn with its reading, under whatever keeps the reading
	// consistent (a lock, a snapshot). A store whose state can change under a read may call
	// fn again with a new reading, so fn must be safe to repeat; fn's error is Read's.
	Read(ctx context.Context, q Query, fn func(rd Reading) error) error
}

// Reads answers the ranking reads of Service — Page, Member, Around, Lookup, RankOf,
// Distribution — over a
// store's Reader, so that validation, paging, around-me, lookups, totals and profiles are
// written once for every store. A store embeds it.
type Reads struct{ Reader Reader }

// Page returns consecutive ranks from offset, limit of them; with a score range, only the
// entries whose score lies in it, offset and limit applying within them.
func (r Reads) Page(ctx context.Context, q Query, offset, limit int, sr ScoreRange) (Page, error) {
	limit, err := ValidatePage(offset, limit, sr)
	if err != nil {
		return Page{}, err
	}
	var page Page
	err = r.read(ctx, q, func(rd Reading) error {
		entries, total, err := PageOf(ctx, rd.Ranking, rd.Order, offset, limit, sr)
		if err != nil {
			return err
		}
		page, err = rd.page(entries, total, q.Metadata)
		return err
	})
	return page, err
}

// Member returns one member's entry; ENotFound when it is not ranked.
func (r Reads) Member(ctx context.Context, q Query, member string) (MemberEntry, error) {
	if err := ValidateMember("member", member); err != nil {
		return MemberEntry{}, err
	}
	var me MemberEntry
	err := r.read(ctx, q, func(rd Reading) error {
		en, total, err := MemberOf(ctx, rd.Ranking, rd.Board, rd.Window, member)
		if err != nil {
			return err
		}
		page, err := rd.page([]Entry{en}, total, q.Metadata)
		if err != nil {
			return err
		}
		withPercentiles(page.Entries, total)
		me = MemberEntry{Board: page.Board, Window: page.Window, Period: page.Period, Total: page.Total, Entry: page.Entries[0], HasSub: page.HasSub}
		return nil
	})
	return me, err
}

// Around returns up to 2·radius+1 consecutive entries centred on member, shifted to stay
// within 1…total.
func (r Reads) Around(ctx context.Context, q Query, member string, radius int) (Page, error) {
	if err := ValidateAround(member, radius); err != nil {
		return Page{}, err
	}
	var page Page
	err := r.read(ctx, q, func(rd Reading) error {
		entries, total, err := AroundOf(ctx, rd.Ranking, rd.Board, rd.Window, member, radius)
		if err != nil {
			return err
		}
		withPercentiles(entries, total)
		page, err = rd.page(entries, total, q.Metadata)
		return err
	})
	return page, err
}

// Lookup returns the entries of the members ranked, in rank order, each once.
func (r Reads) Lookup(ctx context.Context, q Query, members []string) (Page, error) {
	if err := ValidateLookup(members); err != nil {
		return Page{}, err
	}
	var page Page
	err := r.read(ctx, q, func(rd Reading) error {
		entries, total, err := LookupOf(ctx, rd.Ranking, members)
		if err != nil {
			return err
		}
		withPercentiles(entries, total)
		page, err = rd.page(entries, total, q.Metadata)
		return err
	})
	return page, err
}

// RankOf returns the rank a member reaching score and subscore (0 on a board without one) at
// the instant read would get (after the members already there with the same pair), and the
// total.
func (r Reads) RankOf(ctx context.Context, q Query, score, sub int64) (rank, total int, err error) {
	err = r.read(ctx, q, func(rd Reading) error {
		if sub != 0 && !rd.Order.HasSub {
			return FieldErrorf(EInvalid, "subscore", "board %q has no subscore", rd.Board)
		}
		var err error
		rank, total, err = RankOfScore(ctx, rd.Ranking, Key{score, sub, rd.At})
		return err
	})
	return rank, total, err
}

// Distribution returns the histogram h of the scores ranked in the span read.
func (r Reads) Distribution(ctx context.Context, q Query, h Histogram) (Distribution, error) {
	h, err := ValidateHistogram(h)
	if err != nil {
		return Distribution{}, err
	}
	var d Distribution
	err = r.read(ctx, q, func(rd Reading) error {
		buckets, total, err := DistributionOf(ctx, rd.Ranking, rd.Order, h)
		if err != nil {
			return err
		}
		p := rd.Period
		p.Total = total
		d = Distribution{Board: rd.Board, Window: rd.Window, Period: p, Total: total, Buckets: buckets}
		return nil
	})
	return d, err
}

// page makes entries, with their profiles, a page of the reading with its total.
func (rd Reading) page(entries []Entry, total int, metadata bool) (Page, error) {
	if err := rd.Fill(entries, metadata); err != nil {
		return Page{}, err
	}
	p := rd.Period
	p.Total = total
	return Page{Board: rd.Board, Window: rd.Window, Period: p, Total: total, Entries: entries, HasSub: rd.Order.HasSub}, nil
}

// read resolves q through the store's Reader. A store alone keeps no cohorts: package
// competition does, and reads them from the store as lookups without one, so a query for a cohort that
// reaches a store is refused rather than answered for the whole board.
func (r Reads) read(ctx context.Context, q Query, fn func(Reading) error) error {
	if q.Cohort != "" {
		return FieldErrorf(EInvalid, "cohort", "this service keeps no cohorts")
	}
	return r.Reader.Read(ctx, q, fn)
}
