#!/usr/bin/env bash
# The embedded store's curve (docs/benchmarks.md, "The curve: 1M to 100M entries"): for each
# member count, a fresh `laurel serve` takes `laurel bench` flat out (its preload gives every
# member one event, so entries = members × windows), then paced; then it is stopped and
# timed back to ready, and killed (-9) mid-write and timed back again. One line a size:
# ingest, top-100 p99 flat out and paced, live heap and resident set an entry, the two
# restarts, and the store's size on disk.
#
#   bench/curve.sh                          # 1M, 2.5M and 25M members (4M, 10M, 100M entries)
#   SIZES="1000000" DURATION=10s bench/curve.sh
#   LAUREL_BIN=/tmp/laurel DATA=/mnt/big bench/curve.sh  # a binary built already; where stores go
#
# 25M members want some 6 GB of RAM and of disk, and half an hour, most of it the preload.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-"1000000 2500000 25000000"}
WINDOWS=${WINDOWS:-all,week,day,last7d}
DURATION=${DURATION:-30s}
RATE=${RATE:-5000}   # the paced run's events a second
PORT=${PORT:-7398}
work=$(mktemp -d)
DATA=${DATA:-$work}
bin=${LAUREL_BIN:-$work/laurel}
[ -n "${LAUREL_BIN:-}" ] || go build -o "$bin" ./cmd/laurel
url=http://127.0.0.1:$PORT

pid=""
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# start runs the server on a store in the background; ready prints the seconds until it
# answers /readyz (a restart's time: the store's recovery is most of it).
start() { "$bin" serve -data "$1" -addr "127.0.0.1:$PORT" >>"$work/serve.log" 2>&1 & pid=$!; }
ready() {
  local t0
  t0=$(date +%s.%N)
  until curl -fs -o /dev/null "$url/readyz"; do
    kill -0 "$pid" 2>/dev/null || { echo "the server stopped:" >&2; tail -5 "$work/serve.log" >&2; exit 1; }
    sleep 0.05
  done
  awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'
}
stop() { kill "$pid"; wait "$pid" || true; pid=""; }
# field prints field n of the bench's line for laurel in a report (the first such line, or
# the one after the header that names its column).
field() { awk -v n="$2" '$1 == "laurel" && $2 ~ /^[0-9.]+$/ { print $n; exit }' "$1"; }
memory() { awk -v n="$2" 'f && $1 == "laurel" { print $n; exit } /B\/entry/ { f = 1 }' "$1"; }

printf "windows %s, flat out then paced at %s events/s, %s each, load %s\n" "$WINDOWS" "$RATE" "$DURATION" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-11s %11s %9s %12s %14s %13s %13s %12s %12s %7s\n" members entries "events/s" "top p99 ms" "paced p99 ms" "heap B/entry" "RSS B/entry" "restart s" "kill -9 s" disk
for m in $SIZES; do
  store=$DATA/curve-$m
  rm -rf "$store"
  start "$store"
  ready >/dev/null
  "$bin" bench -url "$url" -members "$m" -windows "$WINDOWS" -duration "$DURATION" -batch 100 -writers 32 >"$work/flat" 2>/dev/null
  "$bin" bench -url "$url" -members "$m" -windows "$WINDOWS" -preload=false -duration "$DURATION" -batch 100 -rate "$RATE" -read-rate 50 >"$work/paced" 2>/dev/null
  stop
  start "$store"
  clean=$(ready)
  # Paced writes for a while, then the power goes: the next open replays what was not
  # checkpointed.
  "$bin" bench -url "$url" -members "$m" -windows "$WINDOWS" -preload=false -duration 10s -batch 100 -rate "$RATE" -readers 0 >/dev/null 2>&1 &
  writer=$!
  sleep 8
  kill -9 "$pid"
  wait "$writer" 2>/dev/null || true
  start "$store"
  crashed=$(ready)
  stop
  entries=$(memory "$work/flat" 4)
  printf "%-11s %11s %9s %12s %14s %13s %13s %12s %12s %7s\n" "$m" "$entries" "$(field "$work/flat" 2)" \
    "$(field "$work/flat" 11)" "$(field "$work/paced" 11)" "$(memory "$work/flat" 2)" "$(memory "$work/flat" 3)" \
    "$clean" "$crashed" "$(du -sh "$store" | cut -f1)"
  rm -rf "$store"
done
