package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/postgres"
)

// runImport is `laurel import`: a dump loaded into a store (docs/operations.md, "Export and
// import"). An embedded store must be new (a directory that is missing or empty); a scale-out
// store may be in use, as long as it has none of the dump's boards.
func runImport(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) error {
	fs := newFlagSet("import", stderr)
	data := fs.String("data", "", "a new embedded store's directory (missing or empty)")
	so := scaleOutFlags(fs)
	in := fs.String("i", "-", "file to read the dump from; - for standard input")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := oneStore(*data, so); err != nil {
		return err
	}
	r := stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	start := time.Now()
	d, err := laurel.NewDumpReader(r)
	if err != nil {
		return err
	}
	if *data != "" {
		err = embedded.Import(*data, d, embedded.Options{})
	} else {
		var e *scaleOutStore
		if e, err = so.open(ctx, postgres.Options{Maintenance: -1}); err == nil {
			err = e.Import(ctx, d)
			e.Close()
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "imported %d records in %s\n", d.Line()-1, time.Since(start).Round(time.Millisecond))
	return nil
}
