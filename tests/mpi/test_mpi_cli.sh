#!/usr/bin/env bash
# End-to-end MPI checks of the heatsolve binary (ctest: mpi.cli):
#   1. `mpirun -np 4 heatsolve run` (single steps, and time_block 3 through deep halos) writes
#      an HDF5 file whose datasets are bitwise equal to
#      the single-rank run's (compared with h5py), and summary.json says ranks: 4; with
#      output.compression (deflate, zfp) every decomposition stores the same values;
#   2. a deck error under MPI is reported once, every rank exits 2;
#   3. a decomposition that does not match the rank count: reported once, exit 2;
#   4. a failure on one rank mid-run (test-only HEATSOLVE_TEST_FAIL_RANK) ends the whole job
#      with a non-zero exit and "rank 1: error: ...", never a hang;
#   5. every rank failing alike (HEATSOLVE_TEST_FAIL_RANK=all, as a full disk under collective
#      I/O): one "error: ..." line for the job, no rank's own;
#   6. `mpirun -np 2 heatsolve bench --multigrid` (one rank against two, strong and weak): the
#      strong multigrid solve ends at the one-rank run's residual bit for bit, the same cycle
#      counts (fmg within one), every solve converged; the other benches refuse MPI (exit 2).
# Usage: test_mpi_cli.sh <heatsolve> <mpiexec> <workdir>
# Environment: BACKEND=cuda runs check 1 on the GPU (kernel fixed to naive so that every block
# size runs the same arithmetic); PYTHON names a python3 with h5py (default /usr/bin/python3).
set -uo pipefail
HS=$(realpath "$1") MPIEXEC=$2 WORK=$3
# check <description> <condition...> (tests/mpi/check.sh)
source "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/check.sh"
BACKEND=${BACKEND:-cpu} PYTHON=${PYTHON:-/usr/bin/python3}
RUNSET=(--set "execution.backend=$BACKEND")
[ "$BACKEND" = cuda ] && RUNSET+=(--set execution.kernel=naive)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
MPIRUN=("$MPIEXEC" --oversubscribe)
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
fail=0

cat > deck.yaml <<'EOF'
name: mpicli
problem: {type: heat, dimensions: 3}
grid: {cells: [19, 14, 11], length: [1.0, 1.0, 1.0]}
material: {diffusivity: 1.0}
time: {steps: 60, dt: auto, safety: 0.9}
initial: {type: gaussian, amplitude: 1.0, width: 0.2, center: [0.3, 0.5, 0.5], value: 0.0}
boundary:
  x-: {type: periodic}
  x+: {type: periodic}
  y-: {type: dirichlet, value: 1.0}
  y+: {type: neumann, flux: 0.5}
  z-: {type: dirichlet, value: 0.0}
  z+: {type: dirichlet, value: 0.0}
execution: {backend: cpu, precision: double}
output: {directory: out, every: 20, formats: [hdf5]}
EOF

# 1. equivalence through the CLI and the parallel HDF5 writer
"${MPIRUN[@]}" -np 1 "$HS" run deck.yaml -q "${RUNSET[@]}" --set output.directory=np1 >np1.log 2>&1
check "np1 run" test $? -eq 0
"$HS" run deck.yaml -q "${RUNSET[@]}" --set output.directory=plain >plain.log 2>&1  # no launcher
check "plain run (no mpirun)" test $? -eq 0
timeout 120 "${MPIRUN[@]}" -np 4 "$HS" run deck.yaml "${RUNSET[@]}" --set output.directory=np4 \
  >np4.log 2>&1
rc=$?
check "np4 run (rc $rc)" test $rc -eq 0
check "np4 header names the decomposition" grep -q "4 MPI ranks, decomposition" np4.log
check "np4 prints once" test "$(grep -c '\[heatsolve\] done' np4.log)" -eq 1
"$PYTHON" - np1/mpicli.h5 np4/mpicli.h5 plain/mpicli.h5 <<'EOF'
import sys, h5py, numpy as np
a, b, c = (h5py.File(p, "r") for p in sys.argv[1:4])
assert sorted(c["steps"]) == sorted(a["steps"])
for s in c["steps"]:
    assert c["steps"][s]["temperature"][()].tobytes() == a["steps"][s]["temperature"][()].tobytes()
