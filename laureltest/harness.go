package laureltest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/laurel/laurel"
)

// The harness: the store under test, the model, the clock and the log of operations.

type harness struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	m       *model
	clock   atomic.Int64
	target  Target
	eng     laurel.Service
	ctx     context.Context
	op      int
	log     []string
	nextID  int
	nextTag int
	nextMem int
	stats   map[string]int
}

func (h *harness) logf(format string, args ...any) {
	s := fmt.Sprintf("op %d @%s: ", h.op, laurel.FormatTime(h.m.now)) + fmt.Sprintf(format, args...)
	h.log = append(h.log, s)
	if len(h.log) > 60 {
		h.log = h.log[len(h.log)-60:]
	}
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Logf("last operations:\n  %s", strings.Join(h.log, "\n  "))
	h.t.Fatalf("seed %d, op %d, now %s (%d): %s", h.seed, h.op, laurel.FormatTime(h.m.now), h.m.now, fmt.Sprintf(format, args...))
}

func (h *harness) open() {
	e, err := h.target.open(h.t, h.clock.Load)
	if err != nil {
		h.fatalf("Open: %v", err)
	}
	h.eng = e
}

func (h *harness) reopen() {
	h.logf("restart")
	if err := h.target.close(h.eng); err != nil {
		h.fatalf("Close: %v", err)
	}
	h.eng = nil
	h.open()
}

// transfer moves everything to the next target through a dump: export from the store,
// close it, import into next's empty store, and go on there.
func (h *harness) transfer(next Target) {
	h.logf("transfer through a dump")
	if h.target.Export == nil || next.Import == nil {
		h.fatalf("transfer: the targets cannot export or import")
	}
	var dump bytes.Buffer
	if err := h.target.Export(h.eng, &dump); err != nil {
		h.fatalf("Export: %v", err)
	}
	if err := h.target.close(h.eng); err != nil {
		h.fatalf("Close: %v", err)
	}
	h.eng = nil
	h.stats["transfer bytes"] += dump.Len()
	if err := next.Import(h.t, h.clock.Load, bytes.NewReader(dump.Bytes())); err != nil {
		h.fatalf("Import: %v", err)
	}
	h.target = next
	h.open()
}

func (h *harness) setNow(t int64) {
	h.m.now = t
	h.clock.Store(t)
}

func (h *harness) advance() {
	var d int64
	switch r := h.rng.IntN(100); {
	case r < 35:
		d = h.rng.Int64N(60_000)
	case r < 65:
		d = 60_000 + h.rng.Int64N(29*60_000)
	case r < 80:
		d = 3_600_000 + h.rng.Int64N(4*3_600_000)
	case r < 82:
		d = 86_400_000 + h.rng.Int64N(2*86_400_000)
	case r < 83 && h.rng.IntN(3) == 0:
		d = 10*86_400_000 + h.rng.Int64N(30*86_400_000)
	default:
		d = h.rng.Int64N(2000)
	}
	h.setNow(h.m.now + d)
}

func code(err error) string { return laurel.ErrorCode(err) }

func ptr[T any](v T) *T { return &v }

var memberPool = []string{
	"alice", "bob", "carol", "dave", "Eve", "émile", "zoë", "a", "ab", "a b",
	"mallory", "x-1", "X-1", "trent", "peggy", "victor", "Zed", "ümit", "m00", "m01",
	"m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11",
}

func (h *harness) pickMember() string {
	switch r := h.rng.IntN(100); {
	case r < 70:
		return memberPool[h.rng.IntN(10)]
	case r < 96:
		return memberPool[10+h.rng.IntN(len(memberPool)-10)]
	default:
		h.nextMem++
		return "new" + strconv.Itoa(h.nextMem)
	}
}
