#!/usr/bin/env bash
# One GPU-machine call for temporal blocking under MPI (deep halos): build; the MPI
# equivalence test on the GPU (EQ_NP ranks, default 2, sharing device 0; kernel EQ_KERNEL,
# default naive; single steps and fused passes through deep halos), twice for each halo
# transport (EQ_HALOS, default "ipc staged"); with EQ_KERNEL=temporal first (unless BITS=0) the
# gtests that check temporal shapes and single-step variants bit for bit; a 256^3 float
# heat run with kernel: temporal on one rank against 2 ranks (decomposition [1, 1, 2]; one
# GPU each where there are two, else sharing one) with the margins through CUDA IPC and
# staged through the host: HDF5 difference and rates; on 2+ GPUs the weak and strong scaling
# of the temporal path (scripts/gpu_scaling.sh, KERNEL=temporal).
# Logs under $OUT.
#   OUT=/tmp/out bash scripts/gpu_deep_halo.sh
source "$(dirname "$0")/gpu_common.sh"
export OMP_NUM_THREADS=4
EQ_NP=${EQ_NP:-2}
EQ_KERNEL=${EQ_KERNEL:-naive}
if [ "$EQ_KERNEL" = temporal ] && [ "${BITS:-1}" = 1 ]; then
  gpu_build heatsolve heatsolve_mpi_tests heatsolve_tests
  stamp "temporal shapes and single-step variants against single steps: cells whose bits differ"
  timeout 300 "$B/tests/heatsolve_tests" \
    --gtest_filter='CudaTemporal.*:CudaStencil.EveryVariant*:CudaStencil.RulesInSweep*' \
    >"$OUT/bits_tests.log" 2>&1
  echo "rc=$?"; grep -E "differ in bits|FAILED|PASSED" "$OUT/bits_tests.log" | sort | uniq -c | head -40
else
  gpu_build heatsolve heatsolve_mpi_tests
fi

stamp "MPI equivalence on the GPU: $EQ_NP ranks, $EQ_KERNEL kernel (time_block 1, 3, auto), per transport"
for halo in ${EQ_HALOS:-ipc staged}; do
  for rep in 1 2; do
    HEATSOLVE_TEST_BACKEND=cuda HEATSOLVE_TEST_KERNEL=$EQ_KERNEL HEATSOLVE_TEST_HALO=$halo \
      timeout 200 mpirun -np "$EQ_NP" \
      --oversubscribe --bind-to none "$B/tests/heatsolve_mpi_tests" /tmp/mpi-work \
      >"$OUT/mpi_eq_$halo.$rep.log" 2>&1
    echo "mpi equivalence, halo $halo, run $rep: rc=$? $(grep -c 'bitwise equal' "$OUT/mpi_eq_$halo.$rep.log") bitwise equal," \
      "$(grep -c DIFFERS "$OUT/mpi_eq_$halo.$rep.log") differ"
    grep -E "DIFFERS" "$OUT/mpi_eq_$halo.$rep.log" | head -10
  done
done

stamp "temporal 256^3 float: 1 rank vs 2 ranks (deep halos)"
cat >/tmp/deep.yaml <<'EOF'
name: deep
problem: {type: heat, dimensions: 3}
grid: {cells: [256, 256, 256]}
time: {steps: 300, dt: auto, safety: 0.9}
initial: {type: gaussian, amplitude: 1.0, width: 0.15, center: [0.4, 0.5, 0.5], value: 0.0}
boundary:
  all: {type: dirichlet, value: 0.0}
  y+: {type: neumann, flux: 0.5}
source: {type: box, value: 3.0, lower: [0.1, 0.1, 0.1], upper: [0.3, 0.3, 0.6]}
execution: {backend: cuda, precision: float, kernel: temporal, time_block: 3}
output: {directory: out, every: 150, formats: [hdf5]}
EOF
timeout 60 "$HS" run /tmp/deep.yaml -q --overwrite --set output.directory=/tmp/deep1
echo "1 rank rc=$?"
for halo in ipc staged; do
  timeout 90 mpirun -np 2 --oversubscribe --bind-to none "$HS" run /tmp/deep.yaml -q --overwrite \
    --set output.directory=/tmp/deep2$halo --set execution.decomposition=[1,1,2] \
    --set execution.halo=$halo
  echo "2 ranks, halo $halo rc=$?"
done
timeout 90 mpirun -np 2 --oversubscribe --bind-to none "$HS" run /tmp/deep.yaml -q --overwrite \
  --set output.directory=/tmp/deep2s --set execution.decomposition=[1,1,2] \
  --set execution.time_block=1
echo "2 ranks single steps rc=$?"
python3 - /tmp/deep1 /tmp/deep2ipc /tmp/deep2staged /tmp/deep2s <<'PY'
import json, sys
import h5py, numpy as np
ref = h5py.File(sys.argv[1] + "/deep.h5", "r")
for d in sys.argv[1:]:
    s = json.load(open(d + "/summary.json"))
    print(f"  {d}: ranks={s['ranks']} kernel={s['kernel']} halo_depth={s.get('halo_depth')} "
          f"transport={s.get('halo_transport')} "
          f"wall={s['wall_seconds']:.3f}s rate={s['points_per_second'] / 1e9:.1f} GPt/s")
    f = h5py.File(d + "/deep.h5", "r")
    for k in sorted(ref["steps"]):
        a, b = ref["steps"][k]["temperature"][()], f["steps"][k]["temperature"][()]
        print(f"    step {k}: bitwise={a.tobytes() == b.tobytes()} max|d|={np.abs(a - b).max():.3e}")
PY

NG=$(nvidia-smi -L | wc -l)
if [ "$NG" -ge 2 ]; then
  stamp "scaling of the temporal path over $NG GPUs"
  KERNEL=temporal REPEAT=2 HALOS="${SCALING_HALOS:-ipc staged}" OVERLAPS=true STRONG_NZ=512 WEAK_STEPS=3000 \
    STRONG_STEPS=1000 bash scripts/gpu_scaling.sh "$HS" "$NG" /tmp/scaling
  for f in /tmp/scaling/*_2_*.1/summary.json; do
    echo "$f: $(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s.get("halo_depth"), s.get("halo_transport"), s.get("halo_setup_seconds"), s.get("time_block_trial"))' "$f")"
  done
fi

stamp done
