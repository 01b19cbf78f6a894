package embedded

import (
	"strings"

	"github.com/laurel/laurel/rank"
)

// members interns a board's member ids: every window of the board refers to a member by a
// uint32 handle, so an id is stored once however many windows rank it.
type members struct {
	names []string
	ids   map[string]uint32
}

func newMembers() *members { return &members{ids: make(map[string]uint32)} }

func (m *members) lookup(id string) (uint32, bool) {
	h, ok := m.ids[id]
	return h, ok
}

func (m *members) intern(id string) uint32 {
	if h, ok := m.ids[id]; ok {
		return h
	}
	h := uint32(len(m.names))
	m.names = append(m.names, id)
	m.ids[id] = h
	return h
}

func (m *members) name(h uint32) string { return m.names[h] }

// tie orders members whose score and reached_at are equal: by their ids' bytes.
func (m *members) tie(a, b uint32) int { return strings.Compare(m.names[a], m.names[b]) }

// slot is a member's aggregate in a span held in memory.
type slot struct{ score, at int64 }

// slots maps handles to aggregates. A span that holds a fair share of the board's members
// keeps them in a slice indexed by handle (16 bytes an entry, no hashing); a small one, such
// as an old period still taking late events, in a map.
type slots struct {
	dense  []slot // at == noTime marks a handle with no entry
	sparse map[uint32]slot
	n      int
}

// denseAbove is the size from which a span may switch to the slice: a map entry costs about
// twice a slice element, so the slice pays once a third of the handles have entries.
const denseAbove = 4096

func (s *slots) get(h uint32) (slot, bool) {
	if s.dense != nil {
		if int(h) < len(s.dense) && s.dense[h].at != noTime {
			return s.dense[h], true
		}
		return slot{}, false
	}
	v, ok := s.sparse[h]
	return v, ok
}

// set stores v for h; handles is the board's handle count, for choosing the layout.
func (s *slots) set(h uint32, v slot, handles int) {
	if s.dense == nil {
		if s.sparse == nil {
			s.sparse = make(map[uint32]slot)
		}
		if _, ok := s.sparse[h]; !ok {
			s.n++
		}
		s.sparse[h] = v
		if s.n > denseAbove && 3*s.n > handles {
			s.densify(handles)
		}
		return
	}
	for int(h) >= len(s.dense) {
		s.dense = append(s.dense, slot{at: noTime})
	}
	if s.dense[h].at == noTime {
		s.n++
	}
	s.dense[h] = v
}

func (s *slots) densify(handles int) {
	d := make([]slot, handles, handles+handles/8)
	for i := range d {
		d[i].at = noTime
	}
	for h, v := range s.sparse {
		d[h] = v
	}
	s.dense, s.sparse = d, nil
}

func (s *slots) del(h uint32) {
	if s.dense != nil {
		if int(h) < len(s.dense) && s.dense[h].at != noTime {
			s.dense[h].at = noTime
			s.n--
		}
		return
	}
	if _, ok := s.sparse[h]; ok {
		delete(s.sparse, h)
		s.n--
	}
}

// each calls fn for every entry, in no particular order.
func (s *slots) each(fn func(h uint32, v slot)) {
	if s.dense != nil {
		for h, v := range s.dense {
			if v.at != noTime {
				fn(uint32(h), v)
			}
		}
		return
	}
	for h, v := range s.sparse {
		fn(h, v)
	}
}

// span is what memory holds of one open period (or the all window, or a rolling window's
// current span): every present member's aggregate, and the ranking of those not hidden.
type span struct {
	start, end int64 // unix ms; zero for all
	slots      slots
	tree       *rank.Tree
}

func newSpan(b *board, start, end int64) *span {
	return &span{start: start, end: end, tree: rank.New(b.treeOptions())}
}

func treeKey(h uint32, v slot) rank.Key { return rank.Key{Score: v.score, At: v.at, Member: h} }
