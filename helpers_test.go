package laurel_test

import (
	"errors"
	"flag"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tests (0: from the clock)")

// seed returns the seed of a randomized test, logged so that a failure can be replayed.
func seed(t testing.TB) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed=%d)", s, s)
	return s
}

func asError(err error, target **laurel.Error) bool { return errors.As(err, target) }
