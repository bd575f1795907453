#!/usr/bin/env bash
# Compares the server's streamed GFLOP/s with `go test -bench` for the same kernels and sizes on this
# machine, interleaving the two in rounds, and prints a markdown table for docs/benchmarks.md.
# Takes about five minutes on 2 cores. Extra arguments go to bench/compare (e.g. -rounds 7).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/kernels.test
go test -c -o "$bin" ./kernels
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(go version)" >&2
lscpu | grep -E 'Model name|^CPU\(s\)|L1d|L2|L3' >&2 || true
go run ./bench/compare -testbin "$bin" "$@"
