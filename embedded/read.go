package embedded

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/rank"
)

// memView reads an in-memory span; a nil span is an empty ranking. It is a laurel.Ranking.
// Its entries carry the tags the span holds: a calendar window's or all's (tags.go).
type memView struct {
	b  *board
	w  *window
	sp *span
}

func (v memView) Total(context.Context) (int, error) { return v.total(), nil }

func (v memView) total() int {
	if v.sp == nil {
		return 0
	}
	return v.sp.tree.Len()
}

func (v memView) Page(_ context.Context, from, n int) ([]laurel.Entry, error) {
	if v.sp == nil {
		return nil, nil
	}
	var out []laurel.Entry
	for r, k := range v.sp.tree.CursorAt(from).Forward() {
		if len(out) == n {
			break
		}
		out = append(out, laurel.Entry{Rank: r, Member: v.b.members.name(k.Member), Score: k.Score, Sub: k.Sub, ReachedAt: k.At, Tag: v.sp.tagOf(k.Member)})
	}
	return out, nil
}

func (v memView) Entries(_ context.Context, members []string) ([]laurel.Entry, error) {
	var out []laurel.Entry
	for _, member := range members {
		if v.sp == nil {
			break
		}
		h, s, ok := slotOf(v.b, &v.sp.slots, member)
		if !ok {
			continue
		}
		if r, ok := v.sp.tree.Rank(treeKey(h, s)); ok {
			out = append(out, laurel.Entry{Rank: r, Member: member, Score: s.score, Sub: s.sub, ReachedAt: s.at, Tag: v.sp.tagOf(h)})
		}
	}
	return out, nil
}

// slotOf returns member's handle and aggregate in s, a span's or a bucket's.
func slotOf(b *board, s *slots, member string) (uint32, slot, bool) {
	h, ok := b.members.lookup(member)
	if !ok {
		return 0, slot{}, false
	}
	v, ok := s.get(h)
	return h, v, ok
}

func (v memView) Search(_ context.Context, k laurel.Key) (int, error) {
	if v.sp == nil {
		return 1, nil
	}
	c := v.sp.tree.Search(rank.Key{Score: k.Score, Sub: k.Sub, At: k.At})
	return c.Rank(), nil
}

// frozenView reads a closed period from the store. Its records hold ranks as frozen; ranks of
// members hidden or deleted since are skipped and the others close up.
type frozenView struct {
	r     pebble.Reader
	board string
	w     string
	order laurel.Ordering
	cp    *closedPeriod
}

func (v frozenView) Total(context.Context) (int, error) { return v.total(), nil }

func (v frozenView) total() int { return int(v.cp.total) - len(v.cp.excluded) }

func (v frozenView) Page(_ context.Context, from, n int) ([]laurel.Entry, error) {
	if from < 1 || from > v.total() || n <= 0 {
		return nil, nil
	}
	var out []laurel.Entry
	lo := rankKey(v.board, v.w, v.cp.start, laurel.FrozenRank(v.cp.excluded, from))
	hi := spanPrefix(tagRank, v.board, v.w, v.cp.start+1)
	p := len(spanPrefix(tagRank, v.board, v.w, v.cp.start))
	err := scan(v.r, lo, hi, func(k, val []byte) error {
		if len(out) == n {
			return errStop
		}
		raw := binary.BigEndian.Uint32(k[p:])
		if _, ok := slices.BinarySearch(v.cp.excluded, raw); ok {
			return nil
		}
		f, err := decodeFrozen(raw, val, v.order.HasSub)
		if err != nil {
			return err
		}
		out = append(out, laurel.Entry{Rank: laurel.VisibleRank(v.cp.excluded, raw), Member: f.member, Score: f.agg.score, Sub: f.agg.sub, ReachedAt: f.agg.at})
		return nil
	})
	if err == errStop {
		err = nil
	}
	return out, err
}

func (v frozenView) Entries(_ context.Context, members []string) ([]laurel.Entry, error) {
	var out []laurel.Entry
	for _, member := range members {
		raw, ok, err := frozenRankOf(v.r, v.board, v.w, v.cp.start, member)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if _, ex := slices.BinarySearch(v.cp.excluded, raw); ex {
			continue
		}
		val, ok, err := get(v.r, rankKey(v.board, v.w, v.cp.start, raw))
		if err != nil || !ok {
			return nil, err
		}
		f, err := decodeFrozen(raw, val, v.order.HasSub)
		if err != nil {
			return nil, err
		}
		out = append(out, laurel.Entry{Rank: laurel.VisibleRank(v.cp.excluded, raw), Member: member, Score: f.agg.score, Sub: f.agg.sub, ReachedAt: f.agg.at})
	}
	return out, nil
}

