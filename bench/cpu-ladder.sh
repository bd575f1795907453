#!/usr/bin/env bash
# Measures the CPU ladder against OpenBLAS on this machine and prints markdown for
# docs/benchmarks.md. OpenBLAS is a comparison tool only, never a dependency of the playground.
# Installs Debian's libopenblas-dev if it is missing (needs root). Takes several minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! [ -e /usr/include/x86_64-linux-gnu/cblas.h ] && ! [ -e /usr/include/cblas.h ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas-dev >/dev/null
fi
bin=$(mktemp -d)/gemm
cc -O2 -o "$bin" bench/openblas/gemm.c -lopenblas
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(go version); $(dpkg-query -W -f='${Package} ${Version}' libopenblas0-pthread 2>/dev/null || true)"
lscpu | grep -E '^Model name|^CPU\(s\)' | sed 's/^/# /'
echo "# vector flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|avx512f|avx512vl|avx512bw|avx512dq)$' | tr '\n' ' ')"
go run ./bench/ladder -openblas "$bin" "$@"
