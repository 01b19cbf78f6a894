package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/postgres"
)

// runImport is `laurel import`: a dump loaded into a store (docs/operations.md, "Export and
// import"). An embedded store must be new (a directory that is missing, or holds no store or
// an empty one); a scale-out store may be in use, as long as it has none of the dump's boards.
func runImport(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) error {
	fs := newFlagSet("import", stderr)
	data := fs.String("data", "", "a new embedded store's directory (missing, or holding no store or an empty one)")
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
		// A read of standard input may wait for ever on its writer: a signal does not.
		copied := make(chan error, 1)
		go func() {
			_, err := io.Copy(tmp, stdin)
			copied <- err
		}()
		select {
		case err := <-copied:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return errors.New("interrupted while reading the dump; nothing was imported")
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
	// A signal stops the import where it reads the dump; both stores then store nothing.
	dump := &interruptible{ctx: ctx, r: f}
	boards, err := laurel.VerifyDump(io.TeeReader(dump, check))
	check.Finish()
	if err != nil && ctx.Err() != nil {
		return errors.New("interrupted while checking the dump; nothing was imported")
	}
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was imported", *in, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	load := newProgress(stderr, "importing", size, true)
	defer load.Finish()
	d, err := laurel.NewDumpReader(io.TeeReader(dump, load))
	if err != nil {
		return err
	}
	atCommit := false
	if *data != "" {
		err = embedded.Import(*data, d, embedded.Options{MinFreeDisk: minFreeDisk})
	} else {
		var e *scaleOutStore
		if e, err = so.open(ctx, postgres.Options{Maintenance: -1, Logger: warnings(stderr)}); err != nil {
			if ctx.Err() != nil {
				return importFailed(err, true, false)
			}
			return err
		}
		err = e.Import(ctx, d, boards)
		// One transaction, committed once the whole dump is read.
		atCommit = err != nil && d.Done()
		e.Close()
	}
	if err != nil {
		return importFailed(err, ctx.Err() != nil, atCommit)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "interrupted once the whole dump was read: the import went on to its end")
	}
	fmt.Fprintf(stderr, "imported %d records in %s\n", d.Records(), time.Since(start).Round(time.Millisecond))
	return nil
}

// importFailed says what a failed import left: nothing of the dump, since each store erases
// or rolls back what it took, but when the scale-out store failed as it committed (a
// connection lost, a signal): then it may hold it all, which a second run, refusing boards
// that exist, tells.
func importFailed(err error, interrupted, atCommit bool) error {
	switch {
	case interrupted && !atCommit:
		return errors.New("interrupted; nothing was imported")
	case strings.Contains(err.Error(), "nothing was imported"): // the store said so
	case atCommit:
		err = fmt.Errorf("%w; nothing was imported, unless it failed as it committed: run it again to know", err)
	default:
		err = fmt.Errorf("%w; nothing was imported", err)
	}
	if interrupted {
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

// interruptible reads r until ctx ends: an import stopped by a signal stops reading its dump.
type interruptible struct {
	ctx context.Context
	r   io.Reader
}

func (r *interruptible) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
