#!/usr/bin/env bash
# docs/bench-scale.sh measures how the daemon's cost grows as its bbolt file
# fills: at each size of SIZES (receipts already stored, each with its
# reservation, half of them in the bench's own workshop), it runs single
# reservations (64 clients) and batches of 100 (16 clients) over TCP with
# an admin token against two builds, OLD and NEW, alternating run by run,
# and prints for each run: reservations per second, p50 and p99 (of a
# request, or of a batch of 100), the file's size after the run, the
# daemon's peak resident memory (VmHWM) and the time from its start until
# it answers (opening the file includes walking its pages), with the page
# cache dropped first when DROP_CACHES=1 (root only). It runs by hand, not
# in CI: the 10-million file takes about 10 GB and a while to make.
#
#   docs/bench-scale.sh OLD NEW [OUT_DIR]
#   SIZES="0 1000000 3000000 10000000" ROUNDS=3 DURATION=10s DROP_CACHES=1 \
#     SEED_DIR=/var/tmp/reserve-scale docs/bench-scale.sh f419f9b . /var/tmp/reserve-scale/out
#
# The databases of each size are made once in SEED_DIR by OLD's
# "reserved seed" (so they hold what an earlier version wrote, under random
# UUIDv4 keys) and reused; each build works on a copy of its own, made
# once per sitting, because NEW upgrades the files it opens and OLD then
# refuses them. Runs on one copy add to it (about 1 % of the 10-million
# file per run). NEW runs twice per round: with the UUIDv7 keys its
# reservectl makes (NEW) and with random UUIDv4 keys (NEWv4), as clients
# of other programs may send. Size 0 is a fresh file for every run.
# VARIANTS limits the runs, e.g. VARIANTS="OLD:v4" and then
# VARIANTS="NEW:v7 NEW:v4" when the page cache holds only one copy of
# the biggest file; START_TIMEOUT (seconds) bounds each start.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: docs/bench-scale.sh OLD NEW [OUT_DIR]}
NEW=${2:?usage: docs/bench-scale.sh OLD NEW [OUT_DIR]}
OUT=${3:-$(mktemp -d /tmp/reserve-scale.XXXXXX)}
SIZES=${SIZES:-0 1000000 3000000 10000000}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
SEED_DIR=${SEED_DIR:-$OUT/seed}
PORT=${PORT:-18183}
DROP_CACHES=${DROP_CACHES:-0}
VARIANTS=${VARIANTS:-OLD:v4 NEW:v7 NEW:v4}
export START_TIMEOUT=${START_TIMEOUT:-300}

# shellcheck source=docs/bench-lib.sh
. docs/bench-lib.sh
mkdir -p "$OUT" "$SEED_DIR"
build OLD "$OLD"
build NEW "$NEW"
echo "results in $OUT; $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load average $(cut -d' ' -f1-3 /proc/loadavg)"


# seed SIZE makes $SEED_DIR/SIZE.db with OLD's reserved seed, from the next
# smaller seeded size when there is one.
seed() {
  local n=$1 db="$SEED_DIR/$1.db" have=0 s
  [ "$n" -eq 0 ] || [ -f "$db" ] && return
  for s in $SIZES; do
    if [ "$s" -lt "$n" ] && [ -f "$SEED_DIR/$s.db" ]; then have=$s; fi
  done
  [ "$have" -gt 0 ] && cp --sparse=always "$SEED_DIR/$have.db" "$db.tmp"
  local t0=$SECONDS
  "$OUT/OLD/reserved" seed --db "$db.tmp" --workshop bench --workshop other --per-workshop $(((n - have) / 2)) >/dev/null
  mv "$db.tmp" "$db"
  echo "seeded $n receipts (from $have) in $((SECONDS - t0)) s: $(du -h --apparent-size "$db" | cut -f1)"
}

# run BUILD KEYS SIZE ROUND LOAD runs one bench of LOAD ("single" or
# "batch") and prints its line.
run() {
  local build=$1 keys=$2 n=$3 round=$4 load=$5 bin="$OUT/$1" name=$1 db sock="$OUT/$1.sock" line flags t0 opened
  [ "$keys" = v4 ] && [ "$build" = NEW ] && name=NEWv4
  if [ "$n" -eq 0 ]; then
    db="$OUT/$name-empty.db"
    rm -f "$db"
  else
    db="$OUT/$build-$n.db"
    [ -f "$db" ] || cp --sparse=always "$SEED_DIR/$n.db" "$db"
  fi
  if [ "$DROP_CACHES" = 1 ]; then
    sync
    echo 3 >/proc/sys/vm/drop_caches
  fi
  t0=$(date +%s.%N)
  serve_daemon "$bin" "$db" "$sock" "$PORT" "$OUT/$name-$n-$round-$load.log"
  opened=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ "$n" -eq 0 ]; then
    "$bin/reservectl" --socket "$sock" admin workshop set bench --capacity 1000000000 --max-quantity 10 >/dev/null
  fi
  flags="--clients 64"
  [ "$load" = batch ] && flags="--clients 16 --batch 100"
  [ "$build" = NEW ] && flags="$flags --keys $keys"
  # shellcheck disable=SC2086 # flags is a list of flags.
  line=$("$bin/reservectl" --server "http://127.0.0.1:$PORT" --token "$TOKEN" --json bench --workshop bench --duration "$DURATION" $flags)
  local hwm
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
  stop_daemon
  printf 'size %-9s %-6s %-6s round %d: %8.0f reservations/s  p50 %7.2f ms  p99 %7.2f ms  file %6.2f GB  VmHWM %5d MiB  open %5.2f s  verified %s\n' \
    "$n" "$name" "$load" "$round" "$(field "$line" reservations_per_second)" "$(field "$line" p50)" "$(field "$line" p99)" \
    "$(echo "$(stat -c %s "$db") / 1000000000" | bc -l)" $((hwm / 1024)) "$opened" "$(grep -o '"ok":[a-z]*' <<<"$line" | cut -d: -f2)" | tee -a "$OUT/runs.txt"
  [ "$n" -eq 0 ] && rm -f "$db"
  return 0
}

for n in $SIZES; do seed "$n"; done
for n in $SIZES; do
  for round in $(seq "$ROUNDS"); do
    for load in single batch; do
      for v in $VARIANTS; do
        run "${v%%:*}" "${v##*:}" "$n" "$round" "$load"
      done
    done
  done
  rm -f "$OUT/OLD-$n.db" "$OUT/NEW-$n.db" # The copies of this size.
done
echo "every run: $OUT/runs.txt"
