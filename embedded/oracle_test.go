package embedded_test

// The randomized differential test of the engine against a brute-force model of DESIGN.md
// §1, shared with the other engines: see package laureltest.
//
//	go test ./embedded/ -run Oracle -v                 # a fresh seed, printed
//	go test ./embedded/ -run Oracle -v -seed=N -ops=M  # replay a failure

import (
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

var _ laurel.Service = (*embedded.Engine)(nil)

// oracleTarget is the engine over a temporary directory of its own, reopened over the same
// directory at each restart, with its invariants checked at the oracle's checkpoints.
func oracleTarget(t *testing.T) laureltest.Target {
	dir := t.TempDir()
	return laureltest.Target{
		Open: func(_ testing.TB, now func() int64) (laurel.Service, error) {
			return embedded.Open(dir, embedded.Options{Now: now})
		},
		Close: func(s laurel.Service) error { return s.(*embedded.Engine).Close() },
		Check: func(s laurel.Service) error { return s.(*embedded.Engine).Check() },
	}
}

func TestOracle(t *testing.T) { laureltest.Oracle(t, oracleTarget(t)) }

func TestOracleKeepAfterLateLimitGrows(t *testing.T) {
	laureltest.OracleKeepAfterLateLimitGrows(t, oracleTarget(t))
}
