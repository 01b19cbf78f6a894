package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/shardindex"
)

// TestIDAcrossShards: an id is unique per board, not per shard. Members of different shards
// sending the same id at once, from different nodes, get one applied event and conflicts —
// never two events with one id, nor an internal error.
func TestIDAcrossShards(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	now := laureltest.NewClock("2026-11-22T10:00:00Z").Now
	nodes := []*postgres.Store{store.Open(t, now), store.Open(t, now), store.Open(t, now)}
	putBoard(t, nodes[0], "b", laurel.BoardSpec{Windows: []string{"all"}})
	submit(t, nodes[0], laurel.Event{Board: "b", Member: "warm-up", Value: 1})
	// Three members of three different shards.
	var members []string
	for i := 0; len(members) < 3; i++ {
		m := fmt.Sprintf("m%d", i)
		if !hasShard(members, shardindex.ShardOf(m, postgres.DefaultShards)) {
			members = append(members, m)
		}
	}
	const ids = 40
	var mu sync.Mutex
	outcomes := make(map[string]map[string]int) // id → outcome → count
	var wg sync.WaitGroup
	for id := range ids {
		for k, node := range nodes {
			wg.Go(func() {
				key := fmt.Sprintf("id-%d", id)
				_, err := node.Submit(ctx, []laurel.Event{{Board: "b", Member: members[k], Value: 1, ID: key}}, laurel.SubmitOptions{NoRanks: true})
				outcome := "applied"
				if err != nil {
					outcome = laurel.ErrorCode(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if outcomes[key] == nil {
					outcomes[key] = map[string]int{}
				}
				outcomes[key][outcome]++
			})
		}
	}
	wg.Wait()
	for key, o := range outcomes {
		if o["applied"] != 1 || o[laurel.EConflict] != len(nodes)-1 {
			t.Errorf("id %s: %v, want one applied and %d conflicts", key, o, len(nodes)-1)
		}
	}
	total := 0
	for _, m := range members {
		if me, err := nodes[1].Member(ctx, laurel.Query{Board: "b"}, m); err == nil {
			total += int(me.Entry.Score)
		} else if laurel.ErrorCode(err) != laurel.ENotFound {
			t.Fatal(err)
		}
	}
	if total != ids {
		t.Errorf("the members hold %d events, want %d (one per id)", total, ids)
	}
	check(t, nodes[0])
}

func hasShard(members []string, shard int) bool {
	for _, m := range members {
		if shardindex.ShardOf(m, postgres.DefaultShards) == shard {
			return true
		}
	}
	return false
}

// TestReshard: a board split into another number of shards reads as before, ids and all,
// and numbers the events that come after above those before, so that on a board of mode
// last the later of two events at one instant still wins.
func TestReshard(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	clock := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := store.Open(t, clock.Now)
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "day"}, Mode: ptr("last")})
	ts := clock.Now()
	var events []laurel.Event
	for i := range 300 {
		events = append(events, laurel.Event{Board: "b", Member: fmt.Sprintf("m%03d", i), Value: int64(i % 17), TS: ts, HasTS: true, ID: fmt.Sprintf("e%d", i)})
	}
	submit(t, e, events...)
	read := func() string {
		t.Helper()
		var out string
		for _, w := range []string{"all", "day"} {
			page, err := e.Page(ctx, laurel.Query{Board: "b", Window: w}, 0, 1000, laurel.ScoreRange{})
			if err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprint(page.Total, page.Entries)
		}
		return out
	}
	before := read()
	for round, n := range []int{7, 1, 3} {
		if err := e.Reshard(ctx, "b", n); err != nil {
			t.Fatal(err)
		}
		check(t, e)
		if got := read(); got != before {
			t.Fatalf("after splitting into %d shards the board reads\n%s\nwant\n%s", n, got, before)
		}
		if res := submit(t, e, events[round]); res[0].Status != laurel.StatusDuplicate {
			t.Fatalf("an event sent again after the reshard: %s, want duplicate", res[0].Status)
		}
		// The same member, the same instant, a later arrival: it wins.
		m := events[round].Member
		submit(t, e, laurel.Event{Board: "b", Member: m, Value: 1000 + int64(round), TS: ts, HasTS: true})
		me, err := e.Member(ctx, laurel.Query{Board: "b"}, m)
		if err != nil || me.Entry.Score != 1000+int64(round) {
			t.Fatalf("after splitting into %d shards, %s's later event at the same instant: %+v, %v; want %d", n, m, me, err, 1000+round)
		}
		before = read()
	}
	if err := e.Reshard(ctx, "b", 0); laurel.ErrorCode(err) != laurel.EInvalid {
		t.Fatalf("0 shards: %v, want invalid_argument", err)
	}
}

