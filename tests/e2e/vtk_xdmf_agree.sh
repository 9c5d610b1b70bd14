#!/usr/bin/env bash
# The VTK (.pvd/.vti) and HDF5/XDMF series of one run must be the same data as ParaView reads
# them: same times, same cells (geometry), temperature equal to 1e-12 at every output step.
# usage: vtk_xdmf_agree.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -euo pipefail
bin=$1 src=$2 work=$3

info=$("$bin" info)
if ! grep -Eq '^ *VTK output: *yes' <<<"$info"; then
  echo "SKIP: heatsolve built without VTK output"; exit 77
fi
if ! grep -Eq '^ *HDF5 output: *yes' <<<"$info"; then
  echo "SKIP: heatsolve built without HDF5 output"; exit 77
fi
if ! command -v pvpython >/dev/null 2>&1; then
  echo "SKIP: pvpython not found"; exit 77
fi

rm -rf "$work"
mkdir -p "$work"

# 3D, double precision, non-zero origin, unequal spacings: 20 steps, output every 5 (5 outputs).
cat >"$work/agree3d.yaml" <<DECK
name: agree3d
problem: {type: heat, dimensions: 3}
grid: {cells: [12, 10, 8], length: [1.2, 1.0, 0.8], origin: [-0.6, 0.25, 1.0]}
material: {diffusivity: 1.0}
time: {steps: 20, dt: auto}
initial: {type: gaussian, amplitude: 1.0, center: [0.0, 0.75, 1.4], width: 0.15, value: 0.1}
boundary: {all: {type: dirichlet, value: 0.0}, x+: {type: neumann, flux: 0.0}}
execution: {backend: cpu, precision: double}
output: {directory: $work/out3d, every: 5, formats: [hdf5, vtk]}
DECK

# 2D, single precision: the Float32 path and the one-point-thick image.
cat >"$work/agree2d.yaml" <<DECK
name: agree2d
problem: {type: heat, dimensions: 2}
grid: {cells: [16, 9], length: [2.0, 1.0]}
material: {diffusivity: 0.5}
time: {steps: 12, dt: auto}
initial: {type: gaussian, amplitude: 2.0, center: [0.7, 0.4], width: 0.2}
boundary: {all: {type: dirichlet, value: 0.0}}
execution: {backend: cpu, precision: float}
output: {directory: $work/out2d, every: 4, formats: [vtk, hdf5]}
DECK

compare=$src/tests/pvpython/compare_series.py
status=0
for case in 3d:5 2d:4; do
  dim=${case%%:*} steps=${case##*:}
  name=agree$dim out=$work/out$dim
  echo "== $name"
  "$bin" run "$work/$name.yaml" -q
  for f in "$out/$name.h5" "$out/$name.xdmf" "$out/$name.pvd"; do
    [[ -s $f ]] || { echo "FAIL: missing $f"; exit 1; }
  done
  nvti=$(find "$out/${name}_vti" -name "${name}_*.vti" | wc -l)
  if [[ $nvti -ne $steps ]]; then
    echo "FAIL: $nvti .vti files in $out/${name}_vti, expected $steps"; status=1
  fi
  if find "$out" -name '*.tmp.*' | grep . >/dev/null; then
    echo "FAIL: temporary files left in $out"; find "$out" -name '*.tmp.*'; status=1
  fi
  pvpython "$compare" "$out/$name.xdmf" "$out/$name.pvd" --array temperature --rtol 1e-12 \
    --steps "$steps" || status=1
done

# Under MPI the VTK writer writes one .pvti per step with a .vti piece per rank: the series
# must still match its own XDMF, and (decomposed CPU runs are bitwise equal to serial ones,
# docs/mpi.md) the serial run's series.
mpirun=$(command -v mpirun || command -v mpiexec || true)
if ! grep -Eq '^ *MPI: *yes' <<<"$info" || [[ -z $mpirun ]]; then
  echo "(no MPI run: binary without MPI or no mpirun)"
else
  echo "== agree3d on 3 MPI ranks"
  if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  out=$work/out3d_np3
  OMP_NUM_THREADS=1 "$mpirun" -np 3 --oversubscribe "$bin" run "$work/agree3d.yaml" -q \
    --set "output.directory=$out"
  npvti=$(find "$out/agree3d_vti" -name 'agree3d_*.pvti' | wc -l)
  npieces=$(find "$out/agree3d_vti" -name 'agree3d_*_*.vti' | wc -l)
  if [[ $npvti -ne 5 || $npieces -ne 15 ]]; then
    echo "FAIL: $npvti .pvti and $npieces piece files in $out/agree3d_vti, expected 5 and 15"
    status=1
  fi
  pvpython "$compare" "$out/agree3d.xdmf" "$out/agree3d.pvd" --steps 5 || status=1
  pvpython "$compare" "$work/out3d/agree3d.pvd" "$out/agree3d.pvd" --rtol 0 --steps 5 || status=1
fi
exit $status
