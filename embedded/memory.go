package embedded

import (
	"cmp"
	"hash/maphash"
	"iter"
	"maps"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/laurel/laurel/rank"
)

// members interns a board's member ids: every window of the board refers to a member by a
// uint32 handle, so an id is stored once however many windows rank it. The ids live back to
// back in one byte arena, found through an open-addressing table of handles: about 4 bytes
// of offset and 5 to 10 of table per member beyond its bytes, where a map[string]uint32 and a
// []string would take some 60, and nothing for the garbage collector to trace.
//
// A table entry is handle+1 in its low bits and, in the bits the table's size leaves free
// above it, the top bits of the id's hash: a probe compares ids only when those match, so a
// lookup reads one other id's bytes about never, instead of one for each entry its probe
// passes (recovery's scans intern millions of new ids, each passing several).
type members struct {
	arena []byte   // every id, back to back; only ever appended to
	offs  []uint32 // handle h's id is arena[offs[h]:offs[h+1]]
	table []uint32 // handle+1 | tag, by hash; 0 for an empty slot; len is a power of two
	seed  maphash.Seed
	// ordered: the handles below it are in the order of their ids' bytes (a table that Open
	// filled from a checkpoint file's section), which lookupAt and internAt search forward.
	ordered uint32
	// indexed: the handles below it are in the table. Those above were appended by add and
	// are put in it (index) before the table is next read or written: on a goroutine of its
	// own when indexBehind started one (indexing, closed when it is done), while Open reads
	// the spans that follow a checkpoint file's ids.
	indexed  int
	indexing chan struct{}
}

func newMembers() *members {
	m := &members{offs: []uint32{0}, seed: maphash.MakeSeed()}
	m.resize(16)
	return m
}

func (m *members) count() int { return len(m.offs) - 1 }

// tagMask is the bits of a table entry that hold the tag: those above what handle+1 can need
// in a table of its size.
func (m *members) tagMask() uint32 { return tagsOf(len(m.table)) }

// tagsOf is the tag bits of a table of n slots.
func tagsOf(n int) uint32 { return ^uint32(0) << bits.Len(uint(n-1)) }

// name returns the id of handle h. The string shares the arena's bytes, which are never
// written again once appended (a growing arena is copied, and the old array stays as long
// as strings point into it).
func (m *members) name(h uint32) string {
	lo, hi := m.offs[h], m.offs[h+1]
	if lo == hi {
		return ""
	}
	return unsafe.String(&m.arena[lo], int(hi-lo))
}

// find returns the table slot of id: the one holding its handle, or the empty one where it
// would go, and the entry's tag.
func (m *members) find(id string) (i int, h uint32, tag uint32, ok bool) {
	if m.indexed < m.count() || m.indexing != nil {
		m.index()
	}
	hash := maphash.String(m.seed, id)
	tags := m.tagMask()
	tag = uint32(hash>>32) & tags
	mask := len(m.table) - 1
	for i = int(hash) & mask; ; i = (i + 1) & mask {
		v := m.table[i]
		if v == 0 {
			return i, 0, tag, false
		}
		if v&tags == tag && m.name(v&^tags-1) == id {
			return i, v&^tags - 1, tag, true
		}
	}
}

func (m *members) lookup(id string) (uint32, bool) {
	_, h, _, ok := m.find(id)
	return h, ok
}

func (m *members) intern(id string) uint32 {
	i, h, tag, ok := m.find(id)
	if ok {
		return h
	}
	h = uint32(m.count())
	m.arena = append(m.arena, id...)
	m.offs = append(m.offs, uint32(len(m.arena)))
	m.table[i] = h + 1 | tag
	m.indexed++
	if 4*m.count() > 3*len(m.table) {
		m.resize(2 * len(m.table))
	}
	return h
}

