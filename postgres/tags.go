package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
)

// Tags are kept with their events only (laurel_events.tag), so that they cost the index
// nothing: a read finds an entry's tag among the member's events (laurel.TagOf).

// queueTags queues the read of the events that may have made the entries' scores, for readTags:
// the members' events at their reached_at, counted ones or, in a closed period, all of them (the
// period froze with events retracted since). The query stops at once on a board none of whose
// events carried a tag (laurel_events_tagged).
func queueTags(batch *pgx.Batch, b *laurel.Board, closed bool, entries []laurel.Entry) {
	members := make([]string, len(entries))
	times := make([]int64, len(entries))
	for i, en := range entries {
		members[i], times[i] = en.Member, en.ReachedAt
	}
	batch.Queue(`SELECT e.member, e.value, coalesce(e.sub, 0), e.ts, e.seq, e.tag
		FROM unnest($2::text[], $3::bigint[]) AS k(member, ts)
		JOIN laurel_events e ON e.member = k.member AND e.board = $1 AND e.ts = k.ts AND ($4 OR NOT e.retracted)
		WHERE EXISTS (SELECT 1 FROM laurel_events WHERE board = $1 AND tag IS NOT NULL)
		ORDER BY e.member, e.seq`, b.ID, members, times, closed)
}

// readTags reads what queueTags asked for and sets each entry's tag: that of the event that
// made its score (laurel.TagOf).
func readTags(br pgx.BatchResults, b *laurel.Board, entries []laurel.Entry) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("postgres: read tags: %w", err)
	}
	defer rows.Close()
	events := make(map[string][]laurel.Counted)
	for rows.Next() {
		var member string
		var ev laurel.Counted
		var seq int64
		var tag *string
		if err := rows.Scan(&member, &ev.Value, &ev.Sub, &ev.TS, &seq, &tag); err != nil {
			return err
		}
		ev.Seq, ev.Tag = uint64(seq), tagJSON(tag)
		events[member] = append(events[member], ev)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range entries {
		if evs, ok := events[entries[i].Member]; ok {
			entries[i].Tag = laurel.TagOf(b.Mode, entries[i].Key(), evs)
		}
	}
	return nil
}

// tagJSON is a stored tag as the domain carries it: nil for none.
func tagJSON(tag *string) json.RawMessage {
	if tag == nil {
		return nil
	}
	return json.RawMessage(*tag)
}
