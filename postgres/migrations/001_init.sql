-- laurel's store in PostgreSQL (DESIGN.md §2, "Scale-out mode"). Text that ranks or is
-- compared byte for byte is COLLATE "C": members order bytewise, as laurel's ties do.

-- A board: its state (configuration, each window's open spans and kept closed periods, the
-- next instant it has work), the version its index is at, and its last event's sequence.
CREATE TABLE laurel_boards (
	id      text COLLATE "C" PRIMARY KEY,
	state   text   NOT NULL,
	version bigint NOT NULL,
	seq     bigint NOT NULL
);

-- Every accepted event, kept: the audit trail, and what ids, retraction and new windows work
-- from. A retracted event stays, marked, and frees its id.
CREATE TABLE laurel_events (
	board     text COLLATE "C" NOT NULL,
	seq       bigint  NOT NULL,
	member    text COLLATE "C" NOT NULL,
	value     bigint  NOT NULL,
	ts        bigint  NOT NULL,
	id        text COLLATE "C",
	retracted boolean NOT NULL DEFAULT false,
	PRIMARY KEY (board, seq)
);
CREATE UNIQUE INDEX laurel_events_id ON laurel_events (board, id) WHERE id IS NOT NULL AND NOT retracted;
CREATE INDEX laurel_events_member ON laurel_events (member, board);

-- A member's aggregate in one span of a window: an open calendar period (span = its start),
-- all (span 0), a rolling window's bucket (span = its start) or its current span
-- (span = -2^63).
CREATE TABLE laurel_aggs (
	board  text COLLATE "C" NOT NULL,
	win    text COLLATE "C" NOT NULL,
	span   bigint NOT NULL,
	member text COLLATE "C" NOT NULL,
	score  bigint NOT NULL,
	at     bigint NOT NULL,
	PRIMARY KEY (board, win, span, member)
);

-- A closed period, frozen with its ranks; removed lists the frozen ranks of members deleted
-- since.
CREATE TABLE laurel_closed (
	board   text COLLATE "C" NOT NULL,
	win     text COLLATE "C" NOT NULL,
	span    bigint NOT NULL,
	total   integer NOT NULL,
	removed integer[] NOT NULL DEFAULT '{}',
	PRIMARY KEY (board, win, span)
);
CREATE TABLE laurel_frozen (
	board  text COLLATE "C" NOT NULL,
	win    text COLLATE "C" NOT NULL,
	span   bigint NOT NULL,
	rank   integer NOT NULL,
	member text COLLATE "C" NOT NULL,
	score  bigint NOT NULL,
	at     bigint NOT NULL,
	PRIMARY KEY (board, win, span, rank)
);
CREATE UNIQUE INDEX laurel_frozen_member ON laurel_frozen (board, win, span, member);

-- Profiles, shared by all boards; metadata is the JSON object as given (compacted), kept as
-- text so that it reads back byte for byte.
CREATE TABLE laurel_profiles (
	member   text COLLATE "C" PRIMARY KEY,
	name     text NOT NULL,
	metadata text
);
CREATE TABLE laurel_hidden (
	member text COLLATE "C" PRIMARY KEY
);

-- A member's standing in each window right after each of its events (JSON: window → [score,
-- rank]).
CREATE TABLE laurel_history (
	board  text COLLATE "C" NOT NULL,
	member text COLLATE "C" NOT NULL,
	seq    bigint NOT NULL,
	ts     bigint NOT NULL,
	points text   NOT NULL,
	PRIMARY KEY (board, member, seq)
);