// lookupAt and internAt are lookup and intern for ids arriving in the order they were first
// interned in, as the scans of recovery do (each scans one window in member order): when
// hint is id's handle they cost one comparison.
// Among ordered handles, ids that come in the order of their bytes but skip some (a rolling
// window's bucket, scanned in key order, holds some of the members) are found after the hint
// by a few comparisons of bytes that lie close together (seek).
func (m *members) lookupAt(id string, hint uint32) (uint32, bool) {
	if h, ok := m.seek(id, hint); ok {
		return h, true
	}
	return m.lookup(id)
}

func (m *members) internAt(id string, hint uint32) uint32 {
	if h, ok := m.seek(id, hint); ok {
		return h
	}
	return m.intern(id) // one hash and probe, whether id is new or not
}

// seek finds id at hint, or among the ordered handles shortly after it (up to seekSpan,
// gallop); false if it is not there.
func (m *members) seek(id string, hint uint32) (uint32, bool) {
	if int(hint) >= m.count() {
		return 0, false
	}
	c := strings.Compare(m.name(hint), id)
	if c >= 0 || hint+1 >= m.ordered {
		return hint, c == 0
	}
	n := min(int(hint)+2*seekSpan, int(m.ordered))
	h := gallop(int(hint)+1, n, func(i int) bool { return m.name(uint32(i)) < id })
	return uint32(h), h < n && m.name(uint32(h)) == id
}

// gallop returns the first place i in [lo, n) that is not below (n when there is none), every
// place before lo being below: by steps from lo that double until one reaches a place not
// below, then a binary search of the last step. What it looks for near lo costs a few
// comparisons, whatever n is.
func gallop(lo, n int, below func(i int) bool) int {
	step := 1
	for lo < n && below(min(lo+step, n)-1) {
		lo, step = min(lo+step, n), 2*step
	}
	hi := min(lo+step, n)
	return lo + sort.Search(hi-lo, func(j int) bool { return !below(lo + j) })
}

// seekSpan is how far after its hint seek looks: a bucket holding one member in a thousand
// still finds each in some 20 comparisons.
const seekSpan = 1 << 10

// resize makes the table n slots (a power of two above the handles) and puts every handle
// back in it. The tag takes the bits above those handle+1 can need in a table of n.
func (m *members) resize(n int) {
	m.awaitIndex()
	m.table = hugeSlice[uint32](n)
	put(m.table, m.seed, m.arena, m.offs, 0, m.count())
	m.indexed = m.count()
}

// put puts handles lo to hi of the ids in arena and offs (members' own) in table, which has
// room for them.
func put(table []uint32, seed maphash.Seed, arena []byte, offs []uint32, lo, hi int) {
	tags, mask := tagsOf(len(table)), len(table)-1
	for h := lo; h < hi; h++ {
		from, to := offs[h], offs[h+1]
		hash := maphash.String(seed, unsafe.String(unsafe.SliceData(arena[from:to]), int(to-from)))
		i := int(hash) & mask
		for table[i] != 0 {
			i = (i + 1) & mask
		}
		table[i] = uint32(h) + 1 | uint32(hash>>32)&tags
	}
}

// add appends id, which no handle has, without putting it in the table (indexed).
func (m *members) add(id string) uint32 {
	m.awaitIndex()
	m.arena = append(m.arena, id...)
	m.offs = append(m.offs, uint32(len(m.arena)))
	return uint32(m.count() - 1)
}

// indexBehind starts putting the handles add appended in the table, on a goroutine of its own
// (Open's other core reads the spans meanwhile): at 25M members, some 4 s of hashing and of the
// cache's misses. The ids and the table are not written until it is done (awaitIndex).
func (m *members) indexBehind() {
	m.awaitIndex()
	lo, hi := m.indexed, m.count()
	if lo == hi || 4*hi > 3*len(m.table) {
		return // nothing to put, or a table to make larger first: find does both
	}
	done := make(chan struct{})
	table, seed, arena, offs := m.table, m.seed, m.arena, m.offs
	go func() {
		defer close(done)
		put(table, seed, arena, offs, lo, hi)
	}()
	m.indexing, m.indexed = done, hi
}