sa, sb = sorted(a["steps"]), sorted(b["steps"])
assert sa == sb and len(sa) >= 3, (sa, sb)
for s in sa:
    x, y = a["steps"][s]["temperature"][()], b["steps"][s]["temperature"][()]
    assert x.shape == y.shape and x.dtype == y.dtype, (s, x.shape, y.shape)
    assert x.tobytes() == y.tobytes(), f"step {s} differs, max |d| = {np.abs(x - y).max()}"
    assert a["steps"][s].attrs["time"] == b["steps"][s].attrs["time"]
for k in ("cells", "origin", "spacing", "dimensions"):
    assert np.array_equal(a.attrs[k], b.attrs[k]), k
print(f"h5py: {len(sa)} steps bitwise equal")
EOF
check "np4 HDF5 bitwise equal to np1 and to a plain run" test $? -eq 0
check "summary says 4 ranks" grep -q '"ranks": *4' np4/summary.json
check "np4 xdmf" test -f np4/mpicli.xdmf

# 1b. fused passes through deep halos (time_block 3, margins 3 cells deep): the same bits
timeout 120 "${MPIRUN[@]}" -np 4 "$HS" run deck.yaml -q "${RUNSET[@]}" \
  --set execution.time_block=3 --set output.directory=np4tb3 >np4tb3.log 2>&1
rc=$?
check "np4 time_block 3 run (rc $rc)" test $rc -eq 0
check "np4 time_block 3: summary says halo_depth 3" grep -q '"halo_depth": *3' np4tb3/summary.json
# The deep halo's set-up is timed apart and kept out of wall_seconds.
check "np4 time_block 3: summary times the deep halo's set-up apart" "$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert 0 <= s["halo_setup_seconds"] < 60 and s["wall_seconds"] > 0, s' np4tb3/summary.json
"$PYTHON" - np1/mpicli.h5 np4tb3/mpicli.h5 <<'EOF'
import sys, h5py
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
assert sorted(a["steps"]) == sorted(b["steps"]) and len(a["steps"]) >= 3
for s in a["steps"]:
    x, y = a["steps"][s]["temperature"][()], b["steps"][s]["temperature"][()]
    assert x.tobytes() == y.tobytes(), f"step {s} differs"
print(f"h5py: {len(a['steps'])} steps bitwise equal with deep halos")
EOF
check "np4 time_block 3 HDF5 bitwise equal to np1" test $? -eq 0

