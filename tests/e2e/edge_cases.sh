#!/usr/bin/env bash
# Edge cases through the binary (docs/robustness.md): `time.steps: 0` writes the initial
# state and succeeds; a 1-cell grid runs; a grid that cannot fit in memory stops before
# anything is created (exit 1, both numbers in the message).
# usage: edge_cases.sh <heatsolve binary> <source dir> <work dir>
set -euo pipefail
bin=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
deck=$src/inputs/quickstart.yaml
have_hdf5=0
"$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null && have_hdf5=1
formats='[]'
[[ $have_hdf5 -eq 1 ]] && formats='[hdf5]'
common=(-q --set time.end= --set execution.backend=cpu --set "output.formats=$formats")

# steps: 0
"$bin" run "$deck" "${common[@]}" --set 'grid.cells=[8,8,8]' --set time.steps=0 \
  --set "output.directory=$work/zero" || fail "steps: 0 run failed"
grep -q '"steps": 0' "$work/zero/summary.json" || fail "summary.json does not say 0 steps"
if [[ $have_hdf5 -eq 1 ]] && python3 -c 'import h5py, numpy' 2>/dev/null; then
  python3 - "$work/zero/quickstart.h5" <<'PY' || fail "HDF5 file of the steps: 0 run is wrong"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    steps = sorted(f["steps"].keys(), key=int)
    assert [int(s) for s in steps] == [0], steps
    u = np.asarray(f["steps"][steps[0]]["temperature"])
    assert u.shape == (8, 8, 8), u.shape
    # the initial sine: positive inside, peak near 1
    assert 0.9 < u.max() <= 1.0 and u.min() > 0, (u.min(), u.max())
PY
fi

# a 1-cell grid (3D and 2D)
"$bin" run "$deck" "${common[@]}" --set 'grid.cells=[1,1,1]' --set time.steps=3 \
  --set "output.directory=$work/one3" || fail "1-cell 3D run failed"
"$bin" run "$deck" "${common[@]}" --set problem.dimensions=2 --set 'grid.cells=[1,1]' \
  --set 'grid.length=[1,1]' --set time.steps=3 --set "output.directory=$work/one2" ||
  fail "1-cell 2D run failed"

# memory preflight: 20000^3 cells is under the deck's 2^48-value cap but needs ~128 TiB
set +e
"$bin" run "$deck" "${common[@]}" --set 'grid.cells=[20000,20000,20000]' --set time.steps=1 \
  --set "output.directory=$work/huge" 2>"$work/stderr"
rc=$?
set -e
cat "$work/stderr"
[[ $rc -eq 1 ]] || fail "absurd grid: exit $rc, expected 1"
grep -Eq 'needs about [0-9.]+ TiB of host memory .* but only [0-9.]+ [KMGT]i?B is available' \
  "$work/stderr" || fail "absurd grid: the message lacks the two numbers"
[[ ! -e $work/huge ]] || fail "absurd grid: the output directory was created"
# ... and HEATSOLVE_SKIP_MEMORY_CHECK is documented to bypass it (not run: it would allocate)
echo "OK: steps 0, 1-cell grids and the memory preflight behave as documented"