// awaitIndex waits for the table that indexBehind fills.
func (m *members) awaitIndex() {
	if m.indexing != nil {
		<-m.indexing
		m.indexing = nil
	}
}

// index puts every handle in the table, growing it as needed.
func (m *members) index() {
	m.awaitIndex()
	if m.indexed == m.count() {
		return
	}
	if want := 2 * len(m.table); 4*m.count() > 3*len(m.table) {
		for 4*m.count() > 3*want {
			want *= 2
		}
		m.resize(want)
		return
	}
	put(m.table, m.seed, m.arena, m.offs, m.indexed, m.count())
	m.indexed = m.count()
}

// tie orders members whose score and reached_at are equal: by their ids' bytes, which for two
// ordered handles is their own order. Trees and sorts ask it of every tie: a handle's id read
// from the arena is a miss of the cache for each, among millions of members.
func (m *members) tie(a, b uint32) int {
	if a < m.ordered && b < m.ordered {
		return cmp.Compare(a, b)
	}
	return strings.Compare(m.name(a), m.name(b))
}

// slot is a member's aggregate in an in-memory span: its score, reached_at and subscore (0
// on a board without one). Slots keep subscores apart (subs), so that boards without one pay
// nothing for them.
type slot struct{ score, at, sub int64 }

// wideSlot is what a wide chunk or a map keeps of an entry: its subscore is kept apart.
type wideSlot struct{ score, at int64 }

// slots maps handles to aggregates. A span that holds a fair share of the board's members
// keeps them in chunks indexed by handle (12 or 16 bytes an entry, no hashing); a small one in
// a map. The subscores that are not 0, on the boards that declare one, are kept beside them
// (subs; 8 bytes an entry more in chunks), which are nil until the first.
type slots struct {
	dense  []chunk // nil: sparse
	sparse map[uint32]wideSlot
	subs   *subs
	n      int
}

// subs holds a span's subscores that are not 0, by handle: in chunks of chunkLen beside dense
// slots (one made with the first subscore of its handles that is not 0), in a map beside a
// sparse one.
type subs struct {
	dense  []*[chunkLen]int64
	sparse map[uint32]int64
}

func (u *subs) get(h uint32) int64 {
	if u.dense != nil {
		if c := int(h >> chunkBits); c < len(u.dense) && u.dense[c] != nil {
			return u.dense[c][h&(chunkLen-1)]
		}
		return 0
	}
	return u.sparse[h]
}

// set stores h's subscore; dense says whether the slots are.
func (u *subs) set(h uint32, sub int64, dense bool) {
	if !dense {
		if sub == 0 {
			delete(u.sparse, h)
		} else {
			if u.sparse == nil {
				u.sparse = make(map[uint32]int64)
			}
			u.sparse[h] = sub
		}
		return
	}
	c := int(h >> chunkBits)
	if c >= len(u.dense) {
		if sub == 0 {
			return
		}
		u.dense = append(u.dense, make([]*[chunkLen]int64, c+1-len(u.dense))...)
	}
	if u.dense[c] == nil {
		if sub == 0 {
			return
		}
		u.dense[c] = new([chunkLen]int64)
	}
	u.dense[c][h&(chunkLen-1)] = sub
}

func (u *subs) clone() *subs {
	if u == nil {
		return nil
	}
	c := &subs{sparse: maps.Clone(u.sparse)}
	if u.dense != nil {
		c.dense = make([]*[chunkLen]int64, len(u.dense))
		for i, d := range u.dense {
			if d != nil {
				c.dense[i] = new([chunkLen]int64)
				*c.dense[i] = *d
			}
		}
	}
	return c
}

// subOf returns h's subscore: what a tree of a board with a subscore asks (rank.Options.SubOf).
func (s *slots) subOf(h uint32) int64 {
	if s.subs == nil {
		return 0
	}
	return s.subs.get(h)
}

