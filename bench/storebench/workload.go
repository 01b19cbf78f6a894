package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
)

// One benchmark "write" is what laurel's store does for one event with an id
// on a `sum` board with four windows (all, day, week, last7d): check the id is
// new (a point read that misses), store the event (~80 B), and read-modify-write
// the member's aggregate (~40 B) in each window.

const (
	board    = "lb01"
	today    = 20414 // days since 1970: a fixed "now" so loaded and written keys meet
	thisWeek = today - 4
	eventLen = 80
	aggLen   = 40
)

// window is one (window, period) an aggregate lives in.
type window struct {
	name   byte
	period int
}

// current are the four periods a write touches; recoveryWindows adds closed
// ones so the recovery scan reads ten aggregates per member.
var (
	current         = []window{{'A', 0}, {'D', today}, {'W', thisWeek}, {'7', today}}
	recoveryWindows = sortedWindows(append(slices.Clone(current),
		window{'D', today - 1}, window{'D', today - 2}, window{'D', today - 3},
		window{'W', thisWeek - 7}, window{'7', today - 1}, window{'7', today - 2}))
)

func sortedWindows(ws []window) []window {
	slices.SortFunc(ws, func(a, b window) int {
		return slices.Compare(aggKey(a, 0), aggKey(b, 0))
	})
	return ws
}

// aggKey is fixed-width (24 bytes), so byte order is (window, period, member) order.
func aggKey(w window, member int) []byte {
	return fmt.Appendf(nil, "a/%s/%c/%05d/m%08d", board, w.name, w.period, member)
}

func eventKey(id uint64) []byte { return fmt.Appendf(nil, "e/%s/%016x", board, id) }

// agg is the value of an aggregate record. Padded to 40 bytes: laurel keeps a
// little more per aggregate (flags, first-seen time) than these four fields.
type agg struct {
	score, reachedAt, count, version int64
}

func (a agg) encode() []byte {
	b := make([]byte, aggLen)
	for i, v := range []int64{a.score, a.reachedAt, a.count, a.version} {
		binary.BigEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func decodeAgg(b []byte) (a agg) {
	if len(b) < 32 {
		return a
	}
	a.score = int64(binary.BigEndian.Uint64(b))
	a.reachedAt = int64(binary.BigEndian.Uint64(b[8:]))
	a.count = int64(binary.BigEndian.Uint64(b[16:]))
	a.version = int64(binary.BigEndian.Uint64(b[24:]))
	return a
}

type write struct {
	eventKey, event []byte
	member          int
	value, ts       int64
}

// kv is the slice of a store a write needs. get's value is only valid until
// the next call; set may keep key and value (bbolt does, until commit).
type kv interface {
	get(key []byte) (val []byte, ok bool, err error)
	set(key, val []byte) error
}

var errDuplicate = errors.New("duplicate event id")

func (w *write) apply(s kv) error {
	if _, ok, err := s.get(w.eventKey); err != nil {
		return err
	} else if ok {
		return errDuplicate
	}
	if err := s.set(w.eventKey, w.event); err != nil {
		return err
	}
	for _, win := range current {
		k := aggKey(win, w.member)
		v, _, err := s.get(k)
		if err != nil {
			return err
		}
		a := decodeAgg(v)
		a.score += w.value
		a.reachedAt = max(a.reachedAt, w.ts)
		a.count++
		a.version++
		if err := s.set(k, a.encode()); err != nil {
			return err
		}
	}
	return nil
}

// bytes is the write's payload, for the raw-file reference.
func (w *write) bytes() []byte {
	b := append(slices.Clone(w.eventKey), w.event...)
	for _, win := range current {
		b = append(b, aggKey(win, w.member)...)
		b = append(b, make([]byte, aggLen)...)
	}
	return b
}

// nextID is shared by all writers so every event id is new.
var nextID atomic.Uint64

// gen makes writes for one client: members drawn Zipf-like (a few members get
// most events, as on a real board), scattered over the id space so hot members
// are not also neighbours on disk.
type gen struct {
	r       *rand.Rand
	zipf    *rand.Zipf
	members int
}

func newGen(seed uint64, members int) *gen {
	r := rand.New(rand.NewPCG(seed, 0x1a))
	return &gen{r: r, zipf: rand.NewZipf(r, 1.1, 1, uint64(members-1)), members: members}
}

func (g *gen) next() *write {
	id := nextID.Add(1)
	member := int((g.zipf.Uint64() * 7919) % uint64(g.members))
	w := &write{eventKey: eventKey(id), event: make([]byte, eventLen), member: member,
		value: 1 + g.r.Int64N(100), ts: today*86_400_000 + g.r.Int64N(86_400_000)}
	binary.BigEndian.PutUint64(w.event, uint64(member))
	binary.BigEndian.PutUint64(w.event[8:], uint64(w.value))
	binary.BigEndian.PutUint64(w.event[16:], uint64(w.ts))
	for i := 24; i < eventLen; i += 8 { // the rest: member id, id and metadata, not compressible
		binary.BigEndian.PutUint64(w.event[i:], g.r.Uint64())
	}
	return w
}
