#!/usr/bin/env bash
# One GPU-machine session that validates the whole CUDA side: build (preset gpu-machine),
# every GPU test, multi-rank GPU runs, the benches, end-to-end throughput, MPI scaling and
# compute-sanitizer. Logs under $OUT (at most 8 files); a short summary is printed last.
#   OUT=/tmp/out bash scripts/gpu_validate.sh [stage ...]
# Stages (default: all, in this order): build tests mpi bench e2e scaling sanitize. The
# build directory persists on the machine, so a later call can run the remaining stages.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
STAGES=${*:-build tests mpi bench e2e scaling sanitize}
exec > >(tee -a "$OUT/summary.log") 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=4
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0))s] $*"; }
want() { [[ " $STAGES " == *" $1 "* ]]; }
B=build/gpu-machine
HS=$B/app/heatsolve
NGPU=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv

if want build; then
  stamp build
  cmake --preset gpu-machine >"$OUT/build.log" 2>&1 &&
    cmake --build --preset gpu-machine -j "$(nproc)" >>"$OUT/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
  grep -E "spill|stack frame" "$OUT/build.log" | grep -v " 0 bytes" | head -5
fi

if want tests; then
  stamp "GPU tests"
  timeout 300 "$B/tests/heatsolve_tests" --gtest_filter='Cuda*' >"$OUT/tests.log" 2>&1
  echo "gpu tests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" "$OUT/tests.log" | head -20
fi

if want mpi; then
  stamp "MPI on GPUs"
  BACKEND=cuda PYTHON=python3 timeout 120 bash tests/mpi/test_mpi_cli.sh "$HS" mpirun \
    /tmp/mpicli >>"$OUT/tests.log" 2>&1
  echo "mpi.cli (cuda, up to 4 ranks on $NGPU GPUs) rc=$?"
  PYTHON=python3 timeout 300 bash tests/mpi/gpu_halo_modes.sh "$HS" /tmp/halomodes \
    >>"$OUT/tests.log" 2>&1
  echo "gpu_halo_modes (2 ranks on $NGPU GPUs: staged/ipc x overlap, bitwise) rc=$?"
  grep -E "^FAILED" "$OUT/tests.log" | head -10
fi

if want bench; then
  stamp benches
  {
    for spec in "512 3 float" "512 3 double" "8192 2 float" "8192 2 double"; do
      set -- $spec
      timeout 150 "$HS" bench --size "$1" --dims "$2" --precision "$3" --all-shapes
    done
    timeout 120 "$HS" bench --reductions --precision float
    timeout 120 "$HS" bench --reductions --precision double
    timeout 240 "$HS" bench --gemm --precision float
    timeout 240 "$HS" bench --gemm --precision double
  } >"$OUT/bench.log" 2>&1
  cat "$OUT/bench.log" | grep -vE "^\s*$" | head -120
fi

if want e2e; then
stamp "end-to-end 512^3"
run_deck() {  # run_deck <dir> <ranks> <sets...>
  local dir=$1 np=$2
  shift 2
  rm -rf "$dir"
  if [ "$np" -eq 1 ]; then
    "$HS" run inputs/bench512.yaml -q --set output.directory="$dir" "$@" >/dev/null 2>&1
  else
    mpirun -np "$np" --bind-to none "$HS" run inputs/bench512.yaml -q --set output.directory="$dir" "$@" >/dev/null 2>&1
  fi
  python3 - "$dir/summary.json" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print("no summary:", e); sys.exit(0)
extra = {k: s[k] for k in s if k.endswith("_seconds") and k != "wall_seconds"}
print(f"ranks={s.get('ranks')} cells={s['cells']} kernel={s['kernel']} steps={s['steps']} "
      f"wall={s['wall_seconds']:.3f}s  {s['points_per_second']/1e9:.1f} GPt/s  {extra}")
PY
}
{
  echo "auto:";      run_deck /tmp/e2e_auto 1
  echo "temporal:";  run_deck /tmp/e2e_temporal 1 --set execution.kernel=temporal
  echo "double:";    run_deck /tmp/e2e_double 1 --set execution.precision=double
  echo "anderson 128^3 poisson (gpu):"
  rm -rf /tmp/and && "$HS" run inputs/poisson_manufactured.yaml -q --set grid.cells=[128,128,128] \
    --set solver.method=anderson --set execution.backend=cuda --set output.directory=/tmp/and \
    --set output.formats=[] ; echo "rc=$?"
  python3 -c "import json; s=json.load(open('/tmp/and/summary.json')); print('anderson iterations', s['iterations'], 'residual', s['final_residual'], 'wall', s['wall_seconds'])"
  rm -rf /tmp/jac && timeout 200 "$HS" run inputs/poisson_manufactured.yaml -q --set grid.cells=[128,128,128] \
    --set execution.backend=cuda --set output.directory=/tmp/jac --set output.formats=[] ; echo "rc=$?"
  python3 -c "import json; s=json.load(open('/tmp/jac/summary.json')); print('jacobi iterations', s['iterations'], 'residual', s['final_residual'], 'wall', s['wall_seconds'])"
} 2>&1 | tee "$OUT/e2e.log"
fi

if want scaling; then
  stamp "scaling"
  bash scripts/gpu_scaling.sh "$HS" "$NGPU" /tmp/scaling 2>&1 | tee "$OUT/scaling.log"
fi

if want sanitize; then
  stamp sanitize
  mkdir -p /tmp/san
  SANITIZE_TIMEOUT=120 bash scripts/sanitize_gpu.sh "$B/tests/heatsolve_tests" /tmp/san
  cat /tmp/san/*.log >"$OUT/sanitize.log" 2>/dev/null
fi
stamp done
