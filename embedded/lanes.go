package embedded

// A group's changes to memory are applied on two lanes at once where they can be: most of
// them are a member's entry in one window, and the windows of a board share nothing that
// such a change writes (each has its own spans, trees, buckets and dirty marks), so the
// writer makes the changes of half of the windows while a helper makes the others'.

// A change is one change to memory that a group makes once it is durable. Its kind says what
// it may run beside:
//   - changeOrdered (the zero value): anything; a slice that holds one is applied in order,
//     on the writer alone.
//   - changeFree: touches no window's spans or buckets (the recent events, the history
//     points, a profile): it may run after the window changes of its slice.
//   - changeLane+l: an entry of a window on lane l, that touches that window alone; the
//     checkpoint marks it leaves are noted on the lane (laneNotes) and made by the writer.
type change struct {
	f    func() // nil: set is the change
	kind int8
	set  entryChange
}

// run makes the change.
func (c *change) run(e *Store) {
	if c.f != nil {
		c.f()
		return
	}
	c.set.run(e)
}

// entryChange is a change made without a closure, which cost an allocation each: a member's
// entry set in a window, the change a write makes most (some five an event), or an applied
// event added to memory's recent events.
type entryChange struct {
	b          *board
	w          *window
	start, end int64   // the span's (toSpan), the bucket's start (toBucket)
	nb         *bucket // toBucket: the newest bucket as the change was staged
	member     string
	v          slot
	tag        string       // toSpan with setTag: the entry's tag now; "" for none
	first      uint64       // with deferred: the first sequence number of the group
	logged     *loggedEvent // toRecent: the event, in its group's list
	h          uint32
	to         int8 // toSpan, toRollingSpan or toBucket
	present    bool
	deferred   bool // written behind: noted for the checkpoint queue
	setTag     bool // toSpan: the event that made the entry is known, and tag is its
}

const (
	toSpan        int8 = iota // an in-memory span of a calendar window or all
	toRollingSpan             // a rolling window's current span
	toBucket                  // a rolling window's bucket
	toRecent                  // not an entry: an event applied, to memory's recent events
)

func (s *entryChange) run(e *Store) {
	b, w := s.b, s.w
	switch s.to {
	case toRollingSpan:
		b.setHandle(e, w.span(rollingSpan), s.h, s.member, s.v, s.present)
	case toSpan:
		sp := b.spanFor(w, s.start, s.end, s.present)
		if sp == nil {
			return
		}
		b.setHandle(e, sp, s.h, s.member, s.v, s.present)
		if s.setTag && s.present {
			sp.setTag(s.h, s.tag)
		}
		if s.deferred {
			e.noteDirty(b, w, sp, nil, s.h, s.first)
		}
	case toBucket:
		w.setBucket(s.start, s.h, s.v, s.present, b.members.count())
		if s.deferred && w.newest == s.nb {
			e.noteDirty(b, w, nil, s.nb, s.h, s.first)
		}
	case toRecent:
		e.recent.add(s.logged.board, s.logged.event)
	}
}

const (
	changeOrdered int8 = iota
	changeFree
	changeLane // + the window's lane
)

// lanes is how many lanes a group is applied on: the writer's and a helper's.
const lanes = 2

// dirtyNote is a markDirty to make once a slice's window changes are done.
type dirtyNote struct {
	b   *board
	w   *window
	sp  *span
	bk  *bucket
	h   uint32
	seq uint64
}

// laneHelper runs the changes of lane 1 of a slice while the writer runs lane 0's.
type laneHelper struct {
	work chan []change
	done chan struct{}
}

func startLaneHelper(e *Store) *laneHelper {
	l := &laneHelper{work: make(chan []change), done: make(chan struct{})}
	go func() {
		for cs := range l.work {
			runKind(e, cs, changeLane+1)
			l.done <- struct{}{}
		}
	}()
	return l
}

func (l *laneHelper) stop() { close(l.work) }

// runKind runs the changes of cs of kind, in order.
func runKind(e *Store, cs []change, kind int8) {
	for i := range cs {
		if c := &cs[i]; c.kind == kind {
			c.run(e)
		}
	}
}

// noteDirty notes on w's lane an aggregate for the checkpoint queue (markDirty): the queue is
// shared by every window, so the writer adds to it once the lanes are done.
func (s *Store) noteDirty(b *board, w *window, sp *span, bk *bucket, h uint32, seq uint64) {
	s.laneNotes[w.lane] = append(s.laneNotes[w.lane], dirtyNote{b, w, sp, bk, h, seq})
}

// markNoted makes the markDirty calls noted on the lanes, and empties them.
func (s *Store) markNoted() {
	for l := range s.laneNotes {
		for _, n := range s.laneNotes[l] {
			s.markDirty(n.b, n.w, n.sp, n.bk, n.h, n.seq)
		}
		clear(s.laneNotes[l])
		s.laneNotes[l] = s.laneNotes[l][:0]
	}
}

// applySlice applies the changes cs, all of whole operations: on both lanes at once when
// none of them is ordered and each lane has some, else in order on the writer.
func (s *Store) applySlice(cs []change) {
	var ordered bool
	var perLane [lanes]int
	for i := range cs {
		switch k := cs[i].kind; {
		case k == changeOrdered:
			ordered = true
		case k >= changeLane:
			perLane[k-changeLane]++
		}
	}
	if ordered || perLane[0] == 0 || perLane[1] == 0 {
		for i := range cs {
			c := &cs[i]
			c.run(s)
			if c.kind >= changeLane {
				s.markNoted() // where markDirty was made before lanes
			}
		}
		return
	}
	if s.helper == nil {
		s.helper = startLaneHelper(s)
	}
	s.helper.work <- cs
	runKind(s, cs, changeLane)
	<-s.helper.done
	runKind(s, cs, changeFree)
	s.markNoted()
}
