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
	minFree := minFreeFlag(fs, "an import into the embedded store stops, erasing what it stored")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	minFreeDisk, err := minFree()
	if err != nil {
		return err
	}
	so.givenData(fs)
	if err := oneStore(*data, so); err != nil {
		return err
	}
	// The dump is checked whole — every record, then its trailer's count and checksum —
	// before anything of it is stored, so that a truncated or damaged dump changes nothing.
	// Standard input is kept in a temporary file for that.
	path := *in
	if path == "-" {
		tmp, err := os.CreateTemp("", "laurel-import-*.jsonl")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		if _, err := io.Copy(tmp, stdin); err != nil {
			return err
		}
		path = tmp.Name()
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	size := int64(-1)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	// Two passes over the dump: the check, then the import.
	check := newProgress(stderr, "checking the dump", size, true)
	boards, err := laurel.VerifyDump(io.TeeReader(f, check))
	check.Finish()
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was imported", *in, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	load := newProgress(stderr, "importing", size, true)
	defer load.Finish()
	d, err := laurel.NewDumpReader(io.TeeReader(f, load))
	if err != nil {
		return err
	}
	if *data != "" {
		err = embedded.Import(*data, d, embedded.Options{MinFreeDisk: minFreeDisk})
	} else {
		var e *scaleOutStore
		if e, err = so.open(ctx, postgres.Options{Maintenance: -1, Logger: warnings(stderr)}); err == nil {
			if err = noneExists(ctx, e, boards); err == nil {
				err = e.Import(ctx, d)
			}
			e.Close()
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "imported %d records in %s\n", d.Records(), time.Since(start).Round(time.Millisecond))
	return nil
}

// noneExists checks, before a dump is imported into a store in use, that the store has none
// of its boards: else the profiles and boards before the first that exists would be stored
// before the import failed. (The import checks each board again, under its lock.)
func noneExists(ctx context.Context, e laurel.Service, boards []string) error {
	for _, id := range boards {
		_, err := e.Board(ctx, id)
		if err == nil {
			return fmt.Errorf("board %q exists already; nothing was imported", id)
		}
		if laurel.ErrorCode(err) != laurel.ENotFound {
			return err
		}
	}
	return nil
}
