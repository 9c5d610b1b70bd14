#!/usr/bin/env bash
# Fault injection: a deck whose solution becomes non-finite. Expected: exit 1 with an
# `error:` line, the output steps before the first non-finite one kept and finalized, no
# NaN/Inf step and no NaN/Inf checkpoint written (the run loop's blow-up guard checks every
# output, checkpoint and progress step: docs/batch.md, "Blow-up guard").
# usage: fault_nan.sh <heatsolve binary> <source dir> <work dir>
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}  # needs h5py + numpy
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
source "$src/tests/e2e/lib/fault_common.sh"

# Uniform 1.79e308 with insulated faces: step 0 is finite, step 1 overflows to Inf.
cat >nan.yaml <<'YAML'
name: nan
problem: {type: heat, dimensions: 3}
grid: {cells: [8, 8, 8]}
time: {steps: 10, dt: auto}
initial: {type: uniform, value: 1.79e308}
boundary: {all: {type: neumann, flux: 0}}
source: {type: uniform, value: 1.0e308}
execution: {backend: cpu, precision: double}
output: {directory: out, every: 1, formats: [hdf5], checkpoint_every: 2}
YAML
hs nan.log run nan.yaml -q --set output.directory=nan
cat >series.py <<'PY'
import glob, sys
import h5py, numpy as np
d = sys.argv[1]
files = glob.glob(d + "/nan.h5") or glob.glob(d + "/nan.h5.partial")
if not files:
    sys.exit("no series")
with h5py.File(files[0], "r") as f:
    steps = sorted(int(s) for s in f["steps"])
    bad = [s for s in steps if not np.isfinite(f["steps"]["%08d" % s]["temperature"][...]).all()]
for p in glob.glob(d + "/checkpoint_*.h5"):
    with h5py.File(p, "r") as f:
        if not all(np.isfinite(v[...]).all() for v in f["fields"].values()):
            bad.append(p)
print("steps", steps, "non-finite", bad)
sys.exit(2 if bad else 0 if files[0].endswith(".h5") and steps == [0] else 1)
PY
"$py" series.py nan >series.log 2>&1
verdict=$?
cat series.log
check "a non-finite solution: exit 1 (got $rc)" test "$rc" = 1
check "... with an error line" grep -q '^error: .*\(not finite\|NaN\|Inf\)' nan.log
check "... the finite step 0 kept in the finalized series, nothing non-finite written" \
  test "$verdict" = 0

if ((fail)); then
  cat nan.log
  echo "fault_nan: FAILED"
  exit 1
fi
echo "fault_nan: all checks passed"
