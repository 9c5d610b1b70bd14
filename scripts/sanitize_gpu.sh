#!/usr/bin/env bash
# Runs the CUDA tests under compute-sanitizer: memcheck, racecheck and synccheck (quick mode:
# small grids, few steps, every variant and compiled block shape).
#   scripts/sanitize_gpu.sh [path/to/heatsolve_tests] [log dir]
# Exit status: 0 when every tool reports no error (and the tests pass).
set -uo pipefail
TESTS=${1:-build/tests/heatsolve_tests}
LOGDIR=${2:-.}
FILTER=${SANITIZE_FILTER:-'CudaStencil.EveryCompiledShapeFloat:CudaStencil.EveryCompiledShapeDouble:CudaStencil.GhostFillMatchesCpu:CudaReduce.MatchesCpuDouble'}
SAN=${COMPUTE_SANITIZER:-compute-sanitizer}
command -v "$SAN" >/dev/null || SAN=/usr/local/cuda/bin/compute-sanitizer
export HEATSOLVE_GPU_TEST_QUICK=1
status=0
for tool in memcheck racecheck synccheck; do
  log="$LOGDIR/sanitize_${tool}.log"
  extra=()
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  timeout "${SANITIZE_TIMEOUT:-150}" "$SAN" --tool "$tool" "${extra[@]}" --error-exitcode 99 \
    "$TESTS" --gtest_filter="$FILTER" >"$log" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log" | tr '\n' ' ')
  tests=$(grep -E "^\[  (PASSED|FAILED)" "$log" | tr '\n' ' ')
  echo "sanitize $tool: rc=$rc $summary $tests"
  [ $rc -ne 0 ] && status=1
done
exit $status
