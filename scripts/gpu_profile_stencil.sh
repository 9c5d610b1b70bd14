#!/usr/bin/env bash
# Stencil kernel work on the GPU machine in one call: build, optional GPU tests, the bench
# tables (every compiled shape), then Nsight Compute on one bench configuration (full section
# set: speed of light, memory workload, warp-state stall reasons, scheduler, occupancy, and
# per-SASS-instruction samples) for the copy kernel and chosen stencil kernels, and the SASS
# of the stencil objects. Writes at most 8 files under $OUT. Run from the repository root.
#   OUT=/tmp/out KERNELS="copy_kernel stencil_register_kernel" SPEC="512 3 float" \
#     TESTS_FILTER='CudaStencil.*' BENCH_SPECS="512 3 float;512 3 double" \
#     bash scripts/gpu_profile_stencil.sh
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
KERNELS=${KERNELS:-"copy_kernel stencil_register_kernel stencil_async_kernel"}
SPEC=${SPEC:-"512 3 float"}
BENCH_SPECS=${BENCH_SPECS:-$SPEC}
TESTS_FILTER=${TESTS_FILTER:-}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/profile.log") 2>&1
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0))s] $*"; }
B=build/gpu-machine
HS=$B/app/heatsolve
set -- $SPEC
BENCH_ARGS=(bench --size "$1" --dims "$2" --precision "$3")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv

if [ ! -x "$HS" ] || [ "${REBUILD:-1}" = 1 ]; then
  stamp build
  { cmake --preset gpu-machine &&
    cmake --build --preset gpu-machine -j "$(nproc)" --target heatsolve heatsolve_tests; } \
    >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -20; exit 1; }
fi

if [ -n "$TESTS_FILTER" ]; then
  stamp "tests $TESTS_FILTER"
  timeout 300 "$B/tests/heatsolve_tests" --gtest_filter="$TESTS_FILTER" >"$OUT/tests.log" 2>&1
  echo "tests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure" "$OUT/tests.log" | head -20
fi

IFS=';' read -ra specs <<<"$BENCH_SPECS"
for spec in "${specs[@]}"; do
  read -r n d p <<<"$spec"
  stamp "bench $spec (all shapes)"
  timeout 200 "$HS" bench --size "$n" --dims "$d" --precision "$p" --all-shapes >>"$OUT/bench.log" 2>&1
done
grep -E "copy bandwidth|2.5d-tma|\*" "$OUT/bench.log" | head -80

mkdir -p /tmp/prof
for k in $KERNELS; do
  stamp "ncu $k"
  timeout 240 ncu --clock-control none --set full --import-source no -k "regex:$k" \
    --launch-skip 4 --launch-count 1 -f -o "/tmp/prof/$k" "$HS" "${BENCH_ARGS[@]}" >/tmp/prof/$k.run 2>&1 ||
    tail -5 /tmp/prof/$k.run
  ncu --import "/tmp/prof/$k.ncu-rep" --page details >>"$OUT/ncu_details.txt" 2>&1
  ncu --import "/tmp/prof/$k.ncu-rep" --page source --csv --print-source sass \
    >"/tmp/prof/$k.sass.csv" 2>&1
done
(cd /tmp/prof && tar czf "$OUT/ncu_sass.tgz" ./*.sass.csv ./*.ncu-rep 2>/dev/null)
grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Memory Throughput|Compute \(SM\)|Issue Slots Busy|Issued Ipc|Achieved Occupancy|Registers Per|No Eligible|Warp Cycles Per Issued" \
  "$OUT/ncu_details.txt" | sed 's/(const.*//' | head -80

stamp sass
obj=$(find "$B" -name 'stencil_launch.cu.o' | head -1)
[ -n "$obj" ] && cuobjdump -sass "$obj" | gzip >"$OUT/sass_stencil.txt.gz"
obj=$(find "$B" -name 'temporal_launch.cu.o' | head -1)
[ -n "$obj" ] && cuobjdump -sass "$obj" | gzip >"$OUT/sass_temporal.txt.gz"
stamp done