// TestStepTakesFreeShards: a node writes the submits it has queued for a board in one step,
// whichever shards they are in, but never waits for a shard another session holds to write
// the others: a submit whose shard is held waits alone.
func TestStepTakesFreeShards(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	now := laureltest.NewClock("2026-11-22T10:00:00Z").Now
	var b [4]byte
	rand.Read(b[:])
	app := "laurel_steps_" + hex.EncodeToString(b[:]) // finds this store's sessions
	var mu sync.Mutex
	var commits []int // the submits each step carried
	e, err := postgres.Open(ctx, store.DSN+"&application_name="+app, store.Index, postgres.Options{Now: now, Maintenance: -1,
		OnCommit: func(ops int, _ time.Duration) { mu.Lock(); commits = append(commits, ops); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all", "day"}})
	submit(t, e, laurel.Event{Board: "b", Member: "warm-up", Value: 1}) // opens the periods
	member := make([]string, postgres.DefaultShards)                    // one member of each shard
	for i, found := 0, 0; found < len(member); i++ {
		m := fmt.Sprintf("m%d", i)
		if sh := shardindex.ShardOf(m, postgres.DefaultShards); member[sh] == "" {
			member[sh], found = m, found+1
		}
	}
	other, err := pgx.Connect(ctx, laureltest.PostgresURL()) // another node's session
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	lock := func(sh int) {
		t.Helper()
		if _, err := other.Exec(ctx, "SELECT pg_advisory_lock($1)", postgres.ShardLock(e, "b", sh)); err != nil {
			t.Fatal(err)
		}
	}
	unlock := func(sh int) {
		t.Helper()
		if _, err := other.Exec(ctx, "SELECT pg_advisory_unlock($1)", postgres.ShardLock(e, "b", sh)); err != nil {
			t.Fatal(err)
		}
	}
	// send submits a member's event and returns a channel closed once it is answered.
	send := func(sh int) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: member[sh], Value: 1}}, laurel.SubmitOptions{}); err != nil {
				t.Errorf("submit to shard %d: %v", sh, err)
			}
		}()
		return done
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
		}
	}
	stepWaits := func() bool { // a step of the store waits for a lock
		var n int
		if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE a.application_name = $1 AND l.locktype = 'advisory' AND NOT l.granted`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	closed := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}

	// Alone: three submits to three shards, queued while a step waits, go in one step.
	lock(0)
	first := send(0)
	waitFor("the step to wait for shard 0", stepWaits)
	rest := []chan struct{}{send(1), send(2), send(3)}
	waitFor("three queued submits", func() bool { return postgres.Queued(e) == 3 })
	mu.Lock()
	commits = nil
	mu.Unlock()
	unlock(0)
	for _, c := range append(rest, first) {
		waitFor("the submits' answers", func() bool { return closed(c) })
	}
	mu.Lock()
	if !slices.Contains(commits, 3) {
		t.Errorf("steps of %v submits, want the three submits to shards 1, 2 and 3 in one", commits)
	}
	mu.Unlock()

	// Shared: the submit whose shard another session holds waits; the one queued with it
	// whose shard is free does not.
	lock(0)
	lock(2)
	first = send(0)
	waitFor("the step to wait for shard 0", stepWaits)
	free, held := send(1), send(2)
	waitFor("two queued submits", func() bool { return postgres.Queued(e) == 2 })
	unlock(0)
	waitFor("the submit to shard 1", func() bool { return closed(free) })
	waitFor("the step to wait for shard 2", stepWaits)
	if closed(held) {
		t.Fatal("the submit to shard 2 was answered while another session held its shard")
	}
	unlock(2)
	waitFor("the submit to shard 2", func() bool { return closed(held) && closed(first) })
}

// countingIndex counts the index's shards deleted: a rebuild deletes each shard it builds.
type countingIndex struct {
	shardindex.Index
	deletes atomic.Int32
}

func (x *countingIndex) Delete(ctx context.Context, board string, sh shardindex.Shard) error {
	x.deletes.Add(1)
	return x.Index.Delete(ctx, board, sh)
}

func (x *countingIndex) DeleteBoard(ctx context.Context, board string) error {
	x.deletes.Add(1)
	return x.Index.DeleteBoard(ctx, board)
}

// TestStepsReachTheIndexInOrder: a write's shard locks go with its commit, so another node's
// write of the same shard commits while the first is still on its way to the index; the later
// step waits for the earlier to reach the index, then takes its own, and neither is rebuilt.
func TestStepsReachTheIndexInOrder(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	now := laureltest.NewClock("2026-11-22T10:00:00Z").Now
	gate := &gateIndex{Index: store.Index, gate: make(chan struct{})}
	slow, err := postgres.Open(ctx, store.DSN, gate, postgres.Options{Now: now, Maintenance: -1, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	counting := &countingIndex{Index: store.Index}
	fast, err := postgres.Open(ctx, store.DSN, counting, postgres.Options{Now: now, Maintenance: -1, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	release := sync.OnceFunc(func() { close(gate.gate) })
	defer release() // before the stores close, should the test fail
	putBoard(t, fast, "b", laurel.BoardSpec{Windows: []string{"all", "day", "last24h"}})
	// The day's period opens first: that changes the board's state, which a write does
	// holding the whole board until the index has its step.
	submit(t, fast, laurel.Event{Board: "b", Member: "carol", Value: 1})

	slowDone := make(chan []laurel.EventResult)
	go func() { slowDone <- submit(t, slow, laurel.Event{Board: "b", Member: "alice", Value: 3, ID: "a"}) }()
	for gate.steps.Load() == 0 {
		time.Sleep(time.Millisecond) // alice's step is committed and at the index's door
	}
	fastDone := make(chan []laurel.EventResult)
	go func() { fastDone <- submit(t, fast, laurel.Event{Board: "b", Member: "bob", Value: 5, ID: "b"}) }()
	conn, err := pgx.Connect(ctx, store.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM laurel_events WHERE id = 'b'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break // bob's step committed, while alice's has not reached the index
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's write waits for alice's step to reach the index before it commits")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case res := <-fastDone:
		t.Fatalf("bob's write answered %+v before alice's step reached the index", res)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	alice, bob := <-slowDone, <-fastDone
	if got := alice[0].Entries["all"]; got.Score != 3 || got.Rank != 1 && got.Rank != 2 {
		t.Errorf("alice: %+v", alice[0]) // ranked before bob's step or after
	}
	for _, w := range []string{"all", "day", "last24h"} {
		if got := bob[0].Entries[w]; got != (laurel.Standing{Rank: 1, Score: 5}) {
			t.Errorf("bob in %s: %+v, want first with 5", w, got)
		}
	}
	if n := counting.deletes.Load(); n != 0 {
		t.Errorf("the board's index was rebuilt %d times, want none", n)
	}
	page, err := fast.Page(ctx, laurel.Query{Board: "b", Window: "last24h"}, 0, 10, laurel.ScoreRange{})
	if err != nil || page.Total != 3 || page.Entries[0].Member != "bob" || page.Entries[1].Score != 3 {
		t.Fatalf("the board: %+v, %v", page, err)
	}
	check(t, fast)
}

// TestMaintainAfterReshard: maintenance that found a board's index behind under one shard
// count, then finds it behind again after a reshard to more shards, repairs it. It compared
// the old lag's versions shard by shard with the new index: a node panicked (index out of
// range) under reshards while steps were lost.
func TestMaintainAfterReshard(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	lossy := &lossyIndex{Index: store.Index}
	now := laureltest.NewClock("2026-11-22T10:00:00Z").Now
	e, err := postgres.Open(ctx, store.DSN, lossy, postgres.Options{Now: now, Maintenance: -1, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Another node maintains: it cannot know a step was lost, and waits a pass to see.
	m, err := postgres.Open(ctx, store.DSN, store.Index, postgres.Options{Now: now, Maintenance: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	lose := func(member string) {
		t.Helper()
		lossy.lose.Store(1)
		if res, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: member, Value: 1}}, laurel.SubmitOptions{}); err != nil || res[0].Status != laurel.StatusApplied {
			t.Fatalf("submit whose step is lost: %+v, %v", res, err)
		}
	}
	lose("alice")
	if err := m.Maintain(ctx); err != nil { // finds it behind: a step on its way, perhaps
		t.Fatal(err)
	}
	if err := e.Reshard(ctx, "b", 3); err != nil {
		t.Fatal(err)
	}
	lose("bob")
	for range 2 {
		if err := m.Maintain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check(t, e)
	if page, err := e.Page(ctx, laurel.Query{Board: "b"}, 0, 10, laurel.ScoreRange{}); err != nil || page.Total != 2 {
		t.Fatalf("after maintenance: %+v, %v; want alice and bob", page, err)
	}
}

// TestWritesDuringReshards: writes while the board is resharded again and again are stored
// and answered, or refused as unavailable, never an internal error (a reshard committed
// between a step's read of the board and of its shards was one, seen under faults); what
// was acknowledged is what the board holds.
func TestWritesDuringReshards(t *testing.T) {
	store := laureltest.NewScaleOutStore(t)
	e := store.Open(t, laureltest.NewClock("2026-11-22T10:00:00Z").Now)
	putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
	done := make(chan error, 1)
	go func() {
		for i := range 40 {
			if err := e.Reshard(ctx, "b", 2+i%3); err != nil && laurel.ErrorCode(err) != laurel.EUnavailable {
				done <- err
				return
			}
		}
		done <- nil
	}()
	acked := map[string]bool{}
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("reshard: %v", err)
			}
			check(t, e)
			page, err := e.Page(ctx, laurel.Query{Board: "b"}, 0, 1000, laurel.ScoreRange{})
			if err != nil || page.Total != len(acked) {
				t.Fatalf("after %d submits: %d ranked, %v; want the %d acknowledged", i, page.Total, err, len(acked))
			}
			return
		default:
		}
		if i == 5000 {
			t.Fatal("40 reshards did not end within 5000 submits")
		}
		m := fmt.Sprintf("m%04d", i)
		res, err := e.Submit(ctx, []laurel.Event{{Board: "b", Member: m, Value: 1, ID: m}}, laurel.SubmitOptions{})
		switch {
		case err == nil && res[0].Status == laurel.StatusApplied:
			acked[m] = true
		case laurel.ErrorCode(err) != laurel.EUnavailable:
			t.Fatalf("submit %d during reshards: %+v, %v; want applied or unavailable", i, res, err)
		}
	}
}