# 1c. output.compression under decomposition: a grid of 1.17 M cells is stored in 2 chunks of
# up to 2^20 values (48 and 42 planes), each spanning several ranks' blocks. Collective writes
# (np 4) and the gathered writer (np 3) store the same values as one rank: deflate bit for bit
# equal to the uncompressed series, zfp bit for bit equal to the one-rank zfp series (every
# chunk is compressed whole) and within its tolerance of the uncompressed one.
cat > big.yaml <<'EOF2'
name: big
problem: {type: heat, dimensions: 3}
grid: {cells: [130, 100, 90]}
time: {steps: 2}
initial: {type: gaussian, amplitude: 1.0, width: 0.2, center: [0.3, 0.5, 0.5]}
boundary: {all: {type: dirichlet, value: 0.0}, y+: {type: neumann, flux: 0.5}}
execution: {backend: cpu, precision: double}
output: {directory: out, every: 1, formats: [hdf5]}
EOF2
zfp=no
"$HS" info | grep -E 'zfp yes' >/dev/null && [[ -f /usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5zzfp.so ]] && zfp=yes
"$HS" run big.yaml -q "${RUNSET[@]}" --set output.directory=big_plain >big_plain.log 2>&1
check "big: uncompressed one-rank run" test $? -eq 0
kinds=(deflate)
[[ $zfp == yes ]] && kinds+=(zfp)
for kind in "${kinds[@]}"; do
  if [[ $kind == deflate ]]; then c='{type: deflate, level: 1}'; else c='{type: zfp, tolerance: 1.0e-5}'; fi
  timeout 120 "${MPIRUN[@]}" -np 1 "$HS" run big.yaml -q "${RUNSET[@]}" --set "output.compression=$c" \
    --set output.directory=big_${kind}_np1 >big_${kind}_np1.log 2>&1
  check "big $kind np1 run" test $? -eq 0
  timeout 120 "${MPIRUN[@]}" -np 4 "$HS" run big.yaml -q "${RUNSET[@]}" --set "output.compression=$c" \
    --set output.directory=big_${kind}_np4 >big_${kind}_np4.log 2>&1
  check "big $kind np4 run (collective)" test $? -eq 0
  HEATSOLVE_HDF5_GATHER=1 timeout 120 "${MPIRUN[@]}" -x HEATSOLVE_HDF5_GATHER -np 3 "$HS" run big.yaml -q \
    "${RUNSET[@]}" --set "output.compression=$c" --set output.directory=big_${kind}_gather3 \
    >big_${kind}_gather3.log 2>&1
  check "big $kind np3 run (gathered)" test $? -eq 0
  "$PYTHON" - "$kind" big_plain/big.h5 big_${kind}_np1/big.h5 big_${kind}_np4/big.h5 big_${kind}_gather3/big.h5 <<'EOF2'
import os, sys, h5py, numpy as np
kind, plain, *runs = sys.argv[1:]
p = h5py.File(plain, "r")
fs = [h5py.File(r, "r") for r in runs]
assert len(p["steps"]) == 3
for s in p["steps"]:
    ref = p["steps"][s]["temperature"][()]
    one = fs[0]["steps"][s]["temperature"]
    assert one.chunks == (48, 100, 130), one.chunks  # two chunks, across the ranks' blocks
    for f in fs[1:]:
        assert f["steps"][s]["temperature"][()].tobytes() == one[()].tobytes(), (kind, f.filename, s)
    if kind == "deflate":
        assert one[()].tobytes() == ref.tobytes(), f"deflate step {s} differs from uncompressed"
    else:
        err = np.abs(one[()] - ref).max()
        assert 0 < err <= 1e-5, err
for r in runs:
    assert os.path.getsize(r) < 0.7 * os.path.getsize(plain), (r, os.path.getsize(r))
print(f"h5py: {kind}: np1, np4 (collective) and np3 (gathered) store the same values")
EOF2
  check "big $kind: the same values from every decomposition" test $? -eq 0
done

# 2. deck error: once, exit 2 everywhere
sed 's/cells: \[19, 14, 11\]/cells: [19, 14]/' deck.yaml > bad.yaml
timeout 60 "${MPIRUN[@]}" -np 3 "$HS" run bad.yaml --set output.directory=bad >bad.log 2>&1
rc=$?
check "deck error exits 2 (rc $rc)" test $rc -eq 2
check "deck error printed once" test "$(grep -c 'grid.cells' bad.log)" -eq 1

# 3. decomposition mismatch: once, exit 2
timeout 60 "${MPIRUN[@]}" -np 3 "$HS" run deck.yaml --set 'execution.decomposition=[2,2,1]' \
  --set output.directory=dec >dec.log 2>&1
rc=$?
check "decomposition mismatch exits 2 (rc $rc)" test $rc -eq 2
check "decomposition error printed once" test "$(grep -c 'needs 4 MPI ranks' dec.log)" -eq 1

