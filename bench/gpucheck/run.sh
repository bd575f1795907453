#!/usr/bin/env bash
# The GPU runbook of docs/gpu.md in one command, for a lent GPU machine (no Go there): build here with
# bench/gpucheck/build.sh, carry build/ and run this there. Every step writes its log under $OUT (at most
# 8 files come back, so related logs share one); a failing step does not stop the others.
#   step 1 (-steps tests): device facts, cuda.test, gpu.test -run GPU, the playground's /api/devices
#   step 2 (-steps ladder): bench/gpuladder at 4096 and 8192 with PyTorch, for docs/benchmarks.md
#   step 3 (-steps record): cmd/record over lessons/, the JSON files tarred for lessons/recorded/
#   step 4 (-steps ncu): Nsight Compute's raw counters of every own kernel of the ladder (launch.cu runs
#          each row of bench/gpucheck/kernels.gen.h, generated from gpu/nvidia/ladder.go: the tensor-core
#          rungs cuda-mma to cuda-mma-warptile included on sm_80 and newer) and of the
#          lessons' memory-bound kernels at n = 512 and 4096, to set beside the virtual GPU's counts
#          (docs/benchmarks.md)
#   step 5 (-steps newrungs): event times of every kernel at 4096, and Nsight Compute's launch statistics
#          (registers, occupancy) of the ladder's tiled rungs only (the rows with a fixed block, from
#          `launch -entries tiled`: cuda-smem to cuda-mma-warptile): quick, for a short lease
#   step 6 (-steps mmarate): bench/gpucheck/mma_rate.cu: mma.sync and ldmatrix rates per SM clock
#          alone and mixed as cuda_mma_warptile mixes them, for the model's tensor and shared terms
#   step 7 (-steps tensorncu): Nsight Compute's full set for the ladder's tiled rungs (`launch -entries
#          tiled`: cuda-smem to cuda-mma-warptile, the tensor-core rungs among them) at 4096 only:
#          quicker than step 4
#   step 8 (-steps hopper; build here with `bench/gpucheck/build.sh hopper`): the Hopper part of the
#          runbook (docs/gpu.md, "Hopper"), the next lease's one script, at most 8 minutes by its
#          timeouts: launch.cu built with nvcc for sm_90a times and checks every Hopper rung of the
#          compute_90a PTX as the worker launches it (tensor maps, shared opt-in, persistent grid,
#          clusters); Nsight Compute's full set of the same rungs, one launch each (`ncu -k` from
#          `build/hopper -entries`), into ncu-hopper.csv; build/hopper times them through the worker
#          beside the virtual GPU's model and runs every lesson cuda cell with tensor_maps, into
#          hopper.json with its provenance (machine, device, driver, libraries, date, command);
#          `build/hopper -ncu` adds the Nsight counts to hopper.json (registers, instructions, wgmma
#          and TMA counts). bench/vgpuvsncu, which sets the CSV beside the virtual GPU's counts by
#          running the rungs in it (minutes at 4096), is run here after the lease, not there
#   step 9 (-steps tiles): the FP32 rungs after cuda-warptile against cuBLAS SGEMM at n = 4096: gpuladder
#          times cublas, cuda-warptile, cuda-doublebuf and cuda-autotuned through the worker (the
#          issue's goal: >= 85% of cuBLAS SGEMM), then launch.cu times every candidate of the tile
#          search (kernels.gen.h lists them after the table's rows) to set the measured pick beside
#          the model's (gpu/nvidia/tune.gen.go), and Nsight Compute reads their launch statistics
# RECORD_CELLS (comma-separated cell ids) limits step 3 to those cells; HOPPER_N (default 4096) is
# step 8's size.
set -uo pipefail
steps=${1:-tests,ladder,record}
OUT=${OUT:-/tmp/gpucheck-out}; mkdir -p "$OUT"
for f in build/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
chmod +x build/* 2>/dev/null
has() { [[ ",$steps," == *",$1,"* ]]; }
if has tests; then
  {
    date -u; nvidia-smi; nvidia-smi -q | grep -iE 'clocks|MHz|Product Name|Driver Version|CUDA Version' | head -40
    echo "== cuda.test"; (cd gpu/nvidia && timeout 120 ../../build/cuda.test -test.v) 2>&1 | tail -60
    echo "== gpu.test"; timeout ${GPUTEST_S:-300} build/gpu.test -test.run GPU -test.v 2>&1 | tail -80
    echo "== /api/devices"
    data=$(mktemp -d); build/playground -addr 127.0.0.1:18080 -data "$data" >"$data/log" 2>&1 &
    pid=$!; for _ in $(seq 60); do curl -fsS 127.0.0.1:18080/api/devices >/dev/null 2>&1 && break; sleep 1; done
    curl -sS 127.0.0.1:18080/api/devices; echo; kill $pid; wait $pid; tail -20 "$data/log"
  } >"$OUT/tests.log" 2>&1
fi
if has ladder; then
  timeout 400 build/gpuladder -sizes 4096,8192 -rounds 3 -repeats 10 >"$OUT/gpuladder.md" 2>&1
fi
if has record; then
  timeout 400 build/record -lessons lessons ${RECORD_CELLS:+-cells "$RECORD_CELLS"} >"$OUT/record.log" 2>&1
  tar czf "$OUT/recorded.tgz" lessons/recorded
fi
if has newrungs; then # the ladder's tiled rungs only: registers, occupancy and time at 4096 (LaunchStats, Occupancy, SpeedOfLight)
  nvcc -O3 -arch=sm_90 -o /tmp/launch bench/gpucheck/launch.cu -lcuda >"$OUT/launch.log" 2>&1
  /tmp/launch gpu/nvidia/ptx/matmul.cu.compute_80.ptx 4096 20 >>"$OUT/launch.log" 2>&1
  tiled=$(/tmp/launch -entries tiled); echo "ncu -k regex:^($tiled)\$" >>"$OUT/launch.log"
  timeout 200 ncu --section LaunchStats --section Occupancy --section SpeedOfLight --page raw --csv \
    -k regex:"^($tiled)\$" /tmp/launch gpu/nvidia/ptx/matmul.cu.compute_80.ptx 4096 1 \
    >"$OUT/ncu-newrungs-4096.csv" 2>>"$OUT/launch.log"
fi
if has ncu; then
  nvcc -O3 -arch=sm_90 -o /tmp/launch bench/gpucheck/launch.cu -lcuda >"$OUT/launch.log" 2>&1
  for n in 512 4096; do /tmp/launch gpu/nvidia/ptx/matmul.cu.compute_80.ptx $n 10 >>"$OUT/launch.log" 2>&1; done
  for n in 512 4096; do
    timeout 250 ncu --set full --page raw --csv /tmp/launch gpu/nvidia/ptx/matmul.cu.compute_80.ptx $n 1 \
      >"$OUT/ncu-$n.csv" 2>>"$OUT/launch.log"
  done
fi
if has mmarate; then
  { nvcc -O3 -arch=sm_90 -o /tmp/mma_rate bench/gpucheck/mma_rate.cu && timeout 120 /tmp/mma_rate; } >"$OUT/mma_rate.log" 2>&1
fi
if has tensorncu; then
  nvcc -O3 -arch=sm_90 -o /tmp/launch bench/gpucheck/launch.cu -lcuda >"$OUT/launch-tensor.log" 2>&1
  tiled=$(/tmp/launch -entries tiled) # from the kernel table: cuda-smem to cuda-mma-warptile
  timeout 300 ncu --set full --page raw --csv -k regex:"^($tiled)\$" \
    /tmp/launch gpu/nvidia/ptx/matmul.cu.compute_80.ptx 4096 1 >"$OUT/ncu-tensor-4096.csv" 2>>"$OUT/launch-tensor.log"
fi
if has tiles; then
  {
    echo "machine $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.max.sm --format=csv
    timeout 240 build/gpuladder -sizes 4096 -rounds 3 -repeats 10 -python "" \
      -kernels cublas,cuda-vectorized,cuda-warptile,cuda-doublebuf,cuda-autotuned
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
    nvcc -O3 -arch=sm_${cc:-90} -o /tmp/launch bench/gpucheck/launch.cu -lcuda
    echo "== launch.cu, every kernel at 4096 (the candidates cuda_tile_* and cuda_doublebuf among them)"
    timeout 120 /tmp/launch gpu/nvidia/ptx/matmul.cu.compute_80.ptx 4096 20
    timeout 120 ncu --section LaunchStats --section Occupancy --section SpeedOfLight --page raw --csv \
      -k regex:'^(cuda_warptile|cuda_doublebuf|cuda_tile_.*)$' /tmp/launch gpu/nvidia/ptx/matmul.cu.compute_80.ptx 4096 1 \
      >"$OUT/ncu-tiles-4096.csv"
  } >"$OUT/tiles.log" 2>&1
fi
if has hopper; then # the next lease's one script (docs/gpu.md, "Hopper"): at most 8 minutes by its timeouts
  n=${HOPPER_N:-4096}
  {
    echo "machine $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.max.sm --format=csv
    entries=$(build/hopper -entries) # the sm_90 rungs' entry points, from the kernel table
    ptx=$(ls gpu/nvidia/ptx/*compute_90*.ptx 2>/dev/null | head -1)
    if [ -z "$entries" ] || [ -z "$ptx" ]; then
      echo "no rung of the kernel table needs sm_90 (or no compute_90 PTX): the ncu pass is skipped"
    else
      echo "== launch.cu (nvcc, sm_90a): every Hopper rung of $ptx at $n, checked, median of 20"
      timeout 90 nvcc -O3 -arch=sm_90a -o /tmp/launch bench/gpucheck/launch.cu -lcuda
      timeout 45 /tmp/launch "$ptx" "$n" 20
      echo "== ncu -k regex:$entries (one launch each: repeats 0; the CSV keeps ncu's quoted rows only)"
      timeout 150 ncu --set full --page raw --csv -k regex:"$entries" /tmp/launch "$ptx" "$n" 0 | grep '^"' >"$OUT/ncu-hopper.csv"
      echo "ncu exit $? (ncu's, or grep's 1 where no row came)"
    fi
    echo "== build/hopper: the rungs through the GPU worker, modelled, and the cells with tensor_maps"
    timeout 180 build/hopper -n "$n" -out "$OUT/hopper.json"
    if [ -s "$OUT/ncu-hopper.csv" ] && [ -s "$OUT/hopper.json" ]; then
      timeout 15 build/hopper -ncu "$OUT/ncu-hopper.csv" -out "$OUT/hopper.json" # each rung's Nsight counts into the record
    fi
  } >"$OUT/hopper.log" 2>&1
fi
ls -la "$OUT"
