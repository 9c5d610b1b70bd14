#!/usr/bin/env bash
# Fault injection: damaged checkpoints and series (issue #31, item 3; docs/robustness.md).
# A run is killed after its checkpoint 60 (checkpoints 50 and 60 kept, the partial series
# holding steps 0..60), then bytes are flipped:
#   a. in checkpoint 60's field: `--restart latest` says so and falls back to checkpoint 50,
#      ending as the uninterrupted run; b. `--restart <that file>` is refused (exit 2, one
#      error line naming it), nothing touched;
#   c. at 24 places all over checkpoint 60: every restart from it is refused (exit 2, one
#      error line naming it) or ends as the uninterrupted run, never anything else;
#   d. in series step 55 (after checkpoint 50): latest falls back to checkpoint 50;
#   e. in series step 15 (before both checkpoints): refused (exit 2) naming the step;
#   f. a checkpoint without /fields/u or without /fields: exit 2, nothing written;
#   g. HDF5 crashing (SIGABRT) while the restart reads checkpoint 60 (the test-only hook
#      HEATSOLVE_TEST_FAULT=read-checkpoint@60:ABRT, in the child that examines it): latest
#      says so and falls back to checkpoint 50, ending as the uninterrupted run; h. the same
#      with `--restart <that file>`: exit 2, one error line, nothing touched; i. HDF5 crashing
#      while it reads the series for checkpoint 60: latest falls back to checkpoint 50.
# usage: fault_corruption.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}  # needs h5py + numpy
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
source "$src/tests/e2e/lib/fault_common.sh"

formats='[hdf5]'  # faster; VTK is covered by fault_restart
fault_deck deck.yaml heat
hs ref.log run deck.yaml -q --set output.directory=ref
check "the uninterrupted run exits 0 (got $rc)" test "$rc" = 0
HEATSOLVE_TEST_FAULT=checkpoint@60:KILL hs base.log run deck.yaml -q --set output.directory=base
check "the run to damage is killed after checkpoint 60 (got $rc)" test "$rc" = 137
check "... leaving checkpoints 50 and 60 and a partial series" \
  test -f base/checkpoint_00000050.h5 -a -f base/checkpoint_00000060.h5 -a -f base/heat.h5.partial

# flip <file> <dataset or -> <offset>: flips one bit of <file> at <offset> (from the start of
# the dataset's first chunk when a dataset is named).
cat >flip.py <<'PY'
import sys
import h5py
path, dataset, offset = sys.argv[1], sys.argv[2], int(sys.argv[3])
if dataset != "-":
    with h5py.File(path, "r") as f:
        offset += f[dataset].id.get_chunk_info(0).byte_offset
with open(path, "r+b") as f:
    f.seek(offset)
    b = f.read(1)
    f.seek(offset)
    f.write(bytes([b[0] ^ 0x10]))
PY
flip() { "$py" flip.py "$@"; }
fresh_copy() { rm -rf "$1" && cp -a base "$1"; }
digest() { sha256sum "$1" | cut -d' ' -f1; }
# falls_back <case> <what> <warning pattern>: `--restart latest` in the case's copy exits 0,
# warns (grep pattern) and ends as the uninterrupted run (HEATSOLVE_TEST_FAULT as the caller
# sets it).
falls_back() {
  local c=$1 what=$2 warning=$3
  hs "$c.log" run deck.yaml -q --set output.directory="$c" --restart latest
  check "$c. $what: latest exits 0 (got $rc)" test "$rc" = 0
  check "$c. ... saying so and falling back to checkpoint 50" grep -q "$warning" "$c.log"
  check "$c. ... ending as the uninterrupted run" same_outputs ref "$c" heat
}
# refused <case> <what> <error text> <run arguments...>: the restart exits 2 in one error line
# holding <error text>, and the series is untouched.
refused() {
  local c=$1 what=$2 text=$3 before
  shift 3
  before=$(digest "$c/heat.h5.partial")
  hs "$c.log" run deck.yaml -q --set output.directory="$c" "$@"
  check "$c. $what: exit 2 (got $rc)" test "$rc" = 2
  check "$c. ... in one error line naming it" one_error_line "$c.log" "$text"
  check "$c. ... touching nothing" \
    test "$(digest "$c/heat.h5.partial")" = "$before" -a ! -e "$c/heat.h5.restart-source"
}

