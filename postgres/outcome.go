package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/laurel/laurel"
)

// A step sends its writes and COMMIT in one round trip (step.commit). When the connection is
// lost on the way back — PostgreSQL terminated the backend, the network dropped — the commit
// may have landed or not, and answering 503 would tell a client that a stored write was not.
// The step knows its transaction's id (read with its locks): it asks PostgreSQL again, on
// another connection, what became of it, until the step's deadline, which is its requests'.

// errCommitLost is the error of a commit whose outcome its connection did not bring back.
type errCommitLost struct{ err error }

func (e *errCommitLost) Error() string { return "postgres: commit: " + e.err.Error() }
func (e *errCommitLost) Unwrap() error { return e.err }

// commitFailed returns the error of a commit's round trip: an error PostgreSQL answered for
// the transaction (severity ERROR) means it was rolled back; anything else (a lost
// connection, a FATAL termination, the deadline) leaves its outcome to be asked.
func commitFailed(err error) error {
	if refused(err) {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return &errCommitLost{err}
}

// refused reports whether PostgreSQL answered a statement with an error of the statement's
// own (severity ERROR: its transaction rolled back, and sending it again fails again), rather
// than the connection failing under it.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Severity == "ERROR"
}

// ErrOutcomeUnknown's message, for a commit PostgreSQL could not be asked about in time.
const outcomeUnknown = "the write may or may not be stored: its commit was cut off and PostgreSQL could not be asked about it within the request's deadline; send it again with the same event ids to learn which"

// commitOutcome asks PostgreSQL whether transaction xid committed: landed true when it did,
// false with lost (the commit's own error) when it did not, and an outcome_unknown error when
// PostgreSQL cannot be asked before ctx ends. A transaction still in progress (its backend
// is still finishing) is asked about again.
func (s *Store) commitOutcome(ctx context.Context, xid string, lost error) (landed bool, err error) {
	pause := 5 * time.Millisecond
	for {
		var status *string
		err := s.pool.QueryRow(ctx, "SELECT pg_xact_status($1::xid8)", xid).Scan(&status)
		switch {
		case err == nil && status == nil: // too old to tell: cannot happen within a deadline
			return false, s.outcomeUnknown(xid, lost)
		case err == nil && *status == "committed":
			s.log.Warn("a commit's connection was lost; the commit landed", "xid", xid, "err", lost)
			return true, nil
		case err == nil && *status == "aborted":
			return false, lost
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, s.outcomeUnknown(xid, lost)
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

func (s *Store) outcomeUnknown(xid string, lost error) error {
	s.log.Error("a commit's outcome is unknown: its connection was lost and PostgreSQL did not answer in time", "xid", xid, "err", lost)
	return laurel.Errorf(laurel.EOutcomeUnknown, outcomeUnknown)
}
