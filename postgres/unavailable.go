package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/laurel/laurel"
)

// unavailable maps an error of PostgreSQL or of the index that says it could not be reached,
// or gave up — a connection refused or lost, a backend terminated, the server shutting down,
// a deadline — to laurel's EUnavailable, which clients may retry (with event ids, safely), and
// logs its cause. Any other error is returned as it is.
func (s *Store) unavailable(what string, err error) error {
	if err == nil || !backendDown(err) {
		return err
	}
	s.log.Warn("a backend is unavailable", "op", what, "err", err)
	return laurel.Errorf(laurel.EUnavailable, "PostgreSQL or the index did not complete the %s; try again", what)
}

func backendDown(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57: operator intervention (a backend terminated,
		// the server shutting down); 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57") || pgErr.Code == "53300"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed)
}
