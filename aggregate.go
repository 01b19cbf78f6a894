package laurel

// Agg is a member's aggregate over one span of time (a period, a rolling bucket, or a rolling
// window made of buckets): everything ranking needs, and what the store keeps.
type Agg struct {
	Score int64  // the member's score in the span
	At    int64  // reached_at, unix ms (docs/design.md, "Order and ties")
	Count int64  // counted events; the member is present in the span iff Count > 0
	Seq   uint64 // for Last: the arrival order of the event that set Score, to break ts ties
}

// Present reports whether the member has a counted event in the span.
func (a Agg) Present() bool { return a.Count > 0 }

// Add folds one event into a by the rules of the mode and order. A sum that would overflow
// int64 is EInvalid and a is returned unchanged.
func Add(m Mode, o Order, a Agg, value, ts int64, seq uint64) (Agg, error) {
	return Merge(m, o, a, Agg{Score: value, At: ts, Count: 1, Seq: seq})
}

// Merge combines the aggregates of two disjoint spans of the same member, as if every event
// of both had been added to one: the combination of a rolling window's buckets.
func Merge(m Mode, o Order, a, b Agg) (Agg, error) {
	if !a.Present() {
		return b, nil
	}
	if !b.Present() {
		return a, nil
	}
	out := Agg{Count: a.Count + b.Count}
	switch m {
	case Sum:
		s := a.Score + b.Score
		if (b.Score > 0 && s < a.Score) || (b.Score < 0 && s > a.Score) {
			return a, Errorf(EInvalid, "the sum would overflow a 64-bit integer")
		}
		// reached_at is the latest time among the counted events.
		out.Score, out.At = s, max(a.At, b.At)
	case Best:
		// The best value; among equal values, the earliest time it was reached.
		switch {
		case o.Better(a.Score, b.Score):
			out.Score, out.At = a.Score, a.At
		case o.Better(b.Score, a.Score):
			out.Score, out.At = b.Score, b.At
		default:
			out.Score, out.At = a.Score, min(a.At, b.At)
		}
	case Last:
		// The latest event by event time; among equal times, the later arrival.
		if b.At > a.At || b.At == a.At && b.Seq > a.Seq {
			out.Score, out.At, out.Seq = b.Score, b.At, b.Seq
		} else {
			out.Score, out.At, out.Seq = a.Score, a.At, a.Seq
		}
	}
	return out, nil
}
