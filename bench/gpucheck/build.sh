#!/usr/bin/env bash
# Builds what bench/gpucheck/run.sh runs on a lent GPU machine (no Go there), with cgo off, into
# build/ as gzip files (run.sh unpacks them): the device tool carries at most 64 MiB. It first
# regenerates bench/gpucheck/kernels.gen.h, the own kernels of gpu/nvidia/ladder.go that launch.cu
# runs there (nvcc compiles it on the device, from the working tree the device tool copies).
# `build.sh hopper` builds only what run.sh's hopper step runs (bench/gpucheck/hopper, a few MB
# compressed; bench/vgpuvsncu runs here after the lease), to leave room under the 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
go run ./gpu/nvidia/internal/genlaunch
rm -rf build && mkdir -p build
export CGO_ENABLED=0
cmds="cmd/playground cmd/record bench/gpuladder"
if [ "${1:-}" = hopper ]; then
  cmds="bench/gpucheck/hopper"
else
  go test -c -o build/gpu.test ./gpu
  go test -c -o build/cuda.test ./gpu/nvidia
fi
for cmd in $cmds; do go build -ldflags='-s -w' -o "build/$(basename $cmd)" "./$cmd"; done
gzip -9 build/*
du -sh build
