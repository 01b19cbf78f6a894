package embedded_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/laurel/laurel/embedded"
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
