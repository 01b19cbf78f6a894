-- The stamp of the step that last committed to a shard: a random number each step writes
-- into every shard it holds, so that a node that kept a shard's aggregates from its own last
-- step knows them current when it finds its stamp there (aggcache.go). 0: no step stamped it.
ALTER TABLE laurel_shards ADD COLUMN stamp bigint NOT NULL DEFAULT 0;
