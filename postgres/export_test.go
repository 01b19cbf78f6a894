package postgres

import "fmt"

// KeyLookup is a statement that finds a write's rows by key (lookups.go), with arguments of
// its types, and the columns of Table whose index it must probe.
type KeyLookup struct {
	Name  string
	SQL   string
	Args  []any
	Table string
	Keys  []string
}

var KeyLookups = []KeyLookup{
	{"read aggregates", readAggsSQL, []any{"b", []string{"all", "day"}, []int64{0, 86_400_000}, []string{"m1", "m2"}}, "laurel_aggs", []string{"board", "win", "span", "member"}},
	{"delete aggregates", deleteAggsSQL, []any{"b", []string{"all", "day"}, []int64{0, 86_400_000}, []string{"m1", "m2"}}, "laurel_aggs", []string{"board", "win", "span", "member"}},
	{"read aggregates with subscores", readAggsSubSQL, []any{"b", []string{"all", "day"}, []int64{0, 86_400_000}, []string{"m1", "m2"}}, "laurel_aggs", []string{"board", "win", "span", "member"}},
	{"read members' rows", readMemberRowsSQL, []any{"b", []string{"m1", "m2"}}, "laurel_members", []string{"board", "member"}},
	{"delete members' rows", deleteRowsSQL, []any{"b", []string{"m1", "m2"}}, "laurel_members", []string{"board", "member"}},
	{"read ids", readIDsSQL, []any{"b", []string{"e1", "e2"}}, "laurel_events", []string{"board", "id"}},
	{"read ids with subscores", readIDsSubSQL, []any{"b", []string{"e1", "e2"}}, "laurel_events", []string{"board", "id"}},
	{"read closed periods", readFrozenSQL, []any{"b", "day", int64(0), []string{"m1", "m2"}}, "laurel_frozen", []string{"board", "win", "span", "member"}},
	{"record history", insertHistorySQL, []any{[]string{"b", "b"}, []string{"m1", "m2"}, []int64{1, 2}, []int64{0, 0}, []string{"{}", "{}"}}, "laurel_events", []string{"board", "seq"}},
}

// ShardLock is the advisory lock of shard i of a board of e.
func ShardLock(e *Store, board string, i int) int64 { return shardLockKey(e.ns, board, i) }

// Queued counts the submits of e waiting for a step.
func Queued(e *Store) int {
	e.submits.mu.Lock()
	defer e.submits.mu.Unlock()
	n := 0
	for _, q := range e.submits.pending {
		n += len(q)
	}
	return n
}

// EncodePoints encodes the history points of one event: windows[i] at scores[i], ranks[i].
func EncodePoints(windows []string, scores []int64, ranks []int) string {
	points := make([]historyPoint, len(windows))
	for i := range windows {
		points[i] = historyPoint{window: windows[i], score: scores[i], rank: ranks[i]}
	}
	return encodePoints(points)
}

// CachedAggregates counts the buckets and members' rows e keeps from its submits.
func CachedAggregates(e *Store) int {
	e.aggs.mu.Lock()
	defer e.aggs.mu.Unlock()
	n := 0
	for _, sa := range e.aggs.shards {
		n += len(sa.aggs)
		for _, r := range sa.rows {
			n += max(len(r.elems), 1)
		}
	}
	if n != e.aggs.entries {
		panic(fmt.Sprintf("the aggregate cache counts %d entries and holds %d", e.aggs.entries, n))
	}
	return n
}

// WithoutStamps makes a store commit as a version before stamps did: it leaves the shards'
// stamps as they are.
func WithoutStamps(o Options) Options {
	o.noStamps = true
	return o
}