func (v frozenView) Search(ctx context.Context, k laurel.Key) (int, error) {
	return laurel.SearchByPage(ctx, v, v.order, k)
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}

// reading is a resolved Query: the ranking to answer from and what describes it. It holds
// the store's read lock until done.
type reading struct {
	e      *Store
	b      *board
	w      *window
	at     int64 // the instant read
	period laurel.PeriodInfo
	v      laurel.Ranking
}

func (rd *reading) done() { rd.e.mu.RUnlock() }

// resolve finds what q reads, catching the board up to now first. On success the caller must
// call done.
func (s *Store) resolve(ctx context.Context, q laurel.Query) (*reading, error) {
	if err := laurel.ValidateBoardID(q.Board); err != nil {
		return nil, err
	}
	if q.HasAt && q.Period != "" {
		return nil, laurel.FieldErrorf(laurel.EInvalid, "period", "give either at or period, not both")
	}
	now := s.now()
	s.mu.RLock()
	b, err := s.lookupBoard(q.Board)
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := s.catchUp(ctx, b, now); err != nil {
		return nil, err
	}
	s.mu.RLock()
	rd, err := s.resolveLocked(ctx, b, q, now)
	if err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	return rd, nil
}

func (s *Store) resolveLocked(ctx context.Context, b *board, q laurel.Query, now int64) (*reading, error) {
	if s.boards[b.cfg.ID] != b {
		return nil, laurel.ErrNoBoard(b.cfg.ID)
	}
	res, err := b.cfg.Resolve(q, now)
	if err != nil {
		return nil, err
	}
	w := b.window(res.Name)
	plan, err := laurel.Plan(&b.cfg, res, w.marks, w.open, w.closed, now)
	if err != nil {
		return nil, err
	}
	rd := &reading{e: s, b: b, w: w, at: res.At, period: plan.Period}
	switch plan.Source {
	case laurel.FromOpen:
		rd.v = memView{b, w, w.span(res.Period.Start)}
	case laurel.FromClosed:
		rd.v = frozenView{s.snap, b.cfg.ID, w.name, b.cfg.Ordering(), w.closed[plan.Closed]}
	case laurel.FromNothing:
		rd.v = memView{b, w, nil}
	case laurel.FromBuckets:
		aggs, err := loadBuckets(s.snap, b, w, w.inMemory(), res.Period.Start, res.Period.End)
		if err != nil {
			return nil, err
		}
		entries := make([]laurel.Entry, 0, len(aggs))
		for m, a := range aggs {
			if !s.hidden[m] {
				entries = append(entries, laurel.Entry{Member: m, Score: a.Score, Sub: a.Sub, ReachedAt: a.At})
			}
		}
		rd.v = laurel.NewSortedRanking(b.cfg.Ordering(), entries)
	}
	rd.period.Total, err = rd.v.Total(ctx)
	return rd, err
}

// fill adds profiles (name, and metadata when asked) and tags to entries.
func (rd *reading) fill(entries []laurel.Entry, metadata bool) error {
	if err := rd.tags(entries); err != nil {
		return err
	}
	for i := range entries {
		p, err := rd.e.profile(entries[i].Member)
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		entries[i].Name = p.Name
		if metadata && p.Metadata != nil {
			entries[i].Metadata = p.Metadata
		}
	}
	return nil
}

// Read resolves q and calls fn with its reading: from a published top when one holds and
// suffices (top.go), else under the store's read lock.
func (s *Store) Read(ctx context.Context, q laurel.Query, fn func(laurel.Reading) error) error {
	if ok, err := s.readTop(q, s.now(), fn); ok {
		return err
	}
	rd, err := s.resolve(ctx, q)
	if err != nil {
		return err
	}
	defer rd.done()
	return fn(laurel.Reading{Board: rd.b.cfg.ID, Window: rd.w.name, Order: rd.b.cfg.Ordering(), At: rd.at,
		Period: rd.period, Ranking: rd.v, Fill: rd.fill})
}

// Periods lists a calendar window's kept periods, newest first: the current one, the open
// ones that still take late events, and the closed ones.
func (s *Store) Periods(ctx context.Context, boardID, windowName string) ([]laurel.PeriodInfo, error) {
	rd, err := s.resolve(ctx, laurel.Query{Board: boardID, Window: windowName})
	if err != nil {
		return nil, err
	}
	defer rd.done()
	w := rd.w
	return laurel.PeriodList(&rd.b.cfg, w.w, rd.period, w.open, w.closed,
		func(i int) int { return w.open[i].tree.Len() },
		func(i int) int { return frozenView{cp: w.closed[i]}.total() })
}
