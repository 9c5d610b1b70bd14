#!/usr/bin/env bash
# One GPU-machine call: builds scripts/ipc_setup_probe.cu and runs it on 2 and 4 ranks (as many
# GPUs as there are; ranks share them otherwise), without and with PRE_GIB GiB allocated first
# (default 12, about what a 512^3 double run holds per GPU; PRES: the list, default "0 12"),
# and with each PEER mode of PEERS
# (default none; enable, thread: see the probe). NPS: the rank counts (default "2 4"). Output
# per rank, sorted.
#   OUT=/tmp/out bash scripts/gpu_ipc_setup_probe.sh
source "$(dirname "$0")/gpu_common.sh"
stamp build
nvcc -std=c++17 -O2 -ccbin mpicxx -o "$OUT/ipc_setup_probe" scripts/ipc_setup_probe.cu ||
  exit 1
for np in ${NPS:-2 4}; do
  for pre in ${PRES:-0 ${PRE_GIB:-12}}; do
    for peer in ${PEERS:-none}; do
      stamp "$np ranks, PRE_GIB=$pre, PEER=$peer"
      timeout 120 mpirun --bind-to none -x PRE_GIB="$pre" -x PEER="$peer" -np "$np" \
        "$OUT/ipc_setup_probe" | sort -s -k1,1 | grep -v "^r[0-9]* held "
    done
  done
done
rm -f "$OUT/ipc_setup_probe"
stamp done
