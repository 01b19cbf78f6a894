package redis

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
	"github.com/redis/rueidis"
)

// A ranking answers each read of docs/api.md in one script call: a signature of the root
// package's that it stops matching must not silently cost round trips.
var (
	_ laurel.RankingReads    = (*ranking)(nil)
	_ laurel.RankingSearches = (*ranking)(nil)
	_ laurel.RankingEnds     = (*ranking)(nil)
)

// ranking is one set of a board read as of a state stamp. It holds no entries: every read is
// one script call that checks every shard's stamp first, and each read of docs/api.md is one
// read (laurel.RankingReads).
type ranking struct {
	x     *Index
	board string
	order laurel.Ordering
	count int // the board's shards
	keys  keys
	name  string   // the set's
	head  []string // the stamp and the shard count, readScript's first arguments
}

// read runs readScript on the set, its hashes those of hashes (shard numbers).
func (r *ranking) read(ctx context.Context, hashes []int, args ...string) rueidis.RedisResult {
	keys := make([]string, 0, 2+len(hashes))
	keys = append(keys, r.keys.meta(), r.keys.zset(r.name))
	for _, i := range hashes {
		keys = append(keys, r.keys.hash(i, r.name))
	}
	args = append(slices.Clip(r.head), args...)
	return r.x.do(ctx, func() rueidis.RedisResult { return readScript.Exec(ctx, r.x.client, keys, args) })
}

func (r *ranking) err(err error, what string) error {
	return stale(err, what, r.board)
}

func (r *ranking) Total(ctx context.Context) (int, error) {
	n, err := r.read(ctx, nil, "n").AsInt64()
	if err != nil {
		return 0, r.err(err, "counting a set")
	}
	return int(n), nil
}

