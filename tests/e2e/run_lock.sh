#!/usr/bin/env bash
# A run owns its output directory (io/run_lock.*, `<directory>/.heatsolve.lock`):
#   1. while a long run holds the directory, a second run into it exits 2 before writing
#      anything, naming the holder (host, pid); so do `--overwrite` and `--restart latest`
#      (and, when built with MPI and mpiexec exists, a 2-rank run: every rank exits 2, the
#      message is printed once);
#   2. SIGKILL of the holder leaves a stale lock: the next run takes it over with a warning
#      naming the dead holder and succeeds; after its normal exit the lock file is empty and
#      the next run succeeds without a warning;
#   3. a graceful stop (SIGTERM, exit 75) releases the lock too: `--restart latest` succeeds.
# usage: run_lock.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
export OMP_NUM_THREADS=1
fail=0
check() {  # check <description> <command...>
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}
has() { grep -q -- "$2" "$1"; }
hdf5=no
"$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null && hdf5=yes
formats='[]'
[[ $hdf5 == yes ]] && formats='[hdf5]'
host=$(uname -n)

# 2D heat, far more steps than the test lets it run: the holder is stopped by a signal.
cat >deck.yaml <<EOF
name: lock
problem: {type: heat, dimensions: 2}
grid: {cells: [128, 128]}
time: {steps: 100000000, dt: auto, safety: 0.9}
initial: {type: sine, amplitude: 1.0}
boundary: {all: {type: dirichlet, value: 0.0}}
execution: {backend: cpu, precision: double}
output: {directory: out, every: 5000, formats: $formats}
EOF
short=(--set time.steps=20)  # runs that are meant to finish

# start_holder <log>: starts the long run in the background (pid in $holder) and waits until
# the lock file names it.
start_holder() {
  "$bin" run deck.yaml -q >"$1" 2>&1 &
  holder=$!
  local waited=0
  until grep -qx "pid=$holder" out/.heatsolve.lock 2>/dev/null; do
    if ! kill -0 "$holder" 2>/dev/null || ((waited >= 600)); then
      echo "FAILED: the long run (pid $holder) did not take the lock"; cat "$1"; exit 1
    fi
    sleep 0.05
    ((waited++))
  done
}

# refused <name> <args...>: a run into the held directory exits 2 naming the holder, and
# writes nothing (its own deck name, so that its files would be recognisable).
refused() {
  local name=$1
  shift
  "$@" --set name=second >"$name.log" 2>&1
  local rc=$?
  check "$name: exit 2 while the directory is held (got $rc)" test "$rc" = 2
  check "$name: says the directory is in use" has "$name.log" "is in use by another run"
  check "$name: names the holder's pid" has "$name.log" "pid $holder"
  check "$name: names the holder's host" has "$name.log" "host $host"
  check "$name: names the holder's start time" has "$name.log" "started 20"
  check "$name: no HDF5 lock error" test -z "$(grep -i 'unable to lock\|HDF5' "$name.log")"
  check "$name: wrote nothing" test -z "$(ls -A out | grep -v '^lock\|^checkpoint\|^\.heatsolve\.lock$')"
  [[ $rc == 2 ]] || cat "$name.log"
}

# ---- 1. a live holder -----------------------------------------------------------------------
start_holder holder1.log
check "the lock file names the holder's host" grep -qx "host=$host" out/.heatsolve.lock
refused second "$bin" run deck.yaml "${short[@]}"
refused overwrite "$bin" run deck.yaml "${short[@]}" --overwrite
refused restart "$bin" run deck.yaml "${short[@]}" --restart latest
mpiexec=$(command -v mpiexec || true)
if [[ -n $mpiexec ]] && "$bin" info | grep -Ei '^ *MPI: *yes' >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  refused mpi timeout 60 "$mpiexec" --oversubscribe -np 2 "$bin" run deck.yaml "${short[@]}"
  check "mpi: the refusal is printed once" test "$(grep -c 'in use by another run' mpi.log)" = 1
else
  echo "note: MPI part skipped (no mpiexec or heatsolve built without MPI)"
fi
check "the holder is still running" kill -0 "$holder"
check "the refused runs left the holder's information" grep -qx "pid=$holder" out/.heatsolve.lock

# ---- 2. SIGKILL: a stale lock ---------------------------------------------------------------
kill -s KILL "$holder"
wait "$holder" 2>/dev/null
check "SIGKILL leaves the dead holder's information" grep -qx "pid=$holder" out/.heatsolve.lock
"$bin" run deck.yaml -q "${short[@]}" >takeover.log 2>&1
rc=$?
check "a new run takes over the stale lock and succeeds (got $rc)" test "$rc" = 0
check "takeover: warns about the stale lock" has takeover.log "taking over the lock"
check "takeover: the warning names the dead holder" has takeover.log "pid $holder"
[[ $rc == 0 ]] || cat takeover.log
check "a normal exit empties the lock file" test -f out/.heatsolve.lock -a ! -s out/.heatsolve.lock
"$bin" run deck.yaml -q "${short[@]}" --overwrite >after.log 2>&1
rc=$?
check "after a normal exit the next run succeeds (got $rc)" test "$rc" = 0
check "after a normal exit: no stale-lock warning" test -z "$(grep 'taking over' after.log)"
[[ $rc == 0 ]] || cat after.log

# ---- 3. a graceful stop releases the lock ---------------------------------------------------
if [[ $hdf5 == yes ]]; then
  rm -rf out
  start_holder holder3.log
  kill -s TERM "$holder"
  wait "$holder"
  rc=$?
  check "SIGTERM: the holder exits 75 (got $rc)" test "$rc" = 75
  check "SIGTERM: the lock file is empty" test -f out/.heatsolve.lock -a ! -s out/.heatsolve.lock
  "$bin" run deck.yaml -q --restart latest --set "time.steps=$(($(sed -n \
    's/^checkpoint_0*\([0-9][0-9]*\)\.h5$/\1/p' out/checkpoint_latest) + 20))" >restart3.log 2>&1
  rc=$?
  check "SIGTERM: --restart latest succeeds (got $rc)" test "$rc" = 0
  check "SIGTERM: no stale-lock warning" test -z "$(grep 'taking over' restart3.log)"
  [[ $rc == 0 ]] || cat holder3.log restart3.log
else
  echo "note: graceful-stop part skipped (heatsolve built without HDF5: no checkpoints)"
fi

if ((fail)); then
  echo "run_lock: FAILED"
  exit 1
fi
echo "run_lock: all checks passed"
