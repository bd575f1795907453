#!/usr/bin/env bash
# A dry run, here and without a GPU, of what the next lease runs (`bash bench/gpucheck/run.sh hopper`,
# docs/gpu.md "Hopper"): run.sh itself, from a temporary root that links this checkout's gpu/, bench/
# and lessons/, with build/hopper built here, the strict fake libcuda of internal/fakecuda (an sm_90
# device computing on the host: plumbing only, no measurement) on the loader path, and stand-ins on
# PATH for what only the GPU machine has: nvcc (C++ of launch.cu without __CUDACC__, against CUDA
# 12.4's cuda.h and the fake), ncu (runs the command it profiles, then writes a CSV of one made-up
# register count per rung that its -k expression matches) and nvidia-smi. It checks that every
# Hopper rung launched and passed launch.cu's check, that the CSV names them all and that
# `build/hopper -ncu` put them into hopper.json. About a minute; HOPPER_N (default 100) is the size.
# Needs go, cc, c++ and CUDA 12's cuda.h (CUDA12_INCLUDE, default the unpacked 12.4's of .ci/run).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
inc=${CUDA12_INCLUDE:-/opt/playground-nvidia/cuda-12.4/usr/include}
[ -f "$inc/cuda.h" ] || { echo "dryrun: no cuda.h in $inc (set CUDA12_INCLUDE)" >&2; exit 2; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
mkdir -p "$d/root/build" "$d/bin" "$d/lib" "$d/out"
for p in gpu bench lessons; do ln -s "$repo/$p" "$d/root/$p"; done
cc -shared -fPIC -O2 -Wall -Werror "$repo/internal/fakecuda/testdata/fakecuda.c" -o "$d/lib/libcuda.so.1"
(cd "$repo" && go run ./gpu/nvidia/internal/genlaunch -out "$d/kernels.gen.h" 2>/dev/null)
cmp -s "$d/kernels.gen.h" "$repo/bench/gpucheck/kernels.gen.h" || { echo "dryrun: kernels.gen.h is stale: run bench/gpucheck/build.sh" >&2; exit 1; }
(cd "$repo" && CGO_ENABLED=0 go build -o "$d/root/build/hopper" ./bench/gpucheck/hopper)
cat >"$d/bin/nvcc" <<EOF
#!/usr/bin/env bash
out=""; src=""
while [ \$# -gt 0 ]; do case "\$1" in -o) out=\$2; shift;; *.cu) src=\$1;; esac; shift; done
exec c++ -x c++ -std=c++17 -O1 -Wall -Werror -I"$inc" -o "\$out" "\$src" -L"$d/lib" -l:libcuda.so.1
EOF
cat >"$d/bin/ncu" <<'EOF'
#!/usr/bin/env bash
while [ $# -gt 0 ] && [[ "$1" != regex:* ]]; do shift; done
re=${1#regex:}; shift
"$@"
echo '"ID","Kernel Name","device__attribute_display_name","launch__registers_per_thread"'
echo '"","","","register/thread"'
i=0
for e in $(build/hopper -entries | tr -d '^()$' | tr '|' ' '); do
  [[ $e =~ $re ]] && echo "\"$i\",\"$e\",\"Fake GPU (host memory, tests)\",\"$((100 + i))\"" && i=$((i + 1))
done
EOF
cat >"$d/bin/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
echo "name, driver_version, compute_cap, clocks.max.sm [MHz]"
echo "Fake GPU (host memory, tests), 0, 9.0, 0 MHz"
EOF
chmod +x "$d/bin/"*
(cd "$d/root" && OUT="$d/out" HOPPER_N="${HOPPER_N:-100}" PATH="$d/bin:$PATH" LD_LIBRARY_PATH="$d/lib" \
  bash bench/gpucheck/run.sh hopper >/dev/null)
cat "$d/out/hopper.log"
entries=$("$d/root/build/hopper" -entries | tr -d '^()$' | tr '|' ' ')
fail=0
for e in $entries; do
  grep -q "^$e n=.* check=ok\$" "$d/out/hopper.log" || { echo "dryrun: $e: no checked launch.cu line" >&2; fail=1; }
  grep -q "\"$e\"" "$d/out/ncu-hopper.csv" || { echo "dryrun: $e: not in ncu-hopper.csv" >&2; fail=1; }
done
n=$(grep -c '"launch__registers_per_thread"' "$d/out/hopper.json" || true)
[ "$n" -eq "$(echo $entries | wc -w)" ] || { echo "dryrun: hopper.json has Nsight counts for $n rungs" >&2; fail=1; }
[ $fail -eq 0 ] && echo "dryrun: ok: every Hopper rung ($(echo $entries | wc -w)) launched, checked, profiled and recorded"
exit $fail
