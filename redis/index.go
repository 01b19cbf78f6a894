// Package redis is laurel's ranked index in the scale-out mode (docs/design.md): shardindex.Index on
// Redis or Valkey sorted sets, shared by any number of API nodes.
//
// A float64 zset score cannot hold every int64, nor the reached_at tie-break, so every set is
// a zset whose members are ordering keys: 8 bytes of score, 8 of subscore on a board that has
// one, 8 of reached_at, then the member's bytes, encoded so that bytewise order is rank order;
// its zset score, the score as a float64 (zscore), orders as the bytes do and spares the
// skiplist most comparisons of bytes. Each set is the board's, whole; beside it, a hash per
// shard maps each of the shard's members in the set to its current prefix (16 bytes, or 24
// with a subscore), to find and replace its key, and to find the shard's members when the
// shard is rebuilt. All keys of a board share a hash tag, and a write's steps, one a shard,
// or a read are one Lua script, so each step is atomic, a read is one instant, and a board
// lives in one slot of a cluster.
package redis

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/shardindex"
	"github.com/redis/rueidis"
)

// DefaultPrefix starts the names of the keys (and of the channel) when New is given none.
const DefaultPrefix = "laurel:"

// Index is shardindex.Index on Redis. It keeps no state of its own beyond the client, so it is
// safe for concurrent use and any number of nodes may share one Redis.
type Index struct {
	client  rueidis.Client
	prefix  string
	channel string // where Apply and Publish announce changes
}

var _ shardindex.Index = (*Index)(nil)

// New returns the index kept in client's Redis under keys starting with prefix
// (DefaultPrefix when empty), so that several indexes, or tests, can share one Redis. The
// prefix must not contain braces, which would break the boards' hash tags. The caller keeps
// ownership of client.
func New(client rueidis.Client, prefix string) *Index {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if strings.ContainsAny(prefix, "{}") {
		panic("redis: the key prefix must not contain braces: " + prefix)
	}
	return &Index{client: client, prefix: prefix, channel: prefix + "changed"}
}

// Connect returns a client of the Redis at addr: host:port, or a redis:// or rediss:// URL.
// Client-side caching is off: the index reads through scripts, which it cannot cache.
func Connect(addr string) (rueidis.Client, error) {
	opt := rueidis.ClientOption{InitAddress: []string{addr}}
	if strings.Contains(addr, "://") {
		var err error
		if opt, err = rueidis.ParseURL(addr); err != nil {
			return nil, fmt.Errorf("redis: parsing %q: %w", addr, err)
		}
	}
	opt.DisableCache = true
	// rueidis retries a read-only command after a network error until its context ends, so
	// a read against a dead Redis would wait for the request's whole deadline. laurel's
	// clients retry on 503 themselves: fail at once and let them.
	opt.DisableRetry = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("redis: connecting to %s: %w", addr, err)
	}
	return c, nil
}

// stale turns the scripts' stale reply into shardindex.ErrStale, and wraps any other error.
func stale(err error, what, board string) error {
	if e, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(e.Error(), staleReply) {
		return shardindex.ErrStale
	}
	return fmt.Errorf("redis: %s of board %q: %w", what, board, err)
}

// keyList numbers the keys a script touches, from 1 as Lua's KEYS does, each once.
type keyList struct {
	k    keys
	keys []string
	num  map[string]string
	sets map[setKey]string // the numbers of the sets' keys, so that a set's name and keys are made once a call
}

// setKey names a set's key: the board's zset (shard -1) or a shard's hash of its members in it.
type setKey struct {
	set   shardindex.Set
	shard int
}

func newKeyList(k keys, first ...string) *keyList {
	l := &keyList{k: k, num: make(map[string]string), sets: make(map[setKey]string)}
	for _, key := range first {
		l.add(key)
	}
	return l
}

