package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/postgres"
)

// runExport is `laurel export`: everything a store holds, as a dump (docs/operations.md,
// "Export and import"). The embedded store must not be served meanwhile (its directory is
// locked); the scale-out store may: the dump is one snapshot of PostgreSQL.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", stderr)
	data := fs.String("data", "", "the embedded store's directory (not while laurel serve runs on it)")
	so := scaleOutFlags(fs)
	out := fs.String("o", "-", "file to write the dump to; - for standard output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	so.givenData(fs)
	if err := oneStore(*data, so); err != nil {
		return err
	}
	var store interface {
		laurel.Exporter
		Close() error
	}
	var err error
	if *data != "" {
		store, err = embedded.Open(*data, embedded.Options{Existing: true, MinFreeDisk: -1}) // it writes little: no reserve kept
	} else {
		store, err = so.open(ctx, postgres.Options{Maintenance: -1, Logger: warnings(stderr)})
	}
	if err != nil {
		return err
	}
	defer store.Close()
	w := stdout
	var tmp *os.File
	if *out != "-" {
		// The dump goes to a file beside the one named, which takes its name once whole: a
		// failed export (a full disk, a signal) leaves no part of a dump behind, and never
		// overwrites one.
		if _, err := os.Lstat(*out); err == nil {
			return fmt.Errorf("%s exists: export never replaces a file; name another", *out)
		}
		if tmp, err = os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".*.partial"); err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		w = tmp
	}
	start := time.Now()
	bar := newProgress(stderr, "exporting", -1, true)
	d, err := laurel.NewDumpWriter(io.MultiWriter(w, bar))
	if err == nil {
		err = store.Export(ctx, d)
	}
	if err == nil {
		err = d.Close()
	}
	bar.Finish()
	if err != nil {
		return err
	}
	if tmp != nil {
		if err := publish(tmp, *out); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "exported %d records in %s\n", d.Records(), time.Since(start).Round(time.Millisecond))
	return nil
}

// oneStore checks that a command names exactly one store: -data, or -postgres and -redis.
func oneStore(data string, so scaleOut) error {
	switch {
	case data != "" && so.on():
		return usageError{fmt.Errorf("give -data or -postgres and -redis, not both")}
	case data == "" && !so.on():
		return usageError{fmt.Errorf("give the store: -data DIR, or -postgres and -redis (or $LAUREL_POSTGRES and $LAUREL_REDIS)")}
	}
	return so.check()
}

// publish makes the whole dump in tmp the file named out: synced, linked under its name
// (which fails, rather than replaces, if a file took it meanwhile), and its directory synced.
func publish(tmp *os.File, out string) error {
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), out); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(out))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
