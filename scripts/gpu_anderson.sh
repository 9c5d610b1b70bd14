#!/usr/bin/env bash
# One GPU-machine call for the steady-solve time to solution: inputs/poisson_multigrid.yaml
# (Gaussian source, cold walls, insulated x+, double, tolerance 1e-8) at 64^3 and 256^3 by
# Jacobi, Anderson (depth 6) mixing every sweep and every 16 sweeps, and multigrid. At 256^3
# Jacobi runs a fixed 20,000 sweeps for its rate (to the tolerance it needs ~0.2 n^2
# ln(1/tol) sweeps; the report extrapolates) and Anderson every sweep 2,000 iterations.
# Logs under $OUT.
#   OUT=/tmp/out bash scripts/gpu_anderson.sh
source "$(dirname "$0")/gpu_common.sh"
gpu_build heatsolve

solve() {  # solve <n> <label> <limit s> <--set ...>
  local n=$1 label=$2 limit=$3 d=/tmp/steady_$1_$2
  shift 3
  timeout "$limit" "$HS" run inputs/poisson_multigrid.yaml -q --overwrite \
    --set execution.backend=cuda --set grid.cells=[$n,$n,$n] --set output.formats=[] \
    --set output.directory=$d --set solver.max_iterations=2000000 "$@" >/dev/null 2>&1
  local rc=$?
  python3 - "$d" "$n" "$label" "$rc" <<'PY'
import json, sys
d, n, label, rc = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    s = json.load(open(d + "/summary.json"))
except Exception:
    print(f"  {n}^3 {label:<22} rc={rc} (no summary)"); sys.exit()
it, w = s.get("iterations", 0), s["wall_seconds"]
print(f"  {n}^3 {label:<22} rc={rc} iterations={it} wall={w:.3f}s per-iteration={1e3 * w / max(it, 1):.4f} ms "
      f"residual={s['final_residual']:.2e} kernel={s['kernel']}")
PY
}

for n in 64 256; do
  stamp "steady solves ${n}^3 double"
  if [ $n = 64 ]; then
    solve $n jacobi 60 --set solver.method=jacobi
    solve $n anderson 60 --set solver.method=anderson --set solver.anderson.depth=6
  else
    solve $n jacobi-20000 60 --set solver.method=jacobi --set solver.max_iterations=20000
    solve $n anderson-2000 60 --set solver.method=anderson --set solver.anderson.depth=6 \
      --set solver.max_iterations=2000
  fi
  solve $n anderson-every16 90 --set solver.method=anderson --set solver.anderson.depth=6 \
    --set solver.anderson.every=16
  solve $n multigrid 30 --set solver.method=multigrid
done
stamp done
