#!/usr/bin/env bash
# Where a multigrid cycle's time goes on one GPU: 512^3 double Poisson (the bench's deck),
# summary.json's per-level seconds for V-cycles and one FMG pass, and the device time of each
# kernel of the first cycles (ncu). Logs under $OUT (scripts/gpu_common.sh).
source "$(dirname "$0")/gpu_common.sh"
gpu_build heatsolve
N=${N:-512}
deck=/tmp/mg.yaml
cat >$deck <<DECK
name: mg
problem: {type: poisson, dimensions: 3}
grid: {cells: [$N, $N, $N], length: [1.0, 1.0, 1.0]}
source: {type: gaussian, amplitude: 100.0, width: 0.1, center: [0.5, 0.5, 0.5]}
boundary: {all: {type: dirichlet, value: 0.0}}
solver: {method: multigrid, tolerance: 1.0e-10, max_iterations: 40}
output: {directory: /tmp/mg, formats: []}
DECK
for cyc in ${CYCLES-v fmg}; do
  for it in 40 1; do
    [[ $cyc == v && $it == 1 ]] && continue
    "$HS" run $deck --overwrite -q --set solver.multigrid.cycle=$cyc --set solver.max_iterations=$it >/dev/null 2>&1
    python3 -c "
import json; s=json.load(open('/tmp/mg/summary.json')); m=s['multigrid']
print('$cyc its=$it', 'wall', round(s['wall_seconds'],4), 'setup', round(m['setup_seconds'],4), 'cycles', m['cycles'])
print('  seconds', json.dumps(m['seconds']))"
  done
done
if command -v ncu >/dev/null; then
  stamp ncu
  timeout 240 ncu --csv --metrics gpu__time_duration.sum -c ${LAUNCHES:-60} \
    -k "regex:${KERNELS:-temporal|restrict|prolong|reduce_rows|combine|interpolate}" \
    "$HS" run $deck --overwrite -q \
    --set solver.max_iterations=1 >"$OUT/ncu.csv" 2>"$OUT/ncu.err"
  python3 - "$OUT/ncu.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; ki = h.index('Kernel Name'); gi = h.index('Grid Size'); vi = h.index('Metric Value'); ii = h.index('ID')
for r in rows[1:]:
    print(r[ii], r[ki][:60], r[gi], r[vi])
PY
fi
stamp done
