package postgres

// The statements that find a few rows by key in a board of any size: a write's aggregates,
// ids and events, and a read's members of a closed period.
//
// Each is written as a probe per key (a lateral subquery that OFFSET 0 keeps from being
// merged into a join), so that its plan is an index lookup per key whatever PostgreSQL knows
// of the tables' sizes. Written as a join of the keys with the table, the planner was free to
// hash the keys and scan the board's rows instead, which it chose for a board that was new
// when the plan was made — and kept, as a prepared statement's generic plan, while the board
// grew: a write then read the whole board (docs/decisions.md, "A write reads what it needs,
// whatever the plan cache holds"). TestKeyLookupPlans checks each plan.

// readAggsSQL reads the aggregates of (window, span, member) keys of board $1; on a board
// with a subscore, readAggsSubSQL, with their subscores. The hot statements of a write
// (readIDsSQL, the step's inserts) come in the two forms too, so that a board without a
// subscore runs the statements it ran before there were any.
const (
	readAggsSQL = `SELECT k.win, k.span, k.member, a.score, a.at
	FROM unnest($2::text[], $3::bigint[], $4::text[]) AS k(win, span, member)
	CROSS JOIN LATERAL (SELECT score, at FROM laurel_aggs
		WHERE board = $1 AND win = k.win AND span = k.span AND member = k.member OFFSET 0) a`
	readAggsSubSQL = `SELECT k.win, k.span, k.member, a.score, a.at, coalesce(a.sub, 0)
	FROM unnest($2::text[], $3::bigint[], $4::text[]) AS k(win, span, member)
	CROSS JOIN LATERAL (SELECT score, at, sub FROM laurel_aggs
		WHERE board = $1 AND win = k.win AND span = k.span AND member = k.member OFFSET 0) a`
)

// deleteAggsSQL deletes the aggregates of (window, span, member) keys of board $1.
const deleteAggsSQL = `DELETE FROM laurel_aggs WHERE ctid IN (SELECT a.ctid
	FROM unnest($2::text[], $3::bigint[], $4::text[]) AS k(win, span, member)
	CROSS JOIN LATERAL (SELECT ctid FROM laurel_aggs
		WHERE board = $1 AND win = k.win AND span = k.span AND member = k.member OFFSET 0) a)`

// readIDsSQL reads the counted events of board $1 with the ids $2; readIDsSubSQL, with their
// subscores.
const (
	readIDsSQL = `SELECT e.id, e.seq, e.member, e.value, e.ts FROM unnest($2::text[]) AS k(id)
	CROSS JOIN LATERAL (SELECT id, seq, member, value, ts FROM laurel_events
		WHERE board = $1 AND id = k.id AND NOT retracted OFFSET 0) e`
	readIDsSubSQL = `SELECT e.id, e.seq, e.member, e.value, e.ts, coalesce(e.sub, 0) FROM unnest($2::text[]) AS k(id)
	CROSS JOIN LATERAL (SELECT id, seq, member, value, ts, sub FROM laurel_events
		WHERE board = $1 AND id = k.id AND NOT retracted OFFSET 0) e`
)

// readFrozenSQL reads the frozen entries of members $4 in the closed period of board $1,
// window $2, starting at $3.
const readFrozenSQL = `SELECT f.rank, k.member, f.score, coalesce(f.sub, 0), f.at FROM unnest($4::text[]) AS k(member)
	CROSS JOIN LATERAL (SELECT rank, score, sub, at FROM laurel_frozen
		WHERE board = $1 AND win = $2 AND span = $3 AND member = k.member OFFSET 0) f`

// insertHistorySQL records history points of events that are still counted, and holds their
// rows against a retraction until it commits (history.go). Run alone, it is its own
// transaction, and its set_config makes that transaction's commit not wait for the disk.
// Points are new the first time they are sent: a plain insert, which costs PostgreSQL less
// than one that checks for conflicts (docs/benchmarks.md).
const insertHistorySQL = `INSERT INTO laurel_history (board, member, seq, ts, points)
	SELECT k.* FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[]) AS k(board, member, seq, ts, points)
	CROSS JOIN LATERAL (SELECT FROM laurel_events
		WHERE board = k.board AND seq = k.seq AND NOT retracted OFFSET 0 FOR SHARE) e
	WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL`

// insertHistoryAgainSQL is insertHistorySQL sent again, after a connection lost: it skips the
// points stored already.
const insertHistoryAgainSQL = insertHistorySQL + `
	ON CONFLICT DO NOTHING`
