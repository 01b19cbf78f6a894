-- A board's subscore (docs/design.md, "Subscore"): the second sort key, kept wherever a score
-- is — an event's, an aggregate's and a frozen entry's. History points carry theirs in their
-- JSON (window → [score, rank, subscore], the subscore left out when 0).
-- NULL on a board without a subscore, and in every row of before: reads take it for 0. A NULL
-- costs a row no byte (its bit in the row's null bitmap fits in the header's padding), where a
-- 0 would cost 8 (10% of an aggregate's row), so that boards without a subscore keep their
-- rows' size. Adding a column without a default rewrites nothing: each statement holds its
-- table's ACCESS EXCLUSIVE lock for a moment (docs/operations.md).
ALTER TABLE laurel_events ADD COLUMN sub bigint;
ALTER TABLE laurel_aggs ADD COLUMN sub bigint;
ALTER TABLE laurel_frozen ADD COLUMN sub bigint;
