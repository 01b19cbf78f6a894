package embedded

import "hash/maphash"

// hotCache keeps, for the writer alone, the stored bucket aggregates of rolling windows that
// it read or wrote last: under skewed activity the same members are read on every event.
// (Open periods and all are in memory whole, in their spans' slots.) It is direct-mapped, 32 bytes a slot and nothing for the garbage collector to trace,
// and grows with the board's members up to maxHotSlots (8 MiB); a slot taken by another
// aggregate simply forgets the one before.
type hotCache struct {
	slots []hotSlot
	seed  maphash.Seed
}

type hotSlot struct {
	start, score, at int64
	h                uint32
	win              uint8 // window.id
	state            uint8 // 0: empty, 1: present, 2: known absent
}

const (
	minHotSlots = 1 << 10
	maxHotSlots = 1 << 18
)

func (c *hotCache) index(win uint8, start int64, h uint32) int {
	var buf [13]byte
	buf[0] = win
	for i := range 8 {
		buf[1+i] = byte(start >> (8 * i))
	}
	for i := range 4 {
		buf[9+i] = byte(h >> (8 * i))
	}
	return int(maphash.Bytes(c.seed, buf[:])) & (len(c.slots) - 1)
}

func (c *hotCache) get(win uint8, start int64, h uint32) (aggVal, bool) {
	if len(c.slots) == 0 {
		return aggVal{}, false
	}
	s := &c.slots[c.index(win, start, h)]
	if s.state == 0 || s.win != win || s.start != start || s.h != h {
		return aggVal{}, false
	}
	return aggVal{aggregate{s.score, s.at}, s.state == 1}, true
}

// put remembers v; members is the board's member count, which sizes the cache.
func (c *hotCache) put(win uint8, start int64, h uint32, v aggVal, members int) {
	if want := min(max(nextPow2(2*members), minHotSlots), maxHotSlots); len(c.slots) < want {
		c.slots = make([]hotSlot, want) // a cache: what it held is simply gone
		if c.seed == (maphash.Seed{}) {
			c.seed = maphash.MakeSeed()
		}
	}
	state := uint8(2)
	if v.present {
		state = 1
	}
	c.slots[c.index(win, start, h)] = hotSlot{start: start, score: v.a.score, at: v.a.at, h: h, win: win, state: state}
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
