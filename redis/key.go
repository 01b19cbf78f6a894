package redis

import (
	"encoding/binary"
	"strconv"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
)

// prefixLen is the length of the part of a zset member that orders it before its member
// bytes on a board without a subscore: 8 bytes of score, 8 of reached_at. On a board with a
// subscore it is subPrefixLen: 8 bytes of score, 8 of subscore, 8 of reached_at. Boards
// without one keep their 16 bytes: a subscore costs them nothing (docs/decisions.md, "The
// subscore in the index's keys").
const (
	prefixLen    = 16
	subPrefixLen = 24
)

const signBit = 1 << 63

// prefixLenOf is the length of the prefixes of a board ordered by o.
func prefixLenOf(o laurel.Ordering) int {
	if o.HasSub {
		return subPrefixLen
	}
	return prefixLen
}

// encodePrefix returns the bytes, the first n of p, that make k sort bytewise in rank order
// on a board ordered by o: a float64 zset score cannot hold every int64, so all scores are 0
// and the order lives in the member bytes. Flipping the sign bit maps int64 order onto
// unsigned order; complementing the score (or the subscore) puts high values first in a Desc
// order. The subscore is left out on a board without one.
func encodePrefix(o laurel.Ordering, k laurel.Key) (p [subPrefixLen]byte, n int) {
	binary.BigEndian.PutUint64(p[:8], orderBits(o.Score, k.Score))
	if !o.HasSub {
		binary.BigEndian.PutUint64(p[8:16], uint64(k.At)^signBit)
		return p, prefixLen
	}
	binary.BigEndian.PutUint64(p[8:16], orderBits(o.Sub, k.Sub))
	binary.BigEndian.PutUint64(p[16:24], uint64(k.At)^signBit)
	return p, subPrefixLen
}

// orderBits maps v to 8 bytes' worth that sort, as unsigned integers, in the order o.
func orderBits(o laurel.Order, v int64) uint64 {
	u := uint64(v) ^ signBit
	if o != laurel.Asc {
		u = ^u
	}
	return u
}

// decodePrefix inverts encodePrefix; p must hold at least prefixLenOf(o) bytes.
func decodePrefix(o laurel.Ordering, p string) laurel.Key {
	k := laurel.Key{Score: int64(orderBits(o.Score, int64(binary.BigEndian.Uint64([]byte(p[:8])))))}
	at := p[8:16]
	if o.HasSub {
		k.Sub = int64(orderBits(o.Sub, int64(binary.BigEndian.Uint64([]byte(p[8:16])))))
		at = p[16:24]
	}
	k.At = int64(binary.BigEndian.Uint64([]byte(at)) ^ signBit)
	return k
}

// keys names the Redis keys of one shard of a board. They all carry the shard's hash tag, so
// that one script may touch them all and Redis Cluster keeps the shard in one slot.
type keys struct {
	base string // <prefix>{<tag>}:
}

func (x *Index) keysOf(board string, sh shardindex.Shard) keys {
	return keys{base: x.prefix + "{" + shardTag(board, sh) + "}:"}
}

// shardTag is the hash tag of a shard's keys. Shard 0's is the board's id, so that its state
// is found without knowing the shard count (and a board of one shard keeps the keys of the
// boards before shards). Shard i of n takes the first tag board/i/k whose slot lies in the
// i-th n-th of the slots after shard 0's: a cluster whose masters hold equal ranges of slots,
// as redis-cli --cluster create makes them, then spreads a board's shards evenly.
func shardTag(board string, sh shardindex.Shard) string {
	if sh.Number == 0 || sh.Count <= 1 {
		return board
	}
	width := max(1, slots/sh.Count)
	start := (slotOf(board) + sh.Number*width) % slots
	prefix := board + "/" + strconv.Itoa(sh.Number) + "/"
	for k := 0; ; k++ {
		tag := prefix + strconv.Itoa(k)
		if (slotOf(tag)-start+slots)%slots < width {
			return tag
		}
	}
}

// slots is how many hash slots a Redis Cluster has.
const slots = 16384

// slotOf is Redis Cluster's slot of a hash tag: CRC16 (XMODEM) modulo the slot count.
func slotOf(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % slots
}

// meta holds the shard's version (v), the stamp of the state its sets follow (t) and, in
// shard 0, the board's state (s).
func (k keys) meta() string { return k.base + "m" }

// registry is the set of the names of the shard's sets, so Delete finds them without SCAN.
func (k keys) registry() string { return k.base + "k" }

// zset holds the set's entries, each the prefix (16 or 24 bytes) followed by the member,
// score 0.
func (k keys) zset(name string) string { return k.base + "z:" + name }

// hash maps each member of the set to its current prefix.
func (k keys) hash(name string) string { return k.base + "h:" + name }

// setName is how a set is named in its keys and in the registry.
func setName(s shardindex.Set) string {
	return s.Window + ":" + strconv.FormatInt(s.Start, 10)
}
