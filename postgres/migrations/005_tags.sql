-- An event's tag (docs/design.md, "Tags"): a JSON value kept as the compact text it came as,
-- so that it reads back byte for byte; NULL for none. Entries find their tags among their
-- events as they are read; the partial index answers at once whether a board has any, so
-- that reads of untagged boards look no further.
ALTER TABLE laurel_events ADD COLUMN tag text;
CREATE INDEX laurel_events_tagged ON laurel_events (board) WHERE tag IS NOT NULL;

-- A read looks up the member's events at an entry's reached_at: by member, board and instant
-- at once, not among all of the member's events on the board (a top-100 read of members with
-- a thousand tagged laps each took 100 ms that way). The index serves what it replaces.
DROP INDEX laurel_events_member;
CREATE INDEX laurel_events_member ON laurel_events (member, board, ts);
