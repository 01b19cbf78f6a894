package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/laurel/laurel/postgres"
)

// runRebuild is `laurel rebuild`: the scale-out index rebuilt from PostgreSQL, every board or
// the one named, for when Redis lost its data or is suspected of being wrong. Servers may
// keep running: reads of a board wait while it is rebuilt.
func runRebuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rebuild", stderr)
	so := scaleOutFlags(fs)
	board := fs.String("board", "", "rebuild this board only (default: every board)")
	check := fs.Bool("check", false, "afterwards, check the index against the store (reads everything)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !so.on() {
		return usageError{fmt.Errorf("-postgres and -redis (or $LAUREL_POSTGRES and $LAUREL_REDIS) are required")}
	}
	if err := so.check(); err != nil {
		return err
	}
	e, err := so.open(ctx, postgres.Options{Maintenance: -1})
	if err != nil {
		return err
	}
	defer e.Close()
	ids := []string{*board}
	if *board == "" {
		if ids, err = e.BoardIDs(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	bar := newProgress(stderr, "rebuilding boards", int64(len(ids)), false)
	for _, id := range ids {
		if err := e.Rebuild(ctx, id); err != nil {
			return fmt.Errorf("board %s: %w", id, err)
		}
		bar.Add(1)
	}
	bar.Finish()
	fmt.Fprintf(stdout, "rebuilt the index of %d board(s) in %s\n", len(ids), time.Since(start).Round(time.Millisecond))
	if *check {
		if err := e.Check(ctx); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		fmt.Fprintln(stdout, "the index matches the store")
	}
	return nil
}
