#!/usr/bin/env bash
# Installs the Debian packages heatsolve needs, skipping those already present.
# Sourced by run.sh and test.sh; safe to run on its own.
set -euo pipefail

HEATSOLVE_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools
  libzfp-dev hdf5-filter-plugin-zfp-serial  # ZFP compression; Debian's plugin: h5py reads it
  libyaml-cpp-dev libgtest-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  paraview-dev python3-paraview libpython3-dev
  python3-h5py python3-numpy python3-matplotlib
  clang libclang-rt-14-dev
  xvfb xauth
)

missing=()
for p in "${HEATSOLVE_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "[setup] all Debian packages present"
fi
