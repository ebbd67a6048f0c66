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
set +e
go test -json -race -count=1 "$@" ./... | "$summary_dir/testsummary" "${summary_flags[@]}"
statuses=("${PIPESTATUS[@]}")
set -e
if [ "${statuses[0]}" != 0 ]; then
  exit "${statuses[0]}"
fi
exit "${statuses[1]}"
