#!/usr/bin/env bash
# Checkpoint/restart end-to-end test (tests/e2e/checkpoint_restart.sh) on the CUDA backend.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake --preset gpu-machine >"$OUT/build.log" 2>&1 &&
  cmake --build --preset gpu-machine -j "$(nproc)" --target heatsolve >>"$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
HEATSOLVE_TEST_BACKEND=cuda PYTHON=python3 timeout 400 bash tests/e2e/checkpoint_restart.sh \
  build/gpu-machine/app/heatsolve "$PWD" /tmp/ckpt >"$OUT/checkpoint.log" 2>&1
echo "checkpoint_restart (cuda) rc=$?"
grep -cE "^ok:" "$OUT/checkpoint.log"
grep -E "^FAILED" "$OUT/checkpoint.log" | head -20