// add returns key's number, numbering it when new.
func (l *keyList) add(key string) string {
	if n, ok := l.num[key]; ok {
		return n
	}
	l.keys = append(l.keys, key)
	n := strconv.Itoa(len(l.keys))
	l.num[key] = n
	return n
}

// set returns the number of the zset of s (shard -1) or of shard's hash in it, numbering it
// when new.
func (l *keyList) set(s shardindex.Set, shard int) string {
	sk := setKey{s, shard}
	if n, ok := l.sets[sk]; ok {
		return n
	}
	key := l.k.zset(setName(s))
	if shard >= 0 {
		key = l.k.hash(shard, setName(s))
	}
	n := l.add(key)
	l.sets[sk] = n
	return n
}

// appendAsks appends the asks of answerLua to args, numbering their keys in l.
func appendAsks(args []string, l *keyList, count int, order laurel.Ordering, a shardindex.Asks) []string {
	reads, counts := a.Read, a.Count
	flag := "0"
	if len(reads)+len(counts) > 0 {
		flag = "1"
	}
	args = append(args, flag, strconv.Itoa(len(a.Floors)))
	for _, f := range a.Floors {
		args = append(args, strconv.Itoa(f.Shard), strconv.FormatInt(f.Version, 10))
	}
	args = append(args, strconv.Itoa(len(reads)))
	for _, r := range reads {
		guess := ""
		if r.Expect {
			p, n := encodePrefix(order, laurel.Key{Score: r.Score, Sub: r.Sub, At: r.At})
			guess = string(p[:n])
		}
		args = append(args, l.set(r.Set, -1), l.set(r.Set, shardindex.ShardOf(r.Member, count)), r.Member, guess)
	}
	args = append(args, strconv.Itoa(len(counts)))
	for _, c := range counts {
		args = append(args, l.set(c.Set, -1), bound(order, laurel.Key{Score: c.Score, Sub: c.Sub, At: c.At}, c.Member))
	}
	return args
}

// answered decodes answerLua's reply; Ranked false when the script did not answer.
func answered(res []rueidis.RedisMessage, order laurel.Ordering, reads, counts int) (shardindex.Applied, error) {
	if len(res) == 0 {
		return shardindex.Applied{}, errors.New("an empty reply")
	}
	flag, err := res[0].AsInt64()
	if err != nil || flag == 0 {
		return shardindex.Applied{}, err
	}
	if flag == -1 {
		var out shardindex.Applied
		for _, r := range res[1:] {
			i, err := r.AsInt64()
			if err != nil {
				return shardindex.Applied{}, err
			}
			out.Below = append(out.Below, int(i))
		}
		return out, nil
	}
	res = res[1:]
	if len(res) != 2*reads+counts {
		return shardindex.Applied{}, fmt.Errorf("%d values read, want %d", len(res), 2*reads+counts)
	}
	out := shardindex.Applied{Ranked: true, Read: make([]shardindex.Entry, reads), Before: make([]int, counts)}
	for i := range out.Read {
		rank, err := res[2*i].AsInt64()
		if err != nil {
			return shardindex.Applied{}, err
		}
		if rank == 0 {
			continue
		}
		p, err := res[2*i+1].ToString()
		if err != nil || len(p) != prefixLenOf(order) {
			return shardindex.Applied{}, fmt.Errorf("bad prefix %q (%v)", p, err)
		}
		k := decodePrefix(order, p)
		out.Read[i] = shardindex.Entry{Rank: int(rank), Score: k.Score, Sub: k.Sub, At: k.At}
	}
	for i := range out.Before {
		n, err := res[2*reads+i].AsInt64()
		if err != nil {
			return shardindex.Applied{}, err
		}
		out.Before[i] = int(n)
	}
	return out, nil
}

