package laureltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
)

// TournamentRules drives competition.Service over a store with random submits (retries of
// event ids included), retractions, joins and clock moves, and compares every answer and
// every entry with a brute-force model of the rules: joins required or not, members per run,
// attempts per member (a retracted event's id sent again is a new attempt), runs of a daily
// tournament in a zone with summer time, and its start and end.
func TournamentRules(t *testing.T, store HookStore, clock *Clock, seed uint64, ops int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	clock.Set("2026-10-31T12:00:00Z") // Paris leaves summer time on the 25th; New York on 1 November
	start := clock.Now()
	tours := competition.New(store, store, clock.Now)
	put := func(id string, spec laurel.BoardSpec) *laurel.Board { return mustPutBoard(t, store, id, spec) }
	// cup: a run a day of New York's clock, open for its first 20 hours, 4 members, 3 attempts,
	// entered by playing. club: one run of two days, joined first, 3 members, 2 attempts. open:
	// one run of three days, any number of members and attempts, entered by playing or joining.
	boards := map[string]*laurel.Board{
		"cup": put("cup", laurel.BoardSpec{Windows: []string{"day", "all"}, Timezone: ptr("America/New_York"), LateLimit: ptr("1h"),
			Tournament: &laurel.TournamentSpec{Window: ptr("day"), Duration: ptr("20h"), MaxMembers: ptr(4), MaxAttempts: ptr(3)}}),
		"club": put("club", laurel.BoardSpec{Windows: []string{"all"}, LateLimit: ptr("1h"),
			Tournament: &laurel.TournamentSpec{Start: ptr(laurel.FormatTime(start + 3_600_000)), End: ptr(laurel.FormatTime(start + 2*86_400_000)),
				JoinRequired: ptr(true), MaxMembers: ptr(3), MaxAttempts: ptr(2)}}),
		"open": put("open", laurel.BoardSpec{Windows: []string{"all"}, LateLimit: ptr("1h"),
			Tournament: &laurel.TournamentSpec{Start: ptr(laurel.FormatTime(start)), End: ptr(laurel.FormatTime(start + 3*86_400_000))}}),
	}
	tournaments := []string{"cup", "club", "open"}
	type mEntry struct {
		attempts int
		ids      []string
	}
	entries := map[string]*mEntry{} // board:run:member
	runCount := map[string]int{}    // board:run → members
	stored := map[string]bool{}     // board:id of stored events
	members := []string{"ann", "ben", "cy", "dee", "eve", "fay"}
	nextID := 0
	var usedIDs []laurel.Event   // events with ids sent before, to retry
	var retracted []laurel.Event // events retracted, to send again
	stats := map[string]int{}
	defer func() { t.Logf("%v", stats) }()

	check := func(op int, what string) {
		t.Helper()
		for id, b := range boards {
			for _, m := range members {
				got, err := tours.Entrant(ctx, id, m)
				run, rerr := b.RunAt(clock.Now())
				if rerr != nil {
					if laurel.ErrorCode(err) != laurel.ErrorCode(rerr) {
						t.Fatalf("op %d (%s): Entrant(%s, %s) outside a run: %v, want %s", op, what, id, m, err, laurel.ErrorCode(rerr))
					}
					continue
				}
				if err != nil {
					t.Fatalf("op %d (%s): Entrant(%s, %s): %v", op, what, id, m, err)
				}
				e := entries[id+":"+run.ID+":"+m]
				want := laurel.Entrant{Board: id, Member: m, Run: run, MaxAttempts: b.Tournament.MaxAttempts, MaxMembers: b.Tournament.MaxMembers,
					Members: runCount[id+":"+run.ID], Joined: e != nil, JoinedAt: got.JoinedAt}
				if b.Tournament.MaxMembers == 0 {
					want.Members = -1 // counted only where a cap needs it
				}
				if e != nil {
					want.Attempts = e.attempts
				}
				if got != want {
					t.Fatalf("op %d (%s) at %s: Entrant(%s, %s) =\n %+v\nwant\n %+v", op, what, laurel.FormatTime(clock.Now()), id, m, got, want)
				}
			}
		}
	}

	for op := range ops {
		switch r := rng.IntN(100); {
		case r < 20:
			clock.Advance(time.Duration(rng.Int64N(int64(7 * time.Hour))))
		case r < 35: // join
			id := tournaments[rng.IntN(len(tournaments))]
			m := members[rng.IntN(len(members))]
			b := boards[id]
			run, rerr := b.RunAt(clock.Now())
			_, created, err := tours.Join(ctx, id, m)
			key := id + ":" + run.ID + ":" + m
			var want string
			switch {
			case rerr != nil:
				want = laurel.ErrorCode(rerr)
			case entries[key] != nil:
			case b.Tournament.MaxMembers != 0 && runCount[id+":"+run.ID] >= b.Tournament.MaxMembers:
				want = laurel.EConflict
			}
			if laurel.ErrorCode(err) != want || err == nil && created != (entries[key] == nil) {
				t.Fatalf("op %d: Join(%s, %s) at %s: created %v, %v; want %q", op, id, m, laurel.FormatTime(clock.Now()), created, err, want)
			}
			stats["join "+want]++
			if err == nil && entries[key] == nil {
				entries[key] = &mEntry{}
				runCount[id+":"+run.ID]++
			}
			check(op, "join "+id+" "+m)
		case r < 39: // max_attempts changed, below what members have used as well
			id := []string{"cup", "club"}[rng.IntN(2)]
			spec := boards[id].Tournament.Spec()
			spec.MaxAttempts = ptr(1 + rng.IntN(4))
			boards[id] = mustPutBoard(t, tours, id, laurel.BoardSpec{Tournament: spec})
			stats["max_attempts"]++
			check(op, fmt.Sprintf("max_attempts of %s to %d", id, *spec.MaxAttempts))
		case r < 43: // a retraction: the id leaves the entry that counted it; its attempt stays used
			if len(usedIDs) == 0 {
				continue
			}
			ev := usedIDs[rng.IntN(len(usedIDs))]
			var held []laurel.Event // mostly an event the store holds, whose id may come again
			for _, u := range usedIDs {
				if stored[u.Board+":"+u.ID] {
					held = append(held, u)
				}
			}
			if len(held) > 0 && rng.IntN(4) > 0 {
				ev = held[rng.IntN(len(held))]
			}
			var want string
			if !stored[ev.Board+":"+ev.ID] {
				want = laurel.ENotFound
			}
			if err := tours.Retract(ctx, ev.Board, ev.ID); laurel.ErrorCode(err) != want {
				t.Fatalf("op %d: Retract(%s, %s): %v; want %q", op, ev.Board, ev.ID, err, want)
			}
			stats["retract "+want]++
			if want == "" {
				retracted = append(retracted, ev)
			}
			delete(stored, ev.Board+":"+ev.ID)
			for key, e := range entries {
				if strings.HasPrefix(key, ev.Board+":") {
					e.ids = slices.DeleteFunc(e.ids, func(id string) bool { return id == ev.ID })
				}
			}
			check(op, "retract "+ev.Board+" "+ev.ID)
		default: // a submit of 1 to 4 events on one board by 1 or 2 members, some retries
			id := tournaments[rng.IntN(len(tournaments))]
			b := boards[id]
			var evs []laurel.Event
			if i := slices.IndexFunc(retracted, func(ev laurel.Event) bool { return ev.Board == id }); i >= 0 && rng.IntN(3) == 0 {
				// A retracted event's id used again: a new event, and a new attempt.
				evs = []laurel.Event{retracted[i]}
				retracted = slices.Delete(retracted, i, i+1)
			} else if run, rerr := b.RunAt(clock.Now()); rerr == nil && rng.IntN(4) == 0 {
				// A retry alone of an event this run counted, perhaps past a lowered max_attempts.
				var counted []laurel.Event
				for _, ev := range usedIDs {
					if e := entries[id+":"+run.ID+":"+ev.Member]; ev.Board == id && e != nil && slices.Contains(e.ids, ev.ID) {
						counted = append(counted, ev)
					}
				}
				if len(counted) > 0 {
					evs = []laurel.Event{counted[rng.IntN(len(counted))]}
				}
			}
			for range (1 + rng.IntN(4)) * min(1, 1-len(evs)) {
				var ev laurel.Event
				if len(usedIDs) > 0 && rng.IntN(4) == 0 {
					ev = usedIDs[rng.IntN(len(usedIDs))] // perhaps one of this submit's again
					if ev.Board != id {
						continue
					}
				} else {
					ev = laurel.Event{Board: id, Member: members[rng.IntN(3+rng.IntN(3))], Value: int64(1 + rng.IntN(9))}
					if rng.IntN(2) == 0 {
						nextID++
						ev.ID = fmt.Sprintf("e%d", nextID)
						usedIDs = append(usedIDs, ev)
					}
				}
				evs = append(evs, ev)
			}
			if len(evs) == 0 {
				continue
			}
			// The model: the run of now; every (member) group in order of first event.
			run, rerr := b.RunAt(clock.Now())
			var want string
			plan := map[string]*mEntry{} // the entries as they would be
			added := map[string]bool{}
			// Outside a run only retries of stored events pass: the store finds them duplicates
			// before it asks for a run, and no entry counts them.
			fresh := slices.ContainsFunc(evs, func(ev laurel.Event) bool { return ev.ID == "" || !stored[id+":"+ev.ID] })
			if rerr != nil && fresh {
				want = laurel.ErrorCode(rerr)
			}
			var order []string
			for _, ev := range evs {
				if rerr == nil && !slices.Contains(order, ev.Member) {
					order = append(order, ev.Member)
				}
			}
			count := runCount[id+":"+run.ID]
			for _, m := range order {
				if want != "" {
					break
				}
				key := id + ":" + run.ID + ":" + m
				e := entries[key]
				if e == nil {
					if b.Tournament.JoinRequired || b.Tournament.MaxMembers != 0 && count >= b.Tournament.MaxMembers {
						want = laurel.EConflict
						break
					}
					e, added[key] = &mEntry{}, true
					count++
				}
				// Each event counts, but a retry of an id counted in this run or sent before in
				// this submit; one the store holds already (from another run) counts against the
				// limit, then is given back.
				n := &mEntry{attempts: e.attempts, ids: slices.Clone(e.ids)}
				reserved := n.attempts
				for k, ev := range evs {
					again := ev.ID != "" && slices.ContainsFunc(evs[:k], func(p laurel.Event) bool { return p.ID == ev.ID })
					if ev.Member == m && !again && (ev.ID == "" || !slices.Contains(n.ids, ev.ID)) {
						reserved++
						if ev.ID != "" && stored[id+":"+ev.ID] {
							continue
						}
						n.attempts++
						if ev.ID != "" {
							n.ids = append(n.ids, ev.ID)
						}
					}
				}
				if b.Tournament.MaxAttempts != 0 && reserved > e.attempts && reserved > b.Tournament.MaxAttempts { // retries alone pass
					want = laurel.EConflict
				}
				plan[key] = n
			}
			res, err := tours.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true})
			if laurel.ErrorCode(err) != want {
				t.Fatalf("op %d at %s: Submit(%s %v): %v; want %q", op, laurel.FormatTime(clock.Now()), id, evs, err, want)
			}
			stats["submit "+want]++
			if err == nil {
				for i, ev := range evs {
					dup := ev.ID != "" && stored[id+":"+ev.ID]
					if dup {
						stats["duplicate"]++
					}
					if (res[i].Status == laurel.StatusDuplicate) != dup {
						t.Fatalf("op %d: event %d %+v: %s, want duplicate %v", op, i, ev, res[i].Status, dup)
					}
					if ev.ID != "" {
						stored[id+":"+ev.ID] = true
					}
				}
				for key, n := range plan {
					entries[key] = n
					if added[key] {
						runCount[id+":"+run.ID]++
					}
				}
			}
			check(op, fmt.Sprintf("submit %s %v", id, evs))
		}
	}
	// An entry of a deleted member is gone, and its place in a capped run is free again.
	if err := tours.DeleteMember(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if recs, err := store.Records(ctx, "entry", "", "", 1000); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range recs {
			if strings.HasSuffix(r.Key, ":ann") {
				t.Fatalf("the entry %s outlived its member", r.Key)
			}
		}
	}
}
