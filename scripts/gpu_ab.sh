#!/usr/bin/env bash
# A/B on one GPU: the stencil bench rows and the end-to-end bench512 rates of a baseline tree
# (BASE, default .baseline: e.g. `git archive <commit> | tar -x -C .baseline`) against this
# tree, alternating the two binaries so that clocks and temperature weigh on both alike.
source "$(dirname "$0")/gpu_common.sh"
BASE=${BASE:-.baseline}
gpu_build heatsolve
(cd "$BASE" && cmake --preset gpu-machine >"$OUT/base-build.log" 2>&1 &&
  cmake --build --preset gpu-machine -j "$(nproc)" --target heatsolve >>"$OUT/base-build.log" 2>&1) ||
  { tail -20 "$OUT/base-build.log"; exit 1; }
OLD=$BASE/build/gpu-machine/app/heatsolve
rate() {  # rate <binary> <label> <--set ...>
  local bin=$1 label=$2; shift 2
  timeout 120 "$bin" run inputs/bench512.yaml --overwrite -q --set output.directory=/tmp/ab "$@" >/dev/null 2>&1
  python3 -c "import json; s=json.load(open('/tmp/ab/summary.json')); print('$label', s['kernel'], round(s['points_per_second']/1e9,1), 'GPt/s')"
}
for round in 1 2; do
  for spec in "old $OLD" "new $HS"; do
    read -r label bin <<<"$spec"
    stamp "round $round $label"
    for p in float double; do
      "$bin" bench --size 512 --precision $p --variants 2.5d-tma,temporal 2>&1 |
        grep -E "^(2.5d-tma|temporal) " | sed "s/^/$label $p /"
    done
    rate "$bin" "$label e2e auto float 200" 
    rate "$bin" "$label e2e temporal float 200" --set execution.kernel=temporal
    rate "$bin" "$label e2e temporal float 2000" --set execution.kernel=temporal --set time.steps=2000
    rate "$bin" "$label e2e auto double 200" --set execution.precision=double
  done
done
stamp done
