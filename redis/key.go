package redis

import (
	"encoding/binary"
	"strconv"

	"github.com/laurel/laurel"
)

// prefixLen is the length of the part of a zset member that orders it before its member
// bytes: 8 bytes of score, 8 of reached_at.
const prefixLen = 16

const signBit = 1 << 63

// encodePrefix returns the 16 bytes that make (score, at) sort bytewise in rank order on a
// board of order o: a float64 zset score cannot hold every int64, so all scores are 0 and the
// order lives in the member bytes. Flipping the sign bit maps int64 order onto unsigned order;
// complementing the score puts high scores first on a Desc board.
func encodePrefix(o laurel.Order, score, at int64) [prefixLen]byte {
	s := uint64(score) ^ signBit
	if o != laurel.Asc {
		s = ^s
	}
	var b [prefixLen]byte
	binary.BigEndian.PutUint64(b[:8], s)
	binary.BigEndian.PutUint64(b[8:], uint64(at)^signBit)
	return b
}

// decodePrefix inverts encodePrefix; p must hold at least prefixLen bytes.
func decodePrefix(o laurel.Order, p string) (score, at int64) {
	s := binary.BigEndian.Uint64([]byte(p[:8]))
	if o != laurel.Asc {
		s = ^s
	}
	return int64(s ^ signBit), int64(binary.BigEndian.Uint64([]byte(p[8:prefixLen])) ^ signBit)
}

// keys names the Redis keys of one board. They all carry the hash tag {board}, so that one
// script may touch them all and Redis Cluster keeps the board in one slot.
type keys struct {
	base string // <prefix>{<board>}:
}

func (x *Index) keysOf(board string) keys { return keys{base: x.prefix + "{" + board + "}:"} }

// meta holds the board's version (v), state (s) and the state's stamp (t).
func (k keys) meta() string { return k.base + "m" }

// registry is the set of the names of the board's sets, so Delete finds them without SCAN.
func (k keys) registry() string { return k.base + "k" }

// zset holds the set's entries, each the 16-byte prefix followed by the member, score 0.
func (k keys) zset(name string) string { return k.base + "z:" + name }

// hash maps each member of the set to its current 16-byte prefix.
func (k keys) hash(name string) string { return k.base + "h:" + name }

// setName is how a set is named in its keys and in the registry.
func setName(s laurel.IndexSet) string {
	return s.Window + ":" + strconv.FormatInt(s.Start, 10)
}
