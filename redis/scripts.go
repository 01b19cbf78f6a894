package redis

import "github.com/redis/rueidis"

// staleReply is the error a script answers when the board is not at the version or stamp
// the caller expected; the Go side turns it into shardindex.ErrStale.
const staleReply = "LAUREL_STALE"

// The scripts run in Redis's Lua 5.1: they iterate over ARGV rather than unpack it (a step may
// carry tens of thousands of arguments), and take every key they touch in KEYS so that they
// are correct on a cluster (all of a board's keys share its hash tag). Keys and arguments are
// binary: Go encodes the ordering prefixes (16 bytes, 24 on a board with a subscore) and the
// lex bounds, so that no script needs to know their length.

// followsLua defines follows(meta, n, t): whether each of a board's n shards follows the
// stamp t, a string (nil: whatever stamp the shards agree on; false: none does). A shard that
// a rebuild is filling has no stamp until its last chunk, so a set it is filling is never
// read.
const followsLua = `
local function follows(meta, n, t)
  local f = {}
  for i = 0, n - 1 do f[#f+1] = 't' .. i end
  local ts = redis.call('HMGET', meta, unpack(f))
  if t == nil then t = ts[1] end
  if not t then return false end
  for i = 1, #ts do
    if ts[i] ~= t then return false end
  end
  return true
end
`

// answerLua defines answer(p, known): the reply to the asks in ARGV from p: a flag ("1" when
// any read or count is asked; answer skips it), then floors: their number, then for each a
// shard and a version it must be at least at (a shard whose steps the caller knows the store
// committed), else the reply is -1 and the shards below theirs. Then the reads: their
// number, then for each the KEYS numbers of its zset and of its member's shard's hash, the
// member, and the prefix the caller expects it at ("": none; tried before the hash, which
// only a member that moved since needs); reply: 1, then for each its rank (from 1; 0 when
// absent) and its prefix ("" when absent). Then the counts: their number, then for each the KEYS number of its zset and an
// exclusive lex bound; reply: how many members sort before the bound. known maps a hash's key
// to the prefixes a step just gave its members ("": removed), so that a read of a member the
// step changed costs no HGET. The KEYS numbers are keys of the table key as they come, so
// that no loop converts a number. KEYS[1] is the board's meta.
const answerLua = `
local key = {}
for i = 1, #KEYS do key[tostring(i)] = KEYS[i] end
local function answer(p, known)
  p = p + 1
  local n = tonumber(ARGV[p]); p = p + 1
  local below = {-1}
  for i = 1, n do
    local v = redis.call('HGET', KEYS[1], 'v' .. ARGV[p]) or '0'
    if tonumber(v) < tonumber(ARGV[p+1]) then below[#below+1] = tonumber(ARGV[p]) end
    p = p + 2
  end
  if #below > 1 then return below end
  local out = {1}
  n = tonumber(ARGV[p]); p = p + 1
  for i = 1, n do
    local z, h, m, g = key[ARGV[p]], key[ARGV[p+1]], ARGV[p+2], ARGV[p+3]; p = p + 4
    local t = known[h]
    local k = t and t[m]
    local r = false
    if k == nil and g ~= '' then
      r = redis.call('ZRANK', z, g .. m)
      if r then k = g end
    end
    if not r then
      if k == nil then k = redis.call('HGET', h, m) elseif k == '' then k = false end
      r = k and redis.call('ZRANK', z, k .. m)
    end
    if r then
      out[#out+1] = r + 1
      out[#out+1] = k
    else
      out[#out+1] = 0
      out[#out+1] = ''
    end
  end
  n = tonumber(ARGV[p]); p = p + 1
  for i = 1, n do
    out[#out+1] = redis.call('ZLEXCOUNT', key[ARGV[p]], '-', ARGV[p+1]); p = p + 2
  end
  return out
end
`

