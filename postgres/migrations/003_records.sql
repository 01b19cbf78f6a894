-- laurel.Records: the state beside the boards that is not a ranking, such as webhooks and
-- their deliveries (records.go). Keys order bytewise.
CREATE TABLE laurel_records (
	kind  text COLLATE "C" NOT NULL,
	key   text COLLATE "C" NOT NULL,
	value bytea NOT NULL,
	PRIMARY KEY (kind, key)
);
