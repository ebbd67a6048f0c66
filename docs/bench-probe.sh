#!/usr/bin/env bash
# docs/bench-probe.sh compares the daemon of the work tree with the bare
# probe (scripts/bareprobe: net/http and bbolt's group commit, nothing
# else) in one sitting: the same reservectl bench load against each in
# turn, ROUNDS times alternating, each run on a fresh file, and prints each
# run, the medians and the ratio daemon ÷ probe.
#
#   docs/bench-probe.sh [OUT_DIR]     # ROUNDS=5 DURATION=10s LOAD="--clients 64"
#   LOAD="--clients 16 --batch 100" docs/bench-probe.sh
#   PROBE_FLAGS="--commit batch" docs/bench-probe.sh   # bbolt's db.Batch
#   DAEMON_FLAGS="--log-level warn" docs/bench-probe.sh # no request log
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/reserve-probe.XXXXXX)}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
LOAD=${LOAD:---clients 64}
PROBE_FLAGS=${PROBE_FLAGS:-}
DAEMON_FLAGS=${DAEMON_FLAGS:-}
PORT=${PORT:-18184}
mkdir -p "$OUT/bin"
go build -o "$OUT/bin/" ./cmd/reserved ./cmd/reservectl ./scripts/bareprobe
echo "results in $OUT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); load: $LOAD; probe: ${PROBE_FLAGS:-the default committer}; daemon: ${DAEMON_FLAGS:-defaults}"

# shellcheck source=docs/bench-lib.sh
. docs/bench-lib.sh

# bench NAME ROUND runs the load against whatever listens on PORT, with
# TOKEN, and appends reservations/s and p99 to $OUT/NAME.rps and .p99.
bench() {
  local name=$1 round=$2 line
  # shellcheck disable=SC2086 # LOAD is a list of flags.
  line=$("$OUT/bin/reservectl" --server "http://127.0.0.1:$PORT" --token "$TOKEN" --json bench --workshop probe --duration "$DURATION" $LOAD)
  field "$line" reservations_per_second >>"$OUT/$name.rps"
  field "$line" p99 >>"$OUT/$name.p99"
  printf '  round %d %-6s %8.0f reservations/s  p99 %7.2f ms  verified %s  (load %s)\n' "$round" "$name" \
    "$(field "$line" reservations_per_second)" "$(field "$line" p99)" "$(grep -o '"ok":[a-z]*' <<<"$line" | cut -d: -f2)" "$(cut -d' ' -f1 /proc/loadavg)"
}

rm -f "$OUT"/*.rps "$OUT"/*.p99
for round in $(seq "$ROUNDS"); do
  rm -f "$OUT/probe.db"
  # shellcheck disable=SC2086 # PROBE_FLAGS is a list of flags.
  "$OUT/bin/bareprobe" --db "$OUT/probe.db" --listen "127.0.0.1:$PORT" $PROBE_FLAGS 2>"$OUT/probe.log" &
  PID=$!
  until curl -s -o /dev/null "http://127.0.0.1:$PORT/api/v1/workshops/probe"; do
    if ! kill -0 "$PID" 2>/dev/null; then
      echo "bareprobe ${PROBE_FLAGS} exited before it served; its log:" >&2
      cat "$OUT/probe.log" >&2
      exit 1
    fi
    sleep 0.05
  done
  TOKEN=any
  bench probe "$round"
  stop_daemon
  rm -f "$OUT/probe.db" "$OUT/daemon.db"
  # shellcheck disable=SC2086 # DAEMON_FLAGS is a list of flags.
  serve_daemon "$OUT/bin" "$OUT/daemon.db" "$OUT/daemon.sock" "$PORT" "$OUT/daemon-$round.log" $DAEMON_FLAGS
  "$OUT/bin/reservectl" --socket "$OUT/daemon.sock" admin workshop set probe --capacity 1000000000 --max-quantity 100 >/dev/null
  bench daemon "$round"
  stop_daemon
done
rm -f "$OUT/probe.db" "$OUT/daemon.db"
p=$(median $(cat "$OUT/probe.rps")) d=$(median $(cat "$OUT/daemon.rps"))
pp=$(median $(cat "$OUT/probe.p99")) dp=$(median $(cat "$OUT/daemon.p99"))
awk -v p="$p" -v d="$d" -v pp="$pp" -v dp="$dp" -v n="$ROUNDS" 'BEGIN {
  printf "medians of %d alternating runs: probe %.0f/s (p99 %.1f ms), daemon %.0f/s (p99 %.1f ms); daemon ÷ probe = %.3f\n", n, p, pp, d, dp, d / p
}'
