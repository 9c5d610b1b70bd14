#!/usr/bin/env bash
# Fresh Debian 12: installs what is missing, builds, runs the whole ctest suite.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup-debian.sh
export HEATSOLVE_PRESET="${HEATSOLVE_PRESET:-ci}"
preset=$(bash scripts/configure.sh)
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
ctest --preset "$preset" -j "${HEATSOLVE_TEST_JOBS:-2}"
