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
go test -race -count=1 "$@" ./...
