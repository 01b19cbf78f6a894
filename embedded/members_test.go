package embedded_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestMembers: the member table gives each id one handle, in the order ids first came, and
// finds every id by it, across the table's growth and whatever ids share hash bits; an id
// never interned is not found. Ids of equal length, as a game's generated ids are, make
// every probe that passes another entry compare equal lengths.
func TestMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 2))
	m := embedded.NewMembers()
	const n = 300_000 // past many growths of a table begun at 16
	ids := make([]string, 0, n)
	for len(ids) < n {
		id := "p" + strconv.FormatUint(rng.Uint64()%1e12+1e12, 10)
		h := m.Intern(id)
		if int(h) == len(ids) {
			ids = append(ids, id)
		} else if ids[h] != id {
			t.Fatalf("%q interned again as handle %d, which is %q", id, h, ids[h])
		}
		if len(ids)%1009 == 0 { // an early id is still found as the table grows
			k := rng.IntN(len(ids))
			if h, ok := m.Lookup(ids[k]); !ok || h != uint32(k) {
				t.Fatalf("after %d ids, %q: handle %d, %v; want %d", len(ids), ids[k], h, ok, k)
			}
		}
	}
	if m.Count() != n {
		t.Fatalf("count %d, want %d", m.Count(), n)
	}
	for k, id := range ids {
		if h, ok := m.Lookup(id); !ok || h != uint32(k) || m.Name(h) != id {
			t.Fatalf("%q: handle %d, %v, name %q; want handle %d", id, h, ok, m.Name(h), k)
		}
		if h := m.Intern(id); h != uint32(k) {
			t.Fatalf("%q interned again: handle %d, want %d", id, h, k)
		}
	}
	for range 100_000 {
		id := "q" + strconv.FormatUint(rng.Uint64()%1e12+1e12, 10) // same length, never interned
		if h, ok := m.Lookup(id); ok {
			t.Fatalf("%q, never interned, found as handle %d (%q)", id, h, m.Name(h))
		}
	}
	if m.Count() != n {
		t.Fatalf("lookups changed the count: %d", m.Count())
	}
}

// TestMembersIndexedBehind: ids appended in the order of their bytes without a probe, as Open
// appends a checkpoint file's, are found by their handles once put in the table behind (a
// table of 2M slots, 8 MB, faulted in huge pages), an id interned again keeps its handle, a
// new one is interned after them, and ties between them order by the ids' bytes, whether the
// handles are among those in order or not.
func TestMembersIndexedBehind(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	const n = 1_500_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%013d", uint64(i)*1e6+rng.Uint64N(1e6)) // in order, each once
	}
	m := embedded.NewMembers()
	m.Reserve(n, n*len(ids[0]))
	for i, id := range ids {
		if h := m.Add(id); h != uint32(i) {
			t.Fatalf("%q added as handle %d, want %d", id, h, i)
		}
	}
	m.Ordered(n)
	m.IndexBehind()
	for range 200_000 {
		k := rng.IntN(n)
		if h, ok := m.Lookup(ids[k]); !ok || h != uint32(k) {
			t.Fatalf("%q: handle %d, %v; want %d", ids[k], h, ok, k)
		}
		if h := m.Intern(ids[k]); h != uint32(k) {
			t.Fatalf("%q interned again: handle %d, want %d", ids[k], h, k)
		}
	}
	late := "p0000000000000" // before every id added: interned after them, out of order
	if h := m.Intern(late); h != n {
		t.Fatalf("a new id: handle %d, want %d", h, n)
	}
	if h, ok := m.Lookup("q"); ok {
		t.Fatalf("an id never interned found as handle %d", h)
	}
	for range 100_000 {
		a, b := uint32(rng.IntN(n+1)), uint32(rng.IntN(n+1))
		want := strings.Compare(m.Name(a), m.Name(b))
		if got := m.Tie(a, b); (got < 0) != (want < 0) || (got == 0) != (want == 0) {
			t.Fatalf("tie of %q (handle %d) and %q (%d): %d, want %d", m.Name(a), a, m.Name(b), b, got, want)
		}
	}
}

