package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/redis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// scaleOut is where the scale-out store keeps its data: a PostgreSQL database and a Redis
// (or Valkey) for the index, as serve and rebuild take them.
type scaleOut struct {
	postgres, redis, prefix *string
}

// scaleOutFlags adds the scale-out store's flags to fs. The connection strings may come
// from the environment instead, so that passwords stay out of the process list.
func scaleOutFlags(fs *flag.FlagSet) scaleOut {
	return scaleOut{
		postgres: fs.String("postgres", os.Getenv("LAUREL_POSTGRES"), "PostgreSQL URL of the scale-out store, with -redis (default $LAUREL_POSTGRES)"),
		redis:    fs.String("redis", os.Getenv("LAUREL_REDIS"), "Redis or Valkey of the scale-out index, host:port or redis:// URL (default $LAUREL_REDIS)"),
		prefix:   fs.String("redis-prefix", redis.DefaultPrefix, "prefix of the index's keys in Redis, so that deployments can share one"),
	}
}

// givenData drops the scale-out store that the environment names when -data is on fs's
// command line and neither -postgres nor -redis is: a flag given beats a default, so that
// `laurel export -data DIR` works in a shell that exports $LAUREL_POSTGRES and $LAUREL_REDIS,
// and `laurel serve -data DIR` serves DIR there. Called once fs is parsed.
func (s scaleOut) givenData(fs *flag.FlagSet) {
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["data"] && !given["postgres"] && !given["redis"] {
		*s.postgres, *s.redis = "", ""
	}
}

func (s scaleOut) on() bool { return *s.postgres != "" || *s.redis != "" }

func (s scaleOut) check() error {
	if (*s.postgres == "") != (*s.redis == "") {
		return usageError{fmt.Errorf("-postgres and -redis go together: the scale-out store needs both")}
	}
	if !s.on() {
		return nil
	}
	// A connection string that cannot be parsed is a mistake to report, not a backend to
	// wait for.
	if _, err := pgxpool.ParseConfig(*s.postgres); err != nil {
		return usageError{fmt.Errorf("-postgres: %v", err)}
	}
	if strings.Contains(*s.redis, "://") {
		if _, err := rueidis.ParseURL(*s.redis); err != nil {
			return usageError{fmt.Errorf("-redis: %v", err)}
		}
	}
	return nil
}

// warnings is the log of a command that is not a server (demo, rebuild, export, import):
// what needs an operator's eye, as text on stderr.
func warnings(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// open connects to both and opens the store; closing the store closes the Redis client.
func (s scaleOut) open(ctx context.Context, opts postgres.Options) (*scaleOutStore, error) {
	client, err := redis.Connect(*s.redis)
	if err != nil {
		return nil, err
	}
	e, err := postgres.Open(ctx, *s.postgres, redis.New(client, *s.prefix), opts)
	if err != nil {
		client.Close()
		return nil, err
	}
	return &scaleOutStore{e, client}, nil
}

type scaleOutStore struct {
	*postgres.Store
	client rueidis.Client
}

func (e *scaleOutStore) Close() error {
	err := e.Store.Close()
	e.client.Close()
	return err
}

// openScaleOut connects to the scale-out store and starts serving the API from it, with the
// maintenance and shards of opts. While PostgreSQL or Redis is not up yet it answers /readyz
// with 503 and tries again, backing off to every 10 s, until they are or ctx ends; it logs
// once per change of the reason.
func (s *server) openScaleOut(ctx context.Context, so scaleOut, opts postgres.Options) error {
	var store *scaleOutStore
	opts.Logger, opts.OnCommit = s.log, s.observeCommit
	waiting := lhttp.Recovering("waiting for PostgreSQL and Redis")
	s.handler.Store(&waiting)
	err := retry(ctx, forever, 10*time.Second, always,
		func(err error) { s.log.Error("waiting for the scale-out store's backends", "err", err) },
		func() (err error) {
			if store, err = so.open(ctx, opts); err != nil {
				return err
			}
			// Not ready until the index holds what a node killed mid-write committed.
			if err = store.CatchUpLagging(ctx); err != nil {
				store.Close()
			}
			return err
		})
	if err != nil {
		s.http.Close()
		s.log.Info("stopped before the scale-out store's backends came up")
		return errStopped
	}
	cfg := s.cfg
	cfg.Failed = store.Failed // /readyz: 503 while PostgreSQL or Redis does not answer
	s.serve(store, cfg)
	s.api.Load().Registry().MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "laurel_history_points_lost_total",
		Help: "History points of stored events that PostgreSQL did not take by their write's deadline.",
	}, func() float64 { return float64(store.HistoryPointsLost()) }))
	s.log.Info("ready", "store", "postgres", "index", "redis")
	return nil
}
