#!/usr/bin/env bash
# The scale-out store on one hot board with 1, 2, 3… nodes, each node's CPU capped so that the
# nodes, not PostgreSQL or Redis, are the limit (docs/benchmarks.md, "The scale-out store: nodes
# on one hot board"). For each node count it starts that many `laurel serve` nodes on a fresh
# schema and Redis prefix, drives each with its own `laurel bench` at once, and prints the
# events a second of them all, the ratio to one node, and the share of PostgreSQL's active
# backends found waiting on a lock (sampled from pg_stat_activity every 50 ms).
#
#   bench/scaleout.sh                       # 1 2 3 4 nodes, 0.2 CPU each, 20 s, batches of 1
#   NODES="1 3" CPU=0.3 BATCH=10 DURATION=30s SHARDS=8 bench/scaleout.sh
#   LAUREL_BIN=/tmp/laurel bench/scaleout.sh  # a binary built already
#   NODES="1 2 3" READERS=4 WRITERS=4 bench/scaleout.sh  # reads of the top 100 too, a column each
#   NODES= LONE=1 DURATION=10s bench/scaleout.sh  # one uncapped node against the embedded store,
#                                                 # with the CPU an event of each process
#
# The caps are cgroups: cgroup v2's cpu.max where the cpu controller is enabled, else v1's
# cpu.cfs_quota_us (this needs root). Run it on a machine with nothing else busy: PostgreSQL,
# Redis and the load generators share the cores the nodes leave.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES-"1 2 3 4"}  # empty: no curve (with LONE=1)
CPU=${CPU:-0.2}              # cores per node
DURATION=${DURATION:-20s}
BATCH=${BATCH:-1}
WRITERS=${WRITERS:-16}       # per node
READERS=${READERS:-0}        # readers of the top 100, per node, each reading again once answered
MEMBERS=${MEMBERS:-100000}
SHARDS=${SHARDS:-4}
PG=${PG:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
REDIS=${REDIS:-127.0.0.1:6379}
BASEPORT=${BASEPORT:-7420}
work=$(mktemp -d)
bin=${LAUREL_BIN:-$work/laurel} # a laurel built already, or this checkout's
[ -n "${LAUREL_BIN:-}" ] || go build -o "$bin" ./cmd/laurel

# cap makes a cgroup for node i limited to $CPU cores and prints the file a process joins it by.
# A short period, so that a throttled node holding a lock stalls the others briefly; the kernel
# takes no quota under 1 ms.
period=$(awk -v c="$CPU" 'BEGIN { p = 5000; if (c * p < 1000) p = int(1000 / c + 0.5); print p }')
quota=$(awk -v c="$CPU" -v p="$period" 'BEGIN { printf "%d", c * p }')
cap() {
  local name=laurel-scaleout-$1
  if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    mkdir -p "/sys/fs/cgroup/$name"
    echo "$quota $period" >"/sys/fs/cgroup/$name/cpu.max"
    echo "/sys/fs/cgroup/$name/cgroup.procs"
  elif [ -d /sys/fs/cgroup/cpu ]; then
    mkdir -p "/sys/fs/cgroup/cpu/$name"
    echo $period >"/sys/fs/cgroup/cpu/$name/cpu.cfs_period_us"
    echo "$quota" >"/sys/fs/cgroup/cpu/$name/cpu.cfs_quota_us"
    echo "/sys/fs/cgroup/cpu/$name/cgroup.procs"
  else
    echo "no cgroup cpu controller to cap the nodes with" >&2
    exit 1
  fi
}
uncap() {
  for d in /sys/fs/cgroup/laurel-scaleout-* /sys/fs/cgroup/cpu/laurel-scaleout-*; do
    [ -d "$d" ] && rmdir "$d" 2>/dev/null || true
  done
}

pids=()
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
cleanup() { stop_nodes; uncap; rm -rf "$work"; }
trap cleanup EXIT

export PGOPTIONS="-c client_min_messages=warning"
# cputime prints the CPU seconds the processes (and their threads) have used.
cputime() {
  local t=0
  for p in "$@"; do
    t=$(awk -v t="$t" -v hz="$(getconf CLK_TCK)" '{ print t + ($14 + $15) / hz }' "/proc/$p/stat" 2>/dev/null || echo "$t")
  done
  echo "$t"
}
psql_() { psql "$PG" -qAtX -c "$1"; }
fresh() { psql_ "DROP SCHEMA IF EXISTS $1 CASCADE; CREATE SCHEMA $1"; } # schema
# ready waits until the node on a port answers; board makes the hot board through it.
ready() { for _ in $(seq 100); do curl -fs "http://127.0.0.1:$1/readyz" >/dev/null && break; sleep 0.1; done; }
board() { curl -fs -X PUT "http://127.0.0.1:$1/v1/boards/hot" -d '{"windows": ["all", "week", "day", "last7d"]}' >/dev/null; }
# drop removes a schema and the index keys under a prefix.
drop() {
  psql_ "DROP SCHEMA $1 CASCADE"
  redis-cli -h "${REDIS%:*}" -p "${REDIS#*:}" --scan --pattern "$2*" | xargs -r -n 1000 redis-cli -h "${REDIS%:*}" -p "${REDIS#*:}" unlink >/dev/null
}
one=""
printf "%s\n" "nodes ${NODES}, ${CPU} CPU each (${quota} µs every ${period} µs), batch ${BATCH}, ${WRITERS} writers a node, ${MEMBERS} members, ${SHARDS} shards, ${DURATION}"
printf "%-6s %10s %10s %10s %10s %10s %16s %s\n" nodes "events/s" "÷ 1 node" "reads/s" "÷ 1 node" "node CPU" "lock waits" "(per node events/s)"
for n in $NODES; do
  schema=laurel_scaleout_${n}_$$
  fresh "$schema"
  dsn="$PG&search_path=$schema&application_name=laurel-scaleout"
  prefix="lscale$$n$n:"
  for i in $(seq 1 "$n"); do
    procs=$(cap "$i")
    port=$((BASEPORT + i))
    sh -c "echo \$\$ >$procs; exec $bin serve -addr 127.0.0.1:$port -postgres '$dsn' -redis $REDIS -redis-prefix $prefix -shards $SHARDS" \
      2>"$work/node$i.log" &
    pids+=($!)
  done
  for i in $(seq 1 "$n"); do
    ready $((BASEPORT + i))
  done
  board $((BASEPORT + 1))
  # Sample what PostgreSQL's active backends of the nodes wait on while the benches run, from
  # one psql session.
  for _ in $(seq $((${DURATION%s} * 20))); do
    echo "SELECT coalesce(wait_event_type, 'CPU') || ' ' || coalesce(wait_event, '-') FROM pg_stat_activity WHERE application_name = 'laurel-scaleout' AND state = 'active'; SELECT pg_sleep(0.05);"
  done | psql "$PG" -qAtX >"$work/waits$n" &
  sampler=$!
  cpu0=$(cputime "${pids[@]}")
  benches=()
  for i in $(seq 1 "$n"); do
    "$bin" bench -url "http://127.0.0.1:$((BASEPORT + i))" -board hot -members "$MEMBERS" -preload=false \
      -duration "$DURATION" -batch "$BATCH" -writers "$WRITERS" -readers "$READERS" >"$work/bench$n.$i" 2>&1 &
    benches+=($!)
  done
  wait "${benches[@]}" || true
  busy=$(awk -v a="$(cputime "${pids[@]}")" -v b="$cpu0" -v n="$n" -v c="$CPU" -v d="${DURATION%s}" 'BEGIN { printf "%.0f%%", 100 * (a - b) / (n * c * d) }')
  wait "$sampler" || true
  per=()
  total=0
  reads=0
  for i in $(seq 1 "$n"); do
    r=$(awk '$1 == "laurel" && $2 ~ /^[0-9.]+$/ { print $2; exit }' "$work/bench$n.$i")
    [ -z "$r" ] && { echo "the bench of node $i failed:" >&2; tail -3 "$work/bench$n.$i" >&2; }
    per+=("${r:-0}")
    total=$(awk -v a="$total" -v b="${r:-0}" 'BEGIN { print a + b }')
    # reads/s: the column after the write latencies (p50 / p99 / p999, five fields)
    reads=$(awk -v a="$reads" '$1 == "laurel" && $2 ~ /^[0-9.]+$/ { print a + $8; exit }' "$work/bench$n.$i")
  done
  [ -z "$one" ] && one=$total
  [ -z "${onereads:-}" ] && onereads=$reads
  waits=$(awk 'NF { all++ } $1 == "Lock" { lock++ } END { if (all) printf "%.0f%% of %d", 100 * lock / all, all; else print "-" }' "$work/waits$n")
  printf "%-6s %10.0f %10.2f %10.0f %10s %10s %16s (%s)\n" "$n" "$total" "$(awk -v a="$total" -v b="$one" 'BEGIN { print a / b }')" \
    "$reads" "$(awk -v a="$reads" -v b="$onereads" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')" "$busy" "$waits" "${per[*]}"
  [ -n "${WAITS:-}" ] && sort "$work/waits$n" | uniq -c | sort -rn | head -8
  stop_nodes
  uncap
  drop "$schema" "$prefix"
done

# LONE=1: then one node uncapped against the embedded store, the same bench, alternating
# ROUNDS times (issue 14's "one uncapped node ≥ 0.5× the embedded store in the same run").
[ -n "${LONE:-}" ] || exit 0
# backends prints the pids of PostgreSQL's backends that serve the nodes; rediscpu, the CPU
# seconds Redis has used.
backends() { psql_ "SELECT pid FROM pg_stat_activity WHERE application_name = 'laurel-scaleout'" | tr '\n' ' '; }
rediscpu() {
  redis-cli -h "${REDIS%:*}" -p "${REDIS#*:}" info cpu | tr -d '\r' |
    awk -F: '$1 == "used_cpu_sys" || $1 == "used_cpu_user" { t += $2 } END { print t }'
}
lone() { # lone scaleout|embedded: one uncapped node; prints its events a second, then the CPU µs an
  # event of the node (from laurel bench), of PostgreSQL's backends and of Redis ("-" for none)
  local port=$((BASEPORT + 1)) schema=laurel_scaleout_lone_$$ prefix="lscale$$lone:" data pg="-" rd="-"
  local pg0 pg1 r0 r1 n before=""
  if [ "$1" = scaleout ]; then
    fresh "$schema"
    "$bin" serve -addr 127.0.0.1:$port -postgres "$PG&search_path=$schema&application_name=laurel-scaleout" \
      -redis "$REDIS" -redis-prefix "$prefix" -shards "$SHARDS" 2>"$work/lone.log" &
  else
    data=$(mktemp -d "$work/data.XXXX")
    "$bin" serve -addr 127.0.0.1:$port -data "$data" 2>"$work/lone.log" &
  fi
  pids+=($!)
  ready $port
  board $port
  if [ "$1" = scaleout ]; then
    before=$(backends)
    pg0=$(cputime $before) r0=$(rediscpu)
  fi
  "$bin" bench -url "http://127.0.0.1:$port" -board hot -members "$MEMBERS" -preload=false \
    -duration "$DURATION" -batch "$BATCH" -writers "$WRITERS" -readers 0 >"$work/lone.out" 2>&1 || true
  if [ "$1" = scaleout ]; then
    # A backend begun during the run counts from nothing; one gone before its end is missed.
    pg1=$(cputime $(backends)) r1=$(rediscpu) n=$(lone_events)
    pg=$(awk -v a="$pg1" -v b="$pg0" -v n="$n" 'BEGIN { printf "%.0f", (a - b) / n * 1e6 }')
    rd=$(awk -v a="$r1" -v b="$r0" -v n="$n" 'BEGIN { printf "%.0f", (a - b) / n * 1e6 }')
  fi
  stop_nodes
  if [ "$1" = scaleout ]; then
    drop "$schema" "$prefix"
  else
    rm -rf "$data"
  fi
  # events/s, and the server's CPU an event: the next to last column of laurel bench's line
  awk -v pg="$pg" -v rd="$rd" '$1 == "laurel" && $2 ~ /^[0-9.]+$/ { printf "%s %.0f %s %s\n", $2, $(NF-2), pg, rd; exit }' "$work/lone.out"
}
# lone_events is how many events the lone node's bench wrote: events/s times the duration.
lone_events() { awk -v d="${DURATION%s}" '$1 == "laurel" && $2 ~ /^[0-9.]+$/ { print $2 * d; exit }' "$work/lone.out"; }
printf "\none node uncapped, batch %s, %s writers, %s shards: scale-out ÷ embedded, %s rounds\n" "$BATCH" "$WRITERS" "$SHARDS" "${ROUNDS:-3}"
printf "%10s %10s %6s   %s\n" "scale-out" "embedded" "÷" "CPU µs an event: scale-out node + PostgreSQL + Redis; embedded"
for _ in $(seq "${ROUNDS:-3}"); do
  read -r s sn sp sr <<<"$(lone scaleout)"
  read -r m mn _ _ <<<"$(lone embedded)"
  printf "%10s %10s %6.2f   %s + %s + %s = %s; %s\n" "${s:-0}" "${m:-0}" "$(awk -v a="${s:-0}" -v b="${m:-1}" 'BEGIN { print a / b }')" \
    "${sn:--}" "${sp:--}" "${sr:--}" "$(awk -v a="${sn:-0}" -v b="${sp:-0}" -v c="${sr:-0}" 'BEGIN { print a + b + c }')" "${mn:--}"
done
