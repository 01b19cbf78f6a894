package embedded_test

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

func history(t *testing.T, e interface {
	History(context.Context, string, string, string, int) ([]laurel.HistoryPoint, error)
}, board, window, member string, limit int) []laurel.HistoryPoint {
	t.Helper()
	pts, err := e.History(context.Background(), board, window, member, limit)
	if err != nil {
		t.Fatalf("History(%s, %s, %s): %v", board, window, member, err)
	}
	return pts
}

// TestHistory: a member's points are its standings right after each of its events, newest
// first, per window; they follow retraction and deletion, survive a restart, and a reader sees
// them as soon as the write returns.
func TestHistory(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	dir := t.TempDir()
	e := testStore(t, dir, c)
	putBoard(t, e, "g", laurel.BoardSpec{Windows: []string{"all", "day"}})

	var want []laurel.HistoryPoint // for alice in all, oldest first
	for i, ev := range []laurel.Event{
		{Member: "bob", Value: 5},
		{Member: "alice", Value: 3, ID: "a1"},
		{Member: "alice", Value: 1, ID: "a2"},
		{Member: "carol", Value: 9},
		{Member: "alice", Value: 4, ID: "a3"},
	} {
		ev.Board = "g"
		c.Advance(time.Duration(1000) * time.Millisecond)
		res := submit(t, e, ev)
		if ev.Member == "alice" {
			s := res[0].Entries["all"]
			want = append(want, laurel.HistoryPoint{At: c.Now(), Score: s.Score, Rank: s.Rank})
		}
		if i == 1 {
			// Read right after the write: the point is there.
			if pts := history(t, e, "g", "all", "alice", 10); len(pts) != 1 {
				t.Fatalf("right after the first event: %v", pts)
			}
		}
	}
	slices.Reverse(want)
	if got := history(t, e, "g", "all", "alice", 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("history:\n got %v\nwant %v", got, want)
	}
	// By hand: 3 behind bob's 5, 4 behind bob's 5, 8 behind carol's 9.
	if want[2].Rank != 2 || want[2].Score != 3 || want[0].Score != 8 || want[0].Rank != 2 {
		t.Fatalf("unexpected standings %v", want)
	}
	if got := history(t, e, "g", "all", "alice", 2); !reflect.DeepEqual(got, want[:2]) {
		t.Fatalf("limit 2: %v", got)
	}
	if got := history(t, e, "g", "", "alice", 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("the default window is the first: %v", got)
	}
	if got := history(t, e, "g", "day", "alice", 10); len(got) != 3 || got[0].Score != 8 {
		t.Fatalf("day: %v", got)
	}
	if got := history(t, e, "g", "all", "nobody", 10); len(got) != 0 || got == nil {
		t.Fatalf("a member without events has an empty history, not nil: %#v", got)
	}

	// Retraction removes the event's point; the others stay as they were.
	if err := e.Retract(ctx, "g", "a2"); err != nil {
		t.Fatal(err)
	}
	if got := history(t, e, "g", "all", "alice", 10); !reflect.DeepEqual(got, []laurel.HistoryPoint{want[0], want[2]}) {
		t.Fatalf("after retracting a2: %v", got)
	}

	// A restart keeps the points.
	e.Close()
	e = testStore(t, dir, c)
	if got := history(t, e, "g", "all", "alice", 10); !reflect.DeepEqual(got, []laurel.HistoryPoint{want[0], want[2]}) {
		t.Fatalf("after a restart: %v", got)
	}

	// Hidden members have no readable history; deletion erases it.
	if err := e.Hide(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.History(ctx, "g", "all", "alice", 10); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("hidden: %v", err)
	}
	if err := e.Unhide(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := history(t, e, "g", "all", "alice", 10); len(got) != 0 {
		t.Fatalf("after deleting the member: %v", got)
	}

	// Errors.
	for _, tc := range []struct {
		board, window, member string
		limit                 int
		code                  string
	}{
		{"nope", "all", "bob", 10, laurel.ENotFound},
		{"g", "week", "bob", 10, laurel.EInvalid},
		{"g", "all", "bob", 0, laurel.EInvalid},
		{"g", "all", "bob", laurel.MaxHistoryLimit + 1, laurel.EInvalid},
		{"g", "all", "", 10, laurel.EInvalid},
	} {
		if _, err := e.History(ctx, tc.board, tc.window, tc.member, tc.limit); laurel.ErrorCode(err) != tc.code {
			t.Errorf("History(%q, %q, %q, %d) = %v, want %s", tc.board, tc.window, tc.member, tc.limit, err, tc.code)
		}
	}
}

// TestHistoryWithoutRanks: events written with ranks=false leave points too.
func TestHistoryWithoutRanks(t *testing.T) {
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "g", laurel.BoardSpec{})
	res, err := e.Submit(context.Background(), []laurel.Event{{Board: "g", Member: "a", Value: 2}, {Board: "g", Member: "b", Value: 3}}, laurel.SubmitOptions{NoRanks: true})
	if err != nil || res[0].Entries != nil {
		t.Fatalf("Submit: %v %v", res, err)
	}
	want := []laurel.HistoryPoint{{At: c.Now(), Score: 2, Rank: 2}}
	if got := history(t, e, "g", "", "a", 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestWatch: watchers hear of each commit with the boards it touched, or nil for a change that
// may show on any board, and no more once stopped.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "a", laurel.BoardSpec{})
	putBoard(t, e, "b", laurel.BoardSpec{})

	var mu sync.Mutex
	var heard [][]string
	stop := e.Watch(func(boards []string) {
		mu.Lock()
		heard = append(heard, boards)
		mu.Unlock()
	})
	last := func() ([]string, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(heard) == 0 {
			return nil, 0
		}
		return heard[len(heard)-1], len(heard)
	}
	submit(t, e, laurel.Event{Board: "b", Member: "x", Value: 1}, laurel.Event{Board: "a", Member: "x", Value: 1})
	if got, n := last(); n == 0 || !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after a submit to a and b: %v (%d calls)", got, n)
	}
	// The next commits carry the history points of the ones before: the store's own books,
	// which show on no board.
	for i := range 3 {
		submit(t, e, laurel.Event{Board: "b", Member: "y", Value: 1})
		if got, n := last(); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("after submit %d to b alone: %v (%d calls), want [b]", i+2, got, n)
		}
	}
	name := "X"
	if _, err := e.PutProfile(ctx, "x", laurel.ProfileSpec{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if got, n := last(); got != nil || n < 2 {
		t.Fatalf("after a profile change: %v (%d calls), want nil", got, n)
	}
	// A name an event carries changes what any board shows only when it is a new one.
	submit(t, e, laurel.Event{Board: "a", Member: "x", Value: 1, Name: &name})
	if got, n := last(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after an event with the member's name: %v (%d calls), want [a]", got, n)
	}
	other := "Ex"
	submit(t, e, laurel.Event{Board: "a", Member: "x", Value: 1, Name: &other})
	if got, n := last(); got != nil {
		t.Fatalf("after an event with a new name: %v (%d calls), want nil", got, n)
	}
	if p, err := e.Profile(ctx, "x"); err != nil || p.Name != other {
		t.Fatalf("the profile after an event with a new name: %+v, %v", p, err)
	}
	stop()
	_, n := last()
	submit(t, e, laurel.Event{Board: "a", Member: "x", Value: 1})
	if _, m := last(); m != n {
		t.Fatalf("called after stop")
	}
}

// TestHistoryRetractedInTheSameGroup: an event retracted in the same group of writes as its
// submit leaves no point behind, although its point is known only once the submit is applied.
func TestHistoryRetractedInTheSameGroup(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	var armed atomic.Bool
	release := make(chan struct{})
	e, err := embedded.Open(t.TempDir(), embedded.Options{Now: c.Now, OnCommit: func(int, int, time.Duration) {
		if armed.CompareAndSwap(true, false) {
			<-release // hold the writer while the next group queues up
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	putBoard(t, e, "g", laurel.BoardSpec{})
	armed.Store(true)
	name := "X"
	done := make(chan error, 3)
	go func() { _, err := e.PutProfile(ctx, "x", laurel.ProfileSpec{Name: &name}); done <- err }()
	for armed.Load() {
		time.Sleep(time.Millisecond) // the writer is in the blocker's commit
	}
	go func() {
		_, err := e.Submit(ctx, []laurel.Event{{Board: "g", Member: "m", Value: 1, ID: "e1"}}, laurel.SubmitOptions{})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // queued first
	go func() { done <- e.Retract(ctx, "g", "e1") }()
	time.Sleep(50 * time.Millisecond)
	close(release)
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := history(t, e, "g", "", "m", 10); len(got) != 0 {
		t.Fatalf("history of a member whose one event was retracted: %v, want none", got)
	}
}

// TestHistorySurvivesACrash: the power fails right after a group's commit, before its history
// points are stored (they ride with the next commit): on recovery the store computes them
// from its journal, equal to what the writer answered, and the points of the group before,
// stored with that commit, are as they were.
func TestHistorySurvivesACrash(t *testing.T) {
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	fs := vfs.NewCrashableMem()
	var crashed atomic.Pointer[vfs.MemFS]
	var commits atomic.Int32
	opts := embedded.Options{Now: c.Now, FS: cloneSafeFS{fs}, OnCommit: func(int, int, time.Duration) {
		// The commits: the board, the first events, then the second (the one the crash follows).
		if commits.Add(1) == 3 {
			crashed.Store(fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}))
		}
	}}
	e, err := embedded.Open("d", opts)
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "g", laurel.BoardSpec{Windows: []string{"all", "day"}})
	first := submit(t, e, laurel.Event{Board: "g", Member: "alice", Value: 5}, laurel.Event{Board: "g", Member: "bob", Value: 3})
	second := submit(t, e, laurel.Event{Board: "g", Member: "carol", Value: 4})
	e.Close()
	if crashed.Load() == nil {
		t.Fatalf("no crash after %d commits", commits.Load())
	}

	opts.FS, opts.OnCommit = crashed.Load(), nil
	r, err := embedded.Open("d", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, w := range []string{"all", "day"} {
		for member, s := range map[string]laurel.Standing{
			"alice": first[0].Entries[w], "bob": first[1].Entries[w], "carol": second[0].Entries[w],
		} {
			want := []laurel.HistoryPoint{{At: c.Now(), Score: s.Score, Rank: s.Rank}}
			if got := history(t, r, "g", w, member, 10); !reflect.DeepEqual(got, want) {
				t.Errorf("%s in %s after the crash: %v; want %v (as answered)", member, w, got, want)
			}
		}
	}
	if bob := first[1].Entries["all"]; bob.Rank != 2 {
		t.Fatalf("bob answered rank %d, want 2: the test tests nothing", bob.Rank)
	}
}

// TestHistoryReadsItsOwnWrites: writers that read their member's history right after each
// write always find the point, while other writes keep the writer committing — a point staged
// in a commit that is not visible yet is still waited for.
func TestHistoryReadsItsOwnWrites(t *testing.T) {
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "g", laurel.BoardSpec{Windows: []string{"all"}})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member := fmt.Sprintf("m%d", g)
			for i := 1; i <= 150; i++ {
				if _, err := e.Submit(ctx, []laurel.Event{{Board: "g", Member: member, Value: 1}}, laurel.SubmitOptions{NoRanks: true}); err != nil {
					t.Error(err)
					return
				}
				pts, err := e.History(ctx, "g", "all", member, laurel.MaxHistoryLimit)
				if err != nil || len(pts) != i {
					t.Errorf("%s after write %d: %d points (%v)", member, i, len(pts), err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestWatchMembers: member watchers hear, with each board a commit touched, whose entries it
// set; a name alone moves no entry, a hidden mark may move any.
func TestWatchMembers(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-22T10:00:00Z")
	e := testStore(t, "", c)
	putBoard(t, e, "a", laurel.BoardSpec{Windows: []string{"all", "day"}})
	putBoard(t, e, "b", laurel.BoardSpec{})

	var mu sync.Mutex
	var heard []string
	stop := e.WatchMembers(func(cs []laurel.Changed) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, changedString(cs))
	})
	defer stop()
	expect := func(what, want string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if got := heard[len(heard)-1]; got != want {
			t.Fatalf("after %s: heard %s, want %s", what, got, want)
		}
	}
	submit(t, e, laurel.Event{Board: "b", Member: "x", Value: 1}, laurel.Event{Board: "a", Member: "y", Value: 1}, laurel.Event{Board: "a", Member: "x", Value: 1})
	expect("a submit", "a:y,x b:x")
	name := "X"
	submit(t, e, laurel.Event{Board: "a", Member: "x", Value: 1, Name: &name})
	expect("a submit with a new name", "a:x (any board):")
	if err := e.Hide(ctx, "y"); err != nil {
		t.Fatal(err)
	}
	expect("a hidden mark", "(any board):anyone")
}

// changedString renders what a member watcher heard: each board with its members, or anyone.
func changedString(cs []laurel.Changed) string {
	var out []string
	for _, c := range cs {
		b := cmp.Or(c.Board, "(any board)")
		if c.Members == nil {
			out = append(out, b+":anyone")
		} else {
			out = append(out, b+":"+strings.Join(c.Members, ","))
		}
	}
	return strings.Join(out, " ")
}
