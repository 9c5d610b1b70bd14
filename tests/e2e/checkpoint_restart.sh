#!/usr/bin/env bash
# Checkpoint/restart, graceful stop and blow-up guard of the heatsolve binary:
#   1. heat: SIGTERM after the first checkpoint -> exit 75; `--restart latest` completes; the
#      HDF5 series (every step, times and data) is bitwise equal to an uninterrupted run's;
#      at most 2 checkpoints are kept, checkpoint_latest names the newest;
#   2. Jacobi (SIGUSR1) and 3. Anderson (SIGTERM), the same;
#   (4. the walltime stop is e2e.walltime, run alone because it is timed;)
#   5. a checkpoint of another deck / precision is refused (exit 2, says what differs);
#   6. blow-up (a 1e308 source): exit 1 with a message, no non-finite checkpoint;
#   7. MPI (when built with it and mpiexec exists): 2 ranks, SIGUSR1 through mpiexec, restart
#      on 2 ranks, bitwise equal to the single-rank run.
# The backend comes from HEATSOLVE_TEST_BACKEND (default cpu; e.g. cuda on a GPU machine).
# usage: checkpoint_restart.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}  # needs h5py + numpy
backend=${HEATSOLVE_TEST_BACKEND:-cpu}

rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
source "$src/tests/e2e/lib/checkpoint_common.sh"

poisson_deck() {  # poisson_deck <file> <name> <method> <iterations>
  cat > "$1" <<EOF
name: $2
problem: {type: poisson, dimensions: 3}
grid: {cells: [32, 32, 32]}
initial: {type: uniform, value: 0.0}
source: {type: sine, amplitude: 29.608813203268074}
boundary: {all: {type: dirichlet, value: 0.0}}
solver: {method: $3, tolerance: 1.0e-300, max_iterations: $4, check_every: 10,
         anderson: {depth: 4, damping: 0.9}}
execution: {backend: $backend, precision: double}
output: {directory: out, every: 200, formats: [hdf5]}
EOF
}

# run_ref <deck> <dir> <expected rc>: the uninterrupted run.
run_ref() {
  "$bin" run "$1" -q --set "output.directory=$2" >"$2.log" 2>&1
  local rc=$?
  check "uninterrupted run of $1 exits $3 (got $rc)" test "$rc" = "$3"
}

# interrupt <deck> <dir> <signal> <expected final rc> [launcher...]: start with checkpoints
# every 40 steps, signal after the first checkpoint, expect 75, restart, expect the rc.
interrupt() {
  local deck=$1 dir=$2 sig=$3 final=$4
  shift 4
  local launcher=("$@")
  "${launcher[@]}" "$bin" run "$deck" -q --set "output.directory=$dir" \
    --set output.checkpoint_every=40 >"$dir.run1.log" 2>&1 &
  local pid=$! waited=0
  while [[ ! -s $dir/checkpoint_latest ]] && kill -0 "$pid" 2>/dev/null && ((waited < 600)); do
    sleep 0.05
    ((waited++))
  done
  kill -s "$sig" "$pid" 2>/dev/null
  wait "$pid"
  local rc=$?
  check "$deck: SIG$sig after the first checkpoint exits 75 (got $rc)" test "$rc" = 75
  check "$deck: says it was interrupted by SIG$sig" grep -q "interrupted by SIG$sig" "$dir.run1.log"
  check "$deck: checkpoint_latest names an existing checkpoint" \
    test -f "$dir/$(cat "$dir/checkpoint_latest" 2>/dev/null)"
  local n
  n=$(ls "$dir"/checkpoint_*.h5 2>/dev/null | wc -l)
  check "$deck: 1..2 checkpoints kept (found $n)" test "$n" -ge 1 -a "$n" -le 2
  check "$deck: no temporary checkpoint left" test -z "$(ls "$dir"/*.tmp* 2>/dev/null)"
  "${launcher[@]}" "$bin" run "$deck" -q --set "output.directory=$dir" \
    --set output.checkpoint_every=40 --restart latest >"$dir.run2.log" 2>&1
  rc=$?
  check "$deck: --restart latest (no --overwrite) exits $final (got $rc)" test "$rc" = "$final"
  [[ $rc == "$final" ]] || cat "$dir.run2.log"
}

# ---- 1. heat, SIGTERM ---------------------------------------------------------------------
heat_deck heat.yaml heat
run_ref heat.yaml ref_heat 0
interrupt heat.yaml run_heat TERM 0
check "heat: restarted series bitwise equal to the uninterrupted one" \
  same_series ref_heat/heat.h5 run_heat/heat.h5

