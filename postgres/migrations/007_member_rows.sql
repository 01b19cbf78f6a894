-- A member's row (docs/decisions.md, "A member's row: what a write changes, in one row"): of
-- a member's aggregates on a board, those a write changes and reads again — all, the open
-- calendar periods' and each rolling window's current span — are the elements of one row,
-- in arrays of equal length (subs NULL on a board without a subscore), so that a step writes
-- two rows an event (the member's and its bucket's) rather than five. A rolling window's
-- buckets stay rows of laurel_aggs, one an event, read by span for rolls and past instants.
-- An element of a calendar period that has closed may stay in a row until the member's next
-- write drops it: reads take a span's elements only while the board's state says it is open.
CREATE TABLE laurel_members (
	board  text COLLATE "C" NOT NULL,
	member text COLLATE "C" NOT NULL,
	wins   text[]   NOT NULL,
	spans  bigint[] NOT NULL,
	scores bigint[] NOT NULL,
	ats    bigint[] NOT NULL,
	subs   bigint[],
	PRIMARY KEY (board, member)
);

-- A member row's elements, one a row: what reads of a window's span read.
CREATE VIEW laurel_member_aggs AS
	SELECT m.board, m.member, e.win, e.span, e.score, e.at, e.sub
	FROM laurel_members m
	CROSS JOIN LATERAL unnest(m.wins, m.spans, m.scores, m.ats, m.subs) AS e(win, span, score, at, sub);

-- Every aggregate but a rolling bucket (a rolling window is last<N>d or last<N>h; its current
-- span is -2^63) moves into its member's row: the statement an import runs for its board
-- (moveToMemberRowsSQL).
WITH moved AS (
	DELETE FROM laurel_aggs WHERE NOT (win LIKE 'last%' AND span <> -9223372036854775808)
	RETURNING board, member, win, span, score, at, sub)
INSERT INTO laurel_members (board, member, wins, spans, scores, ats, subs)
SELECT board, member, array_agg(win ORDER BY win, span), array_agg(span ORDER BY win, span),
	array_agg(score ORDER BY win, span), array_agg(at ORDER BY win, span),
	CASE WHEN bool_or(sub IS NOT NULL) THEN array_agg(coalesce(sub, 0) ORDER BY win, span) END
FROM moved GROUP BY board, member;
