-- A member's row (docs/decisions.md, "A member's windows in one row"): of a member's
-- aggregates on a board, those a write changes and reads again — all, the open calendar
-- periods' and each rolling window's current span — are the elements of one row, so that a
-- step writes two rows an event (the member's and its bucket's) rather than five. A rolling
-- window's buckets stay rows of laurel_aggs, one an event, read by span for rolls and past
-- instants. An element of a calendar period that has closed may stay in a row until the
-- member's next write drops it: reads take a span's elements only while the board's state
-- says it is open.
--
-- aggs packs the elements (postgres/memberrows.go, packRow): a byte giving each element's
-- width, 32, or 40 on a board with a subscore; then each element, its window's name padded
-- with spaces to 8 bytes, its span, score and reached_at, and its subscore where the row has
-- them, 8 bytes each, big-endian. The node decodes them; laurel_member_aggs shows them as rows
-- for people (slowly: seconds for 100 000 rows).
CREATE TABLE laurel_members (
	board  text COLLATE "C" NOT NULL,
	member text COLLATE "C" NOT NULL,
	aggs   bytea NOT NULL,
	PRIMARY KEY (board, member)
);

CREATE FUNCTION laurel_member_elems(a bytea) RETURNS TABLE (win text, span bigint, score bigint, at bigint, sub bigint)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT rtrim(convert_from(substr(a, i, 8), 'UTF8')),
		('x' || encode(substr(a, i + 8, 8), 'hex'))::bit(64)::bigint,
		('x' || encode(substr(a, i + 16, 8), 'hex'))::bit(64)::bigint,
		('x' || encode(substr(a, i + 24, 8), 'hex'))::bit(64)::bigint,
		CASE WHEN get_byte(a, 0) = 40 THEN ('x' || encode(substr(a, i + 32, 8), 'hex'))::bit(64)::bigint END
	FROM generate_series(2, length(a), get_byte(a, 0)) AS i
$$;

CREATE VIEW laurel_member_aggs AS
	SELECT m.board, m.member, e.win, e.span, e.score, e.at, e.sub
	FROM laurel_members m CROSS JOIN LATERAL laurel_member_elems(m.aggs) AS e;

-- Every aggregate but a rolling bucket (a rolling window is last<N>d or last<N>h; its current
-- span is -2^63) moves into its member's row: the statement an import runs for its board
-- (moveToMemberRowsSQL).
WITH moved AS (
	DELETE FROM laurel_aggs WHERE NOT (win LIKE 'last%' AND span <> -9223372036854775808)
	RETURNING board, member, win, span, score, at, sub),
marked AS (SELECT *, bool_or(sub IS NOT NULL) OVER (PARTITION BY board, member) AS has_sub FROM moved)
INSERT INTO laurel_members (board, member, aggs)
SELECT board, member, decode(CASE WHEN bool_or(has_sub) THEN '28' ELSE '20' END, 'hex') ||
	string_agg(convert_to(rpad(win, 8), 'UTF8') || int8send(span) || int8send(score) || int8send(at) ||
		CASE WHEN has_sub THEN int8send(coalesce(sub, 0)) ELSE '' END, '' ORDER BY win, span)
FROM marked GROUP BY board, member;
