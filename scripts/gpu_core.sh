#!/usr/bin/env bash
# One GPU session after changes to the solver core or the materials (issues #29, #30): build,
# every gtest (GPU ones included), the stencil bench with its variable-coefficient rows, the
# end-to-end heat rates of bench512 (single steps and temporal), the multigrid bench, a 1:1000
# sphere inclusion at 256^3 (mg-cg on GPU and CPU), and the MPI equivalence suite on the GPU
# (two ranks sharing it). Logs under $OUT (scripts/gpu_common.sh).
#   PHASES="tests bench e2e multigrid materials mpi" (default: all)
source "$(dirname "$0")/gpu_common.sh"
PHASES=${PHASES:-"tests bench e2e multigrid materials mpi"}
has() { [[ " $PHASES " == *" $1 "* ]]; }
gpu_build heatsolve heatsolve_tests heatsolve_mpi_tests
export OMP_WAIT_POLICY=passive

if has tests; then
  stamp tests
  timeout 280 "$B/tests/heatsolve_tests" >"$OUT/tests.log" 2>&1
  echo "tests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure" "$OUT/tests.log" | head -20
fi

if has bench; then
  stamp bench
  for p in float double; do
    timeout 120 "$HS" bench --size 512 --dims 3 --precision $p >>"$OUT/bench.log" 2>&1
  done
  grep -E "stencil bench|copy bandwidth|roofline|^(naive|2.5d|temporal|explicit|jacobi) " "$OUT/bench.log"
fi

if has e2e; then
  stamp e2e
  for spec in "auto auto" "temporal auto"; do
    read -r kern tb <<<"$spec"
    timeout 120 "$HS" run inputs/bench512.yaml --overwrite -q --set execution.kernel=$kern \
      --set execution.time_block=$tb --set output.directory=/tmp/e2e-$kern >/dev/null 2>&1
    python3 -c "import json; s=json.load(open('/tmp/e2e-$kern/summary.json')); print('e2e $kern', s['kernel'], round(s['points_per_second']/1e9,1), 'GPt/s', s['steps'], 'steps')"
  done
fi

if has multigrid; then
  stamp multigrid
  timeout 150 "$HS" bench --multigrid --size 512 --precision double >"$OUT/multigrid.log" 2>&1
  grep -vE "^\s*$" "$OUT/multigrid.log" | tail -12
fi

if has materials; then
  stamp materials
  deck=/tmp/sphere.yaml
  cat >$deck <<'DECK'
name: sphere
problem: {type: poisson, dimensions: 3}
grid: {cells: [256, 256, 256]}
material: {conductivity: 1.0}
materials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.3}}, conductivity: 1000.0}]
source: {type: uniform, value: 1.0}
boundary: {all: {type: dirichlet, value: 0.0}}
solver: {method: mg-cg, tolerance: 1.0e-8}
output: {directory: /tmp/sphere, formats: []}
DECK
  for be in cuda cpu; do
    timeout 150 "$HS" run $deck --overwrite -q --set execution.backend=$be >/dev/null 2>&1
    python3 -c "import json; s=json.load(open('/tmp/sphere/summary.json')); m=s['multigrid']; print('sphere 256^3 1:1000 $be', s['backend_description'], m['cycles'], 'mg-cg iterations, factor', round(m['mean_convergence_factor'],3), round(s['wall_seconds'],3), 's')"
  done
fi

if has mpi; then
  stamp mpi
  HEATSOLVE_TEST_BACKEND=cuda timeout 200 mpirun -np 2 --oversubscribe "$B/tests/heatsolve_mpi_tests" \
    /tmp/mpi-np2 >"$OUT/mpi.log" 2>&1
  echo "mpi np2 (one GPU) rc=$?"
  grep -cE "bitwise equal" "$OUT/mpi.log"
  grep -E "DIFFERS|FAIL|materials" "$OUT/mpi.log" | head -12
fi
stamp done
