#!/usr/bin/env bash
# One call on a GPU machine: what an environment switch of the build (SWITCH, e.g.
# HEATSOLVE_NO_BLOCK_SWEEPS=1 or HEATSOLVE_NO_ALLOCATION_BATCH=1) changes, measured in one
# call, the two settings alternating: `heatsolve bench --multigrid` (one GPU, double) and
# `heatsolve run` of the bench's deck (inputs/poisson_multigrid.yaml at N^3, tolerance 1e-10):
# wall, median cycle past the first two, and the seconds of the levels below 128^3 cells
# (summary.json multigrid.seconds.coarse_solve) per cycle.
#   SWITCH=HEATSOLVE_NO_BLOCK_SWEEPS=1 OUT=/tmp/out bash scripts/gpu_env_ab.sh
# Environment: REPEAT (alternations, default 2), N (default 512), SKIP_BUILD=1, GTEST_FILTER
# (also build heatsolve_tests and run these gtests first), SUITE=1 (also the GPU MPI
# equivalence suite on 2 ranks, which may share one GPU).
source "$(dirname "$0")/gpu_common.sh"
export OMP_NUM_THREADS=4
SWITCH=${SWITCH:?SWITCH=NAME=value: the environment switch to compare against its absence}
REPEAT=${REPEAT:-2}
N=${N:-512}
WORK=${WORK:-/tmp/envab}
rm -rf "$WORK"
mkdir -p "$WORK"
[ "${SKIP_BUILD:-0}" = 1 ] ||
  gpu_build heatsolve ${GTEST_FILTER:+heatsolve_tests} ${SUITE:+heatsolve_mpi_tests}

if [ -n "${GTEST_FILTER:-}" ]; then
  stamp "gtests: $GTEST_FILTER"
  timeout 300 "$B/tests/heatsolve_tests" --gtest_filter="$GTEST_FILTER" >"$OUT/gtests.log" 2>&1
  echo "gtests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" "$OUT/gtests.log" | head -20
fi
if [ "${SUITE:-0}" = 1 ]; then
  stamp "MPI equivalence suite (2 ranks, CUDA backend)"
  HEATSOLVE_TEST_BACKEND=cuda timeout 180 mpirun --bind-to none -np 2 \
    "$B/tests/heatsolve_mpi_tests" "$WORK/suite" >"$OUT/mpi_suite.log" 2>&1
  echo "suite rc=$?"
  grep -E "DIFFERS|FAILED|PASSED" "$OUT/mpi_suite.log" | head -10
fi

for rep in $(seq "$REPEAT"); do
  for setting in "" "$SWITCH"; do
    label=${setting:-default}
    stamp "bench --multigrid $N double [$label]"
    # shellcheck disable=SC2086  # an empty setting is no argument
    timeout 120 env $setting "$HS" bench --multigrid --size "$N" --precision double \
      >"$WORK/bench.log" 2>&1 || echo "bench rc=$?"
    grep -E "^double +(multigrid|mg-cg|fmg)|V-cycles to|FMG pass" "$WORK/bench.log"
    for m in v fmg; do
      dir="$WORK/run.$rep.$m.${setting:+off}"
      # shellcheck disable=SC2086
      timeout 120 env $setting "$HS" run inputs/poisson_multigrid.yaml -q \
        --set "grid.cells=[$N,$N,$N]" --set solver.tolerance=1e-10 \
        --set execution.precision=double --set solver.multigrid.cycle=$m \
        --set output.directory="$dir" --set "output.formats=[]" >"$dir.log" 2>&1 ||
        { echo "run rc=$?"; tail -3 "$dir.log"; continue; }
      python3 - "$dir/summary.json" "$label" "$m" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
m = s["multigrid"]
cs = m.get("cycle_seconds", [])
rest = sorted(cs[2:])
med = rest[len(rest) // 2] * 1e3 if rest else float("nan")
unit = m["seconds"]["coarse_solve"] / max(m["cycles"], 1) * 1e3
print(f"  run {sys.argv[3]:<4} [{sys.argv[2]}] wall {s['wall_seconds']:.4f} s, set-up "
      f"{m['setup_seconds']:.4f} s, {m['cycles']} cycles, median {med:.3f} ms, levels below "
      f"128^3 {unit:.3f} ms a cycle, replays {m.get('replays')}")
PY
    done
  done
done
stamp done
