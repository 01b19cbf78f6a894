-- Boards split into shards (docs/design.md, "The scale-out store"). A board's row keeps its
-- state (whose "shards" field is the shard count, 1 when absent) and, as its version, the
-- stamp of that state: the version of shard 0's step that recorded it. Each shard has a row of
-- its own, which only the writes to that shard update: the version of its part of the index,
-- and the last event sequence number it gave, so that writes to different shards of one board
-- share no row. Shard i of n numbers its events i+1 modulo n, so numbers never repeat within
-- a board and a member's events (all in its shard) are numbered in arrival order.
CREATE TABLE laurel_shards (
	board   text COLLATE "C" NOT NULL,
	shard   integer NOT NULL,
	version bigint  NOT NULL,
	seq     bigint  NOT NULL,
	PRIMARY KEY (board, shard)
);
-- A board of before is a board of one shard; its index is rebuilt once, as its stamp is not
-- known here.
INSERT INTO laurel_shards (board, shard, version, seq) SELECT id, 0, version, seq FROM laurel_boards;
ALTER TABLE laurel_boards DROP COLUMN seq;
