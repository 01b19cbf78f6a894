package laureltest

import (
	"io"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
)

// EmbeddedTarget is the embedded store over a temporary directory of its own, reopened over
// the same directory at each restart, with its invariants checked at the oracle's
// checkpoints. Nothing is opened in the directory before the oracle does, so a dump can be
// imported into it.
func EmbeddedTarget(t testing.TB) Target {
	dir := t.TempDir()
	return Target{
		Open: func(_ testing.TB, now func() int64) (laurel.Service, error) {
			// A seal every 97 events: the store's two homes of events (the log, and the
			// store once sealed) both take part in every scenario.
			return embedded.Open(dir, embedded.Options{Now: now, SealEvents: 97})
		},
		Close:  func(s laurel.Service) error { return s.(*embedded.Store).Close() },
		Check:  func(s laurel.Service) error { return s.(*embedded.Store).Check() },
		Export: func(s laurel.Service, w io.Writer) error { return Export(s.(*embedded.Store), w) },
		Import: func(_ testing.TB, now func() int64, r io.Reader) error {
			d, err := laurel.NewDumpReader(r)
			if err != nil {
				return err
			}
			return embedded.Import(dir, d, embedded.Options{Now: now})
		},
	}
}
