package laureltest

import (
	"fmt"
	"io"
	"testing"

	"github.com/laurel/laurel"
)

// Target is a store under test. A Target serves one test: Open opens the store over the
// store that test uses, empty the first time.
type Target struct {
	// Open opens the store; now is the test's clock in unix ms, which the store must take
	// as its own. It is called again after Close to model a restart: the store must come
	// back with everything it acknowledged.
	Open func(t testing.TB, now func() int64) (laurel.Service, error)
	// Close stops what Open returned. When nil, the service's Close method is used if it
	// has one (io.Closer).
	Close func(laurel.Service) error
	// Check, when set, verifies the store's own invariants (the embedded store's
	// (*Store).Check); it is called at the checkpoints where the oracle compares
	// everything with the model.
	Check func(laurel.Service) error
	// Export writes everything the open store holds as a dump (laurel.DumpWriter), and
	// Import loads a dump into the target's store before it is opened, on the test's clock:
	// OracleTransfer moves the oracle's data from one target to the next through them.
	Export func(laurel.Service, io.Writer) error
	Import func(t testing.TB, now func() int64, r io.Reader) error
}

func (tg Target) open(t testing.TB, now func() int64) (laurel.Service, error) {
	if tg.Open == nil {
		return nil, fmt.Errorf("laureltest: Target.Open is nil")
	}
	return tg.Open(t, now)
}

func (tg Target) close(s laurel.Service) error {
	if tg.Close != nil {
		return tg.Close(s)
	}
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (tg Target) check(s laurel.Service) error {
	if tg.Check == nil {
		return nil
	}
	return tg.Check(s)
}
