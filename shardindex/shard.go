package shardindex

import "hash/fnv"

// A board of the scale-out store splits its members into shards, so that writes to one board
// proceed in parallel, each shard under its own lock in the store and with a version of its
// own in the index (docs/design.md, "The scale-out store"). The index ranks the board's
// members whole: a shard is who changes a member, not where it is ranked.

// ShardOf returns the shard, from 0 to n-1, that holds member on a board of n shards: a hash
// of the member's bytes. Every store and index serving a board must agree on it, so it never
// changes.
func ShardOf(member string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(member))
	return int(h.Sum32() % uint32(n))
}

// Shard names one shard of a board: shard Number of Count.
type Shard struct {
	Number, Count int
}
