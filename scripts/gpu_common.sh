# Sourced by the scripts/gpu_*.sh calls: logs under $OUT (summary.log mirrors the output),
# stamp() with the seconds since the start, the GPU's name, $B/$HS (the gpu-machine build and
# its binary), and gpu_build <targets...>, which configures and builds them or stops.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/summary.log") 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0))s] $*"; }
B=build/gpu-machine
HS=$B/app/heatsolve
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

gpu_build() {
  stamp build
  cmake --preset gpu-machine >"$OUT/build.log" 2>&1 &&
    cmake --build --preset gpu-machine -j "$(nproc)" --target "$@" >>"$OUT/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
}
