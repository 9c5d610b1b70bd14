#!/usr/bin/env bash
# One GPU-machine call for the multigrid work: build (preset gpu-machine), the GPU tests,
# multigrid and implicit heat runs on the GPU against the CPU, 2 ranks sharing the GPU, the
# multigrid bench and the stencil bench (the layout move changed no figures). Logs under $OUT.
#   OUT=/tmp/out bash scripts/gpu_multigrid.sh
source "$(dirname "$0")/gpu_common.sh"
export OMP_NUM_THREADS=8
gpu_build heatsolve heatsolve_tests

stamp "GPU tests"
timeout 240 "$B/tests/heatsolve_tests" --gtest_filter='Cuda*:*Transfer*:*Multigrid*:CoarseDirect*' \
  >"$OUT/tests.log" 2>&1
echo "gpu tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" "$OUT/tests.log" | head -20

stamp "multigrid runs: GPU vs CPU"
summary() {
  python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
m = s.get("multigrid", {})
print(f"  {s['backend']} {s['precision']} ranks={s['ranks']} iters/steps={s.get('iterations', s.get('steps'))} "
      f"cycles={m.get('cycles')} factor={m.get('mean_convergence_factor', 0):.3f} "
      f"residual={s['final_residual']:.3e} wall={s['wall_seconds']:.3f}s heat={s['total_heat']:.12e}")
PY
}
{
  for prec in float double; do
    for be in cpu cuda; do
      d=/tmp/mg_${be}_$prec
      timeout 60 "$HS" run inputs/poisson_multigrid.yaml -q --overwrite --set execution.backend=$be \
        --set execution.precision=$prec --set grid.cells=[64,64,64] \
        --set solver.tolerance=$([ $prec = float ] && echo 1e-5 || echo 1e-10) \
        --set output.directory=$d --set output.formats=[]
      echo "poisson_multigrid 64^3 $be $prec rc=$?"; summary $d
    done
  done
  for be in cpu cuda; do
    d=/tmp/imp_$be
    timeout 60 "$HS" run inputs/heat_implicit.yaml -q --overwrite --set execution.backend=$be \
      --set output.directory=$d --set output.formats=[]
    echo "heat_implicit $be rc=$?"; summary $d
  done
  d=/tmp/mg_np2
  timeout 90 mpirun -np 2 --oversubscribe "$HS" run inputs/poisson_multigrid.yaml -q --overwrite \
    --set execution.backend=cuda --set grid.cells=[64,64,64] --set solver.tolerance=1e-10 \
    --set output.directory=$d --set output.formats=[]
  echo "poisson_multigrid 64^3 cuda 2 ranks on one GPU rc=$?"; summary $d
  for m in multigrid mg-cg; do
    d=/tmp/mg512_$m
    timeout 60 "$HS" run inputs/poisson_multigrid.yaml -q --overwrite --set execution.backend=cuda \
      --set execution.precision=float --set grid.cells=[512,512,512] --set solver.method=$m \
      --set solver.tolerance=1e-4 --set output.directory=$d --set output.formats=[]
    echo "poisson 512^3 float $m rc=$?"; summary $d
    d=/tmp/mg512d_$m
    timeout 60 "$HS" run inputs/poisson_multigrid.yaml -q --overwrite --set execution.backend=cuda \
      --set execution.precision=double --set grid.cells=[512,512,512] --set solver.method=$m \
      --set solver.tolerance=1e-10 --set output.directory=$d --set output.formats=[]
    echo "poisson 512^3 double $m rc=$?"; summary $d
  done
} 2>&1 | tee "$OUT/runs.log"

stamp "bench --multigrid"
timeout 150 "$HS" bench --multigrid --size 512 --backend cuda 2>&1 | tee "$OUT/bench_mg.log"
timeout 60 "$HS" bench --multigrid --size 256 --backend cuda --precision double 2>&1 |
  tee -a "$OUT/bench_mg.log"
stamp "stencil bench (512^3 float)"
timeout 90 "$HS" bench --size 512 --precision float --variants 2.5d-tma,2.5d-register,temporal 2>&1 | tee "$OUT/bench_stencil.log"
stamp done
