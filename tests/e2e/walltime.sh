#!/usr/bin/env bash
# The walltime stop, measured from outside like a batch system: execution.walltime=00:00:04
# on a run far longer than fits, 1.5 s of it spent in the job-script shell before `exec
# heatsolve` -> exit 75 before the limit, a checkpoint, and a restart that finishes the run
# bitwise equal to the same run done in one go (time.steps is not part of the deck hash).
# The batch system counts the shell's time and the dynamic loader's (0.4-1.3 s here), so
# heatsolve does too: its origin is the kernel's process start, not main.
# Timed, so CMake runs it alone (RUN_SERIAL): under a loaded 2-core machine a checkpoint's
# fsync or a scheduler stall can outlast any margin.
# The backend comes from HEATSOLVE_TEST_BACKEND (default cpu; e.g. cuda on a GPU machine).
# usage: walltime.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}  # needs h5py + numpy
backend=${HEATSOLVE_TEST_BACKEND:-cpu}

rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
source "$src/tests/e2e/lib/checkpoint_common.sh"
heat_deck heat.yaml heat

start=$(date +%s.%N)
sh -c 'sleep 1.5; exec "$0" "$@"' "$bin" run heat.yaml -q --set output.directory=run_wall \
  --set execution.walltime=00:00:04 --set time.steps=100000000 --set output.checkpoint_every=40 \
  >run_wall.run1.log 2>&1
rc=$?
elapsed=$("$py" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" \
  "$start" "$(date +%s.%N)")
check "walltime 00:00:04: exits 75 (got $rc) after ${elapsed}s" test "$rc" = 75
# Measured from outside, like the batch system: the process exited before the limit.
check "walltime: stopped before the limit" "$py" -c "import sys; sys.exit(not $elapsed < 4.0)"
check "walltime: message names the walltime" grep -q "interrupted by walltime" run_wall.run1.log
wall_step=$(sed -n 's/^checkpoint_0*\([0-9][0-9]*\)\.h5$/\1/p' run_wall/checkpoint_latest)
wall_steps=$((${wall_step:-0} + 25))
"$bin" run heat.yaml -q --set output.directory=run_wall --set time.steps=$wall_steps \
  --restart latest >run_wall.run2.log 2>&1
rc=$?
check "walltime: restart exits 0 (got $rc)" test "$rc" = 0
"$bin" run heat.yaml -q --set output.directory=ref_wall --set time.steps=$wall_steps \
  >ref_wall.log 2>&1
check "walltime: restarted series bitwise equal to the uninterrupted one" \
  same_series ref_wall/heat.h5 run_wall/heat.h5

if ((fail)); then
  echo "walltime: FAILED"
  exit 1
fi
echo "walltime: all checks passed"
