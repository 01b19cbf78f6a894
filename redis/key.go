package redis

import (
	"encoding/binary"
	"math"
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

// keys names the Redis keys of a board. They all carry the board's hash tag, so that one
// script may touch any of them and Redis Cluster keeps the board in one slot. Their names
// after the tag are capitals of their own to each layout, so that a node never reads a layout
// it does not write: a set per shard (before "One set per board" in docs/decisions.md) named
// its keys in lower case; one set per board with every score 0, M, K, Z and H; with the
// scores of "Scored sets", V, R, S and P.
type keys struct {
	base string // <prefix>{<board>}:
}

func (x *Index) keysOf(board string) keys {
	return keys{base: x.prefix + "{" + board + "}:"}
}

// meta holds each shard's version (v0, v1, …), the stamp of the state its members follow
// (t0, t1, …), and the board's state (s), recorded by shard 0 and stamped t0.
func (k keys) meta() string { return k.base + "V" }

// registry is the set of the names of the sets a shard has members in, so Delete finds them
// without SCAN.
func (k keys) registry(shard int) string { return k.base + "R" + strconv.Itoa(shard) }

// zset holds the set's entries, each the prefix (16 or 24 bytes) followed by the member,
// scored by zscore: the board's, whole.
func (k keys) zset(name string) string { return k.base + "S:" + name }

// hash maps each member of a shard in the set to its current prefix: which entries of the
// set are the shard's, and where each is.
func (k keys) hash(shard int, name string) string {
	return k.base + "P" + strconv.Itoa(shard) + ":" + name
}

// zscore is the zset score of an entry of score v on a board ordered by o: v as a float64,
// negated when the order is not Asc. It orders the entries as their bytes do (a float64 of an
// int64 is monotone, so a better score never gets a worse zset score, and equal zset scores
// leave the order to the bytes), so that ranks and lex ranges are those of the bytes alone;
// and the skiplist compares two numbers where, with every score 0, it compared two members'
// bytes (docs/decisions.md, "Scored sets").
func zscore(o laurel.Ordering, v int64) string {
	if o.Score != laurel.Asc {
		if v == math.MinInt64 {
			return strconv.FormatFloat(-float64(v), 'g', -1, 64)
		}
		v = -v
	}
	if v > -1<<53 && v < 1<<53 { // exact, and shorter
		return strconv.FormatInt(v, 10)
	}
	return strconv.FormatFloat(float64(v), 'g', -1, 64)
}

// setName is how a set is named in its keys and in the registry.
func setName(s shardindex.Set) string {
	return s.Window + ":" + strconv.FormatInt(s.Start, 10)
}

// shardFields are the meta fields of each of count shards with the letter f, "v" or "t".
func shardFields(f string, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = f + strconv.Itoa(i)
	}
	return out
}
