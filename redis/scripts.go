package redis

import "github.com/redis/rueidis"

// staleReply is the error a script answers when the board is not at the version or stamp
// the caller expected; the Go side turns it into shardindex.ErrStale.
const staleReply = "LAUREL_STALE"

// The scripts run in Redis's Lua 5.1: they iterate over ARGV rather than unpack it (a step may
// carry tens of thousands of arguments), and take every key they touch in KEYS so that they
// are correct on a cluster. Keys and arguments are binary: Go encodes the ordering prefixes
// (16 bytes, 24 on a board with a subscore) and the lex bounds, so that no script needs to
// know their length.

// applyScript makes one step of Index.Apply atomically on one shard.
//
// KEYS: meta, registry, then the zset and the hash of each set the step names (set i, from 1,
// at KEYS[1+2i] and KEYS[2+2i]).
// ARGV: after, version, has-state ("1" or "0"), state, channel ("": tell nobody), board, stamp
// ("0": keep),
// the number of sets and their names, the number of drops and their set numbers, the number of changes and for each
// its set number, member and prefix ("" to remove), the number of reads and for each its set
// number and member, the number of counts and for each its set number and an exclusive lex
// bound.
// Reply: for each read, its 0-based rank+1 (0 when absent) and its prefix ("" when absent);
// then for each count, how many members of its set sort before its bound.
//
// A member's last change in a set is the one made. Each set's changes are made with one
// command of a kind (HMGET of the old prefixes, ZREM, ZADD, HSET, HDEL) rather than four
// commands a change: a call from Lua costs Redis some 2 500 instructions beside the command's
// own, about half a ZADD's (docs/decisions.md, "Redis's share of a step"). Reads take the
// prefix the step gave a member it changed.
var applyScript = rueidis.NewLuaScript(`
local meta, reg = KEYS[1], KEYS[2]
local cur = redis.call('HGET', meta, 'v') or '0'
if cur ~= ARGV[1] then
  return redis.error_reply('` + staleReply + ` board at version ' .. cur)
end
-- Sets are named by their numbers as ARGV has them, so that no loop converts a number.
local p = 8
local nsets = tonumber(ARGV[p]); p = p + 1
local names, zset, hash, now, order = {}, {}, {}, {}, {}
for i = 1, nsets do
  local s = tostring(i)
  names[s], zset[s], hash[s], now[s], order[i] = ARGV[p], KEYS[1+2*i], KEYS[2+2*i], {}, s
  p = p + 1
end
local n = tonumber(ARGV[p]); p = p + 1
for i = 1, n do
  local s = ARGV[p]; p = p + 1
  redis.call('DEL', zset[s], hash[s])
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
  t[m] = ARGV[p+2]; p = p + 3
end
-- call calls Redis with cmd, key and the values of list, in chunks: Lua's stack holds some
-- 8000 values.
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
local fresh = {} -- the names of the sets a member entered anew
for _, s in ipairs(order) do
  local ms = changed[s]
  if ms then
    local z, h, t = zset[s], hash[s], now[s]
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
        add[#add+1] = '0'; add[#add+1] = k .. m
        set[#set+1] = m; set[#set+1] = k
      end
    end
    if #rem > 0 then call('ZREM', z, rem) end
    if #add > 0 then call('ZADD', z, add); call('HSET', h, set) end
    if del then call('HDEL', h, del) end
    -- A member found in the set's hash was put there by a step that registered the set.
    if entered then fresh[#fresh+1] = names[s] end
  end
end
if #fresh > 0 then redis.call('SADD', reg, unpack(fresh)) end
redis.call('HSET', meta, 'v', ARGV[2])
if ARGV[3] == '1' then
  local stamp = ARGV[7]
  if stamp == '0' then stamp = ARGV[2] end
  redis.call('HSET', meta, 's', ARGV[4], 't', stamp)
elseif ARGV[7] ~= '0' then
  redis.call('HSET', meta, 't', ARGV[7])
end
local out = {}
n = tonumber(ARGV[p]); p = p + 1
for i = 1, n do
  local s, m = ARGV[p], ARGV[p+1]; p = p + 2
  local k = now[s][m]
  if k == nil then k = redis.call('HGET', hash[s], m) elseif k == '' then k = false end
  local r = false
  if k then r = redis.call('ZRANK', zset[s], k .. m) end
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
  out[#out+1] = redis.call('ZLEXCOUNT', zset[ARGV[p]], '-', ARGV[p+1]); p = p + 2
end
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
return out
`)

