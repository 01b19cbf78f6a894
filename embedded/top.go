package embedded

import (
	"context"
	"errors"
	"strings"

	"github.com/laurel/laurel"
)

// Published tops.
//
// A leaderboard's first page is what most reads ask for. After each commit, still holding the
// write lock, the writer publishes for each window of the boards it changed the first
// topRanks entries of the current span, with their names: an immutable view that a read of
// such a page answers from without taking the store's lock, so that it never waits for a
// group's apply and copies nothing. Anything else (a deeper page, a score range,
// metadata, another instant or period, a member's entry) falls back to the locked read. A view
// holds until the span ends or the board has work due (a period to close, a bucket to leave);
// a change beyond single boards (a profile, a hidden member, a deleted board) withdraws every
// view until the board's next commit publishes it again.

// topRanks is how many ranks a published view holds: the API's default page and more.
const topRanks = 100

// topView is a window's published top.
type topView struct {
	gen           uint64 // the store's topGen when published: a view of an older one is void
	board, window string
	order         laurel.Ordering
	period        laurel.PeriodInfo // of the current span, with its total
	until         int64             // unix ms from which the view no longer holds
	entries       []laurel.Entry    // ranks 1…len, names filled
}

// topKey names a view; window "" is the board's first window, as a read without one.
type topKey struct{ board, window string }

// errOutsideTop is what a view's ranking answers for what it does not hold.
var errOutsideTop = errors.New("embedded: outside the published top")

// publishTops publishes the views of the boards tx changed, under the write lock.
func (s *Store) publishTops(tx *txn) {
	gen := s.topGen.Load()
	if tx.global {
		gen = s.topGen.Add(1)
	}
	now := s.now()
	for b := range tx.touched {
		if s.boards[b.cfg.ID] != b {
			continue // deleted since
		}
		names := b.namesFor(gen)
		for i, w := range b.windows {
			v := s.topOf(b, w, now, names)
			if b.tagged.Load() && w.w.IsRolling() {
				v = &topView{until: noTime} // its entries' tags are looked up as they are read (tags.go)
			}
			v.gen = gen
			s.tops.Store(topKey{b.cfg.ID, w.name}, v)
			if i == 0 {
				s.tops.Store(topKey{b.cfg.ID, ""}, v)
			}
		}
	}
}

// memberName is a member's id, copied out of the board's arena, and its profile's name.
type memberName struct{ member, name string }

// topNamesKept bounds the names a board keeps between publishes: some windows' tops and
// the members who passed through them since the last profile change.
const topNamesKept = 16 * topRanks

// namesFor returns the names b's tops were published with at gen, to publish its next tops
// with: its windows share most of their tops, and a top changes by a few members a commit,
// so most names are found here rather than looked up in the profiles again (a map of every
// profile: 8% of the server's CPU paced at 5 000 events a second when looked up anew).
func (b *board) namesFor(gen uint64) map[uint32]memberName {
	if b.topNames == nil || b.topNamesGen != gen || len(b.topNames) > topNamesKept {
		b.topNames, b.topNamesGen = make(map[uint32]memberName), gen
	}
	return b.topNames
}

// topOf computes the view of w's current span at now; names holds the members of b already
// looked up, and keeps those it looks up.
func (s *Store) topOf(b *board, w *window, now int64, names map[uint32]memberName) *topView {
	v := &topView{board: b.cfg.ID, window: w.name, order: b.cfg.Ordering(), period: s.periodAt(b, w, now), until: b.deadline}
	if v.until == noTime {
		v.until = int64(^uint64(0) >> 1)
	}
	if p := v.period; p.End != 0 {
		v.until = min(v.until, p.End)
	}
	sp := s.currentSpan(b, w, now)
	if sp == nil {
		return v
	}
	v.period.Total = sp.tree.Len()
	v.entries = make([]laurel.Entry, 0, min(topRanks, sp.tree.Len()))
	for r, k := range sp.tree.CursorAt(1).Forward() {
		if len(v.entries) == topRanks {
			break
		}
		mn, ok := names[k.Member]
		if !ok {
			// A copy of the id: a name shares the members' arena, whose older arrays a view
			// kept alive as it grew (14 MiB at 300k members).
			mn.member = strings.Clone(b.members.name(k.Member))
			p, err := s.profile(mn.member)
			if err != nil {
				return &topView{until: noTime} // a view that never holds: reads take the lock
			}
			if p != nil {
				mn.name = p.Name
			}
			names[k.Member] = mn
		}
		v.entries = append(v.entries, laurel.Entry{Rank: r, Member: mn.member, Score: k.Score, Sub: k.Sub, ReachedAt: k.At, Name: mn.name, Tag: sp.tagOf(k.Member)})
	}
	return v
}

// readTop answers q from a published view when it can: ok is false when no view holds (the
// caller then reads under the lock), or when fn asked for what the view does not hold.
func (s *Store) readTop(q laurel.Query, now int64, fn func(laurel.Reading) error) (ok bool, err error) {
	if q.HasAt || q.Period != "" || q.Metadata {
		return false, nil
	}
	found, _ := s.tops.Load(topKey{q.Board, q.Window})
	v, _ := found.(*topView)
	if v == nil || v.gen != s.topGen.Load() || now >= v.until {
		return false, nil
	}
	err = fn(laurel.Reading{Board: v.board, Window: v.window, Order: v.order, At: now, Period: v.period,
		Ranking: topRanking{v}, Fill: func([]laurel.Entry, bool) error { return nil }})
	if errors.Is(err, errOutsideTop) {
		return false, nil
	}
	return true, err
}

// topRanking is a view as a laurel.Ranking: its pages within the view, and nothing else.
type topRanking struct{ v *topView }

func (t topRanking) Total(context.Context) (int, error) { return t.v.period.Total, nil }

// Page returns the view's own entries, shared by every read of it, not a copy: a copy of a
// page of 100 was half of all the server allocated under readers and writers flat out, and
// so half its collections (docs/benchmarks.md, "Where a top-100 read's time goes"). The
// reads only read a page's entries (the view's Fill has nothing to fill), and the slice's
// capacity ends with it, so an append copies.
func (t topRanking) Page(_ context.Context, from, n int) ([]laurel.Entry, error) {
	held := len(t.v.entries)
	if from < 1 || (from-1+n > held && held < t.v.period.Total) {
		return nil, errOutsideTop
	}
	from = min(from, held+1)
	end := min(from-1+n, held)
	return t.v.entries[from-1 : end : end], nil
}

func (topRanking) Entries(context.Context, []string) ([]laurel.Entry, error) {
	return nil, errOutsideTop
}

func (topRanking) Search(context.Context, laurel.Key) (int, error) { return 0, errOutsideTop }
