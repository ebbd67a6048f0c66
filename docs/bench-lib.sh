# docs/bench-lib.sh holds what the daemon bench scripts share; they source
# it. PID is the daemon they run, if any.

PID=""

# stop_daemon ends the daemon in PID and waits for it.
stop_daemon() {
  if [ -n "$PID" ]; then
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
  fi
}
trap stop_daemon EXIT

# field JSON NAME prints a number from a bench --json line.
field() { grep -o "\"$2\":[0-9.e+-]*" <<<"$1" | head -n1 | cut -d: -f2; }

# median prints the median of its arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
