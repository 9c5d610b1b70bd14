#!/usr/bin/env bash
# One GPU session for temporal blocking (kernel: temporal): scripts/gpu_stencil.sh's build,
# temporal GPU tests (full mode), temporal bench rows (512^3 float twice, all shapes; 512^3
# double and 8192^2 defaults), end-to-end runs per time_block, sanitizers; then the sustained
# bench (--sustain 2), a 6000-step end-to-end run, and ncu on one kernel instance (details and
# per-opcode summary, scripts/ncu_sass_summary.py). At most 8 files under $OUT.
#   NCU_TEMPORAL: mangled-name regex of the instance to profile (default: 3D float k = 3 staged
#   32x8 ry4 vx2, the 3D float default).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
export OUT
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
HS=build/gpu-machine/app/heatsolve
PHASES="tests bench e2e sanitize" \
  TESTS_FILTER='CudaTemporal*:Temporal*:CudaSolver.*:CudaStencil.AutoPicks*' \
  BENCH="512 3 float all;512 3 float all;512 3 double;8192 2 float;8192 2 double" \
  HEATSOLVE_BENCH_VARIANTS=temporal \
  E2E_RUNS="auto:auto temporal:auto temporal:2 temporal:3 temporal:4" \
  SANITIZE_TIMEOUT=150 \
  SANITIZE_FILTER='CudaTemporal.EveryShapeMatchesSingleStepsFloat:CudaTemporal.MemoryTwinMovesEveryCellFloat:CudaTemporal.BackendStepsDouble' \
  bash scripts/gpu_stencil.sh >/dev/null 2>&1
[ -x "$HS" ] || { tail -30 "$OUT/summary.log"; exit 1; }
grep -E "rc=|^\[  (PASSED|FAILED)|Failure|sanitize " "$OUT/summary.log"
grep -E "^SPEC|^copy|^temporal" "$OUT/bench.log" | cut -c1-112
cat "$OUT/e2e.log"
timeout 90 "$HS" bench --size 512 --dims 3 --precision float --variants temporal --sustain 2 \
  >"$OUT/sustain.log" 2>&1
grep -E "^copy|^temporal" "$OUT/sustain.log" | cut -c1-112
timeout 90 "$HS" run inputs/bench512.yaml --overwrite -q --set execution.kernel=temporal \
  --set time.steps=6000 --set output.directory=/tmp/long >/dev/null 2>&1
python3 -c "import json;j=json.load(open('/tmp/long/summary.json'));print('e2e 6000 steps',j.get('kernel'),'GPt/s',j['points_per_second']/1e9)" |
  tee -a "$OUT/e2e.log"
if command -v ncu >/dev/null; then
  k=${NCU_TEMPORAL:-temporal_partial_kernelIfLi3ELi3ELi8ELi4ELi2ELb1ELb0}
  timeout 150 ncu --clock-control none --set full --import-source no --kernel-name-base mangled \
    -k "regex:$k" --launch-skip 3 --launch-count 1 -f -o /tmp/temporal \
    "$HS" bench --size 512 --dims 3 --precision float --variants temporal >/tmp/ncu.run 2>&1 ||
    tail -3 /tmp/ncu.run
  ncu --import /tmp/temporal.ncu-rep --page details >"$OUT/ncu_temporal.txt" 2>&1
  ncu --import /tmp/temporal.ncu-rep --page source --csv --print-source sass >/tmp/temporal.csv 2>&1
  python3 scripts/ncu_sass_summary.py /tmp/temporal.csv 14 | tee -a "$OUT/ncu_temporal.txt"
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Executed Instructions  |Registers Per|Achieved Occupancy" \
    "$OUT/ncu_temporal.txt"
fi
