package laureltest

import (
	"bytes"
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
			// store once sealed) both take part in every scenario; so do the checkpoint
			// file's appends and its rewrites, each time it doubles from 4 KiB.
			return embedded.Open(dir, embedded.Options{Now: now, SealEvents: 97, CheckpointFileMin: 4096})
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

// IntoEmbedded moves a store through a dump into an embedded store in a new directory, on
// the clock now, and opens it there until the test ends.
func IntoEmbedded(t testing.TB, from laurel.Exporter, now func() int64) *embedded.Store {
	t.Helper()
	var dump bytes.Buffer
	if err := Export(from, &dump); err != nil {
		t.Fatal(err)
	}
	rd, err := laurel.NewDumpReader(&dump)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := embedded.Import(dir, rd, embedded.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	to, err := embedded.Open(dir, embedded.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { to.Close() })
	return to
}
