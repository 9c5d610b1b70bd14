#!/usr/bin/env bash
# output.compression through the CLI, read back by other programs:
#   a. deflate (levels 1 and 9): every step of the series equals the uncompressed run's bit
#      for bit through h5py (serial HDF5), and the file is smaller;
#   b. zfp (tolerance 1e-6, through Debian's H5Z-ZFP plugin in h5py): every value within the
#      tolerance of the uncompressed run's, the file smaller still, the loss stated in the
#      file's attributes;
#   c. summary.json's "compression" agrees with the file (bytes stored and of values, ratio),
#      and the log line reports the ratio;
#   d. ParaView (pvpython, Open MPI HDF5) reads the zfp series through heatsolve's plugin
#      (HDF5_PLUGIN_PATH), within the tolerance;
#   e. a restart from a checkpoint continues a compressed series (checkpoints stay lossless).
# The sizes of a smooth 48^3 double field, printed at the end, are the docs' example.
# usage: compression.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=/usr/bin/python3
source "$src/tests/mpi/check.sh"
fail=0

info=$("$bin" info)
grep -Eq '^ *HDF5 output: *yes' <<<"$info" || { echo "SKIP: built without HDF5"; exit 77; }
"$py" -c 'import h5py, numpy' 2>/dev/null || { echo "SKIP: $py lacks h5py/numpy"; exit 77; }
zfp=no
grep -Eq 'zfp yes' <<<"$info" && zfp=yes
# h5py reads ZFP data through Debian's plugin for the serial HDF5 library.
zfp_reader=no
[[ -f /usr/lib/x86_64-linux-gnu/hdf5/serial/plugins/libh5zzfp.so || -n ${HDF5_PLUGIN_PATH:-} ]] &&
  zfp_reader=yes

rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
cat >deck.yaml <<'DECK'
name: smooth
problem: {type: heat, dimensions: 3}
grid: {cells: [48, 48, 48], length: [1.0, 1.0, 1.0]}
material: {diffusivity: 1.0}
time: {steps: 40, dt: auto, safety: 0.9}
initial: {type: sine, amplitude: 1.0}
boundary: {all: {type: dirichlet, value: 0.0}}
execution: {backend: cpu, precision: double}
output: {directory: out/none, every: 10, formats: [hdf5]}
DECK
run() {  # run <directory> <compression> [more options]
  local dir=$1 c=$2
  shift 2
  "$bin" run deck.yaml --set "output.directory=out/$dir" --set "output.compression=$c" "$@" \
    >"$dir.log" 2>&1
}
run none '{type: none}'
check "uncompressed run" test $? -eq 0
run deflate1 '{type: deflate, level: 1}'
check "deflate level 1 run" test $? -eq 0
run deflate9 '{type: deflate, level: 9}'
check "deflate level 9 run" test $? -eq 0
check "the log reports the ratio" grep -Eq 'smooth.h5: 5 steps, .* MB \(deflate level 1: [0-9.]+x\)' deflate1.log

"$py" - out/none/smooth.h5 out/deflate1/smooth.h5 out/deflate9/smooth.h5 <<'PY'
import os, sys, h5py
ref, *packed = sys.argv[1:]
r = h5py.File(ref, "r")
assert r.attrs["compression"] == b"none" and r.attrs["compression_lossy"] == 0
for p in packed:
    f = h5py.File(p, "r")
    assert sorted(f["steps"]) == sorted(r["steps"]) and len(r["steps"]) == 5
    for s in r["steps"]:
        a, b = r["steps"][s]["temperature"], f["steps"][s]["temperature"]
        assert b.compression == "gzip" and b.shuffle and b.chunks is not None, (p, s)
        assert a[()].tobytes() == b[()].tobytes(), f"{p} step {s} differs"
    assert f.attrs["compression"] == b"deflate" and f.attrs["compression_lossy"] == 0
    assert os.path.getsize(p) < 0.8 * os.path.getsize(ref), (os.path.getsize(p), os.path.getsize(ref))
print("deflate: 5 steps bitwise equal, smaller")
PY
check "deflate round trip bit for bit (h5py), files smaller" test $? -eq 0

# c. summary.json against the file
"$py" - out/deflate1 <<'PY'
import json, os, sys, h5py
d = sys.argv[1]
c = json.load(open(os.path.join(d, "summary.json")))["compression"]
f = h5py.File(os.path.join(d, "smooth.h5"), "r")
data = stored = 0
for s in f["steps"]:
    ds = f["steps"][s]["temperature"]
    data += ds.size * ds.dtype.itemsize
    stored += ds.id.get_storage_size()
assert c["type"] == "deflate" and c["level"] == 1 and c["lossy"] is False, c
assert (c["datasets"], c["data_bytes"], c["stored_bytes"]) == (5, data, stored), (c, data, stored)
assert abs(c["ratio"] - data / stored) < 1e-9 and c["ratio"] > 1.5, c
print("summary:", c)
PY
check "summary.json reports the file's storage" test $? -eq 0

