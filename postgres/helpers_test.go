package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/redis"
	"github.com/redis/rueidis"
)

// The tests run against a real PostgreSQL and Redis: LAUREL_TEST_POSTGRES (a URL, default the
// local server's database test) and LAUREL_TEST_REDIS (default 127.0.0.1:6379). Without them
// a test is skipped, except under CI=true, where it fails: integration tests must run there.

func postgresURL() string {
	if u := os.Getenv("LAUREL_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func redisAddr() string {
	if a := os.Getenv("LAUREL_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

var probe struct {
	once sync.Once
	err  error
}

// services makes sure PostgreSQL and Redis answer, or skips (fails in CI).
func services(t testing.TB) {
	t.Helper()
	probe.once.Do(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, postgresURL())
		if err != nil {
			probe.err = err
			return
		}
		conn.Close(ctx)
		c, err := redis.Connect(redisAddr())
		if err != nil {
			probe.err = err
			return
		}
		c.Close()
	})
	if probe.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL or Redis is not available, and CI=true: %v", probe.err)
		}
		t.Skipf("PostgreSQL or Redis is not available: %v", probe.err)
	}
}

func randomName() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// store is a schema of its own in the test database and a key prefix of its own in Redis,
// both removed when the test ends.
type store struct {
	dsn    string
	client rueidis.Client
	index  *redis.Index
}

func newStore(t testing.TB) *store {
	t.Helper()
	services(t)
	ctx := context.Background()
	name := "laurel_test_" + randomName()
	conn, err := pgx.Connect(ctx, postgresURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, postgresURL())
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(postgresURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	client, err := redis.Connect(redisAddr())
	if err != nil {
		t.Fatal(err)
	}
	prefix := name + ":"
	t.Cleanup(func() {
		for _, k := range scanKeys(t, client, prefix+"*") {
			client.Do(ctx, client.B().Del().Key(k).Build())
		}
		client.Close()
	})
	return &store{dsn: u.String(), client: client, index: redis.New(client, prefix)}
}

func scanKeys(t testing.TB, client rueidis.Client, match string) []string {
	var keys []string
	var cursor uint64
	for {
		e, err := client.Do(context.Background(), client.B().Scan().Cursor(cursor).Match(match).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Error(err)
			return keys
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return keys
		}
	}
}

// open opens an engine on the store; it is closed when the test ends.
func (s *store) open(t testing.TB, now func() int64) *postgres.Engine {
	t.Helper()
	e, err := postgres.Open(context.Background(), s.dsn, s.index, postgres.Options{Now: now, Maintenance: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// target is the engine under laureltest's oracle: a fresh store, reopened at each restart.
func target(t *testing.T) laureltest.Target {
	s := newStore(t)
	return laureltest.Target{
		Open: func(_ testing.TB, now func() int64) (laurel.Service, error) {
			return postgres.Open(context.Background(), s.dsn, s.index, postgres.Options{Now: now, Maintenance: -1})
		},
		Close: func(svc laurel.Service) error { return svc.(*postgres.Engine).Close() },
		Check: func(svc laurel.Service) error { return svc.(*postgres.Engine).Check(context.Background()) },
	}
}
