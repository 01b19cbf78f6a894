-- An event's tag (docs/design.md, "Tags"): a JSON value kept as the compact text it came as,
-- so that it reads back byte for byte; NULL for none. Entries find their tags among their
-- events as they are read; the partial index answers at once whether a board has any, so
-- that reads of untagged boards look no further.
ALTER TABLE laurel_events ADD COLUMN tag text;
CREATE INDEX laurel_events_tagged ON laurel_events (board) WHERE tag IS NOT NULL;
