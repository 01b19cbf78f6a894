package shardindex_test

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/laurel/laurel/shardindex"
)

// TestShardOf: a member's shard is 32-bit FNV-1a of its bytes modulo the count, whatever the
// build: the stores and the index of every node agree on it, and a board's rows and keys
// already written were placed by it.
func TestShardOf(t *testing.T) {
	members := []string{"", "a", "alice", "日本語", "member-000001", "\xff\x00", fmt.Sprint(1 << 40)}
	for i := range 1000 {
		members = append(members, fmt.Sprintf("m%d", i))
	}
	for _, m := range members {
		h := fnv.New32a()
		h.Write([]byte(m))
		for _, n := range []int{2, 3, 4, 7, 16} {
			if got, want := shardindex.ShardOf(m, n), int(h.Sum32()%uint32(n)); got != want {
				t.Fatalf("ShardOf(%q, %d) = %d, want %d", m, n, got, want)
			}
		}
		if got := shardindex.ShardOf(m, 1); got != 0 {
			t.Fatalf("ShardOf(%q, 1) = %d, want 0", m, got)
		}
	}
}
