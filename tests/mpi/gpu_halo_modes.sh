#!/usr/bin/env bash
# GPU machine check (scripts/gpu_validate.sh runs it): a run split along z over 2 ranks is
# bitwise equal to the single-rank run for every GPU halo transport (staged, ipc) with
# overlap on and off, in float and double, with a physical z boundary and with z periodic
# over the 2 ranks (both faces then talk to the same neighbour). The ranks use GPU
# local_rank % device_count: 2 GPUs, or one GPU shared (CUDA IPC works between processes on
# one device too). summary.json must name the transport asked for.
# Usage: gpu_halo_modes.sh <heatsolve> <workdir>    PYTHON: a python3 with h5py (python3)
set -uo pipefail
HS=$(realpath "$1") WORK=$2
# check <description> <condition...> (tests/mpi/check.sh)
source "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/check.sh"
PYTHON=${PYTHON:-python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=2
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
fail=0

deck() {  # deck <z- type> <z+ type>
  cat <<EOF
name: halo
problem: {type: heat, dimensions: 3}
grid: {cells: [37, 29, 23], length: [1.0, 0.8, 0.6]}
material: {diffusivity: 1.0}
time: {steps: 40, dt: auto, safety: 0.9}
initial: {type: gaussian, amplitude: 1.0, width: 0.2, center: [0.3, 0.4, 0.35], value: 0.1}
source: {type: gaussian, amplitude: 5.0, width: 0.15, center: [0.6, 0.3, 0.2]}
boundary:
  x-: {type: periodic}
  x+: {type: periodic}
  y-: {type: dirichlet, value: 1.0}
  y+: {type: neumann, flux: 0.5}
  z-: $1
  z+: $2
execution: {backend: cuda, kernel: 2.5d-register, precision: double}
output: {directory: out, every: 10, formats: [hdf5]}
EOF
}
deck "{type: dirichlet, value: 0.0}" "{type: neumann, flux: 0.0}" >wall.yaml
deck "{type: periodic}" "{type: periodic}" >periodic.yaml

same_h5() {  # same_h5 <a.h5> <b.h5>
  "$PYTHON" - "$1" "$2" <<'EOF'
import sys, h5py
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
sa, sb = sorted(a["steps"]), sorted(b["steps"])
assert sa == sb and len(sa) == 5, (sa, sb)
for s in sa:
    x, y = a["steps"][s]["temperature"][()], b["steps"][s]["temperature"][()]
    assert x.tobytes() == y.tobytes(), f"step {s}: max |d| = {abs(x - y).max()}"
EOF
}

for bc in wall periodic; do
  for precision in float double; do
    ref=ref_${bc}_$precision
    "$HS" run "$bc.yaml" -q --set execution.precision=$precision --set output.directory=$ref \
      >"$ref.log" 2>&1
    check "$bc $precision: 1-rank reference" test $? -eq 0
    for halo in staged ipc; do
      for overlap in true false; do
        dir=np2_${bc}_${precision}_${halo}_$overlap
        timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$HS" run "$bc.yaml" -q \
          --set execution.precision=$precision --set "execution.decomposition=[1,1,2]" \
          --set execution.halo=$halo --set execution.overlap=$overlap \
          --set output.directory=$dir >"$dir.log" 2>&1
        rc=$?
        check "$bc $precision halo=$halo overlap=$overlap: 2-rank run (rc $rc)" test $rc -eq 0
        check "  transport recorded" grep -q "\"halo_transport\": *\"$halo\"" "$dir/summary.json"
        check "  bitwise equal to 1 rank" same_h5 "$ref/halo.h5" "$dir/halo.h5"
      done
    done
  done
done
if [ $fail -ne 0 ]; then
  for f in *.log; do echo "---- $f"; tail -5 "$f"; done
fi
exit $fail
