package embedded

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"
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
//	0xF0 seq board                   → a sealed event: board, member, value, ts, flags, id,
//	                                   and its history point (events.go, "Where events live")
//	N board 0 member 0 seq           → the member's later events in the same seal: their
//	                                   seqs, each as the uvarint difference from the one
//	                                   before (empty for none; an import writes one record
//	                                   an event, as earlier versions did)
//	Y first last tier board 0 id     → id of a sealed event: its seq, in the run of the ids of
//	                                   the events first..last (idruns.go)
//	I board 0 id                     → the same, as imports and earlier versions wrote it
//	                                   (versions before 2026-11-28: seq, value, ts, flags,
//	                                   member)
//	T board 0 seq                    → (empty): the event seq is retracted
//	V                                → the last sequence number sealed
//	G                                → the number of the last log record the store applied
//	A board 0 window 0 start member  → aggregate of the member in a rolling window's bucket:
//	                                   score, at, and the last sequence number it counts
//	                                   (checkpoint.go); imported ones have none. Those of open
//	                                   periods and all are in the checkpoint file (cpfile.go),
//	                                   keyed alike; earlier versions and imports put them here,
//	                                   and Open moves them there.
//	F                                → the number of the last frame of the checkpoint file
//	                                   that a commit made durable (cpfile.go)
//	W board 0 window                 → closed-through, dropped-before (after a config change)
//	C board 0 window 0 start         → closed period: id, end, total, removed ranks
//	R board 0 window 0 start rank    → frozen entry: score, at, member
//	M board 0 window 0 start member  → frozen rank of the member
//	U                                → (empty): an import into the store has not finished
//	K                                → the first sequence number that replay starts from
//	Q                                → through which sequence number a bucket stored without
//	                                   one counts every event (written by earlier versions)
//	O kind 0 key                     → a record of laurel.Records: webhooks, deliveries
//	                                   (records.go)
//	Z board 0                        → (empty): an event of the board carried a tag, so Open
//	                                   finds its entries' tags and some reads look them up
//	                                   (tags.go)
//	D board 0 member 0 ts seq        → (empty): a sealed event of a board that carried tags
//	                                   when it was sealed, by its member and time (tags.go)
//
// The log (a Pebble store of its own, in the directory's log/) holds the events since the
// last seal, one record a group, and their history points:
//
//	L n                              → a commit's record: its events, history points and the
//	                                   store's batch (eventlog.go)
//
// Tags of earlier versions, which Open refuses to read: E (events by member), X (history by
// member), J (a journal), and L in the store itself.
const (
	tagBoard    = 'B'
	tagProfile  = 'P'
	tagHidden   = 'H'
	tagSeq      = 'S'
	tagSealed   = 0xF0
	tagEvents   = 'N'
	tagID       = 'I'
	tagIDRun    = 'Y'
	tagRetract  = 'T'
	tagSealedTo = 'V'
	tagApplied  = 'G'
	tagAgg      = 'A'
	tagWindow   = 'W'
	tagClosed   = 'C'
	tagRank     = 'R'
	tagMember   = 'M'
	tagImport   = 'U'
	tagReplay   = 'K'
	tagRecord   = 'O'
	// tagBucketsAsOf: through which sequence number a bucket stored without one counts
	// every event (checkpoint.go, replay).
	tagBucketsAsOf  = 'Q'
	tagCheckpointNo = 'F'
	tagTagged       = 'Z'
	tagByTime       = 'D'

	tagLog = 'L' // in the log

	tagEventV1   = 'E'
	tagHistoryV1 = 'X'
	tagJournalV1 = 'J'
)

// boardTags are the tables keyed by board first (the sealed events are keyed by seq).
var boardTags = []byte{tagBoard, tagEvents, tagID, tagRetract, tagAgg, tagWindow, tagClosed, tagRank, tagMember, tagTagged, tagByTime}

var errCorrupt = errors.New("embedded: corrupt record")

