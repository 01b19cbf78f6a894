package laurel

// Agg is a member's aggregate over one span of time (a period, a rolling bucket, or a rolling
// window made of buckets): everything ranking needs, and what the store keeps.
type Agg struct {
	Score int64 // the member's score in the span
	Sub   int64 // its subscore: 0 on a board without one (docs/design.md, "Subscore")
	At    int64 // reached_at, unix ms (docs/design.md, "Order and ties")
	Count int64 // counted events; the member is present in the span iff Count > 0
	// Seq and Tag are the arrival order and the tag of the event that made the aggregate, the
	// one whose tag the entry shows (docs/design.md, "Tags"): Seq breaks ties of time in
	// Last (the later arrival) and in Best (the first). A store that does not keep them
	// gives 0 and "": an event added to such an aggregate arrived after all of its own, and
	// an aggregate still made by those has Seq 0 (its tag is the one the store holds).
	Seq uint64
	Tag string
}

// Present reports whether the member has a counted event in the span.
func (a Agg) Present() bool { return a.Count > 0 }

// Add folds one event (value and subscore at ts) into a by the rules of the mode and
// ordering. A sum that would overflow int64 is EInvalid and a is returned unchanged.
func Add(m Mode, o Ordering, a Agg, value, sub, ts int64, seq uint64) (Agg, error) {
	return Merge(m, o, a, Agg{Score: value, Sub: sub, At: ts, Count: 1, Seq: seq})
}

// Agg is the aggregate of ev alone.
func (ev Counted) Agg() Agg {
	return Agg{Score: ev.Value, Sub: ev.Sub, At: ev.TS, Count: 1, Seq: ev.Seq, Tag: string(ev.Tag)}
}

// Merge combines the aggregates of two disjoint spans of the same member, as if every event
// of both had been added to one: the combination of a rolling window's buckets. The result
// keeps the Seq and Tag of the one whose event made it.
func Merge(m Mode, o Ordering, a, b Agg) (Agg, error) {
	if !a.Present() {
		return b, nil
	}
	if !b.Present() {
		return a, nil
	}
	var out Agg
	switch m {
	case Sum:
		s, ok := addInt64(a.Score, b.Score)
		sub, subOK := addInt64(a.Sub, b.Sub)
		if !ok || !subOK {
			return a, Errorf(EInvalid, "the sum would overflow a 64-bit integer")
		}
		// reached_at is the latest time among the counted events; the tag the latest
		// counted event's.
		out = later(a, b)
		out.Score, out.Sub = s, sub
	case Best:
		// The best (value, subscore) pair, compared lexicographically; among equal pairs,
		// the earliest time it was reached, and of those at the same instant the first to
		// arrive.
		switch {
		case o.Better(a.Score, a.Sub, b.Score, b.Sub):
			out = a
		case o.Better(b.Score, b.Sub, a.Score, a.Sub):
			out = b
		case b.At < a.At || b.At == a.At && b.Seq < a.Seq:
			out = b
		default:
			out = a
		}
	case Last:
		// The latest event by event time; among equal times, the later arrival.
		out = later(a, b)
	}
	out.Count = a.Count + b.Count
	return out, nil
}

// addInt64 returns x+y and whether it did not overflow.
func addInt64(x, y int64) (int64, bool) {
	s := x + y
	return s, !(y > 0 && s < x || y < 0 && s > x)
}

// later returns the one of a and b made by the later event: by time, then by arrival.
func later(a, b Agg) Agg {
	if b.At > a.At || b.At == a.At && b.Seq > a.Seq {
		return b
	}
	return a
}
