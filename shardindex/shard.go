package shardindex

// A board of the scale-out store splits its members into shards, so that writes to one board
// proceed in parallel, each shard under its own lock in the store and with a version of its
// own in the index (docs/design.md, "The scale-out store"). The index ranks the board's
// members whole: a shard is who changes a member, not where it is ranked.

// ShardOf returns the shard, from 0 to n-1, that holds member on a board of n shards: a hash
// of the member's bytes, 32-bit FNV-1a. Every store and index serving a board must agree on it,
// so it never changes. Written out rather than by hash/fnv, whose hasher and the member's
// bytes were two allocations each of the few times a step asks it of each changed entry.
func ShardOf(member string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(member); i++ {
		h ^= uint32(member[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// Shard names one shard of a board: shard Number of Count.
type Shard struct {
	Number, Count int
}
