package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/redis"
	"github.com/laurel/laurel/shardindex"
	"github.com/redis/rueidis"
)

var all = shardindex.Set{Window: "all"}

// s0 is the only shard of a board of one shard.
var s0 = shardindex.Shard{Number: 0, Count: 1}

func put(set shardindex.Set, member string, score, at int64) shardindex.Change {
	return shardindex.Change{Set: set, Member: member, Score: score, At: at}
}

func TestVersions(t *testing.T) {
	idx, c, prefix := newIndex(t)
	ctx := context.Background()
	day := shardindex.Set{Window: "day", Start: 1700000000000}

	if _, ok, err := idx.State(ctx, "unknown"); ok || err != nil {
		t.Fatalf("State of an unknown board: ok %v, %v; want not ok", ok, err)
	}
	if _, err := applyOne(ctx, idx, "b", s0, laurel.Ordering{}, shardindex.Update{After: 1, Version: 2}); !errors.Is(err, shardindex.ErrStale) {
		t.Fatalf("Apply after 1 to an unknown board: %v, want ErrIndexStale", err)
	}
	if keys := scanKeys(t, c, prefix); len(keys) != 0 {
		t.Fatalf("a refused step left keys %q", keys)
	}

	// Version 1 records the state; version 2 changes the sets but not the state.
	if _, err := applyOne(ctx, idx, "b", s0, laurel.Ordering{}, shardindex.Update{After: 0, Version: 1, State: []byte("s1"),
		Changes: []shardindex.Change{put(all, "x", 10, 1), put(day, "x", 10, 1), put(all, "y", 5, 1)}}); err != nil {
		t.Fatal(err)
	}
	r1 := idx.Ranking("b", 1, laurel.Ordering{}, all, 1)
	if _, err := applyOne(ctx, idx, "b", s0, laurel.Ordering{}, shardindex.Update{After: 1, Version: 2,
		Changes: []shardindex.Change{put(all, "z", 7, 1)}}); err != nil {
		t.Fatal(err)
	}
	if n, err := r1.Total(ctx); n != 3 || err != nil {
		t.Fatalf("a ranking after a step that kept the state: Total %d, %v; want 3", n, err)
	}
	if st, ok, err := idx.State(ctx, "b"); !ok || err != nil || string(st.State) != "s1" || st.Stamp != 1 || st.Version != 2 {
		t.Fatalf("State %+v, %v, %v; want s1 stamped 1 at version 2", st, ok, err)
	}

	// A wrong After changes nothing, whatever the step carries.
	for _, after := range []int64{0, 1, 3} {
		_, err := applyOne(ctx, idx, "b", s0, laurel.Ordering{}, shardindex.Update{After: after, Version: 9, State: []byte("bad"),
			Drops: []shardindex.Set{day}, Changes: []shardindex.Change{put(all, "w", 1, 1), {Set: all, Member: "x", Remove: true}}})
		if !errors.Is(err, shardindex.ErrStale) {
			t.Fatalf("Apply after %d at version 2: %v, want ErrIndexStale", after, err)
		}
	}
	if st, ok, _ := idx.State(ctx, "b"); !ok || string(st.State) != "s1" || st.Version != 2 {
		t.Fatalf("a refused step changed the state: %+v", st)
	}
	if ns, err := idx.Totals(ctx, "b", 1, []shardindex.Set{all, day}, 1); err != nil || !slices.Equal(ns, []int{3, 1}) {
		t.Fatalf("Totals %v, %v; want [3 1]", ns, err)
	}
	if es, err := r1.Page(ctx, 1, 10); err != nil || len(es) != 3 || es[0].Member != "x" || es[1].Member != "z" || es[2].Member != "y" {
		t.Fatalf("Page %v, %v; want x, z, y", es, err)
	}

	// A rebuild chunk (Version == After) that records a new state: the old stamp is stale.
	got, err := applyOne(ctx, idx, "b", s0, laurel.Ordering{}, shardindex.Update{After: 2, Version: 2, State: []byte("s2")},
		shardindex.Asks{Read: []shardindex.Read{{Set: all, Member: "z"}, {Set: day, Member: "z"}}})
	if err != nil || !slices.Equal(got.Read, []shardindex.Entry{{Rank: 2, Score: 7, At: 1}, {}}) {
		t.Fatalf("Apply reads %v, %v", got, err)
	}
	if _, err := r1.Total(ctx); !errors.Is(err, shardindex.ErrStale) {
		t.Fatalf("Total of a ranking stamped 1 after the state stamped 2: %v, want ErrIndexStale", err)
	}
	for name, read := range map[string]func() error{
		"Page":    func() error { _, err := r1.Page(ctx, 1, 1); return err },
		"Entries": func() error { _, err := r1.Entries(ctx, []string{"x"}); return err },
		"Search":  func() error { _, err := r1.Search(ctx, laurel.Key{Score: 1, At: 1}); return err },
		"Totals":  func() error { _, err := idx.Totals(ctx, "b", 1, []shardindex.Set{all}, 1); return err },
	} {
		if err := read(); !errors.Is(err, shardindex.ErrStale) {
			t.Fatalf("%s as of stamp 1 after stamp 2: %v, want ErrIndexStale", name, err)
		}
	}
	if n, err := idx.Ranking("b", 1, laurel.Ordering{}, all, 2).Total(ctx); n != 3 || err != nil {
		t.Fatalf("Total as of stamp 2: %d, %v; want 3", n, err)
	}

	// Another board sharing the Redis is left alone by Delete.
	if _, err := applyOne(ctx, idx, "other", s0, laurel.Ordering{Score: laurel.Asc}, shardindex.Update{Version: 1, State: []byte{},
		Changes: []shardindex.Change{put(all, "x", 1, 1)}}); err != nil {
		t.Fatal(err)
	}
	// Drops and removals leave registered names behind; Delete must cope.
	if _, err := applyOne(ctx, idx, "b", s0, laurel.Ordering{}, shardindex.Update{After: 2, Version: 3,
		Drops: []shardindex.Set{{Window: "never"}}, Changes: []shardindex.Change{{Set: day, Member: "x", Remove: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Delete(ctx, "b", s0); err != nil {
		t.Fatal(err)
	}
	for _, k := range scanKeys(t, c, prefix) {
		if !strings.Contains(k, "{other}") {
			t.Errorf("Delete left %q", k)
		}
	}
	if st, ok, err := idx.State(ctx, "b"); ok || err != nil || st.Version != 0 {
		t.Fatalf("State of a deleted board: %+v, %v, %v; want nothing", st, ok, err)
	}
	if _, err := idx.Ranking("b", 1, laurel.Ordering{}, all, 2).Total(ctx); !errors.Is(err, shardindex.ErrStale) {
		t.Fatalf("a ranking of a deleted board: %v, want ErrIndexStale", err)
	}
	if err := idx.Delete(ctx, "b", s0); err != nil {
		t.Fatalf("deleting a deleted board: %v", err)
	}
	if err := idx.Delete(ctx, "other", s0); err != nil {
		t.Fatal(err)
	}
	if keys := scanKeys(t, c, prefix); len(keys) != 0 {
		t.Fatalf("Delete left %q", keys)
	}
}

// TestLargeStep applies a step as large as a batch of 1000 events across 8 windows, and
// reads back many entries at once.
func TestLargeStep(t *testing.T) {
	idx, _, _ := newIndex(t)
	ctx := context.Background()
	var u shardindex.Update
	u.Version, u.State = 1, []byte("s")
	sets := make([]shardindex.Set, 8)
	for i := range sets {
		sets[i] = shardindex.Set{Window: fmt.Sprintf("w%d", i), Start: int64(i) * 1000}
	}
	for e := range 1000 {
		for _, s := range sets {
			u.Changes = append(u.Changes, put(s, fmt.Sprintf("player-%04d", e), int64(e%100), int64(e)))
		}
	}
	var a shardindex.Asks
	for _, s := range sets {
		a.Read = append(a.Read, shardindex.Read{Set: s, Member: "player-0099"})
	}
	got, err := applyOne(ctx, idx, "big", s0, laurel.Ordering{}, u, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got.Read {
		// Score 99 is reached by players 99, 199, …, 999: player 99 reached it first.
		if e != (shardindex.Entry{Rank: 1, Score: 99, At: 99}) {
			t.Fatalf("read %+v, want rank 1", e)
		}
	}
	ns, err := idx.Totals(ctx, "big", 1, sets, 1)
	if err != nil || !slices.Equal(ns, []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}) {
		t.Fatalf("Totals %v, %v", ns, err)
	}
	members := make([]string, 1000)
	for i := range members {
		members[i] = fmt.Sprintf("player-%04d", i)
	}
	es, err := idx.Ranking("big", 1, laurel.Ordering{}, sets[3], 1).Entries(ctx, members)
	if err != nil || len(es) != 1000 {
		t.Fatalf("Entries of 1000 members: %d, %v", len(es), err)
	}
	for _, e := range es {
		var n int
		fmt.Sscanf(e.Member, "player-%d", &n)
		// 10 players per score; higher scores first, then earlier reached_at.
		if want := (99-n%100)*10 + n/100 + 1; e.Rank != want {
			t.Fatalf("%s ranks %d, want %d", e.Member, e.Rank, want)
		}
	}
}

// TestLargeSetStep changes more members of one set in one step than Redis's Lua takes
// values in one call: a step puts 5000 members in a set, the next moves 4000 of them (some
// twice: the last change counts), removes the other 1000 and puts 500 new ones.
func TestLargeSetStep(t *testing.T) {
	idx, _, _ := newIndex(t)
	ctx := context.Background()
	member := func(i int) string { return fmt.Sprintf("player-%05d", i) }
	first := shardindex.Update{Version: 1, State: []byte("s")}
	for i := range 5000 {
		first.Changes = append(first.Changes, put(all, member(i), int64(i), 1))
	}
	if _, err := applyOne(ctx, idx, "big", s0, laurel.Ordering{}, first); err != nil {
		t.Fatal(err)
	}
	// Afterwards player i of 0…3999 scores 10000+i, players 5000…5499 score i, and the best
	// score is player 3999's.
	second := shardindex.Update{After: 1, Version: 2, State: []byte("s")}
	for i := range 4000 {
		if i%100 == 0 { // changed twice in the step
			second.Changes = append(second.Changes, put(all, member(i), -1, 2))
		}
		second.Changes = append(second.Changes, put(all, member(i), int64(10000+i), 2))
	}
	for i := 4000; i < 5000; i++ {
		second.Changes = append(second.Changes, shardindex.Change{Set: all, Member: member(i), Remove: true})
	}
	for i := 5000; i < 5500; i++ {
		second.Changes = append(second.Changes, put(all, member(i), int64(i), 2))
	}
	a := shardindex.Asks{Read: []shardindex.Read{{Set: all, Member: member(3999)}, {Set: all, Member: member(4000)}, {Set: all, Member: member(5499)}}}
	got, err := applyOne(ctx, idx, "big", s0, laurel.Ordering{}, second, a)
	if err != nil {
		t.Fatal(err)
	}
	want := []shardindex.Entry{{Rank: 1, Score: 13999, At: 2}, {}, {Rank: 4001, Score: 5499, At: 2}}
	if !slices.Equal(got.Read, want) {
		t.Fatalf("read %+v, want %+v", got.Read, want)
	}
	rk := idx.Ranking("big", 1, laurel.Ordering{}, all, 2)
	if n, err := rk.Total(ctx); err != nil || n != 4500 {
		t.Fatalf("Total %d, %v; want 4500", n, err)
	}
	members := make([]string, 5500)
	for i := range members {
		members[i] = member(i)
	}
	es, err := rk.Entries(ctx, members)
	if err != nil || len(es) != 4500 {
		t.Fatalf("Entries of 5500 members: %d, %v; want 4500", len(es), err)
	}
	for _, e := range es {
		var i int
		fmt.Sscanf(e.Member, "player-%d", &i)
		wantRank, wantScore := 4000-i, int64(10000+i)
		if i >= 5000 {
			wantRank, wantScore = 4000+5500-i, int64(i)
		}
		if e.Rank != wantRank || e.Score != wantScore || e.ReachedAt != 2 {
			t.Fatalf("%s: %+v, want rank %d score %d", e.Member, e, wantRank, wantScore)
		}
	}
}

// TestConcurrent runs steps and reads of several boards at once, for the race detector.
func TestConcurrent(t *testing.T) {
	idx, _, _ := newIndex(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			board := fmt.Sprintf("c%d", w)
			for v := range int64(20) {
				u := shardindex.Update{After: v, Version: v + 1, State: []byte{byte(v)},
					Changes: []shardindex.Change{put(all, fmt.Sprint(v), v, v)}}
				got, err := applyOne(ctx, idx, board, s0, laurel.Ordering{}, u, shardindex.Asks{Read: []shardindex.Read{{Set: all, Member: "0"}}})
				if err != nil {
					errs <- err
					return
				}
				if got.Read[0].Rank != int(v)+1 {
					errs <- fmt.Errorf("%s at %d: member 0 ranks %d", board, v+1, got.Read[0].Rank)
					return
				}
				es, err := idx.Ranking(board, 1, laurel.Ordering{}, all, v+1).Page(ctx, 1, 3)
				if err != nil || es[0].Score != v {
					errs <- fmt.Errorf("%s at %d: page %v, %v", board, v+1, es, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSubscribe(t *testing.T) {
	idx, _, _ := newIndex(t)
	ctx := context.Background()
	heard := make(chan string, 16)
	stop, err := idx.Subscribe(func(c laurel.Changed) { heard <- c.Board })
	if err != nil {
		t.Fatal(err)
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-heard:
			if got != want {
				t.Fatalf("heard %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("heard nothing, want %q", want)
		}
	}
	if _, err := applyOne(ctx, idx, "pub.1", s0, laurel.Ordering{}, shardindex.Update{Version: 1, Changes: []shardindex.Change{put(all, "x", 1, 1)}}); err != nil {
		t.Fatal(err)
	}
	expect("pub.1")
	if err := idx.Publish(ctx, true); err != nil {
		t.Fatal(err)
	}
	expect("")
	// A refused step is no change.
	if _, err := applyOne(ctx, idx, "pub.1", s0, laurel.Ordering{}, shardindex.Update{After: 5, Version: 6}); !errors.Is(err, shardindex.ErrStale) {
		t.Fatal(err)
	}
	if _, err := applyOne(ctx, idx, "pub.2", s0, laurel.Ordering{Score: laurel.Asc}, shardindex.Update{Version: 1}); err != nil {
		t.Fatal(err)
	}
	expect("pub.2")

	stop()
	stop() // stopping twice is harmless
	if _, err := applyOne(ctx, idx, "pub.1", s0, laurel.Ordering{}, shardindex.Update{After: 1, Version: 2}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Publish(ctx, true); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard:
		t.Fatalf("heard %q after stop", got)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestSubscribeReconnects kills the subscriber's connection: the subscriber subscribes again
// on a new one, says "" since it may have missed changes, and hears the next steps.
func TestSubscribeReconnects(t *testing.T) {
	_, c, prefix := newIndex(t)
	ctx := context.Background()
	name := "laureltest-" + strings.TrimSuffix(strings.TrimPrefix(prefix, "laureltest:"), ":")
	named, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{laureltest.RedisAddr()}, DisableCache: true, ClientName: name})
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close()
	idx := redis.New(named, prefix)
	heard := make(chan string, 16)
	stop, err := idx.Subscribe(func(c laurel.Changed) { heard <- c.Board })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	// Kill only this test's subscribed connection: the Redis may be shared.
	list, err := c.Do(ctx, c.B().ClientList().Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if slices.Contains(f, "name="+name) && slices.Contains(f, "sub=1") {
			id, _ := strings.CutPrefix(f[0], "id=")
			if err := c.Do(ctx, c.B().Arbitrary("CLIENT", "KILL", "ID", id).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("found %d subscribed connections named %s", killed, name)
	}
	select {
	case got := <-heard:
		if got != "" {
			t.Fatalf("heard %q after a reconnection, want \"\"", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no word after a reconnection")
	}
	if _, err := applyOne(ctx, idx, "again", s0, laurel.Ordering{}, shardindex.Update{Version: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard:
		if got != "again" {
			t.Fatalf("heard %q, want again", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("heard nothing after a reconnection")
	}
}

// TestReadRightAfterRestart: the first calls after Redis restarts are answered, although the
// connections the client pooled before were closed by the old Redis and the client has not
// noticed yet (its keep-alive pings are a second apart); with Redis down they fail at once.
func TestReadRightAfterRestart(t *testing.T) {
	laureltest.NeedRedis(t)
	r := laureltest.NewPrivateRedis(t)
	c, err := redis.Connect(r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	idx := redis.New(c, "")
	ctx := context.Background()
	// Boards hash to different connections: use them all.
	for i := range 32 {
		if _, _, err := idx.State(ctx, fmt.Sprintf("b%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	r.Kill()
	start := time.Now()
	if _, _, err := idx.State(ctx, "b0"); err == nil || time.Since(start) > time.Second {
		t.Fatalf("State with Redis down: %v after %v; want an error at once", err, time.Since(start))
	}
	r.Start()
	for i := range 32 {
		if _, _, err := idx.State(ctx, fmt.Sprintf("b%d", i)); err != nil {
			t.Fatalf("State of board %d right after Redis restarted: %v", i, err)
		}
	}
	if err := idx.Ping(ctx); err != nil {
		t.Fatalf("Ping after the restart: %v", err)
	}
}
