#!/usr/bin/env bash
# Fault injection: sequences of graceful stops, hard kills and restarts, each compared step by
# step with an uninterrupted run (issue #31, items 1 and 2; docs/robustness.md). Kills land at
# exact points through HEATSOLVE_TEST_FAULT (io/run_identity.hpp): right after a checkpoint
# is published, or in the middle of an output step (data written, not flushed), including
# the steps a restart copies; a last sequence kills at random times. After every sequence
# the HDF5 series, .xdmf, .pvd and every .vti equal the uninterrupted run's byte for byte,
# and no temporary, .partial or .restart-source file is left.
#   1. the issue's chain: SIGTERM, restart, SIGKILL after a newer checkpoint, restart
#   2. many kills, one in the middle of an output step, one graceful stop among them
#   3. restarts killed while copying the series (twice), then completed
#   4. a restart after a killed --overwrite run of another deck takes nothing of the
#      replaced run's series
#   5. a fresh start over a run that can be continued: refused without --overwrite;
#      --overwrite starts afresh
#   6. kills at random times (SIGKILL after 0.25-0.85 s), restarted until done
#   7. MPI (when available): 2 ranks killed after a checkpoint, restarted on 2 ranks
# usage: fault_restart.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}  # needs h5py + numpy
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
source "$src/tests/e2e/lib/fault_common.sh"

fault_deck deck.yaml heat
hs ref.log run deck.yaml -q --set output.directory=ref
check "the uninterrupted run exits 0 (got $rc)" test "$rc" = 0
h5only=(--set 'output.formats=[hdf5]')  # the same run without VTK output
hs ref_h5.log run deck.yaml -q --set output.directory=ref_h5 "${h5only[@]}"
check "the uninterrupted run without VTK exits 0 (got $rc)" test "$rc" = 0

# step <dir> <expected rc> <fault spec or -> [extra args...]: one run of a sequence.
step() {
  local dir=$1 want=$2 fault=$3
  shift 3
  local args=(run deck.yaml -q --set "output.directory=$dir" "$@")
  [[ -f $dir/checkpoint_latest ]] && args+=(--restart latest)
  if [[ $fault == - ]]; then
    hs "$dir.$((++n)).log" "${args[@]}"
  else
    HEATSOLVE_TEST_FAULT=$fault hs "$dir.$((++n)).log" "${args[@]}"
  fi
  if [[ $rc != "$want" ]]; then
    bad "$dir: run $n ($fault) exits $want (got $rc)"
    cat "$dir.$n.log"
  fi
}

# ---- 1. the issue's chain -------------------------------------------------------------------
n=0
step chain 75 checkpoint@20:TERM
step chain 137 checkpoint@60:KILL
step chain 0 -
check "1. SIGTERM, restart, SIGKILL, restart: every step of the uninterrupted run" \
  same_outputs ref chain heat

# ---- 2. many kills --------------------------------------------------------------------------
n=0
step many 137 checkpoint@10:KILL
step many 137 checkpoint@30:KILL
step many 137 series@45:KILL  # in the middle of output step 45
step many 75 checkpoint@70:TERM
step many 137 checkpoint@90:KILL
step many 137 series@115:KILL
step many 0 -
check "2. five kills and a stop: every step of the uninterrupted run" same_outputs ref many heat

# ---- 3. killed while copying the series -----------------------------------------------------
n=0
step copying 137 checkpoint@40:KILL
step copying 137 series@15:KILL  # the restart copies steps 0..40: killed at 15
step copying 137 series@35:KILL  # and again, further on
step copying 0 -
check "3. restarts killed while copying: every step of the uninterrupted run" \
  same_outputs ref copying heat

# ---- 4. --overwrite of another deck, killed, restarted -----------------------------------------
fault_deck other.yaml heat 7.5  # another source: another deck hash
hs overwrite.0.log run other.yaml -q --set output.directory=overwrite
check "4. the replaced run (another deck) finishes (got $rc)" test "$rc" = 0
HEATSOLVE_TEST_FAULT=checkpoint@40:KILL hs overwrite.1.log run deck.yaml -q \
  --set output.directory=overwrite --overwrite
check "4. the --overwrite run is killed after its checkpoint 40 (got $rc)" test "$rc" = 137
hs overwrite.2.log run deck.yaml -q --set output.directory=overwrite --restart latest
check "4. its restart exits 0 (got $rc)" test "$rc" = 0
check "4. ... with no step of the replaced run's series" same_outputs ref overwrite heat