// callLua defines call(cmd, key, list): Redis called with cmd, key and the values of list, in
// chunks, as Lua's stack holds some 8000 values.
const callLua = `
local function call(cmd, key, list)
  if #list <= 4000 then return redis.call(cmd, key, unpack(list)) end
  local out = {}
  for i = 1, #list, 4000 do
    local got = redis.call(cmd, key, unpack(list, i, math.min(i + 3999, #list)))
    if type(got) == 'table' then
      for j = 1, #got do out[#out+1] = got[j] end
    end
  end
  return out
end
-- removeAll removes from the zset z every member of the shard's hash h, and h.
local function removeAll(z, h)
  local all = redis.call('HGETALL', h)
  local rem = {}
  for j = 1, #all, 2 do rem[#rem+1] = all[j+1] .. all[j] end
  if #rem > 0 then call('ZREM', z, rem) end
  redis.call('DEL', h)
end
`

// applyScript makes the steps of Index.Apply, then answers its asks.
//
// KEYS: meta, then every other key the steps and asks name, each once; ARGV names them by
// their numbers.
// ARGV: the board's shard count, the number of steps, then each step: the number of its
// values that follow (so that a refused step is skipped whole), after, version, has-state
// ("1" or "0"), state, channel ("": tell nobody), message, stamp ("0": keep), the shard's
// number, the KEYS number of its registry, the number of sets it names and for each its name
// and the KEYS numbers of the board's zset and the shard's hash (set i, from 1, in the step),
// the number of drops and their set numbers, the number of changes and for each its set
// number, member, prefix ("" to remove) and zset score (zscore); then the asks of answerLua.
// Reply: the number of steps refused and their shards, then {0} when a step was refused, some
// shard does not follow the stamp the others do, or nothing was asked, else answer's.
//
// A step is refused when its shard is not at its after, and a step that records the state
// also when one before it was refused. A member's last change in a set is the one made. Each
// set's changes are made with one command of a kind (HMGET of the old prefixes, ZREM, ZADD,
// HSET, HDEL) rather than four commands a change: a call from Lua costs Redis some 2 500
// instructions beside the command's own, about half a ZADD's (docs/decisions.md, "Redis's
// share of a step"); and the shards of one write are one script, whose fixed cost (KEYS and
// ARGV made into Lua's tables, the stamps read) is paid once ("A write's shards in one
// script").
var applyScript = rueidis.NewLuaScript(followsLua + answerLua + callLua + `
local meta = KEYS[1]
-- step makes the step whose values begin at ARGV[q], recording in known the prefixes it gave.
-- Sets are named by their numbers as ARGV has them, so that no loop converts a number.
local function step(q, known)
  local shard, reg = ARGV[q+7], key[ARGV[q+8]]
  local p = q + 9
  local nsets = tonumber(ARGV[p]); p = p + 1
  local names, zset, hash, now, scores, order = {}, {}, {}, {}, {}, {}
  for i = 1, nsets do
    local s = tostring(i)
    names[s], zset[s], hash[s], now[s], scores[s], order[i] = ARGV[p], key[ARGV[p+1]], key[ARGV[p+2]], {}, {}, s
    known[hash[s]] = now[s]
    p = p + 3
  end
  local n = tonumber(ARGV[p]); p = p + 1
  for i = 1, n do
    local s = ARGV[p]; p = p + 1
    removeAll(zset[s], hash[s])
    redis.call('SREM', reg, names[s])
  end
  -- A member's last change in a set is the one made.
  local changed = {} -- by set, its members in the order of their first change
  n = tonumber(ARGV[p]); p = p + 1
  for i = 1, n do
    local s, m = ARGV[p], ARGV[p+1]
    local t = now[s]
    if t[m] == nil then
      local ms = changed[s]
      if ms then ms[#ms+1] = m else changed[s] = {m} end
    end
    t[m], scores[s][m] = ARGV[p+2], ARGV[p+3]; p = p + 4
  end
  local fresh = {} -- the names of the sets a member of the shard entered anew
  for _, s in ipairs(order) do
    local ms = changed[s]
    if ms then
      local z, h, t, sc = zset[s], hash[s], now[s], scores[s]
      local old = call('HMGET', h, ms)
      local rem, add, set, del = {}, {}, {}, nil
      local entered = false
      for i = 1, #ms do
        local m, o = ms[i], old[i]
        local k = t[m]
        if k == '' then
          if o then
            rem[#rem+1] = o .. m
            if del then del[#del+1] = m else del = {m} end
          end
        elseif o ~= k then
          if o then rem[#rem+1] = o .. m else entered = true end
          add[#add+1] = sc[m]; add[#add+1] = k .. m
          set[#set+1] = m; set[#set+1] = k
        end
      end
      if #rem > 0 then call('ZREM', z, rem) end
      if #add > 0 then call('ZADD', z, add); call('HSET', h, set) end
      if del then call('HDEL', h, del) end
      -- A member found in the shard's hash was put there by a step that registered the set.
      if entered then fresh[#fresh+1] = names[s] end
    end
  end
  if #fresh > 0 then redis.call('SADD', reg, unpack(fresh)) end
  redis.call('HSET', meta, 'v' .. shard, ARGV[q+1])
  local stamp = ARGV[q+6]
  if ARGV[q+2] == '1' then
    if stamp == '0' then stamp = ARGV[q+1] end
    redis.call('HSET', meta, 's', ARGV[q+3], 't' .. shard, stamp)
  elseif stamp ~= '0' then
    redis.call('HSET', meta, 't' .. shard, stamp)
  end
end
local p = 3
local refused, known, tell = {}, {}, {}
for i = 1, tonumber(ARGV[2]) do
  local q = p + 1
  p = q + tonumber(ARGV[p])
  local shard = ARGV[q+7]
  local cur = redis.call('HGET', meta, 'v' .. shard) or '0'
  if cur ~= ARGV[q] or (ARGV[q+2] == '1' and #refused > 0) then
    refused[#refused+1] = tonumber(shard)
  else
    step(q, known)
    if ARGV[q+4] ~= '' then tell[#tell+1] = q end
  end
end
local reply = {#refused}
for i = 1, #refused do reply[#reply+1] = refused[i] end
local got = {0}
if #refused == 0 and ARGV[p] == '1' and follows(meta, tonumber(ARGV[1])) then
  got = answer(p, known)
end
for i = 1, #got do reply[#reply+1] = got[i] end
for _, q in ipairs(tell) do redis.call('PUBLISH', ARGV[q+4], ARGV[q+5]) end
return reply
`)

