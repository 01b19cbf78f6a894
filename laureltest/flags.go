package laureltest

import (
	"flag"
	"strconv"
	"testing"
	"time"
)

// The flags are registered in init, each only if no other package registered it before (a
// test package may declare -seed and -ops in its own init, guarded the same way).
func init() {
	if flag.Lookup("seed") == nil {
		flag.Uint64("seed", 0, "seed for the randomized tests (0: from the clock)")
	}
	if flag.Lookup("ops") == nil {
		flag.Int("ops", 0, "operations per randomized test run (0: the test's default)")
	}
	// keepmode selects how the oracle reads keep. "spec" (docs/design.md literally): a closed
	// period stays readable until more than keep newer periods of its window (with data or
	// not) have closed, so keep+1 closed periods are readable. "lenient": a closed period may
	// also read as not_found once keep newer periods have closed, and is never required to
	// be gone.
	if flag.Lookup("keepmode") == nil {
		flag.String("keepmode", "spec", "the oracle's reading of keep: spec or lenient")
	}
	// skipops disables kinds of operation of the oracle, to bisect a failure: a
	// comma-separated list of retract, hide, delete, invalid, putboard (every board change),
	// config (random late_limit and keep changes), restart.
	if flag.Lookup("skipops") == nil {
		flag.String("skipops", "", "the oracle: operations to leave out (retract,hide,delete,invalid,putboard,config,restart)")
	}
}

// flagString returns the value of the flag name, or "" if no package registered it.
func flagString(name string) string {
	f := flag.Lookup(name)
	if f == nil {
		return ""
	}
	return f.Value.String()
}

func flagInt(name string) uint64 {
	v, err := strconv.ParseUint(flagString(name), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// Seed returns the seed of a randomized test, -seed or one from the clock, logged so that a
// failure can be replayed.
func Seed(t testing.TB) uint64 {
	s := flagInt("seed")
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed=%d)", s, s)
	return s
}
