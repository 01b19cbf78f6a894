package embedded_test

// The randomized differential test of the store against a brute-force model of docs/design.md
// §1, shared with the other stores: see package laureltest.
//
//	go test ./embedded/ -run Oracle -v                 # a fresh seed, printed
//	go test ./embedded/ -run Oracle -v -seed=N -ops=M  # replay a failure

import (
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

var _ laurel.Service = (*embedded.Store)(nil)

func TestOracle(t *testing.T) { laureltest.Oracle(t, laureltest.EmbeddedTarget(t)) }

func TestOracleKeepAfterLateLimitGrows(t *testing.T) {
	laureltest.OracleKeepAfterLateLimitGrows(t, laureltest.EmbeddedTarget(t))
}

// TestOracleTransfer moves the oracle's data through a dump into a new store at each restart.
func TestOracleTransfer(t *testing.T) {
	laureltest.OracleTransfer(t, laureltest.EmbeddedTarget(t), laureltest.EmbeddedTarget(t), laureltest.EmbeddedTarget(t), laureltest.EmbeddedTarget(t))
}