// readScript answers one read of a Ranking as of a state stamp, so that the whole read is
// one round trip and one instant.
//
// KEYS: meta, zset, then the hashes the read's members are in. ARGV: stamp, the board's shard
// count, op, operands:
//   - "n": the set's size;
//   - "p" start stop: the zset members from start to stop (0-based, inclusive);
//   - "s" bound: how many members sort before the exclusive lex bound;
//   - "e" (hash member)...: for each member ranked, its 0-based rank and zset member; hash
//     is the KEYS number of the member's shard's hash;
//   - "E" (hash member)...: the size, then as "e";
//   - "P" offset limit best worst: a page of docs/api.md: the size, the first rank, then the zset
//     members of the page; best and worst are exclusive lex bounds of the score range, ""
//     when it has none;
//   - "A" member radius: the size, then 0 when the member is not in the set, else the first
//     rank of the page around it and its zset members; the member's hash at KEYS[3];
//   - "R" bound: how many members sort before the bound, and the size;
//   - "B" bound...: the size, then for each lex bound how many members sort before it;
//   - "X": the size, then the first and the last zset members ("" when the set is empty).
var readScript = rueidis.NewLuaScript(followsLua + `
if not follows(KEYS[1], tonumber(ARGV[2]), ARGV[1]) then
  return redis.error_reply('` + staleReply + ` state changed')
end
local z, op = KEYS[2], ARGV[3]
if op == 'n' then return redis.call('ZCARD', z) end
if op == 'p' then return redis.call('ZRANGE', z, ARGV[4], ARGV[5]) end
if op == 's' then return redis.call('ZLEXCOUNT', z, '-', ARGV[4]) end
if op == 'R' then return {redis.call('ZLEXCOUNT', z, '-', ARGV[4]), redis.call('ZCARD', z)} end
local total = redis.call('ZCARD', z)
if op == 'X' then
  local first, last = redis.call('ZRANGE', z, 0, 0), redis.call('ZRANGE', z, -1, -1)
  return {total, first[1] or '', last[1] or ''}
end
if op == 'B' then
  local out = {total}
  for i = 4, #ARGV do out[#out+1] = redis.call('ZLEXCOUNT', z, '-', ARGV[i]) end
  return out
end
local function range(out, from, n)
  out[#out+1] = from
  if n > 0 then
    for _, key in ipairs(redis.call('ZRANGE', z, from-1, from+n-2)) do out[#out+1] = key end
  end
  return out
end
if op == 'P' then
  local offset, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
  local first, stop = 1, total+1
  if ARGV[6] ~= '' then first = redis.call('ZLEXCOUNT', z, '-', ARGV[6]) + 1 end
  if ARGV[7] ~= '' then stop = redis.call('ZLEXCOUNT', z, '-', ARGV[7]) + 1 end
  local from, n = first + offset, 0
  if offset < stop - first and from < stop then n = math.min(limit, stop - from) end
  return range({total}, from, n)
end
if op == 'A' then
  local m, radius = ARGV[4], tonumber(ARGV[5])
  local k = redis.call('HGET', KEYS[3], m)
  local r = k and redis.call('ZRANK', z, k .. m)
  if not r then return {total, 0} end
  local lo = math.max(1, r+1-radius)
  local hi = math.min(total, lo+2*radius)
  lo = math.max(1, hi-2*radius)
  return range({total}, lo, hi-lo+1)
end
local out = {}
if op == 'E' then out[1] = total end
for i = 4, #ARGV, 2 do
  local m = ARGV[i+1]
  local k = redis.call('HGET', KEYS[tonumber(ARGV[i])], m)
  if k then
    local key = k .. m
    local r = redis.call('ZRANK', z, key)
    if r then
      out[#out+1] = r
      out[#out+1] = key
    end
  end
end
return out
`)

