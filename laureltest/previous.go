package laureltest

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// PreviousRules checks what a submit answers as where each member came from
// (docs/design.md, "Where the member came from"): the standing before the whole batch, the
// same for every event of one member; none for a duplicate, a hidden member, a ranks=false
// write, or a window the member was not ranked in; exact when other members of the batch
// pass or are passed. store runs on clock.
func PreviousRules(t *testing.T, store laurel.Service, clock *Clock) {
	ctx := context.Background()
	clock.Set("2026-12-07T10:00:00Z")
	mustPutBoard(t, store, "runs", laurel.BoardSpec{Windows: []string{"all", "day", "last1h"}, Mode: ptr("best")})
	type standings = map[string]laurel.Standing
	submit := func(opts laurel.SubmitOptions, evs ...laurel.Event) []laurel.EventResult {
		t.Helper()
		for i := range evs {
			evs[i].Board = "runs"
		}
		res, err := store.Submit(ctx, evs, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ev := func(member string, value int64) laurel.Event { return laurel.Event{Member: member, Value: value} }
	at := func(rank int, score int64) standings {
		return standings{"all": {Rank: rank, Score: score}, "day": {Rank: rank, Score: score}, "last1h": {Rank: rank, Score: score}}
	}
	check := func(what string, res []laurel.EventResult, want ...standings) {
		t.Helper()
		for i, r := range res {
			if !maps.Equal(r.Previous, want[i]) {
				t.Errorf("%s: result %d (%s, %s): previous %v, want %v", what, i, r.Member, r.Status, r.Previous, want[i])
			}
		}
	}
	check("first scores", submit(laurel.SubmitOptions{}, ev("ann", 50), ev("ben", 40), ev("cy", 30), ev("dee", 20)), nil, nil, nil, nil)
	res := submit(laurel.SubmitOptions{}, ev("dee", 45))
	check("a climb", res, at(4, 20))
	if want := at(2, 45); !maps.Equal(res[0].Entries, want) {
		t.Errorf("a climb: entries %v, want %v", res[0].Entries, want)
	}
	// ann 50, dee 45, ben 40, cy 30: cy twice and dee in one batch, each from before it.
	check("a batch", submit(laurel.SubmitOptions{}, ev("cy", 60), ev("dee", 70), ev("cy", 65)), at(4, 30), at(2, 45), at(4, 30))
	// dee 70, cy 65, ann 50, ben 40: ann's best stays, fay passes her.
	res = submit(laurel.SubmitOptions{}, ev("ann", 10), ev("fay", 99))
	check("passed in the batch", res, at(3, 50), nil)
	if want := at(4, 50); !maps.Equal(res[0].Entries, want) {
		t.Errorf("passed in the batch: ann's entries %v, want %v", res[0].Entries, want)
	}
	// fay 99, dee 70, cy 65, ann 50, ben 40.
	retried := laurel.Event{Member: "ben", Value: 66, ID: "run-1"}
	check("an id", submit(laurel.SubmitOptions{}, retried), at(5, 40))
	check("its retry", submit(laurel.SubmitOptions{}, retried), nil)
	check("ranks=false", submit(laurel.SubmitOptions{NoRanks: true}, ev("ann", 80)), nil)
	// fay 99, ann 80, dee 70, ben 66, cy 65; two hours on, the rolling window is empty.
	clock.Advance(2 * time.Hour)
	check("after an hour", submit(laurel.SubmitOptions{}, ev("cy", 1)), standings{"all": {Rank: 5, Score: 65}, "day": {Rank: 5, Score: 65}})
	if err := store.Hide(ctx, "dee"); err != nil {
		t.Fatal(err)
	}
	check("hidden", submit(laurel.SubmitOptions{}, ev("dee", 100)), nil)
	// A new day: no day standing before.
	clock.Advance(13 * time.Hour)
	// fay 99, ann 80, ben 66, cy 65 with dee hidden.
	check("a new day", submit(laurel.SubmitOptions{}, ev("ben", 70)), standings{"all": {Rank: 3, Score: 66}})
}