// readScript answers one read of a Ranking as of a state stamp, so that the whole read is
// one round trip and one instant.
//
// KEYS: meta, zset, hash. ARGV: stamp, op, operands:
//   - "n": the set's size;
//   - "p" start stop: the zset members from start to stop (0-based, inclusive);
//   - "s" bound: how many members sort before the exclusive lex bound;
//   - "e" member...: for each member ranked, its 0-based rank and zset member;
//   - "E" member...: the size, then as "e";
//   - "P" offset limit best worst: a page of docs/api.md: the size, the first rank, then the zset
//     members of the page; best and worst are exclusive lex bounds of the score range, ""
//     when it has none;
//   - "A" member radius: the size, then 0 when the member is not in the set, else the first
//     rank of the page around it and its zset members;
//   - "R" bound: how many members sort before the bound, and the size.
//   - "S" skip n best worst: a shard's slice (shardindex.Ranking.Slice): the size, how many
//     members sort before best, how many from there to worst, then the zset members of the
//     range from its skip-th (0-based) on, n of them at most;
//   - "B" (bound member)...: the size, then for each lex bound how many members sort before
//     it, the member's own entry not counted wherever it now is ("": no member).
//   - "X": the size, then the first and the last zset members ("" when the set is empty);
//   - "N" bound n: the size, how many members sort before the exclusive lex bound, then the
//     zset members on either side of it, n before it and n from it on (shardindex.Ranking.Near).
var readScript = rueidis.NewLuaScript(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then
  return redis.error_reply('` + staleReply + ` state changed')
end
local z, h, op = KEYS[2], KEYS[3], ARGV[2]
if op == 'n' then return redis.call('ZCARD', z) end
if op == 'p' then return redis.call('ZRANGE', z, ARGV[3], ARGV[4]) end
if op == 's' then return redis.call('ZLEXCOUNT', z, '-', ARGV[3]) end
if op == 'R' then return {redis.call('ZLEXCOUNT', z, '-', ARGV[3]), redis.call('ZCARD', z)} end
local total = redis.call('ZCARD', z)
if op == 'X' then
  local first, last = redis.call('ZRANGE', z, 0, 0), redis.call('ZRANGE', z, -1, -1)
  return {total, first[1] or '', last[1] or ''}
end
if op == 'B' then
  local out = {total}
  for i = 3, #ARGV, 2 do
    local n, m = redis.call('ZLEXCOUNT', z, '-', ARGV[i]), ARGV[i+1]
    local k = m ~= '' and redis.call('HGET', h, m)
    if k and redis.call('ZRANK', z, k .. m) < n then n = n - 1 end
    out[#out+1] = n
  end
  return out
end
if op == 'N' then
  local before, n = redis.call('ZLEXCOUNT', z, '-', ARGV[3]), tonumber(ARGV[4])
  local out = {total, before}
  local lo, hi = math.max(0, before - n), math.min(total, before + n) - 1
  if hi >= lo then
    for _, key in ipairs(redis.call('ZRANGE', z, lo, hi)) do out[#out+1] = key end
  end
  return out
end
if op == 'S' then
  local skip, n = tonumber(ARGV[3]), tonumber(ARGV[4])
  local first, stop = 0, total
  if ARGV[5] ~= '' then first = redis.call('ZLEXCOUNT', z, '-', ARGV[5]) end
  if ARGV[6] ~= '' then stop = redis.call('ZLEXCOUNT', z, '-', ARGV[6]) end
  local inside = math.max(0, stop - first)
  local out = {total, first, inside}
  n = math.min(n, inside - skip)
  if n > 0 then
    for _, key in ipairs(redis.call('ZRANGE', z, first+skip, first+skip+n-1)) do out[#out+1] = key end
  end
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
  local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
  local first, stop = 1, total+1
  if ARGV[5] ~= '' then first = redis.call('ZLEXCOUNT', z, '-', ARGV[5]) + 1 end
  if ARGV[6] ~= '' then stop = redis.call('ZLEXCOUNT', z, '-', ARGV[6]) + 1 end
  local from, n = first + offset, 0
  if offset < stop - first and from < stop then n = math.min(limit, stop - from) end
  return range({total}, from, n)
end
if op == 'A' then
  local m, radius = ARGV[3], tonumber(ARGV[4])
  local k = redis.call('HGET', h, m)
  local r = k and redis.call('ZRANK', z, k .. m)
  if not r then return {total, 0} end
  local lo = math.max(1, r+1-radius)
  local hi = math.min(total, lo+2*radius)
  lo = math.max(1, hi-2*radius)
  return range({total}, lo, hi-lo+1)
end
local out = {}
if op == 'E' then out[1] = total end
for i = 3, #ARGV do
  local m = ARGV[i]
  local k = redis.call('HGET', h, m)
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
// stamp. Reply: each zset's size.
var totalsScript = rueidis.NewLuaScript(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then
  return redis.error_reply('` + staleReply + ` state changed')
end
local out = {}
for i = 2, #KEYS do out[i-1] = redis.call('ZCARD', KEYS[i]) end
return out
`)

// countScript answers Index.Before as of a state stamp. KEYS: meta, then the zsets. ARGV:
// stamp, then for each key its zset's number (from 1) and an exclusive lex bound. Reply: how
// many members of each zset sort before each bound. The zsets' numbers are the keys of a table,
// as the sets' in applyScript.
var countScript = rueidis.NewLuaScript(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then
  return redis.error_reply('` + staleReply + ` state changed')
end
local zset = {}
for i = 2, #KEYS do zset[tostring(i-1)] = KEYS[i] end
local out = {}
for i = 2, #ARGV, 2 do
  out[#out+1] = redis.call('ZLEXCOUNT', zset[ARGV[i]], '-', ARGV[i+1])
end
return out
`)

// deleteScript removes the named sets of a board and, when no other set is registered, its
// meta and registry. It answers 0 when a step registered a set since the caller listed them,
// so the caller lists again: a set is never left behind unregistered.
//
// KEYS: meta, registry, then the zset and hash of each set. ARGV: the sets' names.
var deleteScript = rueidis.NewLuaScript(`
for i = 1, #ARGV do
  redis.call('DEL', KEYS[1+2*i], KEYS[2+2*i])
  redis.call('SREM', KEYS[2], ARGV[i])
end
if redis.call('SCARD', KEYS[2]) > 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`)