func key(tag byte, parts ...string) []byte {
	n := 1
	for _, p := range parts {
		n += len(p) + 1
	}
	return appendKey(make([]byte, 0, n+12), tag, parts...)
}

// appendKey appends key(tag, parts...) to b.
func appendKey(b []byte, tag byte, parts ...string) []byte {
	b = append(b, tag)
	for i, p := range parts {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, p...)
	}
	return b
}

// prefix returns the key prefix of everything under parts, separator included.
func prefix(tag byte, parts ...string) []byte { return append(key(tag, parts...), 0) }

// appendPrefix appends prefix(tag, parts...) to b.
func appendPrefix(b []byte, tag byte, parts ...string) []byte {
	return append(appendKey(b, tag, parts...), 0)
}

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

// aggKey is spanPrefix(tagAgg, board, window, start) then member, in one allocation: the
// writer makes one for every aggregate it stores.
func aggKey(board, window string, start int64, member string) []byte {
	k := make([]byte, 0, len(board)+len(window)+len(member)+11)
	return append(appendTime(appendPrefix(k, tagAgg, board, window), start), member...)
}

// sealedKey is a sealed event's key: its seq first, so that seals append, then its board
// (a store that imported a dump numbers events per board, not once for all).
func sealedKey(seq uint64, board string) []byte { return appendSealedKey(nil, seq, board) }

// appendSealedKey appends a sealed event's key to b.
func appendSealedKey(b []byte, seq uint64, board string) []byte {
	return append(appendU64(append(b, tagSealed), seq), board...)
}

func eventsKey(board, member string, seq uint64) []byte {
	return appendEventsKey(make([]byte, 0, len(board)+len(member)+11), board, member, seq)
}

// appendEventsKey appends eventsKey(board, member, seq) to b.
func appendEventsKey(b []byte, board, member string, seq uint64) []byte {
	return appendU64(appendPrefix(b, tagEvents, board, member), seq)
}

// indexedSeqs appends to seqs, in order, the sequence numbers of a member index record: its
// key's, then those its value lists.
func indexedSeqs(seqs []uint64, k, v []byte) ([]uint64, error) {
	seq := readU64(k[len(k)-8:])
	seqs = append(seqs, seq)
	for len(v) > 0 {
		d, n := binary.Uvarint(v)
		if n <= 0 || d == 0 {
			return seqs, errCorrupt
		}
		seq += d
		seqs = append(seqs, seq)
		v = v[n:]
	}
	return seqs, nil
}

func retractKey(board string, seq uint64) []byte { return appendU64(prefix(tagRetract, board), seq) }

func rankKey(board, window string, start int64, rank uint32) []byte {
	return binary.BigEndian.AppendUint32(spanPrefix(tagRank, board, window, start), rank)
}

func frozenMemberKey(board, window string, start int64, member string) []byte {
	return append(spanPrefix(tagMember, board, window, start), member...)
}

// aggregate is a member's (score, reached_at, subscore) in a span, as stored. The subscore is
// 0 on a board without one, and an aggregate whose subscore is 0 is stored as before
// subscores were kept: 16 bytes, or 24 with the sequence number it counts to. One whose
// subscore is not takes 32: the sequence number (0: it does not say) and then the subscore.
type aggregate struct{ score, at, sub int64 }

func encodeAgg(a aggregate) []byte {
	if a.sub != 0 {
		return encodeAggAsOf(a, 0)
	}
	b := make([]byte, 0, 16)
	b = appendU64(b, uint64(a.score))
	return appendU64(b, uint64(a.at))
}

// encodeAggAsOf encodes an aggregate of an open period or all that counts every event up to
// the sequence number asOf: replay after a crash adds only later ones (checkpoint.go).
func encodeAggAsOf(a aggregate, asOf uint64) []byte {
	b := make([]byte, 0, 32)
	b = appendU64(appendU64(appendU64(b, uint64(a.score)), uint64(a.at)), asOf)
	if a.sub != 0 {
		b = appendU64(b, uint64(a.sub))
	}
	return b
}

