#!/usr/bin/env bash
# Fresh Debian 12: installs what is missing, builds, runs a deck.
#   ./run.sh inputs/quickstart.yaml [heatsolve run options...]
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -lt 1 ]; then
  echo "usage: ./run.sh DECK.yaml [--set key=value ...] [--overwrite]" >&2
  exit 2
fi
bash scripts/setup-debian.sh
preset=$(bash scripts/configure.sh)
exec "build/$preset/app/heatsolve" run "$@"
