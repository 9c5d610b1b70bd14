#!/usr/bin/env bash
# A run with materials by region writes the materials as cell fields ParaView reads beside the
# temperature: HDF5 /cell_fields/{conductivity,heat_capacity} listed in every XDMF step, and
# <name>_vti/<name>_cell_fields.vti (a .pvti of per-rank pieces under MPI). The values must be
# the regions' (the topmost region holding a cell centre wins), equal in every format, and a
# 3-rank run's the serial run's bit for bit; summary.json lists the materials with cell counts.
# usage: material_fields.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -euo pipefail
bin=$1 src=$2 work=$3
py=/usr/bin/python3

info=$("$bin" info)
for what in "HDF5 output" "VTK output"; do
  if ! grep -Eq "^ *$what: *yes" <<<"$info"; then echo "SKIP: heatsolve built without $what"; exit 77; fi
done
if ! "$py" -c "import h5py, numpy" 2>/dev/null; then echo "SKIP: h5py/numpy not found"; exit 77; fi

rm -rf "$work"
mkdir -p "$work"

# Three layers along x over a base material, the middle one overlapped by a later box on its
# upper half in y (the later region wins); 3D so that the z order of the arrays is checked.
cat >"$work/layers.yaml" <<DECK
name: layers
problem: {type: heat, dimensions: 3}
grid: {cells: [12, 6, 4], length: [1.2, 0.6, 0.4]}
material: {conductivity: 2.0, density: 1000.0, specific_heat: 500.0}
materials:
  - {region: {box: {lower: [0.4, 0.0, 0.0], upper: [0.8, 0.6, 0.4]}},
     conductivity: 0.5, density: 200.0, specific_heat: 1000.0}
  - {region: {box: {lower: [0.4, 0.3, 0.0], upper: [0.8, 0.6, 0.2]}},
     conductivity: 8.0, density: 3000.0, specific_heat: 400.0}
time: {steps: 4, dt: auto}
initial: {type: uniform, value: 300.0}
boundary: {all: {type: neumann, flux: 0.0}, x-: {type: dirichlet, value: 400.0}}
execution: {backend: cpu, precision: double}
output: {directory: $work/serial, every: 2, formats: [hdf5, vtk]}
DECK

status=0
check() {  # check <what> <command...>
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; status=1; fi
}

"$bin" run "$work/layers.yaml" -q
check "serial run" test $? -eq 0

verify() {  # verify <output dir>
  "$py" - "$1" <<'PY'
import json, os, re, sys
import h5py, numpy as np
out = sys.argv[1]
nx, ny, nz = 12, 6, 4
x = (np.arange(nx) + 0.5) * 0.1
y = (np.arange(ny) + 0.5) * 0.1
z = (np.arange(nz) + 0.5) * 0.1
Z, Y, X = np.meshgrid(z, y, x, indexing="ij")  # arrays are [z][y][x], x fastest
k = np.full((nz, ny, nx), 2.0)
c = np.full((nz, ny, nx), 1000.0 * 500.0)
mid = (X > 0.4) & (X < 0.8)
k[mid], c[mid] = 0.5, 200.0 * 1000.0
top = mid & (Y > 0.3) & (Z < 0.2)
k[top], c[top] = 8.0, 3000.0 * 400.0
with h5py.File(os.path.join(out, "layers.h5"), "r") as f:
    hk = f["cell_fields/conductivity"][...]
    hc = f["cell_fields/heat_capacity"][...]
    assert f["cell_fields/conductivity"].dtype == np.float64
assert hk.shape == (nz, ny, nx), hk.shape
assert np.array_equal(hk, k), np.argwhere(hk != k)[:5]
assert np.array_equal(hc, c), np.argwhere(hc != c)[:5]
xdmf = open(os.path.join(out, "layers.xdmf")).read()
steps = xdmf.count('GridType="Uniform"')
for name in ("conductivity", "heat_capacity"):
    n = len(re.findall(rf'<Attribute Name="{name}" AttributeType="Scalar" Center="Cell">', xdmf))
    assert n == steps == 3, (name, n, steps)
s = json.load(open(os.path.join(out, "summary.json")))
cells = [m.get("cells_topmost", m["cells"]) for m in s["materials"]]
assert cells[1] == int(mid.sum() - top.sum()) and cells[2] == int(top.sum()), cells
assert s["materials"][2]["conductivity"] == 8.0, s["materials"]
print(f"{out}: HDF5 cell fields = the regions ({int(top.sum())} cells of the topmost), "
      f"XDMF lists them in {steps} steps")
PY
}
check "serial: HDF5 cell fields, XDMF, summary materials" verify "$work/serial"

# The VTK image and the XDMF series as ParaView reads them: the same cell arrays.
if command -v pvpython >/dev/null 2>&1; then
  pv_compare() {  # pv_compare <xdmf> <vti or pvti>
    pvpython - "$1" "$2" <<'PY'
import sys
from paraview import simple, servermanager
from vtk.util.numpy_support import vtk_to_numpy
import numpy as np
def cells(path):
    r = simple.Xdmf3ReaderS(FileName=[path]) if path.endswith(".xdmf") else simple.OpenDataFile(path)
    r.UpdatePipelineInformation()
    times = r.TimestepValues
    r.UpdatePipeline(float(times[-1]) if times else 0.0)  # the last step lists them too
    d = servermanager.Fetch(r)
    return {n: vtk_to_numpy(d.GetCellData().GetArray(n)) for n in ("conductivity", "heat_capacity")}
a, b = cells(sys.argv[1]), cells(sys.argv[2])
for n in a:
    assert np.array_equal(a[n], b[n]), (n, np.abs(a[n] - b[n]).max())
print("ParaView: XDMF and", sys.argv[2].rsplit("/", 1)[-1], "carry the same cell arrays")
PY
  }
  check "ParaView: XDMF and VTK cell fields agree" \
    pv_compare "$work/serial/layers.xdmf" "$work/serial/layers_vti/layers_cell_fields.vti"
else
  echo "(pvpython not found: VTK cell fields not compared)"
fi

mpirun=$(command -v mpirun || command -v mpiexec || true)
if grep -Eq '^ *MPI: *yes' <<<"$info" && [[ -n $mpirun ]]; then
  if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  OMP_NUM_THREADS=1 "$mpirun" -np 3 --oversubscribe "$bin" run "$work/layers.yaml" -q \
    --set "output.directory=$work/np3" --set "execution.decomposition=[3,1,1]"
  check "3-rank run" test $? -eq 0
  check "3 ranks: HDF5 cell fields, XDMF, summary materials" verify "$work/np3"
  check "3 ranks: one .vti piece per rank and a .pvti" \
    test "$(find "$work/np3/layers_vti" -name 'layers_cell_fields*.vti' | wc -l)" -eq 3 \
    -a -s "$work/np3/layers_vti/layers_cell_fields.pvti"
  if command -v pvpython >/dev/null 2>&1; then
    check "ParaView: 3-rank .pvti equals the serial .vti" \
      pv_compare "$work/serial/layers_vti/layers_cell_fields.vti" \
      "$work/np3/layers_vti/layers_cell_fields.pvti"
  fi
fi
exit $status
