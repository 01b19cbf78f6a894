package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
)

// The rate rule of a board's guard counts a member's counted events in an interval of time
// (docs/design.md, "Guards"). A step holds the member's shard lock, so the store's events of
// the member change only by its own commit: it reads their times once, with its other reads
// (queueRates), and counts those it stages beside them.

// memberTimes are the times of a member's events on a board as a step sees them.
type memberTimes struct {
	from, to int64   // the store's counted events at times in (from, to] are in stored
	stored   []int64 // as the step read them
	staged   []int64 // of the events the step staged
}

// readRatesSQL reads the times of the counted events of members, each in its own interval,
// through the index on (member, board, ts).
const readRatesSQL = `SELECT q.member, e.ts FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS q(member, lo, hi)
	CROSS JOIN LATERAL (SELECT ts FROM laurel_events
		WHERE member = q.member AND board = $1 AND ts > q.lo AND ts <= q.hi AND NOT retracted OFFSET 0) e`

// queueRates queues the read of the times of each member's events in (from, to], the
// intervals given by member, unless the step has them.
func (s *step) queueRates(r *reads, b *boardStep, want map[string][2]int64) {
	var members []string
	var los, his []int64
	for m, span := range want {
		if mt := b.rates[m]; mt != nil && mt.from <= span[0] && span[1] <= mt.to {
			continue
		}
		if b.rates == nil {
			b.rates = make(map[string]*memberTimes)
		}
		mt := b.rates[m]
		if mt == nil {
			mt = &memberTimes{from: span[0], to: span[1]}
			b.rates[m] = mt
		}
		// Read again whole, over both intervals: the store has not changed under the lock.
		mt.from, mt.to, mt.stored = min(mt.from, span[0]), max(mt.to, span[1]), nil
		members, los, his = append(members, m), append(los, mt.from), append(his, mt.to)
	}
	if len(members) == 0 {
		return
	}
	r.queue(readRatesSQL, []any{b.id, members, los, his}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: read the times of events: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var m string
			var ts int64
			if err := rows.Scan(&m, &ts); err != nil {
				return err
			}
			mt := b.rates[m]
			mt.stored = append(mt.stored, ts)
		}
		return rows.Err()
	})
}

// countEvents is laurel.Aggregates.CountEvents.
func (s *step) countEvents(ctx context.Context, b *boardStep, member string, from, to int64) (int, error) {
	if mt := b.rates[member]; mt == nil || from < mt.from || to > mt.to {
		var r reads
		s.queueRates(&r, b, map[string][2]int64{member: {from, to}})
		if err := r.run(ctx, s); err != nil {
			return 0, err
		}
	}
	mt := b.rates[member]
	n := 0
	for _, list := range [][]int64{mt.stored, mt.staged} {
		for _, ts := range list {
			if ts > from && ts <= to {
				n++
			}
		}
	}
	return n, nil
}

// stageTime notes an event the step staged on a board with a rate rule, which countEvents
// has read the member's times for; a request rolled back takes it back (undoLog.rates).
func (b *boardStep) stageTime(member string, ts int64) {
	mt := b.rates[member]
	if mt == nil {
		return // nothing asked: the board's guard has no rate rule
	}
	if u := b.undo; u != nil {
		if _, ok := u.rates[member]; !ok {
			u.rates[member] = len(mt.staged)
		}
	}
	mt.staged = append(mt.staged, ts)
}

// rateSpans adds to want, for the events on a board with a rate rule, the interval each
// member's events are judged in (their times as Admit would give them).
func rateSpans(want map[string][2]int64, r *laurel.RateRule, ev *laurel.Event, now int64) {
	ts := now
	if ev.HasTS {
		ts = ev.TS
	}
	span, ok := want[ev.Member]
	if !ok {
		span = [2]int64{r.Since(ts), ts}
	}
	want[ev.Member] = [2]int64{min(span[0], r.Since(ts)), max(span[1], ts)}
}
