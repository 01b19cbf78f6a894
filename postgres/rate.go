package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
)

// The rate rule of a board's guard counts a member's counted events in an interval of time
// (docs/design.md, "Guards"). A step holds the member's shard lock, so the store's events of
// the member change only by its own commit: it counts them once for each interval its events
// are judged in, with its other reads (queueRates), and adds those it staged itself.

// rateKey names the count of a member's stored events at times in (from, to].
type rateKey struct {
	member   string
	from, to int64
}

// rateCounts are what a step knows for a board's rate rule: the store's counts, each up to
// the rule's max, and the times of the events the step staged, by member.
type rateCounts struct {
	stored map[rateKey]int
	staged map[string][]int64
}

// readRatesSQL counts the counted events of members in intervals, each up to $5, through the
// index on (member, board, ts).
const readRatesSQL = `SELECT q.member, q.lo, q.hi, c.n FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS q(member, lo, hi)
	CROSS JOIN LATERAL (SELECT count(*) AS n FROM (SELECT 1 FROM laurel_events
		WHERE member = q.member AND board = $1 AND ts > q.lo AND ts <= q.hi AND NOT retracted LIMIT $5) e) c`

// queueRates queues the counts of the intervals in want that the step has not counted.
func (s *step) queueRates(r *reads, b *boardStep, want []rateKey) {
	rule := b.st.cfg.Guard.Rate
	if b.rates.stored == nil {
		b.rates.stored, b.rates.staged = make(map[rateKey]int), make(map[string][]int64)
	}
	var members []string
	var los, his []int64
	for _, k := range want {
		if _, ok := b.rates.stored[k]; ok {
			continue
		}
		b.rates.stored[k] = 0
		members, los, his = append(members, k.member), append(los, k.from), append(his, k.to)
	}
	if len(members) == 0 {
		return
	}
	r.queue(readRatesSQL, []any{b.id, members, los, his, rule.Max}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("postgres: count the events of members: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k rateKey
			var n int
			if err := rows.Scan(&k.member, &k.from, &k.to, &n); err != nil {
				return err
			}
			b.rates.stored[k] = n
		}
		return rows.Err()
	})
}

// countEvents is laurel.Aggregates.CountEvents.
func (s *step) countEvents(ctx context.Context, b *boardStep, member string, from, to int64) (int, error) {
	k := rateKey{member, from, to}
	if _, ok := b.rates.stored[k]; !ok {
		var r reads
		s.queueRates(&r, b, []rateKey{k})
		if err := r.run(ctx, s); err != nil {
			return 0, err
		}
	}
	n := b.rates.stored[k]
	for _, ts := range b.rates.staged[member] {
		if ts > from && ts <= to {
			n++
		}
	}
	return n, nil
}

// stageTime notes an event the step staged on a board with a rate rule; a request rolled
// back takes it back (undoLog.rates).
func (b *boardStep) stageTime(member string, ts int64) {
	if g := b.st.cfg.Guard; g == nil || g.Rate == nil {
		return
	}
	if b.rates.staged == nil {
		b.rates.staged = make(map[string][]int64)
	}
	if u := b.undo; u != nil {
		if _, ok := u.rates[member]; !ok {
			u.rates[member] = len(b.rates.staged[member])
		}
	}
	b.rates.staged[member] = append(b.rates.staged[member], ts)
}

// rateKeyOf is the interval an event is judged in by rule, at its time as Admit gives it.
func rateKeyOf(r *laurel.RateRule, ev *laurel.Event, now int64) rateKey {
	ts := now
	if ev.HasTS {
		ts = ev.TS
	}
	return rateKey{ev.Member, r.Since(ts), ts}
}