// Apply makes the steps in one script call, so that each is atomic and the call costs one
// round trip however many shards it steps and whatever it asks.
func (x *Index) Apply(ctx context.Context, board string, count int, order laurel.Ordering, steps []shardindex.Step, a shardindex.Asks) (shardindex.Applied, error) {
	k := x.keysOf(board)
	l := newKeyList(k, k.meta())
	size := 2 + 4*len(a.Read) + 2*len(a.Count) + 2*len(a.Floors) + 3
	for _, st := range steps {
		size += 12 + 3*len(st.Drops) + 4*len(st.Changes)
	}
	args := make([]string, 0, size)
	args = append(args, strconv.Itoa(count), strconv.Itoa(len(steps)))
	for _, st := range steps {
		var err error
		if args, err = appendStep(args, l, x.channel, board, order, st); err != nil {
			return shardindex.Applied{}, err
		}
	}
	args = appendAsks(args, l, count, order, a)
	res, err := x.do(ctx, func() rueidis.RedisResult { return applyScript.Exec(ctx, x.client, l.keys, args) }).ToArray()
	if err != nil {
		return shardindex.Applied{}, fmt.Errorf("redis: applying steps to board %q: %w", board, err)
	}
	out, err := applied(res, order, len(a.Read), len(a.Count))
	if err != nil {
		return shardindex.Applied{}, fmt.Errorf("redis: applying steps to board %q: %w", board, err)
	}
	return out, nil
}

// appendStep appends one step's values to args as applyScript reads them, numbering its keys
// in l.
func appendStep(args []string, l *keyList, channel, board string, order laurel.Ordering, st shardindex.Step) ([]string, error) {
	u, shard := st.Update, st.Shard
	at := len(args)
	args = append(args, "") // the step's length, once known
	hasState, state := "0", ""
	if u.Quiet {
		channel = ""
	}
	message := board
	if u.Tell != nil {
		message = board + "\n" + strings.Join(u.Tell, "\n")
	}
	if u.State != nil {
		hasState, state = "1", string(u.State)
	}
	args = append(args, strconv.FormatInt(u.After, 10), strconv.FormatInt(u.Version, 10),
		hasState, state, channel, message, strconv.FormatInt(u.Stamp, 10),
		strconv.Itoa(shard), l.add(l.k.registry(shard)), "")
	// The sets the step names, numbered from 1 in the step, each with its name and the KEYS
	// numbers of the board's zset and the shard's hash; then its drops and changes by those
	// numbers.
	nsets := len(args) - 1
	sets := make(map[shardindex.Set]string)
	num := func(s shardindex.Set) string {
		i, ok := sets[s]
		if !ok {
			args = append(args, setName(s), l.set(s, -1), l.set(s, shard))
			i = strconv.Itoa(len(sets) + 1)
			sets[s] = i
		}
		return i
	}
	drops := make([]string, len(u.Drops))
	for i, s := range u.Drops {
		drops[i] = num(s)
	}
	changes := make([]string, len(u.Changes))
	for i, c := range u.Changes {
		if c.Member == "" {
			return nil, fmt.Errorf("redis: applying to board %q: change %d has no member", board, i)
		}
		changes[i] = num(c.Set)
	}
	args[nsets] = strconv.Itoa(len(sets))
	args = append(args, strconv.Itoa(len(drops)))
	args = append(args, drops...)
	args = append(args, strconv.Itoa(len(changes)))
	for i, c := range u.Changes {
		p, score := "", ""
		if !c.Remove {
			b, n := encodePrefix(order, laurel.Key{Score: c.Score, Sub: c.Sub, At: c.At})
			p, score = string(b[:n]), zscore(order, c.Score)
		}
		args = append(args, changes[i], c.Member, p, score)
	}
	args[at] = strconv.Itoa(len(args) - at - 1)
	return args, nil
}

