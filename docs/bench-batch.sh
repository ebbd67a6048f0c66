#!/usr/bin/env bash
# docs/bench-batch.sh measures batches in one sitting, with durable commits
# and every run on a fresh database:
#
#   1. ROUNDS times alternating: single reservations (64 clients) and
#      batches of 100 (16 clients), each for DURATION over TCP with an
#      admin token; it prints every run, the medians, the ratio of
#      reservations per second and the median p99 of a batch;
#   2. IMPORT_ROUNDS times alternating, when IMPORT_OLD names a git
#      revision: `reservectl import` of a CSV of IMPORT_ROWS rows into the
#      daemon of that revision and of the work tree, and the ratio of the
#      median times.
#
#   docs/bench-batch.sh [OUT_DIR]       # ROUNDS=3 DURATION=10s
#   IMPORT_OLD=b7e063f IMPORT_ROUNDS=2 docs/bench-batch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/reserve-batch.XXXXXX)}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
PORT=${PORT:-18183}
IMPORT_OLD=${IMPORT_OLD:-}
IMPORT_ROUNDS=${IMPORT_ROUNDS:-3}
IMPORT_ROWS=${IMPORT_ROWS:-100000}
mkdir -p "$OUT/new"
go build -o "$OUT/new/" ./cmd/reserved ./cmd/reservectl
echo "results in $OUT; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); build $(git rev-parse --short HEAD)$(git diff --quiet || echo ', modified')"

# shellcheck source=docs/bench-lib.sh
. docs/bench-lib.sh

# load NAME ROUND FLAGS... runs one bench on a fresh database and appends
# reservations/s and p99 to $OUT/NAME.rps and $OUT/NAME.p99.
load() {
  local name=$1 round=$2 db="$OUT/$1-$2.db" line
  shift 2
  rm -f "$db"
  serve_daemon "$OUT/new" "$db" "$OUT/s.sock" "$PORT" "$OUT/$name-$round.log"
  line=$("$OUT/new/reservectl" --server "http://127.0.0.1:$PORT" --token "$TOKEN" --json bench --duration "$DURATION" "$@")
  stop_daemon
  rm -f "$db"
  field "$line" reservations_per_second >>"$OUT/$name.rps"
  field "$line" p99 >>"$OUT/$name.p99"
  printf '  round %d %-7s %8.0f reservations/s  p99 %7.2f ms  verified %s  (load %s)\n' "$round" "$name" \
    "$(field "$line" reservations_per_second)" "$(field "$line" p99)" "$(grep -o '"ok":[a-z]*' <<<"$line" | cut -d: -f2)" "$(cut -d' ' -f1 /proc/loadavg)"
}

rm -f "$OUT"/single.* "$OUT"/batch.* "$OUT"/import-*.s
for round in $(seq "$ROUNDS"); do
  load single "$round" --clients 64
  load batch "$round" --clients 16 --batch 100
done
s=$(median $(cat "$OUT/single.rps")) b=$(median $(cat "$OUT/batch.rps"))
sp=$(median $(cat "$OUT/single.p99")) bp=$(median $(cat "$OUT/batch.p99"))
awk -v s="$s" -v b="$b" -v sp="$sp" -v bp="$bp" -v n="$ROUNDS" 'BEGIN {
  printf "medians of %d alternating runs: single %.0f reservations/s (p99 %.1f ms per request), batches of 100 %.0f reservations/s (p99 %.1f ms per batch); batch ÷ single = %.2f\n", n, s, sp, b, bp, b / s
}'

[ -n "$IMPORT_OLD" ] || exit 0
mkdir -p "$OUT/old"
src="$OUT/src-old"
rm -rf "$src"
git worktree add -q --detach "$src" "$IMPORT_OLD"
(cd "$src" && go build -o "$OUT/old/" ./cmd/reserved ./cmd/reservectl)
git worktree remove --force "$src"
awk -v n="$IMPORT_ROWS" 'BEGIN { print "workshop,quantity,ref"; for (i = 1; i <= n; i++) print "big,1,row-" i }' >"$OUT/rows.csv"

# import_run NAME ROUND imports rows.csv with the build NAME into a fresh
# daemon of the same build and appends the seconds to $OUT/import-NAME.s.
import_run() {
  local name=$1 round=$2 dir="$OUT/import-$1-$2" start end
  rm -rf "$dir" && mkdir -p "$dir" && cp "$OUT/rows.csv" "$dir/"
  serve_daemon "$OUT/$name" "$dir/r.db" "$dir/s.sock" "$PORT" "$dir/log"
  "$OUT/$name/reservectl" --socket "$dir/s.sock" admin workshop set big --capacity 1000000000 --max-quantity 1 >/dev/null
  start=$(date +%s.%N)
  "$OUT/$name/reservectl" --socket "$dir/s.sock" --state "$dir/state.json" import --progress never "$dir/rows.csv" >"$dir/out" 2>&1
  end=$(date +%s.%N)
  stop_daemon
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f\n", b - a }' >>"$OUT/import-$name.s"
  printf '  round %d import %-3s %8.2f s  %s\n' "$round" "$name" "$(tail -n1 "$OUT/import-$name.s")" "$(tail -n1 "$dir/out")"
  rm -rf "$dir"
}

for round in $(seq "$IMPORT_ROUNDS"); do
  import_run old "$round"
  import_run new "$round"
done
o=$(median $(cat "$OUT/import-old.s")) n=$(median $(cat "$OUT/import-new.s"))
awk -v o="$o" -v n="$n" -v r="$IMPORT_ROWS" -v k="$IMPORT_ROUNDS" -v rev="$IMPORT_OLD" 'BEGIN {
  printf "medians of %d alternating imports of %d rows: %s %.1f s, this build %.1f s; %.1f× faster\n", k, r, rev, o, n, o / n
}'
