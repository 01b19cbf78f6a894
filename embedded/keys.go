package embedded

import (
	"encoding/binary"
	"errors"
	"math"
)

// The store's keyspace. Every key begins with a one-byte table tag; board ids, window names,
// members and event ids never contain 0x00, so 0x00 separates variable-length parts and a
// key's prefix up to a separator selects exactly one board, window or member. Times are
// big-endian with the sign bit flipped, so they sort in time order.
//
//	B board                          → board configuration (JSON)
//	P member                         → profile (JSON)
//	H member                         → (empty): the member is hidden
//	S                                → the last event sequence number
//	E board 0 member 0 seq           → event: value, ts, flags, id
//	I board 0 id                     → id: seq, value, ts, flags, member
//	A board 0 window 0 start member  → aggregate of the member in a period or bucket: score, at,
//	                                   and for open periods and all the last sequence number it
//	                                   counts (checkpoint.go)
//	W board 0 window                 → closed-through, dropped-before (after a config change)
//	C board 0 window 0 start         → closed period: id, end, total, removed ranks
//	R board 0 window 0 start rank    → frozen entry: score, at, member
//	M board 0 window 0 start member  → frozen rank of the member
//	X board 0 member 0 seq           → history: the member's score and rank per window after the event
//	U                                → (empty): an import into the store has not finished
//	J                                → (an earlier version's) the last group's events
//	L seq                            → a group's events, from its first sequence number: the log
//	                                   replayed into open periods and all after a crash
//	K                                → the first sequence number that replay starts from
const (
	tagBoard   = 'B'
	tagProfile = 'P'
	tagHidden  = 'H'
	tagSeq     = 'S'
	tagEvent   = 'E'
	tagID      = 'I'
	tagAgg     = 'A'
	tagWindow  = 'W'
	tagClosed  = 'C'
	tagRank    = 'R'
	tagMember  = 'M'
	tagHistory = 'X'
	tagImport  = 'U'
	tagJournal = 'J'
	tagLog     = 'L'
	tagReplay  = 'K'
)

// boardTags are the tables a board owns.
var boardTags = []byte{tagBoard, tagEvent, tagID, tagAgg, tagWindow, tagClosed, tagRank, tagMember, tagHistory}

var errCorrupt = errors.New("embedded: corrupt record")

func key(tag byte, parts ...string) []byte {
	n := 1
	for _, p := range parts {
		n += len(p) + 1
	}
	k := make([]byte, 0, n+12)
	k = append(k, tag)
	for i, p := range parts {
		if i > 0 {
			k = append(k, 0)
		}
		k = append(k, p...)
	}
	return k
}

// prefix returns the key prefix of everything under parts, separator included.
func prefix(tag byte, parts ...string) []byte { return append(key(tag, parts...), 0) }

// upper returns the least key greater than every key beginning with p.
func upper(p []byte) []byte {
	u := append([]byte(nil), p...)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] < 0xff {
			u[i]++
			return u[:i+1]
		}
	}
	return nil
}

func appendTime(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

func readTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func readU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// spanPrefix is the prefix of a window's records for one period or bucket start.
func spanPrefix(tag byte, board, window string, start int64) []byte {
	return appendTime(prefix(tag, board, window), start)
}

func aggKey(board, window string, start int64, member string) []byte {
	return append(spanPrefix(tagAgg, board, window, start), member...)
}

func eventKey(board, member string, seq uint64) []byte {
	return appendU64(prefix(tagEvent, board, member), seq)
}

func rankKey(board, window string, start int64, rank uint32) []byte {
	return binary.BigEndian.AppendUint32(spanPrefix(tagRank, board, window, start), rank)
}

func frozenMemberKey(board, window string, start int64, member string) []byte {
	return append(spanPrefix(tagMember, board, window, start), member...)
}

// aggregate is a member's (score, reached_at) in a span, as stored.
type aggregate struct{ score, at int64 }

func encodeAgg(a aggregate) []byte {
	b := make([]byte, 0, 16)
	b = appendU64(b, uint64(a.score))
	return appendU64(b, uint64(a.at))
}

// encodeAggAsOf encodes an aggregate of an open period or all that counts every event up to
// the sequence number asOf: replay after a crash adds only later ones (checkpoint.go).
func encodeAggAsOf(a aggregate, asOf uint64) []byte { return appendU64(encodeAgg(a), asOf) }

func decodeAgg(b []byte) (aggregate, error) {
	a, _, err := decodeAggAsOf(b)
	return a, err
}

// decodeAggAsOf decodes an aggregate and the last sequence number it counts; 0 when it does
// not say (a bucket, or a record an earlier version or an import wrote).
func decodeAggAsOf(b []byte) (aggregate, uint64, error) {
	if len(b) != 16 && len(b) != 24 {
		return aggregate{}, 0, errCorrupt
	}
	a := aggregate{int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))}
	if len(b) == 24 {
		return a, binary.BigEndian.Uint64(b[16:]), nil
	}
	return a, 0, nil
}

// Event flags.
const (
	flagExplicitTS = 1 << iota // the client gave ts
	flagRetracted              // retracted: kept as the audit trail, counted nowhere
)

// event is one stored event.
type event struct {
	member string
	seq    uint64
	value  int64
	ts     int64
	flags  byte
	id     string
}

func (ev *event) encodeValue() []byte {
	b := make([]byte, 0, 17+len(ev.id))
	b = appendU64(b, uint64(ev.value))
	b = appendU64(b, uint64(ev.ts))
	b = append(b, ev.flags)
	return append(b, ev.id...)
}

func decodeEventValue(ev *event, b []byte) error {
	if len(b) < 17 {
		return errCorrupt
	}
	ev.value = int64(binary.BigEndian.Uint64(b))
	ev.ts = int64(binary.BigEndian.Uint64(b[8:]))
	ev.flags = b[16]
	ev.id = string(b[17:])
	return nil
}

// encodeID is the id record: where the event is and what it said, to tell a retry from a
// conflict with one read.
func (ev *event) encodeID() []byte {
	b := make([]byte, 0, 25+len(ev.member))
	b = appendU64(b, ev.seq)
	b = appendU64(b, uint64(ev.value))
	b = appendU64(b, uint64(ev.ts))
	b = append(b, ev.flags)
	return append(b, ev.member...)
}

func decodeID(b []byte, id string) (event, error) {
	if len(b) < 25 {
		return event{}, errCorrupt
	}
	return event{
		seq:    binary.BigEndian.Uint64(b),
		value:  int64(binary.BigEndian.Uint64(b[8:])),
		ts:     int64(binary.BigEndian.Uint64(b[16:])),
		flags:  b[24],
		member: string(b[25:]),
		id:     id,
	}, nil
}

// frozen is one entry of a closed period.
type frozen struct {
	rank   uint32 // among every member present when it closed, hidden ones included
	member string
	agg    aggregate
}

func encodeFrozen(f frozen) []byte {
	b := make([]byte, 0, 16+len(f.member))
	b = appendU64(b, uint64(f.agg.score))
	b = appendU64(b, uint64(f.agg.at))
	return append(b, f.member...)
}

func decodeFrozen(rank uint32, b []byte) (frozen, error) {
	if len(b) < 17 {
		return frozen{}, errCorrupt
	}
	a, _ := decodeAgg(b[:16])
	return frozen{rank: rank, agg: a, member: string(b[16:])}, nil
}

const noTime = math.MinInt64