// setSub stores h's subscore, making the subscores' structure at the first that is not 0.
func (s *slots) setSub(h uint32, sub int64) {
	if s.subs == nil {
		if sub == 0 {
			return
		}
		s.subs = &subs{}
	}
	s.subs.set(h, sub, s.dense != nil)
}

// A chunk holds the aggregates of 4096 consecutive handles. Chunks, not one slice: a slice of
// millions of entries grows by copying itself and keeps up to a quarter of it unused (append's
// growth), where chunks are added as handles come and waste less than one.
//
// Most spans last days (a day, a week, a month, a rolling window and its buckets), and so do
// the times of their entries. A chunk starts narrow: 12 bytes an entry, the score and the time
// as an offset of 32 bits from the chunk's base (up to 49 days; 48 KiB a chunk). The first
// time its times spread wider (all, a year, a late event far from the others) it turns wide
// for good: 16 bytes an entry, the time whole (64 KiB).
type chunk struct {
	base int64
	near *[chunkLen]nearSlot // nil once wide
	far  *[chunkLen]wideSlot // when wide; at == noTime: no entry
}

// nearSlot is an entry of a narrow chunk: the score's low and high halves, then the time's
// offset from the chunk's base (noOffset: no entry). A struct of an int64 and a uint32 would
// take 16 bytes.
type nearSlot [3]uint32

const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits
	noOffset  = math.MaxUint32
)

// newChunk returns a chunk with no entries in near, a new array.
func newChunk(near *[chunkLen]nearSlot) chunk {
	c := chunk{near: near}
	for i := range c.near {
		c.near[i][2] = noOffset
	}
	return c
}

func (c *chunk) get(i int) (slot, bool) {
	if c.near != nil {
		e := &c.near[i]
		if e[2] == noOffset {
			return slot{}, false
		}
		return slot{score: int64(uint64(e[0]) | uint64(e[1])<<32), at: c.base + int64(e[2])}, true
	}
	v := c.far[i]
	return slot{score: v.score, at: v.at}, v.at != noTime
}

// set stores v at i and reports whether i had no entry.
func (c *chunk) set(i int, v slot) bool {
	if c.near != nil && !c.fits(v.at) {
		c.refit(v.at)
	}
	if c.near != nil {
		e := &c.near[i]
		added := e[2] == noOffset
		*e = nearSlot{uint32(v.score), uint32(uint64(v.score) >> 32), uint32(v.at - c.base)}
		return added
	}
	added := c.far[i].at == noTime
	c.far[i] = wideSlot{v.score, v.at}
	return added
}

// del removes the entry at i and reports whether there was one.
func (c *chunk) del(i int) bool {
	if c.near != nil {
		had := c.near[i][2] != noOffset
		c.near[i][2] = noOffset
		return had
	}
	had := c.far[i].at != noTime
	c.far[i].at = noTime
	return had
}

// fits reports whether a narrow chunk can hold the time at.
func (c *chunk) fits(at int64) bool {
	return at >= c.base && uint64(at)-uint64(c.base) < noOffset
}

// refit makes a narrow chunk able to hold the time at, which it cannot yet: it moves the base
// so that its times and at lie in the middle of the offsets' range, or widens the chunk when
// they spread too far for it. A scan of the chunk, rare: a span whose times follow the clock
// moves its chunks' bases about once in 24 days.
func (c *chunk) refit(at int64) {
	lo, hi := at, at
	for i := range c.near {
		if off := c.near[i][2]; off != noOffset {
			t := c.base + int64(off)
			lo, hi = min(lo, t), max(hi, t)
		}
	}
	spread := uint64(hi) - uint64(lo)
	if spread >= noOffset {
		far := new([chunkLen]wideSlot)
		for i := range far {
			v, ok := c.get(i)
			if !ok {
				v.at = noTime
			}
			far[i] = wideSlot{v.score, v.at}
		}
		c.near, c.far = nil, far
		return
	}
	base := lo - int64(min((noOffset-1-spread)/2, uint64(lo)^1<<63)) // not below MinInt64
	for i := range c.near {
		if off := c.near[i][2]; off != noOffset {
			c.near[i][2] = uint32(c.base + int64(off) - base)
		}
	}
	c.base = base
}