// totalsScript answers Index.Totals as of a state stamp. KEYS: meta, then the zsets. ARGV:
// stamp, the board's shard count. Reply: each zset's size.
var totalsScript = rueidis.NewLuaScript(followsLua + `
if not follows(KEYS[1], tonumber(ARGV[2]), ARGV[1]) then
  return redis.error_reply('` + staleReply + ` state changed')
end
local out = {}
for i = 2, #KEYS do out[i-1] = redis.call('ZCARD', KEYS[i]) end
return out
`)

// deleteScript removes one shard of a board: its members from the named sets, its hashes,
// its version and stamp (shard 0's: the state too), and the meta when no shard is left. It
// answers 0 when a step registered a set since the caller listed them, so the caller lists
// again: a member is never left behind unregistered.
//
// KEYS: meta, the shard's registry, then the zset and the shard's hash of each set. ARGV: the
// shard's number, then the sets' names.
var deleteScript = rueidis.NewLuaScript(callLua + `
for i = 2, #ARGV do
  removeAll(KEYS[2*i-1], KEYS[2*i])
  redis.call('SREM', KEYS[2], ARGV[i])
end
if redis.call('SCARD', KEYS[2]) > 0 then return 0 end
local shard = ARGV[1]
redis.call('HDEL', KEYS[1], 'v' .. shard, 't' .. shard)
if shard == '0' then redis.call('HDEL', KEYS[1], 's') end
return 1
`)

// deleteBoardScript removes every key of a board that the caller listed: the meta, the
// shards' registries, the zsets and the shards' hashes. It answers 0 when the board has a
// shard, or a shard a set, that the caller did not list, so the caller lists again.
//
// KEYS: meta, the registries of the shards listed, then the zsets and hashes. ARGV: the
// number of shards listed, then the size of each one's registry.
var deleteBoardScript = rueidis.NewLuaScript(`
local n = tonumber(ARGV[1])
local shards = 0
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 1) == 'v' then shards = shards + 1 end
end
if shards ~= n then return 0 end
for i = 1, n do
  if redis.call('SCARD', KEYS[1+i]) ~= tonumber(ARGV[1+i]) then return 0 end
end
for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
`)
