#!/usr/bin/env bash
# One GPU-machine call for Jacobi sweeps through the stencil ladder and the temporal passes:
# the CUDA gtests (every rung and temporal shape bit for bit against single steps, with and
# without a source), then 512^3 Poisson Jacobi (inputs/poisson_manufactured.yaml, 2,000 sweeps, a
# residual check every 100) with kernel auto and temporal, float and double, the source
# generated in the sweeps and (HEATSOLVE_CUDA_STORED_SOURCE=1) read from its field, against the heat
# step (inputs/bench512.yaml, 2,000 steps) in the same call. Logs under $OUT.
#   OUT=/tmp/out bash scripts/gpu_jacobi.sh
source "$(dirname "$0")/gpu_common.sh"
gpu_build heatsolve heatsolve_tests

stamp "CUDA gtests"
timeout 300 "$B/tests/heatsolve_tests" --gtest_filter='Cuda*' >"$OUT/temporal_tests.log" 2>&1
echo "CUDA gtests rc=$?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$OUT/temporal_tests.log" | head -20

rate() {  # rate <label> <deck> <cells per point: steps or iterations> <--set ...>
  local label=$1 deck=$2 d=/tmp/jacobi_$1
  shift 2
  timeout 90 "$HS" run "$deck" -q --overwrite --set execution.backend=cuda \
    --set grid.cells=[512,512,512] --set output.formats=[] --set output.directory=$d "$@" \
    >/dev/null 2>&1
  local rc=$?
  python3 - "$d" "$label" "$rc" <<'PY'
import json, sys
d, label, rc = sys.argv[1:]
try:
    s = json.load(open(d + "/summary.json"))
except Exception:
    print(f"  {label:<24} rc={rc} (no summary)"); sys.exit()
n = s.get("iterations", s.get("steps", 0))
print(f"  {label:<24} rc={rc} {n} sweeps wall={s['wall_seconds']:.3f}s "
      f"rate={s['points_per_second'] / 1e9:.1f} GPt/s residual={s['final_residual']:.6e} "
      f"kernel={s['kernel']}")
PY
}

for p in float double; do
  stamp "512^3 $p: heat step and Jacobi sweeps"
  rate heat-$p-auto inputs/bench512.yaml --set time.steps=2000 --set execution.precision=$p
  rate heat-$p-temporal inputs/bench512.yaml --set time.steps=2000 --set execution.precision=$p \
    --set execution.kernel=temporal
  for k in auto temporal; do
    rate jacobi-$p-$k inputs/poisson_manufactured.yaml --set execution.precision=$p \
      --set execution.kernel=$k --set solver.max_iterations=2000 --set solver.check_every=100
    HEATSOLVE_CUDA_STORED_SOURCE=1 rate jacobi-$p-$k-stored inputs/poisson_manufactured.yaml \
      --set execution.precision=$p --set execution.kernel=$k --set solver.max_iterations=2000 \
      --set solver.check_every=100
  done
done
stamp done
