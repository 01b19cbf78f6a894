package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/postgres"
)

// runRebuild is `laurel rebuild`: the scale-out index rebuilt from PostgreSQL, every board or
// the one named, for when Redis lost its data or is suspected of being wrong; with -shards, the
// boards split into that many shards first (a reshard). Servers may keep running: writes and
// reads of a board wait while it is rebuilt.
func runRebuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rebuild", stderr)
	so := scaleOutFlags(fs)
	board := fs.String("board", "", "rebuild this board only (default: every board)")
	check := fs.Bool("check", false, "afterwards, check the index against the store (reads everything)")
	shards := fs.Int("shards", 0, "split the boards' members into this many shards, then rebuild (default: keep each board's)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !so.on() {
		return usageError{fmt.Errorf("-postgres and -redis (or $LAUREL_POSTGRES and $LAUREL_REDIS) are required")}
	}
	if err := so.check(); err != nil {
		return err
	}
	if *shards < 0 || *shards > postgres.MaxShards {
		return usageError{fmt.Errorf("-shards must be 1 to %d (0: keep each board's)", postgres.MaxShards)}
	}
	e, err := so.open(ctx, postgres.Options{Maintenance: -1, Logger: warnings(stderr)})
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
		// A reshard rebuilds the board's index in the new shards; a board that has that
		// count already is rebuilt as it is.
		if *shards > 0 {
			err = e.Reshard(ctx, id, *shards)
		}
		if err == nil {
			err = e.Rebuild(ctx, id)
		}
		if laurel.ErrorCode(err) == laurel.ENotFound {
			return fmt.Errorf("no board %q", id)
		}
		if err != nil {
			return fmt.Errorf("board %s: %w", id, err)
		}
		bar.Add(1)
	}
	bar.Finish()
	if *shards > 0 {
		fmt.Fprintf(stdout, "split %d board(s) into %d shards\n", len(ids), *shards)
	}
	fmt.Fprintf(stdout, "rebuilt the index of %d board(s) in %s\n", len(ids), time.Since(start).Round(time.Millisecond))
	if *check {
		if err := e.Check(ctx); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		fmt.Fprintln(stdout, "the index matches the store")
	}
	return nil
}
