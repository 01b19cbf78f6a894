package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// redisTarget is the plain Redis equivalent: one sorted set, scores added with pipelined
// ZINCRBY, names in one hash per member, the top 100 read with ZREVRANGE and the hashes.
type redisTarget struct {
	c          benchConfig
	client     rueidis.Client
	key        string
	windowKeys []string // a sorted set per window, key first; all but key only with -redis-mirror
}

func newRedisTarget(addr string, c benchConfig) (*redisTarget, error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return nil, err
	}
	t := &redisTarget{c: c, client: client, key: "laurel-bench:" + c.board}
	t.windowKeys = []string{t.key}
	for _, w := range strings.Split(c.windows, ",")[1:] {
		t.windowKeys = append(t.windowKeys, t.key+":"+w)
	}
	return t, nil
}

func (t *redisTarget) name() string { return "redis" }
func (t *redisTarget) close()       { t.client.Close() }

// setup deletes the sorted set and the names of an earlier run, so that the run starts from
// nothing, as laurel's new board does.
func (t *redisTarget) setup(ctx context.Context) error {
	keys := append([]string{t.key + ":ids"}, t.windowKeys...)
	for m := range t.c.members {
		keys = append(keys, t.nameKey(memberID(m)))
		if len(keys) == 1000 || m == t.c.members-1 {
			if err := t.client.Do(ctx, t.client.B().Unlink().Key(keys...).Build()).Error(); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	return nil
}

// memory reads the sorted set's MEMORY USAGE (every member counted: SAMPLES 0) and the
// server's used_memory and used_memory_rss.
func (t *redisTarget) memory(ctx context.Context) (footprint, error) {
	data, err := t.client.Do(ctx, t.client.B().MemoryUsage().Key(t.key).Samples(0).Build()).AsInt64()
	if rueidis.IsRedisNil(err) { // no such key
		data, err = 0, nil
	}
	if err != nil {
		return footprint{}, err
	}
	info, err := t.client.Do(ctx, t.client.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		return footprint{}, err
	}
	all, err := statLine([]byte(info), "used_memory:")
	if err != nil {
		return footprint{}, err
	}
	rss, err := statLine([]byte(info), "used_memory_rss:")
	if err != nil {
		return footprint{}, err
	}
	entries, err := t.client.Do(ctx, t.client.B().Zcard().Key(t.key).Build()).AsInt64()
	if err != nil {
		return footprint{}, err
	}
	return footprint{data: data, all: int64(all), resident: int64(rss), entries: entries}, nil
}

// server reads the CPU time of the Redis server from INFO.
func (t *redisTarget) server(ctx context.Context) (serverView, error) {
	info, err := t.client.Do(ctx, t.client.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return serverView{}, err
	}
	sys, err := statLine([]byte(info), "used_cpu_sys:")
	if err != nil {
		return serverView{}, err
	}
	user, err := statLine([]byte(info), "used_cpu_user:")
	return serverView{cpu: time.Duration((sys + user) * float64(time.Second))}, err
}

// nameKey is the hash that holds member's name.
func (t *redisTarget) nameKey(member string) string { return t.key + ":member:" + member }

func (t *redisTarget) load(ctx context.Context, members []int) error {
	keys := t.windowKeys[:1]
	if t.c.mirror {
		keys = t.windowKeys
	}
	cmds := make(rueidis.Commands, 0, (1+len(keys))*len(members))
	for _, m := range members {
		for _, k := range keys {
			cmds = append(cmds, t.client.B().Zincrby().Key(k).Increment(1).Member(memberID(m)).Build())
		}
		cmds = append(cmds, t.client.B().Hset().Key(t.nameKey(memberID(m))).FieldValue().FieldValue("name", "Player "+strconv.Itoa(m)).Build())
	}
	return firstError(t.client.DoMulti(ctx, cmds...))
}

func (t *redisTarget) writer(ctx context.Context, w int) func(int, []int) error {
	if !t.c.mirror {
		return func(_ int, members []int) error {
			cmds := make(rueidis.Commands, 0, len(members))
			for _, m := range members {
				cmds = append(cmds, t.client.B().Zincrby().Key(t.key).Increment(1).Member(memberID(m)).Build())
			}
			return firstError(t.client.DoMulti(ctx, cmds...))
		}
	}
	// What laurel does per event, as far as Redis commands go: refuse a repeated id, then add
	// the value in every window's set. (Not the periods' turnover, the rolling window or the
	// history: Redis has no counterpart for them.)
	prefix := t.c.run + "-" + strconv.Itoa(w) + "-"
	return func(n int, members []int) error {
		cmds := make(rueidis.Commands, 0, len(members)*(1+len(t.windowKeys)))
		for i, m := range members {
			id := prefix + strconv.Itoa(n) + "-" + strconv.Itoa(i)
			cmds = append(cmds, t.client.B().Hsetnx().Key(t.key+":ids").Field(id).Value("1").Build())
			for _, k := range t.windowKeys {
				cmds = append(cmds, t.client.B().Zincrby().Key(k).Increment(1).Member(memberID(m)).Build())
			}
		}
		return firstError(t.client.DoMulti(ctx, cmds...))
	}
}

func (t *redisTarget) reader(ctx context.Context) func() error {
	return func() error { return t.top100(ctx) }
}

func (t *redisTarget) top100(ctx context.Context) error {
	top, err := t.client.Do(ctx, t.client.B().Zrevrange().Key(t.key).Start(0).Stop(99).Withscores().Build()).AsZScores()
	if err != nil {
		return err
	}
	cmds := make(rueidis.Commands, 0, len(top))
	for _, z := range top {
		cmds = append(cmds, t.client.B().Hget().Key(t.nameKey(z.Member)).Field("name").Build())
	}
	if len(cmds) == 0 {
		return fmt.Errorf("top 100: empty")
	}
	return firstError(t.client.DoMulti(ctx, cmds...))
}

func firstError(rs []rueidis.RedisResult) error {
	for _, r := range rs {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return err
		}
	}
	return nil
}
