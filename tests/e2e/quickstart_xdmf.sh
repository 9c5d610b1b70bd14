#!/usr/bin/env bash
# The quickstart deck (on a 16^3 grid) produces an XDMF series that ParaView opens: cell array
# `temperature` on 16x16x16 cells of the unit cube, values within [0, 1].
# usage: quickstart_xdmf.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -euo pipefail
bin=$1 src=$2 work=$3
py=/usr/bin/python3

if ! "$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null; then
  echo "SKIP: heatsolve built without HDF5 output"; exit 77
fi
if ! command -v pvpython >/dev/null 2>&1; then
  echo "SKIP: pvpython not found"; exit 77
fi
if ! "$py" -c 'import h5py, numpy' 2>/dev/null; then
  echo "SKIP: $py lacks h5py/numpy"; exit 77
fi

rm -rf "$work"
mkdir -p "$work"
out=$work/quickstart
"$bin" run "$src/inputs/quickstart.yaml" -q --set 'grid.cells=[16,16,16]' \
  --set "output.directory=$out"
[[ -s $out/quickstart.xdmf && -s $out/quickstart.h5 ]] || { echo "FAIL: no .xdmf/.h5 in $out"; exit 1; }

# Expected range and number of steps from the HDF5 file itself; the physics bounds it to [0, 1].
read -r nsteps lo hi < <("$py" - "$out/quickstart.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    names = sorted(f["steps"].keys(), key=int)
    last = np.asarray(f["steps"][names[-1]]["temperature"][...], dtype=np.float64)
    print(len(names), repr(float(last.min())), repr(float(last.max())))
PY
)
echo "HDF5: $nsteps steps, last step range [$lo, $hi]"
"$py" -c "import sys; lo, hi = $lo, $hi; sys.exit(0 if 0.0 <= lo <= hi <= 1.0 else 1)" ||
  { echo "FAIL: range [$lo, $hi] outside [0, 1]"; exit 1; }

pvpython "$src/tests/pvpython/check_xdmf.py" "$out/quickstart.xdmf" temperature 16,16,16 \
  "$lo" "$hi" --tol 1e-12 --timesteps "$nsteps" --bounds 0,1,0,1,0,1