# ---- a, b: a damaged field ------------------------------------------------------------------------
fresh_copy a
flip a/checkpoint_00000060.h5 fields/u 1000
falls_back a "a damaged checkpoint 60" \
  "warning: checkpoint 'a/checkpoint_00000060.h5' is damaged: .*falling back to the checkpoint before it, 'a/checkpoint_00000050.h5'"

fresh_copy b
flip b/checkpoint_00000060.h5 fields/u 1000
refused b "--restart <damaged checkpoint>" "checkpoint 'b/checkpoint_00000060.h5' is damaged" \
  --restart b/checkpoint_00000060.h5

# ---- c: flipped bytes all over a checkpoint ----------------------------------------------------------
size=$(stat -c %s base/checkpoint_00000060.h5)
refused=0 same=0
places=$((sanitized ? 8 : 24))
for i in $(seq 0 $((places - 1))); do
  offset=$((i * size / places + 7 * i))
  fresh_copy c
  flip c/checkpoint_00000060.h5 - "$offset"
  hs c.log run deck.yaml -q --set output.directory=c --restart c/checkpoint_00000060.h5
  if [[ $rc == 2 ]] && one_error_line c.log "c/checkpoint_00000060.h5"; then
    refused=$((refused + 1))
  elif [[ $rc == 0 ]] && same_outputs ref c heat >/dev/null; then
    same=$((same + 1))
  else
    bad "c. a flipped byte at $offset of $size: exit $rc"
    cat c.log
    [[ $rc == 0 ]] && same_outputs ref c heat
  fi
done
echo "  c. $refused refused, $same harmless (unused bytes)"
check "c. $places flipped bytes in a checkpoint: each refused in one error line or harmless" \
  test "$((refused + same))" = "$places" -a "$refused" -ge $((places / 2))

# ---- d, e: a damaged series step -------------------------------------------------------------------
fresh_copy d
flip d/heat.h5.partial /steps/00000055/temperature 800
falls_back d "a damaged step 55 (after checkpoint 50)" \
  "warning: cannot continue the series of checkpoint 'd/checkpoint_00000060.h5'.*step 55 of .*falling back to the checkpoint before it"

fresh_copy e
flip e/heat.h5.partial /steps/00000015/temperature 800
refused e "a damaged step 15 (before every checkpoint)" "step 15 of 'e/heat.h5.partial'" \
  --restart latest

# ---- f: fields missing ------------------------------------------------------------------------------
for what in fields/u fields; do
  fresh_copy f
  "$py" -c "import h5py, sys; f = h5py.File('f/checkpoint_00000060.h5', 'r+'); del f['$what']"
  refused f "a checkpoint without /$what" "checkpoint 'f/checkpoint_00000060.h5' is damaged" \
    --restart f/checkpoint_00000060.h5
done

# ---- g, h, i: HDF5 crashing while the restart reads a file -------------------------------------------
fresh_copy g
HEATSOLVE_TEST_FAULT=read-checkpoint@60:ABRT falls_back g "HDF5 crashing on checkpoint 60" \
  "warning: checkpoint 'g/checkpoint_00000060.h5' is damaged: reading it crashed the HDF5 library (signal 6); falling back to the checkpoint before it, 'g/checkpoint_00000050.h5'"

fresh_copy h
HEATSOLVE_TEST_FAULT=read-checkpoint@60:ABRT refused h "HDF5 crashing on --restart <checkpoint 60>" \
  "checkpoint 'h/checkpoint_00000060.h5' is damaged: reading it crashed" \
  --restart h/checkpoint_00000060.h5

fresh_copy i
HEATSOLVE_TEST_FAULT=read-series@60:ABRT falls_back i "HDF5 crashing on the series of checkpoint 60" \
  "warning: reading heat.h5.partial crashed the HDF5 library (signal 6): passed over as damaged"

if ((fail)); then
  echo "fault_corruption: FAILED"
  exit 1
fi
echo "fault_corruption: all checks passed"
