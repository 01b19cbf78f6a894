package laureltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

var oracleStarts = []string{
	"2026-03-05T09:00:00Z", // New York springs forward on 2026-03-08
	"2026-03-29T20:00:00Z", // Lord Howe falls back on 2026-04-05; month ends
	"2026-10-26T11:00:00Z", // New York falls back on 2026-11-01
	"2026-12-27T15:00:00Z", // month and year end
	"2026-06-10T00:00:00Z",
}

// Oracle runs the randomized differential test of the store target opens against the model:
// -ops random operations (writes, reads of every kind, board changes, restarts) from -seed,
// each checked against the model, with everything compared at checkpoints.
func Oracle(t *testing.T, target Target) { oracle(t, []Target{target}) }

// OracleTransfer is Oracle over a chain of targets: at each of the oracle's restarts (three
// by default) the data moves to the next target of the chain through a dump (Export, then
// Import into its empty store), and the model must hold there as before. It tests dumps
// between stores of any kinds.
func OracleTransfer(t *testing.T, chain ...Target) { oracle(t, chain) }

func oracle(t *testing.T, chain []Target) {
	target := chain[0]
	seed := flagInt("seed")
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	keepMode := flagString("keepmode")
	t.Logf("seed %d (rerun with -seed=%d), -keepmode=%s", seed, seed, keepMode)
	ops := int(flagInt("ops"))
	if ops == 0 {
		ops = 1200
		if testing.Short() {
			ops = 150
		}
	}
	h := &harness{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		m: &model{byID: map[string]*mBoard{}, hidden: map[string]bool{}}, target: target,
		ctx: context.Background(), stats: map[string]int{}}
	switch keepMode {
	case "spec":
	case "lenient":
		h.m.lenientKeep = true
	default:
		t.Fatalf("-keepmode=%s: want spec or lenient", keepMode)
	}
	start, _ := laurel.ParseTime(oracleStarts[h.rng.IntN(len(oracleStarts))])
	h.setNow(start + h.rng.Int64N(86_400_000))
	t.Logf("start %s, %d operations", laurel.FormatTime(h.m.now), ops)
	h.open()
	t.Cleanup(func() {
		if h.eng != nil {
			h.target.close(h.eng)
		}
	})
	h.createBoards()
	h.checkAll(true)

	restartEvery := max(ops/4, 20)
	skip := map[string]bool{}
	for _, k := range strings.Split(flagString("skipops"), ",") {
		skip[strings.TrimSpace(k)] = true
	}
	for h.op = 1; h.op <= ops; h.op++ {
		h.advance()
		switch {
		case skip["putboard"]:
		case h.op == ops/3:
			h.addWindows("sum-ny", "day", "all")
			h.addWindows("best-utc", "week", "last3h")
		case h.op == ops*2/5:
			h.growLateLimit("sum-utc", "8h")
		case h.op == ops/2:
			h.addWindows("last-lh", "hour", "last7d")
		}
		if h.op > ops/2 && !skip["putboard"] && !skip["config"] && h.rng.IntN(40) == 0 {
			h.changeConfig()
		}
		r := h.rng.IntN(1000)
		switch {
		case r >= 520 && r < 600 && skip["invalid"], r >= 600 && r < 720 && skip["retract"],
			r >= 720 && r < 760 && skip["hide"], r >= 760 && r < 775 && skip["delete"], r >= 775 && r < 790 && skip["putboard"]:
			r = h.rng.IntN(380)
		}
		switch {
		case r < 380:
			h.opSubmit("batch")
		case r < 520:
			h.opSubmit("single")
		case r < 600:
			h.opSubmit("invalid")
		case r < 720:
			h.opRetract()
		case r < 760:
			h.opHide()
		case r < 775:
			h.opDelete()
		case r < 790:
			h.badPutBoard()
		case r < 820:
			h.badReads()
		case r < 850:
			h.opConcurrent()
		default:
			b := h.pickBoard()
			h.checkBoard(b, true)
		}
		if h.op%restartEvery == 0 && !skip["restart"] {
			if next := h.op / restartEvery; next < len(chain) {
				h.transfer(chain[next])
			} else {
				h.reopen()
			}
			h.checkAll(true)
		} else if h.op%8 == 0 {
			h.checkAll(h.op%16 == 0)
		}
	}
	h.checkAll(true)
	keys := make([]string, 0, len(h.stats))
	for k := range h.stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "  %s: %d\n", k, h.stats[k])
	}
	events := 0
	for _, b := range h.m.boards {
		events += len(b.events)
	}
	t.Logf("end %s, %d events; operations:\n%s", laurel.FormatTime(h.m.now), events, sb.String())
}

// OracleKeepAfterLateLimitGrows is the smallest case Oracle found of keep counting closed
// periods by the current late_limit: periods that closed under an earlier, smaller
// late_limit stay closed (docs/design.md: closed periods never change), so they count among the
// "newer periods that have closed" when keep is lowered later.
func OracleKeepAfterLateLimitGrows(t *testing.T, target Target) {
	now, _ := laurel.ParseTime("2026-06-10T10:10:00Z")
	var clock atomic.Int64
	clock.Store(now)
	e, err := target.open(t, clock.Load)
	if err != nil {
		t.Fatal(err)
	}
	defer target.close(e)
	ctx := context.Background()
	if _, _, err := e.PutBoard(ctx, "b", laurel.BoardSpec{Windows: []string{"hour"}, LateLimit: ptr("1h"), Keep: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"h10", "h11"} { // one event in hour 10, one in hour 11
		if _, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: m, Value: 5}}, laurel.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
		clock.Add(3600_000)
	}
	clock.Add(3600_000) // 13:10: hour 10 closed at 12:00, hour 11 at 13:00
	if _, _, err := e.PutBoard(ctx, "b", laurel.BoardSpec{LateLimit: ptr("5h")}); err != nil {
		t.Fatal(err)
	}
	clock.Add(600_000) // 13:20
	if _, _, err := e.PutBoard(ctx, "b", laurel.BoardSpec{Keep: ptr(0)}); err != nil {
		t.Fatal(err)
	}
	// Hour 11 is the newest closed period and the only one kept; hour 10 has one newer
	// closed period, more than keep 0.
	q := laurel.Query{Board: "b", Window: "hour", Period: "2026-06-10T11"}
	if p, err := e.Page(ctx, q, 0, 10, laurel.ScoreRange{}); err != nil || !p.Period.Closed || len(p.Entries) != 1 {
		t.Errorf("hour 11: %+v, %v; want closed with h11", p, err)
	}
	q.Period = "2026-06-10T10"
	if p, err := e.Page(ctx, q, 0, 10, laurel.ScoreRange{}); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Errorf("hour 10: %+v, err %v; want not_found (dropped: hour 11 closed at 13:00, keep is 0)", p, err)
	}
	ps, err := e.Periods(ctx, "b", "hour")
	for _, p := range ps {
		if p.ID == "2026-06-10T10" {
			t.Errorf("Periods lists the dropped hour 10: %+v", ps)
		}
	}
	if err != nil {
		t.Error(err)
	}
	if err := target.check(e); err != nil {
		t.Errorf("Check: %v", err)
	}
}
