#!/usr/bin/env bash
# GPU check of the reduction and GEMM ladders, in one call on the device machine:
#   1. configure (Ninja, sm_90, no VTK) and build heatsolve_kernels with -j16;
#   2. link two small binaries against it, from our sources only: the GoogleTest suites
#      tests/kernels/{reduction,gemm}/test_cuda_{reduction,gemm}.cpp and a driver of app/bench/bench_reduce_gemm.cpp (so a
#      half-finished file elsewhere in the tree cannot block the GPU run);
#   3. run the tests, then compute-sanitizer (racecheck: the safe rungs must show 0 hazards,
#      the unsafe rung-5 control is expected to show some; memcheck on a small test);
#   4. benchmarks: reductions (float, double; CUB in the same run) and GEMM (float, double;
#      cuBLAS in the same run, tall-skinny A^T B);
#   5. if time is left, build the real `heatsolve` binary and smoke-test `heatsolve bench`.
# Usage: scripts/gpu_reduce_gemm.sh [all|tests|bench]     Logs: $OUT (default ./out-gpu).
set -u
MODE=${1:-all}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-$ROOT/out-gpu}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build-rg}
ELEMENTS=${ELEMENTS:-268435456}  # 2^28
GEMM_MAX=${GEMM_MAX:-8192}
START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }
say() { echo "[$(elapsed)s] $*" | tee -a "$OUT/build.log"; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nvcc --version | tail -2
} >"$OUT/build.log" 2>&1

say "configure"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DHEATSOLVE_ENABLE_VTK=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_BUILD_TYPE=Release >>"$OUT/build.log" 2>&1 || {
  say "configure FAILED"
  tail -40 "$OUT/build.log"
  exit 1
}
say "build heatsolve_kernels"
if ! timeout 330 cmake --build "$BUILD" -j16 --target heatsolve_kernels >>"$OUT/build.log" 2>&1; then
  say "heatsolve_kernels build FAILED"
  grep -E "error|FAILED" "$OUT/build.log" | head -40
  exit 1
fi
grep -E "spill" "$OUT/build.log" | grep -v " 0 bytes spill" | sort -u | head -20

CXXFLAGS="-std=c++17 -O2 -fopenmp -I$ROOT -DHEATSOLVE_HAVE_CUDA=1 -I/usr/local/cuda/include"
LIBS="$BUILD/kernels/libheatsolve_kernels.a -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib -lcublas -lcudart -lpthread"
cat >"$BUILD/rg_bench_main.cpp" <<'EOF'
#include <cstdlib>
#include <string>
#include "app/bench/bench_kernels.hpp"
int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "reduce";
  const std::string prec = argc > 2 ? argv[2] : "float";
  const long long arg = argc > 3 ? std::atoll(argv[3]) : 0;
  if (what == "gemm") return heatsolve::run_gemm_bench(arg > 0 ? int(arg) : 8192, prec, false);
  return heatsolve::run_reduction_bench(arg > 0 ? std::size_t(arg) : (std::size_t(1) << 28), prec,
                                        false);
}
EOF
say "link test and bench binaries"
# shellcheck disable=SC2086
g++ $CXXFLAGS tests/kernels/reduction/test_cuda_reduction.cpp tests/kernels/gemm/test_cuda_gemm.cpp $LIBS -lgtest_main -lgtest \
  -o "$BUILD/rg_tests" >>"$OUT/build.log" 2>&1 &
# shellcheck disable=SC2086
g++ $CXXFLAGS "$BUILD/rg_bench_main.cpp" app/bench/bench_reduce_gemm.cpp $LIBS -lfmt \
  -o "$BUILD/rg_bench" >>"$OUT/build.log" 2>&1 &
wait
[ -x "$BUILD/rg_tests" ] && [ -x "$BUILD/rg_bench" ] || {
  say "link FAILED"
  tail -30 "$OUT/build.log"
  exit 1
}

if [ "$MODE" = all ] || [ "$MODE" = tests ]; then
  say "tests"
  timeout 240 "$BUILD/rg_tests" --gtest_color=no >"$OUT/tests.log" 2>&1
  echo "rg_tests exit code $?" >>"$OUT/tests.log"
  say "compute-sanitizer"
  {
    echo "== racecheck, safe rungs (expect 0 hazards)"
    timeout 90 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 10 \
      "$BUILD/rg_tests" --gtest_filter='CudaReduction/*.SmallAllRungsForSanitizers' 2>&1 | tail -15
    echo "== racecheck, UNSAFE rung-5 control (hazards expected)"
    HS_UNSAFE_POSITIONS=3 timeout 60 compute-sanitizer --tool racecheck --racecheck-report all \
      --print-limit 4 "$BUILD/rg_tests" \
      --gtest_filter='CudaReduction/0.UnsafeRung5ControlInformational' 2>&1 | tail -25
    echo "== memcheck (expect 0 errors)"
    timeout 120 compute-sanitizer --tool memcheck --print-limit 10 "$BUILD/rg_tests" \
      --gtest_filter='CudaReduction/*.SmallAllRungsForSanitizers:CudaGemm/*.RegisterTiledUnalignedPointers:CudaGemm/0.GramColumnsMaskedAndSymmetric' 2>&1 | tail -12
  } >"$OUT/sanitizer.log" 2>&1
fi

if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  say "bench reductions"
  for p in float double; do
    timeout 150 "$BUILD/rg_bench" reduce $p "$ELEMENTS" 2>&1
    echo
  done >"$OUT/bench_reduce.txt"
  say "bench gemm"
  for p in float double; do
    timeout 180 "$BUILD/rg_bench" gemm $p "$GEMM_MAX" 2>&1
    echo
  done >"$OUT/bench_gemm.txt"
fi

if [ "$(elapsed)" -lt 380 ]; then
  say "build heatsolve (CLI smoke test)"
  if timeout $((440 - $(elapsed))) cmake --build "$BUILD" -j16 --target heatsolve >>"$OUT/build.log" 2>&1; then
    "$BUILD/app/heatsolve" bench --reductions --elements 16777216 --json >"$OUT/cli_smoke.json" 2>&1
    echo "heatsolve bench --reductions exit $?" >>"$OUT/build.log"
  else
    say "heatsolve target did not build in time (not ours to fix here)"
  fi
fi

say "done"
echo "===== tests"
grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[==========\]|Failure|exit code|\[ info \]" "$OUT/tests.log" | head -40
echo "===== sanitizer"
grep -E "^==|ERROR SUMMARY|RACECHECK SUMMARY|hazard|PASSED|FAILED" "$OUT/sanitizer.log" | head -20
echo "===== reductions"
cat "$OUT/bench_reduce.txt" 2>/dev/null
echo "===== gemm"
cat "$OUT/bench_gemm.txt" 2>/dev/null