func decodeAgg(b []byte) (aggregate, error) {
	a, _, err := decodeAggAsOf(b)
	return a, err
}

// decodeAggAsOf decodes an aggregate and the last sequence number it counts; 0 when it does
// not say (a bucket, or a record an earlier version or an import wrote).
func decodeAggAsOf(b []byte) (aggregate, uint64, error) {
	if len(b) != 16 && len(b) != 24 && len(b) != 32 {
		return aggregate{}, 0, errCorrupt
	}
	a := aggregate{score: int64(binary.BigEndian.Uint64(b)), at: int64(binary.BigEndian.Uint64(b[8:]))}
	if len(b) == 32 {
		a.sub = int64(binary.BigEndian.Uint64(b[24:]))
	}
	if len(b) >= 24 {
		return a, binary.BigEndian.Uint64(b[16:]), nil
	}
	return a, 0, nil
}

// Event flags.
const (
	flagExplicitTS = 1 << iota // the client gave ts
	flagRetracted              // retracted: kept as the audit trail, counted nowhere
	flagTagged                 // a tag follows the id: the event carries one
	flagSub                    // a subscore follows the id and tag: the event's is not 0
)

// event is one stored event.
type event struct {
	member string
	seq    uint64
	value  int64
	ts     int64
	flags  byte
	id     string
	tag    string // compact JSON; empty for none
	sub    int64  // the subscore; 0 on a board without one
}

// appendEvent encodes an event of board, without its seq (its key's, or its record's). A tag
// follows the id only when the event has one (flagTagged), and a subscore only when it is not
// 0 (flagSub), so that other events cost nothing more than before tags and subscores were
// kept.
func appendEvent(b []byte, board string, ev *event) []byte {
	flags := ev.flags &^ (flagTagged | flagSub)
	if ev.tag != "" {
		flags |= flagTagged
	}
	if ev.sub != 0 {
		flags |= flagSub
	}
	b = appendString(b, board)
	b = appendString(b, ev.member)
	b = binary.AppendVarint(b, ev.value)
	b = binary.AppendVarint(b, ev.ts)
	b = append(b, flags)
	b = appendString(b, ev.id)
	if ev.tag != "" {
		b = appendString(b, ev.tag)
	}
	if ev.sub != 0 {
		b = binary.AppendVarint(b, ev.sub)
	}
	return b
}

// readEvent decodes what appendEvent wrote, and returns the rest of b.
func readEvent(b []byte, ev *event) (board string, rest []byte, err error) {
	return decodeEvent(b, ev, false)
}

// decodeEvent is readEvent; with view, its strings share b (viewString), for a caller that
// keeps none of them past b's life, where b's bytes never change: memory's arena of recent
// events, decoded whole by a seal and by a rebuild of the id filter.
func decodeEvent(b []byte, ev *event, view bool) (board string, rest []byte, err error) {
	str := readString
	if view {
		str = viewString
	}
	var ok bool
	if board, b, ok = str(b); !ok {
		return "", nil, errCorrupt
	}
	if ev.member, b, ok = str(b); !ok {
		return "", nil, errCorrupt
	}
	var n int
	if ev.value, n = binary.Varint(b); n <= 0 {
		return "", nil, errCorrupt
	}
	b = b[n:]
	if ev.ts, n = binary.Varint(b); n <= 0 || len(b) == n {
		return "", nil, errCorrupt
	}
	ev.flags, b = b[n], b[n+1:]
	if ev.id, b, ok = str(b); !ok {
		return "", nil, errCorrupt
	}
	if ev.flags&flagTagged != 0 {
		if ev.tag, b, ok = str(b); !ok {
			return "", nil, errCorrupt
		}
	}
	ev.sub = 0
	if ev.flags&flagSub != 0 {
		if ev.sub, n = binary.Varint(b); n <= 0 {
			return "", nil, errCorrupt
		}
		b = b[n:]
	}
	return board, b, nil
}