func (c *chunk) clone() chunk {
	d := chunk{base: c.base}
	if c.near != nil {
		d.near = new([chunkLen]nearSlot)
		*d.near = *c.near
	} else {
		d.far = new([chunkLen]wideSlot)
		*d.far = *c.far
	}
	return d
}

// chunkOf returns the chunk of h and h's place in it; nil when no chunk covers h yet.
func (s *slots) chunkOf(h uint32) (*chunk, int) {
	if c := int(h >> chunkBits); c < len(s.dense) {
		return &s.dense[c], int(h & (chunkLen - 1))
	}
	return nil, 0
}

// denseAbove is the size from which a span may switch to chunks: a map entry costs about 40
// bytes, three narrow entries, so chunks pay once 40% of the handles have entries.
const denseAbove = 4096

func (s *slots) get(h uint32) (slot, bool) {
	var v slot
	var ok bool
	if s.dense != nil {
		c, i := s.chunkOf(h)
		if c == nil {
			return slot{}, false
		}
		v, ok = c.get(i)
	} else {
		var w wideSlot
		w, ok = s.sparse[h]
		v = slot{score: w.score, at: w.at}
	}
	if ok && s.subs != nil {
		v.sub = s.subs.get(h)
	}
	return v, ok
}

// set stores v for h; handles is the board's handle count, for choosing the layout.
func (s *slots) set(h uint32, v slot, handles int) {
	if v.sub != 0 || s.subs != nil {
		s.setSub(h, v.sub)
	}
	if s.dense == nil {
		if s.sparse == nil {
			s.sparse = make(map[uint32]wideSlot)
		}
		if _, ok := s.sparse[h]; !ok {
			s.n++
		}
		s.sparse[h] = wideSlot{v.score, v.at}
		if s.n > denseAbove && 5*s.n > 2*handles {
			s.densify(handles)
		}
		return
	}
	c, i := s.chunkOf(h)
	if c == nil {
		s.cover(int(h) + 1)
		c, i = s.chunkOf(h)
	}
	if c.set(i, v) {
		s.n++
	}
}

// load sets entries, laid out once for the number the span then holds: in chunks when set
// would switch to them by then, else in a map made to size. Recovery, which reads a span's
// entries before it sets them, thus spares the map that set fills and drops on the way (a
// map of millions for a week's span read after all has interned every member).
func (s *slots) load(entries []handleSlot, handles int) {
	s.layOut(len(entries), handles)
	for _, e := range entries {
		s.set(e.h, e.v, handles)
	}
}

// layOut readies the slots for more entries to come (load).
func (s *slots) layOut(more, handles int) {
	switch n := s.n + more; {
	case s.dense != nil:
	case n > denseAbove && 5*n > 2*handles:
		s.densify(handles)
	case s.sparse == nil:
		s.sparse = make(map[uint32]wideSlot, more)
	}
}

// handleSlot is a member's aggregate in a span, as recovery reads it.
type handleSlot struct {
	h uint32
	v slot
}

// cover adds chunks until the first n handles have slots. Their arrays are made first, then
// faulted in huge pages where they lie back to back (a span laid out at Open: 300 MB of chunks
// at 25M members), then filled.
func (s *slots) cover(n int) {
	more := (n+chunkLen-1)>>chunkBits - len(s.dense)
	if more <= 0 {
		return
	}
	near := make([]*[chunkLen]nearSlot, more)
	for i := range near {
		near[i] = new([chunkLen]nearSlot)
	}
	faultHugeArrays(near)
	s.dense = slices.Grow(s.dense, more)
	for _, a := range near {
		s.dense = append(s.dense, newChunk(a))
	}
}

