package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
	patience := fs.Duration("wait", time.Minute, "how long to keep trying while PostgreSQL or Redis does not answer, at start and at each board, before giving up (0: at the first failure)")
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
	// A backend that restarts or fails over is waited for, not a reason to give up: each
	// step is tried again until it has been failing for -wait.
	log := warnings(stderr)
	tell := func(what string) func(error) {
		return func(err error) { log.Warn(what+"; trying again", "wait", *patience, "err", err) }
	}
	unavailable := func(err error) bool { return laurel.ErrorCode(err) == laurel.EUnavailable }
	// waiting tries again while a backend does not answer.
	waiting := func(tell func(error), try func() error) error {
		return retry(ctx, *patience, 2*time.Second, unavailable, tell, try)
	}
	var e *scaleOutStore
	err := retry(ctx, *patience, 2*time.Second, always, tell("cannot open the scale-out store"), func() (err error) {
		e, err = so.open(ctx, postgres.Options{Maintenance: -1, Logger: log})
		return err
	})
	if err != nil {
		return err
	}
	defer e.Close()
	ids := []string{*board}
	if *board == "" {
		err = waiting(tell("cannot list the boards"), func() (err error) {
			ids, err = e.BoardIDs(ctx)
			return err
		})
		if err != nil {
			return err
		}
	}
	start := time.Now()
	rebuilt, err := rebuildAll(ids, *board != "", func(id string, tell func(error)) error {
		return waiting(tell, func() error {
			// A reshard rebuilds the board's index in the new shards; a board that has
			// that count already is rebuilt as it is.
			if *shards > 0 {
				if err := e.Reshard(ctx, id, *shards); err != nil {
					return err
				}
			}
			return e.Rebuild(ctx, id)
		})
	}, func(id string) (lost bool, err error) {
		err = waiting(tell("cannot read the index of board "+id), func() error {
			ok, err := e.Indexed(ctx, id)
			lost = !ok
			return err
		})
		return lost, err
	}, log, newProgress(stderr, "rebuilding boards", int64(len(ids)), false))
	if err != nil {
		return err
	}
	if *shards > 0 {
		fmt.Fprintf(stdout, "split %d board(s) into %d shards\n", rebuilt, *shards)
	}
	fmt.Fprintf(stdout, "rebuilt the index of %d board(s) in %s\n", rebuilt, time.Since(start).Round(time.Millisecond))
	if *check {
		if err := waiting(tell("cannot check the index"), func() error { return e.Check(ctx) }); err != nil {
			return fmt.Errorf("check: %w", err)
		}
		fmt.Fprintln(stdout, "the index matches the store")
	}
	return nil
}

// rebuildPasses bounds how often rebuildAll goes over the boards it rebuilt before the index
// failed.
const rebuildPasses = 3

// rebuildAll rebuilds each board with one (which waits out a backend's failure, telling what
// it waits for), and returns how many it rebuilt: boards deleted meanwhile are skipped, but
// named (only) is one the operator asked for. A failure may have been a Redis restart, which
// loses what was rebuilt before it: the boards rebuilt before the last failure of a pass are
// rebuilt again, in a pass of their own. So are those whose index is lost once all are done
// (a flush, which fails no command).
func rebuildAll(ids []string, named bool, one func(id string, tell func(error)) error, lost func(id string) (bool, error), log *slog.Logger, bar *progress) (int, error) {
	gone := make(map[string]bool)
	todo := ids
	for pass := 1; len(todo) > 0; pass++ {
		if pass > rebuildPasses {
			return 0, fmt.Errorf("the index failed or lost boards during each of %d passes over them; run the rebuild again", rebuildPasses)
		}
		if pass > 1 {
			log.Warn("the index lost boards rebuilt before, or failed and may have: rebuilding those boards again", "boards", len(todo), "pass", pass)
		}
		redo := 0
		for i, id := range todo {
			err := one(id, func(err error) {
				redo = i
				log.Warn("board "+id+": trying again", "err", err)
			})
			switch {
			case laurel.ErrorCode(err) == laurel.ENotFound && named:
				return 0, fmt.Errorf("no board %q", id)
			case laurel.ErrorCode(err) == laurel.ENotFound: // deleted since the list was read
				gone[id] = true
			case err != nil:
				return 0, fmt.Errorf("board %s: %w", id, err)
			}
			if pass == 1 {
				bar.Add(1)
			}
		}
		if pass == 1 {
			bar.Finish()
		}
		if todo = todo[:redo]; len(todo) > 0 {
			continue
		}
		todo = nil // not todo[:0]: its array is ids'
		for _, id := range ids {
			if gone[id] {
				continue
			}
			l, err := lost(id)
			if err != nil {
				return 0, fmt.Errorf("board %s: %w", id, err)
			}
			if l {
				todo = append(todo, id)
			}
		}
	}
	return len(ids) - len(gone), nil
}
