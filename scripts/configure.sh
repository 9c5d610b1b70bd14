#!/usr/bin/env bash
# Picks the CMake preset (cuda when nvcc exists, else cpu; override with HEATSOLVE_PRESET),
# configures and builds. Prints the preset name last.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${HEATSOLVE_PRESET:-}" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    HEATSOLVE_PRESET=cuda
  else
    HEATSOLVE_PRESET=cpu
  fi
fi
jobs="${HEATSOLVE_JOBS:-$(nproc)}"
cmake --preset "$HEATSOLVE_PRESET" >&2
cmake --build --preset "$HEATSOLVE_PRESET" -j "$jobs" >&2
echo "$HEATSOLVE_PRESET"
