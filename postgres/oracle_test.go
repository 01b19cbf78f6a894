package postgres_test

// The randomized differential test of the store against a brute-force model of docs/design.md
// §1, shared with the other stores: see package laureltest.
//
//	go test ./postgres/ -run Oracle -v                 # a fresh seed, printed
//	go test ./postgres/ -run Oracle -v -seed=N -ops=M  # replay a failure

import (
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
)

var _ laurel.Service = (*postgres.Store)(nil)

func TestOracle(t *testing.T) { laureltest.Oracle(t, laureltest.NewScaleOutStore(t).Target()) }

func TestOracleKeepAfterLateLimitGrows(t *testing.T) {
	laureltest.OracleKeepAfterLateLimitGrows(t, laureltest.NewScaleOutStore(t).Target())
}

// TestOracleTransfer moves the oracle's data from store to store through dumps: from the
// embedded store to this one, back, and to this one again.
func TestOracleTransfer(t *testing.T) {
	laureltest.OracleTransfer(t, laureltest.EmbeddedTarget(t), laureltest.NewScaleOutStore(t).Target(),
		laureltest.EmbeddedTarget(t), laureltest.NewScaleOutStore(t).Target())
}