# A hard kill (no finalize) leaves `heat.h5.partial`: the restart continues that series.
"$bin" run heat.yaml -q --set output.directory=run_kill --set output.checkpoint_every=40 \
  >run_kill.run1.log 2>&1 &
pid=$! waited=0
while [[ ! -s run_kill/checkpoint_latest ]] && kill -0 "$pid" 2>/dev/null && ((waited < 600)); do
  sleep 0.05
  ((waited++))
done
kill -s KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check "SIGKILL: a partial series is left" test -f run_kill/heat.h5.partial
"$bin" run heat.yaml -q --set output.directory=run_kill --restart latest >run_kill.run2.log 2>&1
rc=$?
check "SIGKILL: --restart latest exits 0 (got $rc)" test "$rc" = 0
check "SIGKILL: restarted series bitwise equal to the uninterrupted one" \
  same_series ref_heat/heat.h5 run_kill/heat.h5
check "SIGKILL: the moved-aside partial series is removed" \
  test ! -e run_kill/heat.h5.restart-source -a ! -e run_kill/heat.h5.partial

# ---- 2. Jacobi, SIGUSR1 -------------------------------------------------------------------
poisson_deck jacobi.yaml jacobi jacobi 1500
run_ref jacobi.yaml ref_jacobi 3
interrupt jacobi.yaml run_jacobi USR1 3
check "jacobi: restarted series bitwise equal to the uninterrupted one" \
  same_series ref_jacobi/jacobi.h5 run_jacobi/jacobi.h5

# ---- 3. Anderson, SIGTERM -----------------------------------------------------------------
poisson_deck anderson.yaml anderson anderson 600
run_ref anderson.yaml ref_anderson 3
interrupt anderson.yaml run_anderson TERM 3
check "anderson: restarted series bitwise equal to the uninterrupted one" \
  same_series ref_anderson/anderson.h5 run_anderson/anderson.h5

# ---- 5. refusals --------------------------------------------------------------------------
ck=run_heat/$(cat run_heat/checkpoint_latest)
"$bin" run heat.yaml -q --set output.directory=refuse1 --set material.diffusivity=2 \
  --restart "$ck" >refuse1.log 2>&1
rc=$?
check "another deck: exit 2 (got $rc)" test "$rc" = 2
check "another deck: names the differing key" grep -q "/material" refuse1.log
"$bin" run heat.yaml -q --set output.directory=refuse2 --set execution.precision=float \
  --restart "$ck" >refuse2.log 2>&1
rc=$?
check "another precision: exit 2 (got $rc)" test "$rc" = 2
check "another precision: says so" grep -q "precision: checkpoint 'double', deck 'float'" refuse2.log
"$bin" run heat.yaml -q --set output.directory=refuse3 --restart latest >refuse3.log 2>&1
rc=$?
check "--restart latest without checkpoints: exit 2 (got $rc)" test "$rc" = 2
"$bin" run heat.yaml -q --set output.directory=refuse4 --set time.steps=2000 \
  --restart "$ck" >extend.log 2>&1
rc=$?
check "a longer run (time.steps changed) continues from the checkpoint (got $rc)" test "$rc" = 0

# ---- 6. blow-up ---------------------------------------------------------------------------
sed -e 's/^source:.*/source: {type: uniform, value: 1.0e308}/' heat.yaml >blowup.yaml
"$bin" run blowup.yaml -q --set output.directory=blowup --set output.checkpoint_every=1 \
  >blowup.log 2>&1
rc=$?
check "blow-up: exit 1 (got $rc)" test "$rc" = 1
check "blow-up: message says the solution blew up" grep -q "blew up" blowup.log
check "blow-up: every checkpoint left is finite" "$py" finite_checkpoints.py blowup

# ---- 7. MPI -------------------------------------------------------------------------------
mpiexec=$(command -v mpiexec || true)
if [[ -n $mpiexec ]] && "$bin" info | grep -Ei '^ *MPI: *yes' >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
  interrupt heat.yaml run_mpi USR1 0 "$mpiexec" --oversubscribe -np 2
  check "mpi: restarted 2-rank series bitwise equal to the single-rank one" \
    same_series ref_heat/heat.h5 run_mpi/heat.h5
else
  echo "note: MPI part skipped (no mpiexec or heatsolve built without MPI)"
fi

if ((fail)); then
  echo "checkpoint_restart: FAILED"
  exit 1
fi
echo "checkpoint_restart: all checks passed"
