#!/usr/bin/env bash
# docs/bench-opentime.sh measures how long reserved takes from its start
# until its socket answers (opening the file, verifying it), on one bbolt
# file, for two builds, OLD and NEW, in four starts a round, interleaved so
# that the load of the machine hits them alike: OLD after a kill -9, NEW
# after a kill -9, NEW after a clean stop (SIGTERM) and OLD after a clean
# stop. Both builds must open the same schema, since they share the file
# (and so its page cache). It prints every round and the medians. The file
# is made with "reserved seed", e.g. for 1 million receipts:
#
#   reserved seed --db /var/tmp/1m.db --workshop bench --workshop other --per-workshop 500000
#   docs/bench-opentime.sh 803e64f . /var/tmp/1m.db [OUT_DIR]    # ROUNDS=7
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: docs/bench-opentime.sh OLD NEW DB [OUT_DIR]}
NEW=${2:?usage: docs/bench-opentime.sh OLD NEW DB [OUT_DIR]}
DB=${3:?usage: docs/bench-opentime.sh OLD NEW DB [OUT_DIR]}
OUT=${4:-$(mktemp -d /tmp/reserve-opentime.XXXXXX)}
ROUNDS=${ROUNDS:-7}
SOCK=$OUT/r.sock

# shellcheck source=docs/bench-lib.sh
. docs/bench-lib.sh
mkdir -p "$OUT"
build OLD "$OLD"
build NEW "$NEW"
echo "results in $OUT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); $DB: $(du -h --apparent-size "$DB" | cut -f1)"

# start BUILD starts the daemon on DB, waits until its socket answers (at
# most START_TIMEOUT seconds, 300 by default) and sets SECS to the time
# that took.
start() {
  local bin=$OUT/$1 t0 deadline=$((SECONDS + ${START_TIMEOUT:-300}))
  rm -f "$SOCK"
  t0=$(date +%s.%N)
  "$bin/reserved" serve --db "$DB" --socket "$SOCK" --listen "" --no-demo --log-format json >/dev/null 2>>"$OUT/$1.log" &
  PID=$!
  until "$bin/reservectl" --socket "$SOCK" --timeout 1s whoami >/dev/null 2>&1; do
    if ! kill -0 "$PID" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "reserved on $DB did not start; its log:" >&2
      tail -5 "$OUT/$1.log" >&2
      exit 1
    fi
    sleep 0.01
  done
  SECS=$(echo "$(date +%s.%N) - $t0" | bc)
}

# halt SIGNAL ends the daemon with SIGNAL (KILL or TERM) and waits for it.
halt() {
  kill "-$1" "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
}

start NEW # Warms the page cache and leaves the file as a killed daemon does.
halt KILL
declare -A all
for r in $(seq "$ROUNDS"); do
  line="round $r:"
  for step in OLD:crash:KILL NEW:crash:TERM NEW:clean:TERM OLD:clean:KILL; do
    IFS=: read -r b mode sig <<<"$step"
    start "$b"
    halt "$sig"
    all[$b-$mode]="${all[$b-$mode]:-} $SECS"
    line="$line $b after $mode $(printf '%.3f' "$SECS") s;"
  done
  echo "$line load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/runs.txt"
done
for k in OLD-crash NEW-crash OLD-clean NEW-clean; do
  # shellcheck disable=SC2086 # A list of numbers.
  printf '%-9s median %.3f s of%s\n' "$k" "$(median ${all[$k]})" "${all[$k]}" | tee -a "$OUT/runs.txt"
done