// Page reads ranks from to from+n-1 with one ZRANGE by index. Ranks start at 1: a from below
// 1, an n of 0 or less, or a from past the end gives no entries.
func (r *ranking) Page(ctx context.Context, from, n int) ([]laurel.Entry, error) {
	if from < 1 || n <= 0 {
		return nil, nil
	}
	stop := int64(-1) // to the end
	if int64(n) <= math.MaxInt64-int64(from) {
		stop = int64(from) - 1 + int64(n) - 1
	}
	ms, err := r.read(ctx, nil, "p", strconv.Itoa(from-1), strconv.FormatInt(stop, 10)).ToArray()
	if err != nil {
		return nil, r.err(err, "reading a page")
	}
	if len(ms) == 0 {
		return nil, nil
	}
	out := make([]laurel.Entry, len(ms))
	for i := range ms {
		key, err := ms[i].ToString()
		if err != nil {
			return nil, r.err(err, "reading a page")
		}
		if out[i], err = r.entry(from+i, key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Entries finds each member's prefix in the set's hash and its rank with ZRANK, all in one
// script call. Members asked for more than once are asked for once.
func (r *ranking) Entries(ctx context.Context, members []string) ([]laurel.Entry, error) {
	out, _, err := r.entries(ctx, "e", members)
	return out, err
}

// ReadEntries is Entries with the set's size, in the same script call.
func (r *ranking) ReadEntries(ctx context.Context, members []string) ([]laurel.Entry, int, error) {
	return r.entries(ctx, "E", members)
}

func (r *ranking) entries(ctx context.Context, op string, members []string) ([]laurel.Entry, int, error) {
	args := make([]string, 0, 1+2*len(members))
	args = append(args, op)
	var hashes []int
	seen := make(map[string]struct{}, len(members))
	for _, m := range members {
		if _, ok := seen[m]; ok || m == "" {
			continue
		}
		seen[m] = struct{}{}
		i := shardindex.ShardOf(m, r.count)
		at := slices.Index(hashes, i)
		if at < 0 {
			at = len(hashes)
			hashes = append(hashes, i)
		}
		args = append(args, strconv.Itoa(3+at), m)
	}
	res, err := r.read(ctx, hashes, args...).ToArray()
	if err != nil {
		return nil, 0, r.err(err, "reading entries")
	}
	total := -1
	if op == "E" {
		if total, err = r.int(res, 0); err != nil {
			return nil, 0, err
		}
		res = res[1:]
	}
	if len(res)%2 != 0 {
		return nil, 0, fmt.Errorf("redis: reading entries of board %q: odd reply of %d values", r.board, len(res))
	}
	out := make([]laurel.Entry, len(res)/2)
	for i := range out {
		rank, err := r.int(res, 2*i)
		if err != nil {
			return nil, 0, err
		}
		key, err := res[2*i+1].ToString()
		if err != nil {
			return nil, 0, r.err(err, "reading entries")
		}
		if out[i], err = r.entry(rank+1, key); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// ReadPage answers a page of docs/api.md, score range included, in one script call.
func (r *ranking) ReadPage(ctx context.Context, o laurel.Ordering, offset, limit int, sr laurel.ScoreRange) ([]laurel.Entry, int, error) {
	// The searches of laurel.PageBounds, as exclusive lex bounds: the range's first entry
	// is the first at or after the key before every entry with the best score, its end the
	// first after the key after every entry with the worst (Ordering.Bound).
	first, end := r.rangeBounds(sr)
	res, err := r.read(ctx, nil, "P", strconv.Itoa(offset), strconv.Itoa(limit), first, end).ToArray()
	if err != nil {
		return nil, 0, r.err(err, "reading a page")
	}
	return r.page(res)
}

// ReadAround answers a page around a member in one script call.
func (r *ranking) ReadAround(ctx context.Context, member string, radius int) ([]laurel.Entry, bool, int, error) {
	res, err := r.read(ctx, []int{shardindex.ShardOf(member, r.count)}, "A", member, strconv.Itoa(radius)).ToArray()
	if err != nil {
		return nil, false, 0, r.err(err, "reading around a member")
	}
	if len(res) == 2 {
		if from, err := r.int(res, 1); err != nil || from == 0 {
			total, _ := r.int(res, 0)
			return nil, false, total, err
		}
	}
	out, total, err := r.page(res)
	return out, err == nil, total, err
}

// page decodes a reply of the size, the first rank, then the zset members from it.
func (r *ranking) page(res []rueidis.RedisMessage) ([]laurel.Entry, int, error) {
	if len(res) < 2 {
		return nil, 0, fmt.Errorf("redis: reading a page of board %q: a reply of %d values", r.board, len(res))
	}
	total, err := r.int(res, 0)
	if err != nil {
		return nil, 0, err
	}
	from, err := r.int(res, 1)
	if err != nil {
		return nil, 0, err
	}
	var out []laurel.Entry
	for i, m := range res[2:] {
		key, err := m.ToString()
		if err != nil {
			return nil, 0, r.err(err, "reading a page")
		}
		en, err := r.entry(from+i, key)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, en)
	}
	return out, total, nil
}

// ReadRank is Search with the set's size, in one script call.
func (r *ranking) ReadRank(ctx context.Context, k laurel.Key) (int, int, error) {
	res, err := r.read(ctx, nil, "R", bound(r.order, k, "")).ToArray()
	if err != nil {
		return 0, 0, r.err(err, "searching a set")
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("redis: searching a set of board %q: a reply of %d values", r.board, len(res))
	}
	n, err := r.int(res, 0)
	if err != nil {
		return 0, 0, err
	}
	total, err := r.int(res, 1)
	return n + 1, total, err
}

// ReadSearches answers laurel.RankingSearches in one script call.
func (r *ranking) ReadSearches(ctx context.Context, keys []laurel.Entry) ([]int, int, error) {
	args := make([]string, 0, 1+len(keys))
	args = append(args, "B")
	for _, k := range keys {
		args = append(args, bound(r.order, k.Key(), ""))
	}
	res, err := r.read(ctx, nil, args...).AsIntSlice()
	if err != nil {
		return nil, 0, r.err(err, "counting entries")
	}
	if len(res) != 1+len(keys) {
		return nil, 0, fmt.Errorf("redis: counting entries of board %q: a reply of %d values", r.board, len(res))
	}
	ranks := make([]int, len(keys))
	for i := range ranks {
		ranks[i] = int(res[1+i]) + 1
	}
	return ranks, int(res[0]), nil
}

// ReadEnds answers laurel.RankingEnds in one script call.
func (r *ranking) ReadEnds(ctx context.Context) (laurel.Entry, laurel.Entry, int, error) {
	res, err := r.read(ctx, nil, "X").ToArray()
	if err != nil {
		return laurel.Entry{}, laurel.Entry{}, 0, r.err(err, "reading the ends of a set")
	}
	if len(res) != 3 {
		return laurel.Entry{}, laurel.Entry{}, 0, fmt.Errorf("redis: reading the ends of a set of board %q: a reply of %d values", r.board, len(res))
	}
	total, err := r.int(res, 0)
	if err != nil || total == 0 {
		return laurel.Entry{}, laurel.Entry{}, 0, err
	}
	var ends [2]laurel.Entry
	for i, rank := range []int{1, total} {
		key, err := res[1+i].ToString()
		if err != nil {
			return laurel.Entry{}, laurel.Entry{}, 0, r.err(err, "reading the ends of a set")
		}
		if ends[i], err = r.entry(rank, key); err != nil {
			return laurel.Entry{}, laurel.Entry{}, 0, err
		}
	}
	return ends[0], ends[1], total, nil
}

func (r *ranking) int(res []rueidis.RedisMessage, i int) (int, error) {
	n, err := res[i].AsInt64()
	if err != nil {
		return 0, r.err(err, "reading a reply")
	}
	return int(n), nil
}

// Search counts the members whose key sorts before k's prefix: as every key is longer than
// its prefix, those are exactly the entries that rank before k.
func (r *ranking) Search(ctx context.Context, k laurel.Key) (int, error) {
	n, err := r.read(ctx, nil, "s", bound(r.order, k, "")).AsInt64()
	if err != nil {
		return 0, r.err(err, "searching a set")
	}
	return int(n) + 1, nil
}

// entry decodes a zset member into the entry ranked rank.
func (r *ranking) entry(rank int, key string) (laurel.Entry, error) {
	n := prefixLenOf(r.order)
	if len(key) <= n {
		return laurel.Entry{}, fmt.Errorf("redis: board %q holds a malformed key %q", r.board, key)
	}
	k := decodePrefix(r.order, key)
	return laurel.Entry{Rank: rank, Member: key[n:], Score: k.Score, Sub: k.Sub, ReachedAt: k.At}, nil
}

// rangeBounds returns the exclusive lex bounds of a score range: the keys before every
// entry of its best score and after every entry of its worst ("" for a bound it has not).
func (r *ranking) rangeBounds(sr laurel.ScoreRange) (first, end string) {
	best, worst, hasBest, hasWorst := sr.Bounds(r.order.Score)
	if hasBest {
		first = bound(r.order, r.order.Bound(best, false), "")
	}
	if hasWorst {
		end = bound(r.order, r.order.Bound(worst, true), "")
	}
	return first, end
}
