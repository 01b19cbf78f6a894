package postgres_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
	"github.com/laurel/laurel/redis"
)

// TestRedisCluster: the scale-out store on a Redis Cluster of three masters. A board of six
// shards spreads over all three masters, each shard's keys on one of them, and reads it exactly;
// and the oracle agrees with the store on the cluster, boards of three shards each.
func TestRedisCluster(t *testing.T) {
	cluster := laureltest.NewRedisCluster(t, 3)
	client, err := redis.Connect(cluster.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	store := laureltest.NewScaleOutStore(t)
	index := redis.New(client, store.Prefix)
	now := laureltest.NewClock("2026-11-22T10:00:00Z").Now
	e, err := postgres.Open(ctx, store.DSN, index, postgres.Options{Now: now, Maintenance: -1, Shards: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	putBoard(t, e, "big", laurel.BoardSpec{Windows: []string{"all", "day"}})
	const members = 3000
	for i := 0; i < members; i += 1000 {
		events := make([]laurel.Event, 1000)
		for j := range events {
			events[j] = laurel.Event{Board: "big", Member: fmt.Sprintf("m%04d", i+j), Value: int64((i + j) * 7 % members)}
		}
		submit(t, e, events...)
	}
	check(t, e)

	// The board in one slot, so on one master: its sets are whole, its six shards beside them.
	tags := map[string]string{} // hash tag → the master holding it
	for addr, keys := range cluster.Keys(t, store.Prefix) {
		for _, k := range keys {
			tag := k[strings.Index(k, "{")+1 : strings.Index(k, "}")]
			if other, ok := tags[tag]; ok && other != addr {
				t.Fatalf("board %q has keys on %s and %s", tag, addr, other)
			}
			tags[tag] = addr
		}
	}
	if len(tags) != 1 || tags["big"] == "" {
		t.Fatalf("the board's keys: %v, want one hash tag, the board's", tags)
	}

	// Reads on the cluster: the top, a deep page, a member, around it.
	page, err := e.Page(ctx, laurel.Query{Board: "big"}, 0, 3, laurel.ScoreRange{})
	if err != nil || page.Total != members || page.Entries[0].Score != members-1 || page.Entries[2].Score != members-3 {
		t.Fatalf("the top: %+v, %v", page, err)
	}
	page, err = e.Page(ctx, laurel.Query{Board: "big", Window: "day"}, 2500, 10, laurel.ScoreRange{})
	if err != nil || len(page.Entries) != 10 || page.Entries[0].Rank != 2501 || page.Entries[0].Score != members-2501 {
		t.Fatalf("a deep page: %+v, %v", page, err)
	}
	me, err := e.Member(ctx, laurel.Query{Board: "big"}, "m0001") // value 7
	if err != nil || me.Entry.Rank != members-7 {
		t.Fatalf("m0001: %+v, %v; want rank %d", me, err, members-7)
	}

	t.Run("oracle", func(t *testing.T) {
		store := laureltest.NewScaleOutStore(t)
		index := redis.New(client, store.Prefix)
		laureltest.Oracle(t, laureltest.Target{
			Open: func(_ testing.TB, now func() int64) (laurel.Service, error) {
				return postgres.Open(ctx, store.DSN, index, postgres.Options{Now: now, Maintenance: -1, Shards: 3})
			},
			Close: func(svc laurel.Service) error { return svc.(*postgres.Store).Close() },
			Check: func(svc laurel.Service) error { return svc.(*postgres.Store).Check(ctx) },
		})
	})
}
