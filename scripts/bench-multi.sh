#!/usr/bin/env bash
# bench-multi.sh compares two reserved daemons sharing one PostgreSQL with
# one reserved on its embedded bbolt file, under the same reservectl bench
# load: LOADS bench processes of CLIENTS/LOADS clients each, every process
# on its own workshop, spread over the daemons, for DURATION, RUNS times.
# PostgreSQL runs with durable commits (fsync and synchronous_commit on), as
# bbolt does. It needs Debian's postgresql package; run it as root or as a
# user who may run initdb. It prints one line per run and the medians.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
CLIENTS=${CLIENTS:-64}
LOADS=${LOADS:-16}

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

go build -o "$work/bin/" ./cmd/reserved ./cmd/reservectl
export PATH="$work/bin:$PATH"

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
"$PG_BIN/psql" -q -h "$work/pg" -p 5433 -U postgres -c "CREATE DATABASE reserve" >/dev/null

# daemon NAME ARGS… starts reserved and prints its TCP base URL.
daemon() {
  local name=$1; shift
  reserved serve --socket "$work/$name.sock" --listen 127.0.0.1:0 --no-demo "$@" >"$work/$name.log" 2>&1 &
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

# load LABEL TOKEN URL… runs LOADS bench processes spread over the URLs and
# prints the summed throughput and the largest of their p99 latencies.
load() {
  local label=$1 token=$2; shift 2
  local urls=("$@") i
  for i in $(seq 0 $((LOADS - 1))); do
    reservectl --server "${urls[$((i % ${#urls[@]}))]}" --token "$token" --json \
      bench --clients $((CLIENTS / LOADS)) --duration "$DURATION" >"$work/load-$i.json" &
  done
  wait_loads
  awk -v label="$label" '
    { match($0, /"reservations_per_second":[0-9.]+/); rps += substr($0, RSTART+26, RLENGTH-26)
      match($0, /"p99":[0-9.]+/); p = substr($0, RSTART+6, RLENGTH-6) + 0; if (p > p99) p99 = p
      if ($0 !~ /"ok":true/) bad = 1 }
    END { if (bad) { print label ": a bench run failed its verification" > "/dev/stderr"; exit 1 }
          printf "%s %.0f %.1f\n", label, rps, p99 }' "$work"/load-*.json
}
wait_loads() {
  local pid failed=0
  for pid in $(jobs -p); do
    grep -qx "$pid" "$work/pids" && continue
    wait "$pid" || failed=1
  done
  [ "$failed" = 0 ] || { cat "$work"/load-*.json >&2; exit 1; }
}

dsn="postgres://postgres@/reserve?host=$work/pg&port=5433"
pg1=$(daemon pg1 --store postgres --dsn "$dsn")
pg2=$(daemon pg2 --store postgres --dsn "$dsn")
bolt=$(daemon bolt --db "$work/bolt.db")
pgtoken=$(reservectl --socket "$work/pg1.sock" admin token create --actor bench --admin)
bolttoken=$(reservectl --socket "$work/bolt.sock" admin token create --actor bench --admin)

echo "# $CLIENTS clients in $LOADS bench processes (one workshop each), $DURATION, $RUNS runs"
echo "# setup reservations/s max-p99-ms"
for run in $(seq "$RUNS"); do
  load "bolt-1-daemon" "$bolttoken" "$bolt" | tee -a "$work/results"
  load "postgres-2-daemons" "$pgtoken" "$pg1" "$pg2" | tee -a "$work/results"
done
echo "# medians"
for label in bolt-1-daemon postgres-2-daemons; do
  grep "^$label " "$work/results" | sort -k2 -n | awk -v n="$RUNS" '{ r[NR] = $2; p[NR] = $3 } END { printf "%s median %.0f reservations/s\n", $1, r[int((n+1)/2)] }'
done
