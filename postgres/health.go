package postgres

import (
	"context"
	"time"
)

// probeTimeout bounds each backend's answer to a probe.
const probeTimeout = time.Second

// probe asks PostgreSQL and the index whether they answer, as the maintenance pass does each
// time, and notes the answer for Failed; it logs only when it changes. It reports whether
// both answered.
func (s *Store) probe() bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	pgErr := s.pool.Ping(ctx)
	indexErr := s.index.Ping(ctx)
	down := pgErr != nil || indexErr != nil
	if s.down.Swap(down) != down {
		if down {
			s.log.Error("the store is not ready: a backend does not answer", "postgres", errText(pgErr), "index", errText(indexErr))
		} else {
			s.log.Info("the store is ready again: PostgreSQL and the index answer")
		}
	}
	return !down
}

// Failed reports whether the last probe found PostgreSQL or the index not answering: the
// server then answers /readyz with 503, so that a balancer sends requests to other nodes.
// Probes run with the maintenance pass (Options.Maintenance); without it, Failed is false.
func (s *Store) Failed() bool { return s.down.Load() }

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