# 4. one rank fails mid-run: the job ends, non-zero, with the rank named
start=$SECONDS
HEATSOLVE_TEST_FAIL_RANK=1 HEATSOLVE_TEST_FAIL_STEP=7 timeout 60 "${MPIRUN[@]}" -x HEATSOLVE_TEST_FAIL_RANK \
  -x HEATSOLVE_TEST_FAIL_STEP -np 3 "$HS" run deck.yaml -q --set output.directory=fail >fail.log 2>&1
rc=$?
check "rank failure exits non-zero, not by timeout (rc $rc)" test $rc -ne 0 -a $rc -ne 124
check "rank failure names the rank" grep -q "rank 1: error: injected failure" fail.log
echo "rank failure ended in $((SECONDS - start)) s"
check "no final files after a failed run" test ! -e fail/mpicli.h5

# 5. every rank fails alike: one line for the job
HEATSOLVE_TEST_FAIL_RANK=all HEATSOLVE_TEST_FAIL_STEP=7 timeout 60 "${MPIRUN[@]}" -x HEATSOLVE_TEST_FAIL_RANK \
  -x HEATSOLVE_TEST_FAIL_STEP -np 3 "$HS" run deck.yaml -q --set output.directory=failall >failall.log 2>&1
rc=$?
check "every rank failing exits non-zero, not by timeout (rc $rc)" test $rc -ne 0 -a $rc -ne 124
check "... with one error line for the job" \
  test "$(grep -c '^error: injected failure at halo exchange 7' failall.log)" -eq 1
check "... and no rank's own" test "$(grep -c 'rank [0-9]*: error' failall.log)" -eq 0

# 6. the multigrid scaling bench (CPU, 16^3: the numbers, not the times)
timeout 120 "${MPIRUN[@]}" -np 2 "$HS" bench --multigrid --size 16 --backend "$BACKEND" --json \
  >scaling.json 2>scaling.log
rc=$?
check "scaling bench (rc $rc)" test $rc -eq 0
"$PYTHON" - scaling.json <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 2 and d["cells"] == 16, d
rows = {r["case"]: r for r in d["rows"]}
assert sorted(rows) == ["crank-nicolson", "fmg", "mg-cg", "multigrid"], sorted(rows)
for name, r in rows.items():
    one, strong, weak = r["one"], r["strong"], r["weak"]
    for m in (one, strong, weak):
        assert m["seconds"] > 0 and m["cycles"] > 0, (name, m)
        if name != "crank-nicolson":
            assert m["converged"] and m["final_residual"] <= 1e-10, (name, m)
    slack = 1 if name == "fmg" else 0  # full multigrid: within one cycle under MPI (docs/mpi.md)
    assert abs(strong["cycles"] - one["cycles"]) <= slack, (name, one["cycles"], strong["cycles"])
    assert abs(r["speedup"] - one["seconds"] / strong["seconds"]) < 1e-12, r
    assert abs(r["weak_efficiency"] - one["seconds"] / weak["seconds"]) < 1e-12, r
# The strong solve's fields are the one-rank run's bit for bit (tests/mpi), and so is the
# residual summed in rank order; mg-cg's dot products are summed per block.
assert rows["multigrid"]["strong_residual_relative_difference"] == 0, rows["multigrid"]
assert rows["crank-nicolson"]["strong_residual_relative_difference"] < 1e-12
assert rows["mg-cg"]["strong_residual_relative_difference"] < 1e-4
print("scaling bench: cycle counts and residuals of 1 and 2 ranks agree")
EOF2
check "scaling bench: 1 and 2 ranks agree" test $? -eq 0
timeout 60 "${MPIRUN[@]}" -np 2 "$HS" bench --size 16 >bench_refused.log 2>&1
rc=$?
check "the stencil bench under MPI exits 2 (rc $rc)" test $rc -eq 2
check "... saying so once" test "$(grep -c 'only --multigrid runs' bench_refused.log)" -eq 1

if [ $fail -ne 0 ]; then
  for f in *.log; do echo "---- $f"; tail -20 "$f"; done
fi
exit $fail