// applied decodes applyScript's reply: the shards refused, then answerLua's.
func applied(res []rueidis.RedisMessage, order laurel.Ordering, reads, counts int) (shardindex.Applied, error) {
	if len(res) == 0 {
		return shardindex.Applied{}, errors.New("an empty reply")
	}
	n, err := res[0].AsInt64()
	if err != nil || n < 0 || int(n) >= len(res) {
		return shardindex.Applied{}, fmt.Errorf("bad refusals %v (%v)", res[0], err)
	}
	var refused []int
	for _, r := range res[1 : 1+n] {
		i, err := r.AsInt64()
		if err != nil {
			return shardindex.Applied{}, err
		}
		refused = append(refused, int(i))
	}
	out, err := answered(res[1+n:], order, reads, counts)
	out.Refused = refused
	return out, err
}

// hmget reads fields of a board's meta hash, nil for those it has not.
func (x *Index) hmget(ctx context.Context, board string, fields ...string) ([]*int64, []rueidis.RedisMessage, error) {
	res, err := x.do(ctx, func() rueidis.RedisResult {
		return x.client.Do(ctx, x.client.B().Hmget().Key(x.keysOf(board).meta()).Field(fields...).Build())
	}).ToArray()
	if err != nil {
		return nil, nil, err
	}
	if len(res) != len(fields) {
		return nil, nil, fmt.Errorf("%d fields, want %d", len(res), len(fields))
	}
	ints := make([]*int64, len(res))
	for i, r := range res {
		if r.IsNil() || fields[i] == "s" {
			continue
		}
		s, err := r.ToString()
		if err != nil {
			return nil, nil, err
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("field %s: %w", fields[i], err)
		}
		ints[i] = &v
	}
	return ints, res, nil
}

// State reads the board's meta in one round trip.
func (x *Index) State(ctx context.Context, board string) (shardindex.State, bool, error) {
	ints, res, err := x.hmget(ctx, board, "v0", "s", "t0")
	if err != nil {
		return shardindex.State{}, false, fmt.Errorf("redis: reading the state of board %q: %w", board, err)
	}
	var st shardindex.State
	if ints[0] != nil {
		st.Version = *ints[0]
	}
	if res[1].IsNil() || ints[2] == nil {
		return st, false, nil
	}
	s, err := res[1].ToString()
	if err != nil {
		return shardindex.State{}, false, fmt.Errorf("redis: reading the state of board %q: %w", board, err)
	}
	st.State, st.Stamp = []byte(s), *ints[2]
	return st, true, nil
}

// Versions reads every shard's version and stamp in one round trip.
func (x *Index) Versions(ctx context.Context, board string, count int) ([]shardindex.Version, error) {
	ints, _, err := x.hmget(ctx, board, append(shardFields("v", count), shardFields("t", count)...)...)
	if err != nil {
		return nil, fmt.Errorf("redis: reading the versions of board %q: %w", board, err)
	}
	out := make([]shardindex.Version, count)
	for i := range out {
		if v := ints[i]; v != nil {
			out[i].Version = *v
		}
		if t := ints[count+i]; t != nil {
			out[i].Stamp = *t
		}
	}
	return out, nil
}

// Ranking returns a view of one set of a board whose every read is one script call that
// first checks every shard's stamp, so that no read mixes two states.
func (x *Index) Ranking(board string, count int, order laurel.Ordering, set shardindex.Set, stamp int64) laurel.Ranking {
	k := x.keysOf(board)
	name := setName(set)
	return &ranking{
		x:     x,
		board: board,
		order: order,
		count: count,
		keys:  k,
		name:  name,
		head:  []string{strconv.FormatInt(stamp, 10), strconv.Itoa(count)},
	}
}

// bound is the lex bound below which the keys that rank before (k, member) sort.
//
// On a board without a subscore every entry's is 0, and a key with another (Ordering.Bound's)
// ranks before every entry of its score or after them all, whatever its reached_at: its bound
// is then the score's 8 bytes, below every key of the score, or the next score's, above them
// all ("+" past the last score).
func bound(o laurel.Ordering, k laurel.Key, member string) string {
	if !o.HasSub && k.Sub != 0 {
		u := orderBits(o.Score, k.Score)
		if o.Sub.Better(0, k.Sub) {
			if u == math.MaxUint64 {
				return "+"
			}
			u++
		}
		var p [8]byte
		binary.BigEndian.PutUint64(p[:], u)
		return "(" + string(p[:])
	}
	p, n := encodePrefix(o, k)
	return "(" + string(p[:n]) + member
}

