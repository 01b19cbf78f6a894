package laureltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/competition"
)

// LeagueRules drives a league (cohorts of three by tier, bronze → silver → gold, the first of
// each cohort up and the last down at each day's close, absent members down) with random
// play and clock moves over several days, and checks every member's tier, its last move, and
// the tier its cohort was placed by against a model that applies each close as it happens.
// With transfer, the store is then moved (a dump, another store), a day passes, and every
// tier is checked again there.
func LeagueRules(t *testing.T, store HookStore, clock *Clock, seed uint64, ops int, transfer func(HookStore) HookStore) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 13))
	clock.Set("2026-10-30T12:00:00Z") // New York's days: 1 November is 25 hours long
	svc := competition.New(store, store, clock.Now)
	tiers := []string{"bronze", "silver", "gold"}
	b := mustPutBoard(t, store, "league", laurel.BoardSpec{Windows: []string{"day"}, LateLimit: ptr("1h"), Keep: ptr(100), Timezone: ptr("America/New_York"),
		Cohorts: &laurel.CohortsSpec{Window: ptr("day"), Size: ptr(3), Tiers: tiers, Promote: ptr(1), Demote: ptr(1), DemoteAbsent: ptr(true)}})
	w, _ := b.Window("day")
	cal := b.Calendar()
	members := []string{"ann", "ben", "cy", "dee", "eve", "fay", "gus", "hal"}
	tier := map[string]int{}
	lastMove := map[string]string{}
	placedBy := map[string]string{} // period:member → tier placed by
	cohortOf := map[string]string{} // period:member → cohort id
	for _, m := range members {     // every member known from the start, in the first tier
		got, err := svc.Tier(ctx, "league", m)
		if err != nil || got.Tier != "bronze" {
			t.Fatalf("Tier(%s) of a new member: %+v, %v", m, got, err)
		}
	}
	closed := cal.PrevPeriod(w, cal.PeriodAt(w, time.UnixMilli(clock.Now())))
	// closeDays applies every day closed by now, in order.
	closeDays := func() {
		for {
			p := cal.NextPeriod(w, closed)
			if p.End.UnixMilli()+b.LateLimit.Milliseconds() > clock.Now() {
				return
			}
			closed = p
			rank, of := map[string]int{}, map[string]int{}
			cohorts := map[string][]string{}
			for _, m := range members {
				if id := cohortOf[p.ID+":"+m]; id != "" {
					cohorts[id] = append(cohorts[id], m)
				}
			}
			for _, ms := range cohorts {
				page, err := store.Lookup(ctx, laurel.Query{Board: "league", Window: "day", Period: p.ID}, ms)
				if err != nil {
					t.Fatal(err)
				}
				for i, en := range page.Entries {
					rank[en.Member], of[en.Member] = i+1, len(page.Entries)
				}
			}
			for _, m := range members {
				from := tier[m]
				// In both zones (alone in its cohort), a member counts as promoted: up, or
				// staying at the top.
				switch r := rank[m]; {
				case r == 0:
					tier[m] = max(0, tier[m]-1)
				case r <= 1:
					tier[m] = min(tier[m]+1, 2)
				case r > of[m]-1:
					tier[m] = max(tier[m]-1, 0)
				}
				if rank[m] > 0 || tier[m] != from {
					lastMove[m] = fmt.Sprintf("%s %s→%s #%d/%d", p.ID, tiers[from], tiers[tier[m]], rank[m], of[m])
				}
			}
		}
	}
	// checkTiers compares every member's tier, last move and today's cohort with the model.
	checkTiers := func(op int) {
		today := cal.PeriodAt(w, time.UnixMilli(clock.Now())).ID
		for _, m := range members {
			got, err := svc.Tier(ctx, "league", m)
			if err != nil {
				t.Fatal(err)
			}
			move := ""
			if len(got.Moves) > 0 {
				mv := got.Moves[0]
				move = fmt.Sprintf("%s %s→%s #%d/%d", mv.Period, mv.From, mv.To, mv.Rank, mv.Of)
			}
			if got.Tier != tiers[tier[m]] || move != lastMove[m] {
				t.Fatalf("op %d at %s: Tier(%s) = %s, last move %q; want %s, %q", op, laurel.FormatTime(clock.Now()), m, got.Tier, move, tiers[tier[m]], lastMove[m])
			}
			if by := placedBy[today+":"+m]; by != "" {
				c, err := svc.Cohort(ctx, laurel.Query{Board: "league"}, m)
				if err != nil || c.Key != by {
					t.Fatalf("op %d: %s's cohort today %+v, %v; want one of tier %s", op, m, c, err, by)
				}
			}
		}
	}
	for op := range ops {
		if rng.IntN(4) == 0 {
			clock.Advance(time.Duration(rng.Int64N(int64(30 * time.Hour))))
			closeDays()
		}
		var evs []laurel.Event
		for range 1 + rng.IntN(3) {
			evs = append(evs, laurel.Event{Board: "league", Member: members[rng.IntN(len(members))], Value: int64(1 + rng.IntN(50))})
		}
		if _, err := svc.Submit(ctx, evs, laurel.SubmitOptions{NoRanks: true}); err != nil {
			t.Fatalf("op %d: Submit: %v", op, err)
		}
		today := cal.PeriodAt(w, time.UnixMilli(clock.Now())).ID
		for _, ev := range evs {
			if placedBy[today+":"+ev.Member] == "" {
				placedBy[today+":"+ev.Member] = tiers[tier[ev.Member]]
				c, err := svc.Cohort(ctx, laurel.Query{Board: "league"}, ev.Member)
				if err != nil {
					t.Fatal(err)
				}
				cohortOf[today+":"+ev.Member] = c.ID
			}
		}
		checkTiers(op)
	}
	if transfer != nil {
		store = transfer(store)
		svc = competition.New(store, store, clock.Now)
		clock.Advance(24 * time.Hour)
		closeDays()
		checkTiers(ops)
	}
}
