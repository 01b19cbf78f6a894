package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/laurel/laurel/shardindex"
)

// What a step locks. Writes to one board proceed in parallel, one per shard: a write locks the
// shards of the members it touches (a session advisory lock per shard), and only what changes
// the board as a whole — its state: a period that opens or closes, a rolling window that
// moves, its configuration, a rebuild — locks the whole board: the board's own lock and every
// shard's. Every step takes all its locks in one statement, in the order of their keys, so
// steps cannot deadlock. A write that finds, once its shards are locked, that it must change
// the board's state gives its locks back and starts again with the whole board locked.
//
// A step may also ask for shards it does not need: those that no other session holds, it
// gets; those that one does, it goes without, never waiting for them. A node's group of
// submits to a board tries its submits' shards (events.go, submits), so that a node writing
// alone writes all its submits to a board in one step, one commit, while nodes writing
// together each take the shards left free.

// target is what a step locks of a board.
type target struct {
	board   string
	members []string // the step locks the shards of these members
	maybe   []string // and those of these members that no other session holds
	whole   bool     // the step locks the board and every shard of it
}

// wholeBoard is a target that locks all of a board.
func wholeBoard(board string) target { return target{board: board, whole: true} }

// needWhole is what a step answers when it must change a board's state but holds only some
// of its shards: the write starts again with the whole board locked.
type needWhole struct{ board string }

func (e *needWhole) Error() string {
	return fmt.Sprintf("postgres: board %q must be locked whole", e.board)
}

// errShardsChanged ends a step that locked a board's shards by a shard count that is no
// longer the board's (it was resharded, deleted or created meanwhile): the write starts
// again with the count the step found.
var errShardsChanged = errors.New("postgres: the board's shard count changed")

// maxStarts bounds how often a write starts again for the reasons above.
const maxStarts = 8

// lockKey is the advisory lock of a board in a schema.
func lockKey(schema, board string) int64 {
	h := fnv.New64a()
	h.Write([]byte(schema))
	h.Write([]byte{0})
	h.Write([]byte(board))
	return int64(h.Sum64())
}

// shardLockKey is the advisory lock of shard i of a board.
func shardLockKey(schema, board string, i int) int64 {
	return lockKey(schema, board+"\x00"+strconv.Itoa(i))
}

// idLockKeys are the transaction advisory locks of event ids, in the two-int key space, apart
// from the boards' and shards' locks. Ids are unique per board, not per shard: two writes to
// different shards that use one id take its lock in turn, so the second sees the first's event
// and answers duplicate or conflict, rather than both passing and the second failing on the
// unique index at its commit.
func idLockKeys(schema, board string, ids []string) (hi, lo []int32) {
	keys := make([]int64, 0, len(ids))
	for _, id := range ids {
		keys = append(keys, lockKey(schema, board+"\x00"+id))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, k := range keys {
		hi, lo = append(hi, int32(k>>32)), append(lo, int32(k))
	}
	return hi, lo
}

// counts returns the shard count of each board, 0 for a board that does not exist.
func (s *Store) counts(ctx context.Context, boards []string) (map[string]int, error) {
	out := make(map[string]int, len(boards))
	var ask []string
	for _, b := range boards {
		if n, ok := s.shardCounts.get(b); ok {
			out[b] = n
		} else {
			ask = append(ask, b)
			out[b] = 0
		}
	}
	if len(ask) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT id, state FROM laurel_boards WHERE id = ANY($1)", ask)
	if err != nil {
		return nil, fmt.Errorf("postgres: read shard counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, err
		}
		st, err := s.states.parse(id, raw)
		if err != nil {
			return nil, err
		}
		out[id] = st.shards()
		s.shardCounts.put(id, st.shards())
	}
	return out, rows.Err()
}

// lockKeys returns the locks of targets, sorted, given the boards' shard counts, and apart
// the locks the step tries; a board that does not exist is locked by its own lock alone.
func (s *Store) lockKeys(targets []target, counts map[string]int) (keys, tries []int64) {
	for _, t := range targets {
		n := counts[t.board]
		if t.whole || n == 0 {
			keys = append(keys, lockKey(s.ns, t.board))
			for i := range n {
				keys = append(keys, shardLockKey(s.ns, t.board, i))
			}
			continue
		}
		for _, m := range t.members {
			keys = append(keys, shardLockKey(s.ns, t.board, shardindex.ShardOf(m, n)))
		}
		for _, m := range t.maybe {
			tries = append(tries, shardLockKey(s.ns, t.board, shardindex.ShardOf(m, n)))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	slices.Sort(tries)
	tries = slices.DeleteFunc(slices.Compact(tries), func(k int64) bool {
		_, found := slices.BinarySearch(keys, k)
		return found
	})
	return keys, tries
}
