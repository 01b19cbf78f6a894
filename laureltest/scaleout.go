package laureltest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/redis"
	"github.com/redis/rueidis"
)

// The scale-out store's tests run against a real PostgreSQL and Redis:
// LAUREL_TEST_POSTGRES (a URL; default the local server's database test, as user postgres)
// and LAUREL_TEST_REDIS (default 127.0.0.1:6379). Without them a test is skipped, except
// under CI=true, where it fails: integration tests must run there.

// PostgresURL is the database the tests use.
func PostgresURL() string {
	if u := os.Getenv("LAUREL_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// RedisAddr is the Redis the tests use.
func RedisAddr() string {
	if a := os.Getenv("LAUREL_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// probe asks once whether a service answers.
type probe struct {
	once sync.Once
	err  error
}

var redisProbe, postgresProbe probe

// need skips t when the service of p does not answer, or fails it under CI=true.
func (p *probe) need(t testing.TB, what string, try func() error) {
	t.Helper()
	p.once.Do(func() { p.err = try() })
	if p.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not available, and CI=true: %v", what, p.err)
		}
		t.Skipf("%s is not available: %v", what, p.err)
	}
}

// NeedRedis makes sure Redis answers, or skips the test (fails it in CI).
func NeedRedis(t testing.TB) {
	t.Helper()
	redisProbe.need(t, "Redis at "+RedisAddr()+" (LAUREL_TEST_REDIS)", func() error {
		c, err := redis.Connect(RedisAddr())
		if err == nil {
			c.Close()
		}
		return err
	})
}

// NeedServices makes sure PostgreSQL and Redis answer, or skips the test (fails it in CI).
func NeedServices(t testing.TB) {
	t.Helper()
	NeedRedis(t)
	postgresProbe.need(t, "PostgreSQL (LAUREL_TEST_POSTGRES)", func() error {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, PostgresURL())
		if err == nil {
			conn.Close(ctx)
		}
		return err
	})
}

// ScaleOutStore is a scale-out store of a test's own: a schema in the test database and a
// key prefix in Redis, both removed when the test ends.
type ScaleOutStore struct {
	DSN    string // selects the schema
	Prefix string // of the index's keys
	Client rueidis.Client
	Index  *redis.Index
}

// NewScaleOutStore makes a store for t.
func NewScaleOutStore(t testing.TB) *ScaleOutStore {
	t.Helper()
	NeedServices(t)
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	name := "laurel_test_" + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, PostgresURL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE SCHEMA " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + name + " CASCADE"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	client, err := redis.Connect(RedisAddr())
	if err != nil {
		t.Fatal(err)
	}
	s := &ScaleOutStore{DSN: u.String(), Prefix: name + ":", Client: client, Index: redis.New(client, name+":")}
	t.Cleanup(func() {
		for _, k := range s.Keys(t) {
			client.Do(ctx, client.B().Del().Key(k).Build())
		}
		client.Close()
	})
	return s
}

// Keys lists the store's keys in Redis.
func (s *ScaleOutStore) Keys(t testing.TB) []string {
	var keys []string
	var cursor uint64
	for {
		e, err := s.Client.Do(context.Background(), s.Client.B().Scan().Cursor(cursor).Match(s.Prefix+"*").Count(1000).Build()).AsScanEntry()
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

// Open opens a store on the store with the clock now and no maintenance (tests call for
// it); it is closed when the test ends.
func (s *ScaleOutStore) Open(t testing.TB, now func() int64) *postgres.Store {
	t.Helper()
	return s.OpenWith(t, postgres.Options{Now: now, Maintenance: -1})
}

// OpenWith opens a store on s with opts, closed when t ends.
func (s *ScaleOutStore) OpenWith(t testing.TB, opts postgres.Options) *postgres.Store {
	t.Helper()
	e, err := postgres.Open(context.Background(), s.DSN, s.Index, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Target is the scale-out store on the store as the oracle's store under test, reopened
// over the same store at each restart, checked against its store at each checkpoint.
func (s *ScaleOutStore) Target() Target {
	return Target{
		Open: func(_ testing.TB, now func() int64) (laurel.Service, error) {
			return postgres.Open(context.Background(), s.DSN, s.Index, postgres.Options{Now: now, Maintenance: -1})
		},
		Close: func(svc laurel.Service) error { return svc.(*postgres.Store).Close() },
		Check: func(svc laurel.Service) error { return svc.(*postgres.Store).Check(context.Background()) },
		Export: func(svc laurel.Service, w io.Writer) error {
			return Export(svc.(laurel.Exporter), w)
		},
		Import: func(t testing.TB, now func() int64, r io.Reader) error {
			e, err := postgres.Open(context.Background(), s.DSN, s.Index, postgres.Options{Now: now, Maintenance: -1})
			if err != nil {
				return err
			}
			defer e.Close()
			dump, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			boards, err := laurel.VerifyDump(bytes.NewReader(dump))
			if err != nil {
				return err
			}
			d, err := laurel.NewDumpReader(bytes.NewReader(dump))
			if err != nil {
				return err
			}
			return e.Import(context.Background(), d, boards)
		},
	}
}

// Export writes the dump of a store to w.
func Export(e laurel.Exporter, w io.Writer) error {
	d, err := laurel.NewDumpWriter(w)
	if err != nil {
		return err
	}
	if err := e.Export(context.Background(), d); err != nil {
		return err
	}
	return d.Close()
}