// Totals counts the sets' members in one script call, as of the state stamped stamp.
func (x *Index) Totals(ctx context.Context, board string, count int, sets []shardindex.Set, stamp int64) ([]int, error) {
	k := x.keysOf(board)
	keys := make([]string, 0, 1+len(sets))
	keys = append(keys, k.meta())
	for _, s := range sets {
		keys = append(keys, k.zset(setName(s)))
	}
	ns, err := x.do(ctx, func() rueidis.RedisResult {
		return totalsScript.Exec(ctx, x.client, keys, []string{strconv.FormatInt(stamp, 10), strconv.Itoa(count)})
	}).AsIntSlice()
	if err != nil {
		return nil, stale(err, "counting the sets", board)
	}
	if len(ns) != len(sets) {
		return nil, fmt.Errorf("redis: counting the sets of board %q: %d counts, want %d", board, len(ns), len(sets))
	}
	out := make([]int, len(ns))
	for i, n := range ns {
		out[i] = int(n)
	}
	return out, nil
}

// Delete lists the shard's registered sets and removes its members from them with its
// version in one script, again until no step registered another set in between.
func (x *Index) Delete(ctx context.Context, board string, sh shardindex.Shard) error {
	k := x.keysOf(board)
	for {
		names, err := x.do(ctx, func() rueidis.RedisResult {
			return x.client.Do(ctx, x.client.B().Smembers().Key(k.registry(sh.Number)).Build())
		}).AsStrSlice()
		if err != nil {
			return fmt.Errorf("redis: listing the sets of board %q: %w", board, err)
		}
		keys := make([]string, 0, 2+2*len(names))
		keys = append(keys, k.meta(), k.registry(sh.Number))
		for _, name := range names {
			keys = append(keys, k.zset(name), k.hash(sh.Number, name))
		}
		args := append([]string{strconv.Itoa(sh.Number)}, names...)
		done, err := x.do(ctx, func() rueidis.RedisResult { return deleteScript.Exec(ctx, x.client, keys, args) }).AsInt64()
		if err != nil {
			return fmt.Errorf("redis: deleting shard %d of board %q: %w", sh.Number, board, err)
		}
		if done == 1 {
			return nil
		}
	}
}

// DeleteBoard lists the board's shards (its meta's versions) and their sets, and removes every
// key of them in one script, again until no step made a shard or registered a set in between.
func (x *Index) DeleteBoard(ctx context.Context, board string) error {
	k := x.keysOf(board)
	for {
		fields, err := x.do(ctx, func() rueidis.RedisResult {
			return x.client.Do(ctx, x.client.B().Hkeys().Key(k.meta()).Build())
		}).AsStrSlice()
		if err != nil {
			return fmt.Errorf("redis: listing the shards of board %q: %w", board, err)
		}
		var shards []int
		for _, f := range fields {
			if i, err := strconv.Atoi(strings.TrimPrefix(f, "v")); err == nil && strings.HasPrefix(f, "v") {
				shards = append(shards, i)
			}
		}
		keys := []string{k.meta()}
		args := []string{strconv.Itoa(len(shards))}
		cmds := make(rueidis.Commands, len(shards))
		for j, i := range shards {
			keys = append(keys, k.registry(i))
			cmds[j] = x.client.B().Smembers().Key(k.registry(i)).Build()
		}
		zsets := make(map[string]bool)
		var rest []string
		for j, r := range x.client.DoMulti(ctx, cmds...) {
			names, err := r.AsStrSlice()
			if err != nil {
				return fmt.Errorf("redis: listing the sets of board %q: %w", board, err)
			}
			args = append(args, strconv.Itoa(len(names)))
			for _, name := range names {
				if !zsets[name] {
					zsets[name] = true
					rest = append(rest, k.zset(name))
				}
				rest = append(rest, k.hash(shards[j], name))
			}
		}
		keys = append(keys, rest...)
		done, err := x.do(ctx, func() rueidis.RedisResult { return deleteBoardScript.Exec(ctx, x.client, keys, args) }).AsInt64()
		if err != nil {
			return fmt.Errorf("redis: deleting board %q: %w", board, err)
		}
		if done == 1 {
			return nil
		}
	}
}

