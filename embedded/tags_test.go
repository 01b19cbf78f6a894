package embedded_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestSpanTags sets and removes random tags of random handles, most of them new, so that the
// arena is written again many times, and compares every tag with a map's after each step.
func TestSpanTags(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 0))
	tags := embedded.NewSpanTags()
	want := make(map[uint32]string)
	live := 0
	for i := range 20000 {
		h := uint32(rng.IntN(200))
		var tag string
		switch r := rng.IntN(10); {
		case r < 2: // none
		case r < 4: // the same again
			tag = want[h]
		default:
			tag = fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, make([]byte, rng.IntN(40)))
		}
		live += len(tag) - len(want[h])
		tags.Set(h, tag)
		if tag == "" {
			delete(want, h)
		} else {
			want[h] = tag
		}
		if i%97 == 0 || rng.IntN(20) == 0 {
			for h := range uint32(200) {
				if got := tags.Get(h); got != want[h] {
					t.Fatalf("step %d: handle %d's tag is %q, want %q", i, h, got, want[h])
				}
			}
		}
		if n := tags.ArenaLen(); n > 2*live+4096+300 {
			t.Fatalf("step %d: the arena holds %d bytes for %d live", i, n, live)
		}
	}
}
