#!/usr/bin/env bash
# docs/bench-ab.sh compares the daemon's throughput of two builds in one
# sitting: it builds reserved and reservectl at revisions A and B (any git
# revision; "." is the work tree), then runs the same load against each in
# turn, ROUNDS times alternating A, B, A, B, …, every run on a fresh
# database with durable commits, and prints each run, the medians and the
# ratio B ÷ A. Alternating in one sitting cancels most of the drift of a
# noisy machine; compare only the ratios, never absolute figures of two
# sittings.
#
#   docs/bench-ab.sh A B [OUT_DIR]    # ROUNDS=5 DURATION=10s CLIENTS=64 by default
#   LOAD="--replay-ratio 1" docs/bench-ab.sh main .
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: docs/bench-ab.sh A B [OUT_DIR]}
B=${2:?usage: docs/bench-ab.sh A B [OUT_DIR]}
OUT=${3:-$(mktemp -d /tmp/reserve-ab.XXXXXX)}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
CLIENTS=${CLIENTS:-64}
PORT=${PORT:-18182}
LOAD=${LOAD:-}

# shellcheck source=docs/bench-lib.sh
. docs/bench-lib.sh
mkdir -p "$OUT"
build A "$A"
build B "$B"
echo "results in $OUT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); load: ${LOAD:-new reservations}"



# run NAME ROUND starts build NAME on a fresh database, runs the bench
# once and appends requests/s and p99 to $OUT/NAME.rps and $OUT/NAME.p99.
run() {
  local name=$1 round=$2 bin="$OUT/$1" db="$OUT/$1-$2.db" sock="$OUT/$1.sock" line
  rm -f "$db"
  serve_daemon "$bin" "$db" "$sock" "$PORT" "$OUT/$name-$round.log"
  # shellcheck disable=SC2086 # LOAD is a list of flags.
  line=$("$bin/reservectl" --server "http://127.0.0.1:$PORT" --token "$TOKEN" --json bench --clients "$CLIENTS" --duration "$DURATION" $LOAD)
  stop_daemon
  rm -f "$db"
  field "$line" requests_per_second >>"$OUT/$name.rps"
  field "$line" p99 >>"$OUT/$name.p99"
  printf '  round %d %s: %8.0f requests/s  p99 %6.2f ms  verified %s  (load %s)\n' "$round" "$name" \
    "$(field "$line" requests_per_second)" "$(field "$line" p99)" "$(grep -o '"ok":[a-z]*' <<<"$line" | cut -d: -f2)" "$(cut -d' ' -f1 /proc/loadavg)"
}

rm -f "$OUT"/A.rps "$OUT"/B.rps "$OUT"/A.p99 "$OUT"/B.p99
for round in $(seq "$ROUNDS"); do
  run A "$round"
  run B "$round"
done
a=$(median $(cat "$OUT/A.rps")) b=$(median $(cat "$OUT/B.rps"))
ap=$(median $(cat "$OUT/A.p99")) bp=$(median $(cat "$OUT/B.p99"))
awk -v a="$a" -v b="$b" -v ap="$ap" -v bp="$bp" -v n="$ROUNDS" 'BEGIN {
  printf "medians of %d alternating runs: A %.0f/s (p99 %.1f ms), B %.0f/s (p99 %.1f ms); B ÷ A = %.3f\n", n, a, ap, b, bp, b / a
}'