// Publish announces on the channel that something that may show on any board changed: ""
// when it may have moved entries, else "\n" (no board's members).
func (x *Index) Publish(ctx context.Context, moved bool) error {
	message := "\n"
	if moved {
		message = ""
	}
	if err := x.do(ctx, func() rueidis.RedisResult {
		return x.client.Do(ctx, x.client.B().Publish().Channel(x.channel).Message(message).Build())
	}).Error(); err != nil {
		return fmt.Errorf("redis: publishing a change: %w", err)
	}
	return nil
}

// Ping reports whether Redis answers, within ctx.
func (x *Index) Ping(ctx context.Context) error {
	if err := x.do(ctx, func() rueidis.RedisResult { return x.client.Do(ctx, x.client.B().Ping().Build()) }).Error(); err != nil {
		return fmt.Errorf("redis: ping: %w", err)
	}
	return nil
}

// Subscribe listens on a dedicated connection, so that a slow handler never holds up the
// connections the steps and reads share. It returns once Redis confirmed the subscription,
// so that every later Apply or Publish is heard. When the connection is lost it subscribes
// again on a new one and then calls changed with any board, since any may have changed
// unheard. stop waits until changed is no longer called, so it must not be called from
// changed.
func (x *Index) Subscribe(changed func(laurel.Changed)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex // serializes changed with stop
		stopped bool
		subs    atomic.Int64 // subscriptions confirmed so far
		ready   = make(chan error, 1)
		once    sync.Once
		done    = make(chan struct{})
	)
	deliver := func(message string) {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			changed(parseChanged(message))
		}
	}
	signal := func(err error) { once.Do(func() { ready <- err }) }
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind != "subscribe" {
			return
		}
		if subs.Add(1) == 1 {
			signal(nil)
		} else {
			deliver("")
		}
	})
	go func() {
		defer close(done)
		wait := 50 * time.Millisecond
		for {
			err := x.receive(hooked, func(m rueidis.PubSubMessage) { deliver(m.Message) })
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				err = errors.New("unsubscribed")
			}
			signal(err) // a failure before the first subscription is Subscribe's
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
		}
	}()
	if err := <-ready; err != nil {
		cancel()
		<-done
		return nil, fmt.Errorf("redis: subscribing to %s: %w", x.channel, err)
	}
	var stopOnce sync.Once
	return func() {
		stopOnce.Do(func() {
			mu.Lock()
			stopped = true
			mu.Unlock()
			cancel()
			<-done
		})
	}, nil
}

// parseChanged reads a message of the channel: a board alone (any of its members), or a
// board and the members Update.Tell named, each on a line of its own (ids hold no control
// character); "" after a Publish or a lost connection: any board.
func parseChanged(message string) laurel.Changed {
	board, members, named := strings.Cut(message, "\n")
	c := laurel.Changed{Board: board}
	switch {
	case named && members == "":
		c.Members = []string{}
	case named:
		c.Members = strings.Split(members, "\n")
	}
	return c
}

// receive subscribes on a dedicated connection and handles its messages until ctx is done or
// the connection fails.
func (x *Index) receive(ctx context.Context, fn func(rueidis.PubSubMessage)) error {
	c, release := x.client.Dedicate()
	defer release()
	return c.Receive(ctx, c.B().Subscribe().Channel(x.channel).Build(), fn)
}
