#!/usr/bin/env bash
# bench-multi.sh compares reserved daemons sharing one PostgreSQL (two, and
# three) with one reserved on its embedded bbolt file, under the same
# reservectl bench load: LOADS bench processes of CLIENTS/LOADS clients
# each, spread over the daemons, for DURATION, RUNS times, with two loads:
# "many" (every process on a workshop of its own) and "hot" (every process
# on one shared workshop).
#
# With BEFORE=<revision> the PostgreSQL setups run twice per run, once with
# the daemons built from that revision and once with the work tree's, each
# build on a database of its own, in an order that alternates from run to
# run, so that the machine's noise hits both builds alike. The bbolt daemon
# is the work tree's.
#
# PostgreSQL runs with durable commits (fsync and synchronous_commit on), as
# bbolt does. It needs Debian's postgresql package; run it as root or as a
# user who may run initdb. It prints one line per measurement, the medians
# and their ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
CLIENTS=${CLIENTS:-64}
LOADS=${LOADS:-16}
BEFORE=${BEFORE:-}
DAEMONS=${DAEMONS:-2 3}

work=$(mktemp -d /tmp/reserve-bench.XXXXXX)
chmod 755 "$work"
cleanup() {
  # The daemons' pids are in a file: daemon runs in command substitutions,
  # that is in subshells, so a shell array would not see them.
  local pid
  for pid in $(cat "$work/pids" 2>/dev/null); do kill -INT "$pid" 2>/dev/null || true; done
  for pid in $(cat "$work/pids" 2>/dev/null); do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done
  if [ -f "$work/pg/data/postmaster.pid" ]; then as_pg "$PG_BIN/pg_ctl" -D "$work/pg/data" -m fast -w stop >/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

builds=(after)
go build -o "$work/after/" ./cmd/reserved ./cmd/reservectl
if [ -n "$BEFORE" ]; then
  builds=(before after)
  mkdir -p "$work/src-before"
  git archive "$BEFORE" | tar -x -C "$work/src-before"
  (cd "$work/src-before" && go build -o "$work/before/" ./cmd/reserved ./cmd/reservectl)
fi
reservectl() { "$work/after/reservectl" "$@"; }

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$PG_BIN/initdb" ] || { echo "no PostgreSQL server binaries under /usr/lib/postgresql: apt-get install postgresql" >&2; exit 1; }
mkdir -p "$work/pg"
as_pg() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$work/pg"
  as_pg() { runuser -u postgres -- "$@"; }
fi
as_pg "$PG_BIN/initdb" -D "$work/pg/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -W start -o \
  "-c listen_addresses='' -c unix_socket_directories='$work/pg' -c port=5433 -c max_connections=300 -c fsync=on -c synchronous_commit=on" >/dev/null
until "$PG_BIN/pg_isready" -q -h "$work/pg" -p 5433; do sleep 0.2; done
"$PG_BIN/psql" -q -h "$work/pg" -p 5433 -U postgres -Atc "SHOW fsync; SHOW synchronous_commit" | tr '\n' ' ' | sed 's/^/# PostgreSQL fsync, synchronous_commit: /; s/ $/\n/'

# daemon BUILD NAME ARGS… starts reserved of BUILD and prints its TCP base URL.
daemon() {
  local build=$1 name=$2; shift 2
  "$work/$build/reserved" serve --socket "$work/$name.sock" --listen 127.0.0.1:0 --no-demo "$@" >"$work/$name.log" 2>&1 &
  echo $! >>"$work/pids"
  local addr=""
  for _ in $(seq 300); do
    addr=$(sed -n 's/.*msg="reserved is serving".* tcp=\([0-9.:]*\).*/\1/p' "$work/$name.log")
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || { cat "$work/$name.log" >&2; exit 1; }
  echo "http://$addr"
}

# reserved_of SOCKET prints the reserved places of the workshop hot.
reserved_of() {
  curl -sf --unix-socket "$1" http://reserved/api/v1/workshops/hot | jq -e .reserved
}

# load LABEL MODE SOCKET TOKEN URL… runs LOADS bench processes spread over
# the URLs and prints the summed throughput and the largest of their p99
# latencies. MODE many gives every process a workshop of its own, which it
# verifies; MODE hot sends them all to the workshop hot, whose reserved
# places must then grow by the reservations all of them were told about
# (read on SOCKET).
load() {
  local label=$1 mode=$2 socket=$3 token=$4; shift 4
  local urls=("$@") i before=0 after told
  local extra=()
  if [ "$mode" = hot ]; then
    extra=(--workshop hot)
    before=$(reserved_of "$socket")
  fi
  rm -f "$work"/load-*.json "$work"/load-*.err
  for i in $(seq 0 $((LOADS - 1))); do
    reservectl --server "${urls[$((i % ${#urls[@]}))]}" --token "$token" --json \
      bench --clients $((CLIENTS / LOADS)) --duration "$DURATION" "${extra[@]}" >"$work/load-$i.json" 2>"$work/load-$i.err" &
  done
  wait_loads "$mode"
  if [ "$mode" = hot ]; then
    after=$(reserved_of "$socket")
    told=$(jq -s 'map(.verification.reservations) | add' "$work"/load-*.json)
    if [ $((after - before)) != "$told" ] || ! jq -se 'all(.outcomes.replay_changed == 0 and .outcomes.unsettled == 0 and (.outcomes.rejected // {} | length) == 0)' "$work"/load-*.json >/dev/null; then
      echo "$label: workshop hot gained $((after - before)) places, the clients were told of $told, or an intent was refused or changed" >&2
      exit 1
    fi
  elif ! jq -se 'all(.verification.ok)' "$work"/load-*.json >/dev/null; then
    echo "$label: a bench run failed its verification" >&2
    exit 1
  fi
  jq -rs --arg name "$label" '"\($name) \(map(.reservations_per_second) | add | round) \(map(.latency_ms.p99) | max)"' "$work"/load-*.json
}

# wait_loads MODE waits for the bench processes. Under the hot load each
# process's own check fails (the others reserve in its workshop too), so
# there only a missing result is a failure; load checks the sum.
wait_loads() {
  local pid failed=0
  for pid in $(jobs -p); do
    grep -qx "$pid" "$work/pids" && continue
    if ! wait "$pid" && [ "$1" != hot ]; then failed=1; fi
  done
  for f in "$work"/load-*.json; do jq -e .reservations_per_second "$f" >/dev/null || failed=1; done
  [ "$failed" = 0 ] || { cat "$work"/load-*.json "$work"/load-*.err >&2; exit 1; }
}

declare -A url sock token
bolt=$(daemon after bolt --db "$work/bolt.db")
bolttoken=$(reservectl --socket "$work/bolt.sock" admin token create --actor bench --admin)
reservectl --socket "$work/bolt.sock" admin workshop set hot --capacity 1000000000 --max-quantity 1 >/dev/null
maxd=0
for n in $DAEMONS; do [ "$n" -gt "$maxd" ] && maxd=$n; done
for b in "${builds[@]}"; do
  "$PG_BIN/psql" -q -h "$work/pg" -p 5433 -U postgres -c "CREATE DATABASE reserve_$b" >/dev/null
  dsn="postgres://postgres@/reserve_$b?host=$work/pg&port=5433"
  for d in $(seq "$maxd"); do
    url[$b$d]=$(daemon "$b" "pg-$b-$d" --store postgres --dsn "$dsn")
  done
  sock[$b]="$work/pg-$b-1.sock"
  token[$b]=$(reservectl --socket "${sock[$b]}" admin token create --actor bench --admin)
  reservectl --socket "${sock[$b]}" admin workshop set hot --capacity 1000000000 --max-quantity 1 >/dev/null
done

echo "# $CLIENTS clients in $LOADS bench processes, $DURATION, $RUNS runs; builds: ${builds[*]}${BEFORE:+ (before = $BEFORE)}"
echo "# run load setup reservations/s max-p99-ms"
for run in $(seq "$RUNS"); do
  order=("${builds[@]}")
  if [ $((run % 2)) = 0 ]; then order=($(printf '%s\n' "${builds[@]}" | tac)); fi
  for mode in many hot; do
    load "$run $mode bolt-1" "$mode" "$work/bolt.sock" "$bolttoken" "$bolt" | tee -a "$work/results"
    for n in $DAEMONS; do
      for b in "${order[@]}"; do
        urls=()
        for d in $(seq "$n"); do urls+=("${url[$b$d]}"); done
        load "$run $mode pg-$n-$b" "$mode" "${sock[$b]}" "${token[$b]}" "${urls[@]}" | tee -a "$work/results"
      done
    done
  done
done

echo "# medians (reservations/s, and the max p99 of the median run)"
for mode in many hot; do
  for setup in bolt-1 $(for n in $DAEMONS; do for b in "${builds[@]}"; do echo "pg-$n-$b"; done; done); do
    awk -v mode="$mode" -v setup="$setup" '$2 == mode && $3 == setup { print $4, $5 }' "$work/results" | sort -n |
      awk -v label="$mode $setup" '{ r[NR] = $1; p[NR] = $2 } END { m = int((NR + 1) / 2); printf "%s %d %s\n", label, r[m], p[m] }'
  done
done | tee "$work/medians"
echo "# ratios of the medians"
awk '{ m[$1 " " $2] = $3 }
  END {
    for (k in m) {
      split(k, f, " "); mode = f[1]; setup = f[2]
      if (setup == "bolt-1") continue
      line = sprintf("%s %s: %.0f%% of bolt-1", mode, setup, 100 * m[k] / m[mode " bolt-1"])
      if (setup ~ /-after$/) {
        b = setup; sub(/-after$/, "-before", b)
        if ((mode " " b) in m) line = line sprintf(", %.2fx %s", m[k] / m[mode " " b], b)
      }
      print line
    }
  }' "$work/medians" | sort