if [[ $zfp == yes ]]; then
  run zfp '{type: zfp, tolerance: 1.0e-6}'
  check "zfp run" test $? -eq 0
  check "the log reports the zfp ratio" grep -Eq '\(zfp tolerance 1e-06: [0-9.]+x\)' zfp.log
  if [[ $zfp_reader == yes ]]; then
    "$py" - out/none/smooth.h5 out/zfp/smooth.h5 out/deflate1/smooth.h5 <<'PY'
import os, sys, h5py, numpy as np
r, z, d = (h5py.File(p, "r") for p in sys.argv[1:4])
tol = z.attrs["compression_tolerance"]
assert tol == 1e-6 and z.attrs["compression"] == b"zfp" and z.attrs["compression_lossy"] == 1
assert b"within compression_tolerance" in z.attrs["compression_note"]
worst = 0.0
for s in r["steps"]:
    a, b = r["steps"][s]["temperature"][()], z["steps"][s]["temperature"][()]
    assert "32013" in z["steps"][s]["temperature"]._filters
    err = np.abs(a - b).max()
    assert err <= tol, f"step {s}: max error {err} > {tol}"
    assert (a != b).any(), "zfp stored every value exactly"
    worst = max(worst, err)
sizes = [os.path.getsize(p) for p in sys.argv[1:4]]
assert sizes[1] < sizes[2] < sizes[0], sizes
print(f"zfp: max error {worst:.3g} <= {tol}; sizes none {sizes[0]}, deflate 1 {sizes[2]}, zfp {sizes[1]}")
PY
    check "zfp within its tolerance (h5py + Debian's plugin), smallest" test $? -eq 0
  else
    echo "  (no h5py check of zfp: Debian's hdf5-filter-plugin-zfp-serial is not installed)"
  fi
  plugins=$(dirname "$bin")/hdf5-plugins
  # (A sanitizer build's plugin cannot be loaded into ParaView's uninstrumented process.)
  if command -v pvpython >/dev/null 2>&1 && [[ -f $plugins/libheatsolve_h5zfp.so ]] &&
    ! ldd "$plugins/libheatsolve_h5zfp.so" | grep 'lib[at]san' >/dev/null; then
    cat >pvread.py <<'PY'
import sys
from paraview.simple import Xdmf3ReaderS
from paraview import servermanager as sm
from vtk.numpy_interface import dataset_adapter as dsa
out = []
for path in sys.argv[1:3]:
    r = Xdmf3ReaderS(FileName=[path])
    t = r.TimestepValues[-1]
    r.UpdatePipeline(t)
    out.append(dsa.WrapDataObject(sm.Fetch(r)).CellData["temperature"])
err = float(abs(out[0] - out[1]).max())
assert out[0].shape == (48 ** 3,) and float(out[0].max()) > 0.1, (out[0].shape, float(out[0].max()))
assert err <= 1e-6, err
print(f"ParaView: last step read through the plugin, max error {err:.3g}")
PY
    HDF5_PLUGIN_PATH=$plugins pvpython pvread.py out/none/smooth.xdmf out/zfp/smooth.xdmf \
      >pvpython.log 2>&1
    check "ParaView reads the zfp series (HDF5_PLUGIN_PATH=$plugins)" test $? -eq 0
  else
    echo "  (no ParaView check: pvpython or the plugin missing, or a sanitizer build)"
  fi
fi

# e. a restart continues a compressed series; its checkpoint holds the exact state
run restart '{type: deflate, level: 1}' --set output.checkpoint_every=20 --set time.steps=20
check "first leg, checkpoint at step 20" test $? -eq 0 -a -f out/restart/checkpoint_00000020.h5
"$bin" run deck.yaml -q --set output.directory=out/restart --set 'output.compression={type: deflate}' \
  --restart latest >restart2.log 2>&1
check "restart to step 40" test $? -eq 0
"$py" - out/none/smooth.h5 out/restart/smooth.h5 out/restart/checkpoint_00000020.h5 <<'PY'
import sys, h5py
r, c, k = (h5py.File(p, "r") for p in sys.argv[1:4])
assert sorted(c["steps"]) == sorted(r["steps"]), (sorted(c["steps"]), sorted(r["steps"]))
for s in r["steps"]:
    assert r["steps"][s]["temperature"][()].tobytes() == c["steps"][s]["temperature"][()].tobytes(), s
u = k["fields"]["u"]
assert u.compression is None and u.fletcher32, "checkpoints: lossless (no compression), checksummed"
assert u[()].tobytes() == r["steps"]["00000020"]["temperature"][()].tobytes()
print("restart: the continued deflate series equals the uninterrupted run bit for bit")
PY
check "restarted compressed series bitwise equal, checkpoint uncompressed" test $? -eq 0

echo "sizes of the 5-step 48^3 double series:"
ls -l out/*/smooth.h5 | awk '{print "  " $5 " bytes  " $9}'
if [[ $fail -ne 0 ]]; then
  for f in *.log; do echo "---- $f"; tail -15 "$f"; done
fi
exit $fail
