#!/usr/bin/env bash
# test.sh is the project's one test command: formatting, vet, and every test
# with the race detector. README.md and .ci/run both name it.
set -euo pipefail
cd "$(dirname "$0")"

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change these files:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...

# The tests run with -json so that internal/tools/testsummary can print what
# go test prints without it (the ok lines, every failing test's output in
# full) and then count the tests that skipped for a missing dependency
# (PostgreSQL, Chromium, root, a tool). The status is go test's; only when
# go test passed and the summary itself failed is it the summary's.
summary_dir=$(mktemp -d)
trap 'rm -rf "$summary_dir"' EXIT
go build -o "$summary_dir/testsummary" ./internal/tools/testsummary
summary_flags=()
for arg in "$@"; do
  case "$arg" in -v | -v=true | -test.v | -test.v=true) summary_flags=(-v) ;; esac
done
# go test runs at most -p packages at a time (one per CPU), in the order
# they are named: the slowest are named first, so that none of them starts
# last and keeps the run going alone at the end. -parallel bounds the tests
# of a package that run at once (those that call t.Parallel); most of them
# wait on daemons, databases and timeouts rather than compute, so at least
# 4 run at once even on 2 CPUs.
slowest=$(go list ./internal/daemon ./internal/browsertest ./internal/pgstore ./dist ./internal/boltstore .)
packages=$(printf '%s\n' "$slowest"; go list ./... | grep -vxF "$slowest")
cpus=$(getconf _NPROCESSORS_ONLN)
set +e
# shellcheck disable=SC2086 # $packages is one import path per word.
go test -json -race -count=1 -parallel $((cpus > 4 ? cpus : 4)) "$@" $packages | "$summary_dir/testsummary" "${summary_flags[@]}"
statuses=("${PIPESTATUS[@]}")
set -e
if [ "${statuses[0]}" != 0 ]; then
  exit "${statuses[0]}"
fi
exit "${statuses[1]}"