// TestRestartFindsMembersOfEveryWindow: Open recovers a board's first window alone, interning
// its members, and the others side by side, finding theirs among those; a member that only a
// later window holds is interned after them. Here the first window (today) holds a tenth of
// the members that the week and the last seven days hold: every member keeps its score and
// rank in every window across a restart.
func TestRestartFindsMembersOfEveryWindow(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-17T12:00:00Z") // a Tuesday: Friday is in the same week
	dir := t.TempDir()
	windows := []string{"day", "week", "last7d"}
	type standing struct {
		rank         int
		score, since int64
	}
	read := func(e *embedded.Store) map[string]standing {
		got := make(map[string]standing)
		for _, w := range windows {
			for i := range 200 {
				m := fmt.Sprintf("m%03d", i)
				r, err := e.Member(ctx, laurel.Query{Board: "b", Window: w}, m)
				if laurel.ErrorCode(err) == laurel.ENotFound {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				got[w+" "+m] = standing{r.Entry.Rank, r.Entry.Score, r.Entry.ReachedAt}
			}
		}
		return got
	}
	e, err := embedded.Open(dir, embedded.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "b", laurel.BoardSpec{Windows: windows, LateLimit: ptr("1h")}) // Tuesday's day closes
	for i := range 200 {
		if i%10 == 0 {
			continue // today's
		}
		submit(t, e, laurel.Event{Board: "b", Member: fmt.Sprintf("m%03d", i), Value: int64(i%7 + 1)})
	}
	c.Advance(3 * 24 * time.Hour)
	for i := 0; i < 200; i += 10 {
		submit(t, e, laurel.Event{Board: "b", Member: fmt.Sprintf("m%03d", i), Value: int64(i%5 + 1)})
	}
	before := read(e)
	if n := len(before); n != 20+200+200 {
		t.Fatalf("%d entries before the restart, want 420", n)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	after := read(testStore(t, dir, c))
	if !maps.Equal(before, after) {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s: %+v before the restart, %+v after", k, v, after[k])
			}
		}
		t.Fatalf("%d entries before, %d after", len(before), len(after))
	}
}

// TestMembersSeek: in a table whose first handles are in the order of their ids' bytes,
// ids that come in that order, skipping any number of others, are found from the hint after
// the one before, and ids between them or never interned are not; ids interned after, out
// of order, are found too.
func TestMembersSeek(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 3))
	m := embedded.NewMembers()
	const ordered = 20_000
	for i := range ordered {
		m.Intern(fmt.Sprintf("m%06d", 2*i)) // odd numbers are never interned
	}
	m.Ordered(ordered)
	for i := range 500 {
		m.Intern(fmt.Sprintf("x%06d", rng.IntN(1_000_000)+i*1_000_000)) // after, out of order
	}
	for round := range 20 {
		gap := 1 << (round % 13) // up to past seekSpan
		hint := uint32(0)
		for i := 0; i < ordered; i += 1 + rng.IntN(gap) {
			if rng.IntN(4) == 0 {
				if h, ok := m.LookupAt(fmt.Sprintf("m%06d", 2*i+1), hint); ok {
					t.Fatalf("m%06d, never interned, found at %d", 2*i+1, h)
				}
			}
			id := fmt.Sprintf("m%06d", 2*i)
			h, ok := m.LookupAt(id, hint)
			if !ok || h != uint32(i) {
				t.Fatalf("round %d (gaps up to %d): %s from hint %d: %d, %v; want %d", round, gap, id, hint, h, ok, i)
			}
			hint = h + 1
		}
		for h := ordered; h < m.Count(); h++ {
			id := m.Name(uint32(h))
			if got, ok := m.LookupAt(id, uint32(rng.IntN(m.Count()))); !ok || got != uint32(h) {
				t.Fatalf("%s, interned out of order: %d, %v; want %d", id, got, ok, h)
			}
		}
	}
}