func (s *slots) densify(handles int) {
	s.cover(max(handles, 1))
	for h, v := range s.sparse {
		c, i := s.chunkOf(h)
		c.set(i, slot{score: v.score, at: v.at})
	}
	s.sparse = nil
	if s.subs != nil {
		sparse := s.subs.sparse
		s.subs = &subs{}
		for h, sub := range sparse {
			s.subs.set(h, sub, true)
		}
	}
}

func (s *slots) del(h uint32) {
	if s.subs != nil {
		s.subs.set(h, 0, s.dense != nil)
	}
	if s.dense != nil {
		if c, i := s.chunkOf(h); c != nil && c.del(i) {
			s.n--
		}
		return
	}
	if _, ok := s.sparse[h]; ok {
		delete(s.sparse, h)
		s.n--
	}
}

// clone returns a copy of s that shares nothing with it.
func (s *slots) clone() slots {
	c := slots{n: s.n, sparse: maps.Clone(s.sparse), subs: s.subs.clone()}
	if s.dense != nil {
		c.dense = make([]chunk, len(s.dense))
		for i := range s.dense {
			c.dense[i] = s.dense[i].clone()
		}
	}
	return c
}

// each calls fn for every entry, in no particular order.
func (s *slots) each(fn func(h uint32, v slot)) {
	if s.dense != nil {
		for c := range s.dense {
			ch := &s.dense[c]
			var sub *[chunkLen]int64 // nil: every subscore of the chunk is 0
			if s.subs != nil && c < len(s.subs.dense) {
				sub = s.subs.dense[c]
			}
			for i := range chunkLen {
				if v, ok := ch.get(i); ok {
					if sub != nil {
						v.sub = sub[i]
					}
					fn(uint32(c<<chunkBits|i), v)
				}
			}
		}
		return
	}
	for h, v := range s.sparse {
		e := slot{score: v.score, at: v.at}
		if s.subs != nil {
			e.sub = s.subs.sparse[h]
		}
		fn(h, e)
	}
}

// span is what memory holds of one open period (or the all window, or a rolling window's
// current span): every present member's aggregate, hidden ones included, so that writes and
// reads never ask the store for one; and the ranking of the members not hidden.
type span struct {
	start, end int64 // unix ms; zero for all
	slots      slots
	tree       *rank.Tree
	dirtyMarks // checkpoint.go
	// tags holds the tag of each entry of a calendar window or all that has one (tags.go).
	tags spanTags
}

// bitset is a set of handles, a bit each.
type bitset []uint64

func (s bitset) has(h uint32) bool { return int(h>>6) < len(s) && s[h>>6]&(1<<(h&63)) != 0 }

func (s *bitset) add(h uint32) {
	for int(h>>6) >= len(*s) {
		*s = append(*s, 0)
	}
	(*s)[h>>6] |= 1 << (h & 63)
}

// all yields the handles in s, in order.
func (s bitset) all() iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		for i, word := range s {
			for word != 0 {
				h := uint32(i<<6 | bits.TrailingZeros64(word))
				if !yield(h) {
					return
				}
				word &= word - 1
			}
		}
	}
}

func (s bitset) remove(h uint32) {
	if int(h>>6) < len(s) {
		s[h>>6] &^= 1 << (h & 63)
	}
}

func newSpan(b *board, start, end int64) *span {
	sp := &span{start: start, end: end}
	sp.tree = rank.New(b.treeOptions(sp))
	return sp
}

// timeOf gives the tree the time of a member's key, from its aggregate: the tree does not keep
// times in its leaves (rank.Options.TimeOf), and board.set changes an aggregate between the
// Delete of the member's old key and the Insert of its new one.
func (sp *span) timeOf(h uint32) int64 {
	v, _ := sp.slots.get(h)
	return v.at
}

func treeKey(h uint32, v slot) rank.Key {
	return rank.Key{Score: v.score, Sub: v.sub, At: v.at, Member: h}
}
