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

# serve_daemon BIN DB SOCK PORT LOG [FLAGS...] starts BIN/reserved on DB,
# with its socket at SOCK and TCP on 127.0.0.1:PORT, logging to LOG, waits
# until the socket answers (at most START_TIMEOUT seconds, a minute by
# default) and sets PID and TOKEN (an
# admin token).
serve_daemon() {
  local bin=$1 db=$2 sock=$3 port=$4 log=$5
  shift 5
  "$bin/reserved" serve --db "$db" --socket "$sock" --listen "127.0.0.1:$port" --no-demo --log-format json "$@" 2>"$log" &
  PID=$!
  local deadline=$((SECONDS + ${START_TIMEOUT:-60}))
  until "$bin/reservectl" --socket "$sock" --timeout 1s whoami >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "reserved on $db did not start; its log:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  TOKEN=$("$bin/reservectl" --socket "$sock" admin token create --actor bench-admin --admin)
}

# build NAME REV builds both programs of revision REV (any git revision;
# "." is the work tree) into $OUT/NAME and says which it built.
build() {
  local name=$1 rev=$2 src
  if [ "$rev" = . ]; then
    src=$PWD
  else
    src="$OUT/src-$name"
    rm -rf "$src"
    git worktree add -q --detach "$src" "$rev"
  fi
  (cd "$src" && go build -o "$OUT/$name/reserved" ./cmd/reserved && go build -o "$OUT/$name/reservectl" ./cmd/reservectl)
  if [ "$rev" != . ]; then
    git worktree remove --force "$src"
  fi
  echo "$name = $rev ($(git rev-parse --short "$( [ "$rev" = . ] && echo HEAD || echo "$rev")")$( [ "$rev" = . ] && ! git diff --quiet && echo ', modified'))"
}
