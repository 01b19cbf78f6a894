package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"strconv"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/redis"
	"github.com/laurel/laurel/shardindex"
	"github.com/redis/rueidis"
)

func init() {
	if flag.Lookup("seed") == nil {
		flag.Uint64("seed", 0, "seed of the randomized tests (0: a new one)")
	}
}

// testSeed returns the -seed flag, or a new random seed.
func testSeed(t testing.TB) uint64 {
	if f := flag.Lookup("seed"); f != nil {
		if s, err := strconv.ParseUint(f.Value.String(), 10, 64); err == nil && s != 0 {
			return s
		}
	}
	var b [8]byte
	rand.Read(b[:])
	s := uint64(0)
	for _, c := range b {
		s = s<<8 | uint64(c)
	}
	return s | 1
}

// connect returns a client of the test Redis, closed at the end of the test. Without a Redis
// the test is skipped, except in CI where it fails: integration tests must run there.
func connect(t testing.TB) rueidis.Client {
	t.Helper()
	laureltest.NeedRedis(t)
	c, err := redis.Connect(laureltest.RedisAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newIndex returns an index under a key prefix of its own, whose keys are deleted at the end
// of the test, and the client and prefix it uses.
func newIndex(t testing.TB) (*redis.Index, rueidis.Client, string) {
	t.Helper()
	c := connect(t)
	var b [8]byte
	rand.Read(b[:])
	prefix := "laureltest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, k := range scanKeys(t, c, prefix) {
			if err := c.Do(ctx, c.B().Unlink().Key(k).Build()).Error(); err != nil {
				t.Errorf("cleaning up %q: %v", k, err)
			}
		}
	})
	return redis.New(c, prefix), c, prefix
}

// scanKeys returns every key starting with prefix.
func scanKeys(t testing.TB, c rueidis.Client, prefix string) []string {
	t.Helper()
	var keys []string
	cursor := uint64(0)
	for {
		e, err := c.Do(context.Background(), c.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatalf("scanning %s*: %v", prefix, err)
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return keys
		}
	}
}

// applyOne makes one step of shard sh, asking asks (none when not given); ErrStale when the
// shard refused it.
func applyOne(ctx context.Context, idx *redis.Index, board string, sh shardindex.Shard, order laurel.Ordering, u shardindex.Update, asks ...shardindex.Asks) (shardindex.Applied, error) {
	var a shardindex.Asks
	if len(asks) > 0 {
		a = asks[0]
	}
	return shardindex.ApplyOne(ctx, idx, board, sh, order, u, a)
}
