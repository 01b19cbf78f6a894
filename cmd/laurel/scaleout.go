package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/redis"
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
		postgres: fs.String("postgres", os.Getenv("LAUREL_POSTGRES"), "PostgreSQL URL of the scale-out store (default $LAUREL_POSTGRES); with -redis, instead of -data"),
		redis:    fs.String("redis", os.Getenv("LAUREL_REDIS"), "Redis or Valkey of the scale-out index, host:port or redis:// URL (default $LAUREL_REDIS)"),
		prefix:   fs.String("redis-prefix", redis.DefaultPrefix, "prefix of the index's keys in Redis, so that deployments can share one"),
	}
}

func (s scaleOut) on() bool { return *s.postgres != "" || *s.redis != "" }

func (s scaleOut) check() error {
	if (*s.postgres == "") != (*s.redis == "") {
		return usageError{fmt.Errorf("-postgres and -redis go together: the scale-out store needs both")}
	}
	return nil
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

// openScaleOut connects to the scale-out store and starts serving the API from it,
// maintaining its boards every maintenance.
func (s *server) openScaleOut(ctx context.Context, so scaleOut, maintenance time.Duration) error {
	store, err := so.open(ctx, postgres.Options{Logger: s.log, Maintenance: maintenance, OnCommit: s.observeCommit})
	if err != nil {
		s.http.Close()
		return err
	}
	s.serve(store, s.cfg)
	s.log.Info("ready", "store", "postgres", "index", "redis")
	return nil
}