// skipEvent returns what follows the event appendEvent wrote at the start of b.
func skipEvent(b []byte) ([]byte, bool) {
	var ok bool
	for range 2 { // board, member
		if _, b, ok = readBytes(b); !ok {
			return nil, false
		}
	}
	for range 2 { // value, ts
		_, k := binary.Varint(b)
		if k <= 0 {
			return nil, false
		}
		b = b[k:]
	}
	if len(b) == 0 { // flags
		return nil, false
	}
	tagged, sub := b[0]&flagTagged != 0, b[0]&flagSub != 0
	_, b, ok = readBytes(b[1:]) // id
	if ok && tagged {
		_, b, ok = readBytes(b)
	}
	if ok && sub {
		_, k := binary.Varint(b)
		if k <= 0 {
			return nil, false
		}
		b = b[k:]
	}
	return b, ok
}

func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func readString(b []byte) (string, []byte, bool) {
	s, rest, ok := readBytes(b)
	return string(s), rest, ok
}

// viewString is readString without a copy: its result shares b.
func viewString(b []byte) (string, []byte, bool) {
	s, rest, ok := readBytes(b)
	return unsafe.String(unsafe.SliceData(s), len(s)), rest, ok
}

// readBytes is readString without a copy: its result shares b.
func readBytes(b []byte) ([]byte, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// encodeID is the id record of a sealed event: its sequence number, which finds the sealed
// event (seal.go) and what it said, to tell a retry from a conflict. A record of 8 bytes
// rather than the event's fields again (25 bytes and the member's id, as stores written
// before 2026-11-28 hold, which decodeID reads too): the ids are the store's largest index,
// and compactions rewrite it level after level.
func (ev *event) encodeID() []byte { return ev.appendID(make([]byte, 0, 8)) }

// appendID appends the event's id record to b.
func (ev *event) appendID(b []byte) []byte { return appendU64(b, ev.seq) }

// decodeID decodes an id record: the event whole (whole) from a record of an earlier version,
// else only its sequence number.
func decodeID(b []byte, id string) (ev event, whole bool, err error) {
	switch {
	case len(b) == 8:
		return event{seq: binary.BigEndian.Uint64(b), id: id}, false, nil
	case len(b) < 25:
		return event{}, false, errCorrupt
	}
	return event{
		seq:    binary.BigEndian.Uint64(b),
		value:  int64(binary.BigEndian.Uint64(b[8:])),
		ts:     int64(binary.BigEndian.Uint64(b[16:])),
		flags:  b[24],
		member: string(b[25:]),
		id:     id,
	}, true, nil
}

// frozen is one entry of a closed period.
type frozen struct {
	rank   uint32 // among every member present when it closed, hidden ones included
	member string
	agg    aggregate
}

// encodeFrozen encodes an entry of a closed period: score, reached_at, then, on a board with
// a subscore (sub), the subscore, then the member. Boards without one store what they stored
// before subscores were kept; a board's subscore is fixed at its creation, so its records
// all have one layout.
func encodeFrozen(f frozen, sub bool) []byte {
	b := make([]byte, 0, 24+len(f.member))
	b = appendU64(b, uint64(f.agg.score))
	b = appendU64(b, uint64(f.agg.at))
	if sub {
		b = appendU64(b, uint64(f.agg.sub))
	}
	return append(b, f.member...)
}

func decodeFrozen(rank uint32, b []byte, sub bool) (frozen, error) {
	head := 16
	if sub {
		head = 24
	}
	if len(b) < head+1 {
		return frozen{}, errCorrupt
	}
	a := aggregate{score: int64(readU64(b)), at: int64(readU64(b[8:]))}
	if sub {
		a.sub = int64(readU64(b[16:]))
	}
	return frozen{rank: rank, agg: a, member: string(b[head:])}, nil
}

const noTime = math.MinInt64
