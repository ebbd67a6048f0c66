#!/usr/bin/env bash
# docs/bench-holds.sh measures a daemon under holds that pass their
# deadline: CLIENTS clients hold one place each of one workshop with room
# for all, back to back, with the shortest time to live (30 s), for
# DURATION, while a probe reserves a place of another workshop ten times
# a second (scripts/holdload). From the first deadline on, the workshop
# always has holds past their deadline that no cleanup has reached yet.
# It builds reserved and reservectl at revisions A and B ("." is the work
# tree) and runs the load against each in turn, ROUNDS times alternating
# A, B, A, B, …, each on a fresh database with durable commits, and prints
# each run and the medians, after the first deadline: holds per second and
# the probe's median and 90th percentile latency, with the ratios B ÷ A.
#
#   docs/bench-holds.sh A B [OUT_DIR]   # ROUNDS=3 DURATION=75s CLIENTS=8
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: docs/bench-holds.sh A B [OUT_DIR]}
B=${2:?usage: docs/bench-holds.sh A B [OUT_DIR]}
OUT=${3:-$(mktemp -d /tmp/reserve-holds.XXXXXX)}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-75s}
CLIENTS=${CLIENTS:-8}
PORT=${PORT:-18183}

# shellcheck source=docs/bench-lib.sh
. docs/bench-lib.sh
mkdir -p "$OUT"
build A "$A"
build B "$B"
go build -o "$OUT/holdload" ./scripts/holdload
echo "results in $OUT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# after JSON NAME prints a number of the part after the first deadline.
after() { grep -o '"after_first_deadline":{[^}]*}' <<<"$1" | grep -o "\"$2\":[0-9.e+-]*" | cut -d: -f2; }

run() {
  local name=$1 round=$2 db="$OUT/$1-$2.db" line
  rm -f "$db"
  serve_daemon "$OUT/$name" "$db" "$OUT/$name.sock" "$PORT" "$OUT/$name-$round.log"
  line=$("$OUT/holdload" -url "http://127.0.0.1:$PORT" -token "$TOKEN" -clients "$CLIENTS" -duration "$DURATION")
  stop_daemon
  rm -f "$db"
  echo "$line" >"$OUT/$name-$round.json"
  after "$line" holds_per_second >>"$OUT/$name.hps"
  after "$line" probe_p50_ms >>"$OUT/$name.p50"
  after "$line" probe_p90_ms >>"$OUT/$name.p90"
  printf '  round %d %s: %7.0f holds/s  probe p50 %8.2f ms  p90 %8.2f ms  max %8.2f ms  (load %s)\n' "$round" "$name" \
    "$(after "$line" holds_per_second)" "$(after "$line" probe_p50_ms)" "$(after "$line" probe_p90_ms)" \
    "$(after "$line" probe_max_ms)" "$(cut -d' ' -f1 /proc/loadavg)"
}

rm -f "$OUT"/A.hps "$OUT"/B.hps "$OUT"/A.p50 "$OUT"/B.p50 "$OUT"/A.p90 "$OUT"/B.p90
for round in $(seq "$ROUNDS"); do
  run A "$round"
  run B "$round"
done
for m in hps p50 p90; do
  a=$(median $(cat "$OUT/A.$m")) b=$(median $(cat "$OUT/B.$m"))
  awk -v m="$m" -v a="$a" -v b="$b" -v n="$ROUNDS" 'BEGIN {
    name = (m == "hps") ? "holds/s" : "probe " m " (ms)"
    printf "median of %d runs, after the first deadline, %-16s A %10.2f  B %10.2f  B ÷ A = %.3f\n", n, name, a, b, b / a
  }'
done
