#!/usr/bin/env bash
# docs/bench-daemon.sh measures the daemon-level numbers of
# docs/benchmarks.md in one sitting: it builds reserved and reservectl,
# then for each load starts a fresh daemon on a fresh database (durable
# commits, logs to a file), runs `reservectl bench` RUNS times over TCP with
# an admin token, and prints every run and the median of each figure. The
# 1M database is generated with `reserved seed` first.
#
#   docs/bench-daemon.sh [OUT_DIR]     # RUNS=3 DURATION=10s CLIENTS=64 by default
#
# BIG_DB=PATH reuses a database generated before (OUT_DIR/big-seeded.db of an
# earlier sitting) instead of generating it again. Generate it again after a
# change of the bbolt schema: an older file is only marked with the new
# version, its records keep the older layout.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/reserve-bench.XXXXXX)}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
CLIENTS=${CLIENTS:-64}
PORT=${PORT:-18181}
PER_WORKSHOP=${PER_WORKSHOP:-500000} # Reservations in each of the two workshops of the big database.
mkdir -p "$OUT/bin"
# Every load starts on a fresh database, also when OUT holds an earlier
# sitting (whose big-seeded.db BIG_DB may name).
rm -f "$OUT"/group.db "$OUT"/single.db "$OUT"/replay.db "$OUT"/big.db "$OUT"/*.jsonl
go build -o "$OUT/bin/reserved" ./cmd/reserved
go build -o "$OUT/bin/reservectl" ./cmd/reservectl
RESERVED="$OUT/bin/reserved"
CTL="$OUT/bin/reservectl"
echo "results in $OUT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"

PID=""
stop_daemon() {
  if [ -n "$PID" ]; then
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
  fi
}
trap stop_daemon EXIT

# start_daemon NAME DB [FLAGS...] starts reserved and waits until its socket
# answers.
start_daemon() {
  local name=$1 db=$2
  shift 2
  SOCK="$OUT/$name.sock"
  "$RESERVED" serve --db "$db" --socket "$SOCK" --listen "127.0.0.1:$PORT" --no-demo --log-format json "$@" 2>"$OUT/$name.log" &
  PID=$!
  local deadline=$((SECONDS + 60))
  until "$CTL" --socket "$SOCK" --timeout 1s whoami >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "reserved $name did not start; its log:" >&2
      cat "$OUT/$name.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  TOKEN=$("$CTL" --socket "$SOCK" admin token create --actor bench-admin --admin)
}

# field JSON NAME prints a number from a bench --json line.
field() { grep -o "\"$2\":[0-9.e+-]*" <<<"$1" | head -n1 | cut -d: -f2; }

# median prints the median of its arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# measure NAME [BENCH FLAGS...] runs the bench RUNS times against the
# running daemon and records the medians in $NAME_rps and $NAME_p99.
measure() {
  local name=$1
  shift
  local rps=() p99=() line
  local TIMEFORMAT='%U %S' # The bench's own CPU seconds, from bash's time.
  for i in $(seq "$RUNS"); do
    local before after benchcpu
    before=$(cpu_ticks)
    { time "$CTL" --server "http://127.0.0.1:$PORT" --token "$TOKEN" --json bench --clients "$CLIENTS" --duration "$DURATION" "$@" >"$OUT/line"; } 2>"$OUT/time"
    after=$(cpu_ticks)
    line=$(cat "$OUT/line")
    echo "$line" >>"$OUT/$name.jsonl"
    benchcpu=$(awk '{print $1 + $2}' "$OUT/time")
    rps+=("$(field "$line" requests_per_second)")
    p99+=("$(field "$line" p99)")
    printf '  %-10s run %d: %8.0f requests/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  verified %s  CPU/request: daemon %3.0f µs, bench %3.0f µs  (load %s)\n' "$name" "$i" \
      "$(field "$line" requests_per_second)" "$(field "$line" p50)" "$(field "$line" p99)" "$(field "$line" max)" \
      "$(grep -o '"ok":[a-z]*' <<<"$line" | cut -d: -f2)" \
      "$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$(field "$line" requests)" 'BEGIN {print 1e6 * t / hz / n}')" \
      "$(awk -v c="$benchcpu" -v n="$(field "$line" requests)" 'BEGIN {print 1e6 * c / n}')" \
      "$(cut -d' ' -f1 /proc/loadavg)"
  done
  printf -v "${name}_rps" '%s' "$(median "${rps[@]}")"
  printf -v "${name}_p99" '%s' "$(median "${p99[@]}")"
  printf '  %-10s median: %8.0f requests/s  p99 %6.2f ms\n' "$name" "$(eval echo "\$${name}_rps")" "$(eval echo "\$${name}_p99")"
}

# cpu_ticks prints the daemon's user and system CPU time in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }

# hwm prints the daemon's peak resident set (VmHWM) in MiB and logs its
# current anonymous and file-backed (the mmapped database) parts.
hwm() {
  awk '/^(RssAnon|RssFile)/ {printf "  %s %.1f MiB\n", $1, $2/1024}' "/proc/$PID/status" >&2
  awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$PID/status"
}

echo "== new reservations, group commit"
start_daemon group "$OUT/group.db"
measure group
group_rss=$(hwm)
echo "  daemon peak RSS (VmHWM): $group_rss MiB"
stop_daemon

echo "== new reservations, --no-group-commit"
start_daemon single "$OUT/single.db" --no-group-commit
measure single
stop_daemon

echo "== replays only"
start_daemon replay "$OUT/replay.db"
measure replay --replay-ratio 1
stop_daemon

echo "== new reservations in a workshop with 500,000 of 1,000,000 reservations"
if [ -n "${BIG_DB:-}" ]; then # A database generated by an earlier sitting, copied.
  cp --sparse=always "$BIG_DB" "$OUT/big.db"
else
  start=$SECONDS
  "$RESERVED" seed --db "$OUT/big.db" --workshop bench --workshop other --per-workshop "$PER_WORKSHOP" | tail -n1
  echo "  generated in $((SECONDS - start))s"
  cp --sparse=always "$OUT/big.db" "$OUT/big-seeded.db"
fi
start_daemon big "$OUT/big.db"
measure big --workshop bench
big_rss=$(hwm)
echo "  daemon peak RSS (VmHWM): $big_rss MiB"
stop_daemon
"$RESERVED" check --db "$OUT/big.db"

echo "== summary (medians of $RUNS runs of $DURATION, $CLIENTS clients over TCP)"
awk -v g="$group_rps" -v gp="$group_p99" -v s="$single_rps" -v r="$replay_rps" -v b="$big_rps" -v rss="$group_rss" -v brss="$big_rss" 'BEGIN {
  printf "new, group commit        %8.0f/s  p99 %.1f ms   bars: >= 5000/s, p99 <= 25 ms\n", g, gp
  printf "group ÷ no group commit  %8.1fx            bar: >= 3x\n", g / s
  printf "replay ÷ new             %8.1fx            bar: >= 2x\n", r / g
  printf "1M ÷ empty               %8.0f%%            bar: >= 70%%\n", 100 * b / g
  printf "peak RSS                 %8.1f MiB (%.1f MiB with 1M)   bar: <= 200 MiB\n", rss, brss
}'
