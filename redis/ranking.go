package redis

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/laurel/laurel"
	"github.com/redis/rueidis"
)

// ranking is one set of a board read as of a state stamp. It holds no entries: every read is
// one script call that checks the stamp first.
type ranking struct {
	ctx   context.Context // the Ranking interface carries none, so the one it was made with
	x     *Index
	board string
	order laurel.Order
	keys  []string // meta, zset, hash
	stamp string
}

func (r *ranking) read(args ...string) rueidis.RedisResult {
	return readScript.Exec(r.ctx, r.x.client, r.keys, append([]string{r.stamp}, args...))
}

func (r *ranking) err(err error, what string) error {
	return stale(err, what, r.board)
}

func (r *ranking) Total() (int, error) {
	n, err := r.read("n").AsInt64()
	if err != nil {
		return 0, r.err(err, "counting a set")
	}
	return int(n), nil
}

// Page reads ranks from to from+n-1 with one ZRANGE by index. Ranks start at 1: a from below
// 1, an n of 0 or less, or a from past the end gives no entries.
func (r *ranking) Page(from, n int) ([]laurel.Entry, error) {
	if from < 1 || n <= 0 {
		return nil, nil
	}
	stop := int64(-1) // to the end
	if int64(n) <= math.MaxInt64-int64(from) {
		stop = int64(from) - 1 + int64(n) - 1
	}
	ms, err := r.read("p", strconv.Itoa(from-1), strconv.FormatInt(stop, 10)).ToArray()
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
func (r *ranking) Entries(members []string) ([]laurel.Entry, error) {
	args := make([]string, 0, 2+len(members))
	args = append(args, r.stamp, "e")
	seen := make(map[string]struct{}, len(members))
	for _, m := range members {
		if _, ok := seen[m]; !ok && m != "" {
			seen[m] = struct{}{}
			args = append(args, m)
		}
	}
	res, err := readScript.Exec(r.ctx, r.x.client, r.keys, args).ToArray()
	if err != nil {
		return nil, r.err(err, "reading entries")
	}
	if len(res)%2 != 0 {
		return nil, fmt.Errorf("redis: reading entries of board %q: odd reply of %d values", r.board, len(res))
	}
	out := make([]laurel.Entry, len(res)/2)
	for i := range out {
		rank, err := res[2*i].AsInt64()
		if err != nil {
			return nil, r.err(err, "reading entries")
		}
		key, err := res[2*i+1].ToString()
		if err != nil {
			return nil, r.err(err, "reading entries")
		}
		if out[i], err = r.entry(int(rank)+1, key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Search counts the members whose key sorts before (score, at)'s 16-byte prefix: as every
// key is longer than its prefix, those are exactly the entries that rank before (score, at).
func (r *ranking) Search(score, at int64) (int, error) {
	p := encodePrefix(r.order, score, at)
	n, err := r.read("s", "("+string(p[:])).AsInt64()
	if err != nil {
		return 0, r.err(err, "searching a set")
	}
	return int(n) + 1, nil
}

// entry decodes a zset member into the entry ranked rank.
func (r *ranking) entry(rank int, key string) (laurel.Entry, error) {
	if len(key) <= prefixLen {
		return laurel.Entry{}, fmt.Errorf("redis: board %q holds a malformed key %q", r.board, key)
	}
	score, at := decodePrefix(r.order, key)
	return laurel.Entry{Rank: rank, Member: key[prefixLen:], Score: score, ReachedAt: at}, nil
}