# ---- 5. a fresh start over a run that can be continued ------------------------------------------
# (HDF5 only: a .pvd, written after every step, is a previous result that refuses by itself.)
HEATSOLVE_TEST_FAULT=checkpoint@50:KILL hs fresh.1.log run deck.yaml -q \
  --set output.directory=fresh "${h5only[@]}"
hs fresh.2.log run deck.yaml -q --set output.directory=fresh "${h5only[@]}"
check "5. a fresh start over a killed run's checkpoints is refused with exit 2 (got $rc)" \
  test "$rc" = 2
check "5. ... in one error line that says how to continue" \
  one_error_line fresh.2.log "continue it with --restart latest, or pass --overwrite"
check "5. ... and touches nothing" test -f fresh/heat.h5.partial -a -f fresh/checkpoint_00000050.h5
hs fresh.3.log run deck.yaml -q --set output.directory=fresh "${h5only[@]}" --overwrite
check "5. --overwrite starts afresh (got $rc)" test "$rc" = 0
check "5. ... equal to the uninterrupted run" same_outputs ref_h5 fresh heat
check "5. ... and the killed run's checkpoints are gone" test ! -e fresh/checkpoint_00000050.h5

# ---- 6. kills at random times ------------------------------------------------------------------
# A longer deck (~1 s uninterrupted), killed at random until a run gets through.
fault_deck long.yaml long
sed -i 's/cells: \[12, 12, 12\]/cells: [20, 20, 20]/; s/steps: 120/steps: 400/; s/every: 5,/every: 20,/; s/checkpoint_every: 10/checkpoint_every: 25/' long.yaml
hs long_ref.log run long.yaml -q --set output.directory=long_ref
check "6. the uninterrupted long run exits 0 (got $rc)" test "$rc" = 0
RANDOM=31  # reproducible
# A run killed after its first output but before its first checkpoint leaves results and
# nothing to continue from: the next attempt starts afresh (--overwrite), as a user would.
restart_or_overwrite() {
  if [[ -f random/checkpoint_latest ]]; then args+=(--restart latest); else args+=(--overwrite); fi
}
for attempt in $(seq 8); do
  args=(run long.yaml -q --set output.directory=random)
  restart_or_overwrite
  "$bin" "${args[@]}" >"random.$attempt.log" 2>&1 &
  pid=$!
  sleep "$(printf '0.%02d' $((RANDOM % 60 + 25)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
  [[ $rc == 0 ]] && break
  [[ $rc == 137 ]] || { bad "6. attempt $attempt exits $rc"; cat "random.$attempt.log"; break; }
  echo "  attempt $attempt killed; checkpoint_latest: $(cat random/checkpoint_latest 2>/dev/null)"
done
if [[ $rc != 0 ]]; then
  args=(run long.yaml -q --set output.directory=random)
  restart_or_overwrite
  hs random.last.log "${args[@]}"
fi
check "6. after $attempt random kills the run completes (got $rc)" test "$rc" = 0
check "6. ... equal to the uninterrupted run" same_outputs long_ref random long

# ---- 7. MPI ----------------------------------------------------------------------------------------
mpiexec=$(command -v mpiexec || true)
if [[ -n $mpiexec ]] && "$bin" info | grep -Ei '^ *MPI: *yes' >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # HDF5 only: the VTK series of 2 ranks is made of pieces.
  HEATSOLVE_TEST_FAULT=checkpoint@30:KILL "$mpiexec" --oversubscribe -np 2 \
    -x HEATSOLVE_TEST_FAULT "$bin" run deck.yaml -q --set output.directory=mpi "${h5only[@]}" \
    >mpi.1.log 2>&1
  rc=$?
  check "7. 2 ranks, killed after checkpoint 30 (exit $rc)" test "$rc" != 0
  "$mpiexec" --oversubscribe -np 2 "$bin" run deck.yaml -q --set output.directory=mpi \
    "${h5only[@]}" --restart latest >mpi.2.log 2>&1
  rc=$?
  check "7. restarted on 2 ranks (got $rc)" test "$rc" = 0
  [[ $rc == 0 ]] || cat mpi.2.log
  check "7. ... fields equal to the single-rank uninterrupted run" same_outputs ref_h5 mpi heat fields-only
  "$mpiexec" --oversubscribe -np 2 "$bin" run deck.yaml -q --set output.directory=mpi_ref \
    "${h5only[@]}" >mpi.ref.log 2>&1
  check "7. ... diagnostics equal to the uninterrupted 2-rank run" cmp mpi_ref/diagnostics.csv mpi/diagnostics.csv
else
  echo "note: MPI part skipped (no mpiexec or heatsolve built without MPI)"
fi

if ((fail)); then
  echo "fault_restart: FAILED"
  exit 1
fi
echo "fault_restart: all checks passed"
