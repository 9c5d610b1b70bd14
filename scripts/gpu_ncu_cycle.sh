#!/usr/bin/env bash
# One call on a 2-GPU machine: where a steady V-cycle's device time goes, kernel by kernel, on
# one GPU (512^3) and on rank 0 of the strong 2-GPU run (a 512 x 512 x 256 block; rank 1 runs
# without the profiler). Each case runs twice under `ncu --metrics gpu__time_duration.sum`,
# stopped after 3 and after 7 cycles (solver.max_iterations; the tolerance is out of reach, so
# both exit 3); the difference over 4 is one steady cycle: per kernel and grid, the launches and
# microseconds (ncu times each kernel alone: the sum exceeds a cycle's wall time). Halo packs
# write the neighbour's memory and read long under ncu. The CSVs come back in $OUT/ncu.tgz.
#   OUT=/tmp/out bash scripts/gpu_ncu_cycle.sh
# Environment: SKIP_BUILD=1 (an existing build/gpu-machine), ITS (default "3 7"), ONLY_TWO=1
# (the 2-GPU runs only), ONLY_ONE=1 (the 1-GPU runs only), DETAIL=regex (also ncu's throughput, occupancy and stall sections for
# DETAIL_COUNT (default 8) launches of the kernels whose names match, past the first
# DETAIL_SKIP (default 12), in both cases: detail.one.txt and detail.two.txt in ncu.tgz).
source scripts/gpu_common.sh
[ "${SKIP_BUILD:-0}" = 1 ] || gpu_build heatsolve
W=/tmp/nc; rm -rf $W; mkdir -p $W
P=(inputs/poisson_multigrid.yaml --set solver.tolerance=1e-14 --set execution.backend=cuda --set execution.precision=double -q --set "output.formats=[]" --set "grid.cells=[512,512,512]")
$HS run "${P[@]}" --set "grid.cells=[64,64,64]" --set output.directory=$W/warm > /dev/null 2>&1
NCU=(ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base)
for its in ${ITS:-3 7}; do
  if [ "${ONLY_TWO:-0}" != 1 ]; then
  stamp "one GPU, $its cycles"
  timeout 250 "${NCU[@]}" --log-file $OUT/one.$its.csv $HS run "${P[@]}" --set solver.max_iterations=$its --set output.directory=$W/one.$its > $OUT/one.$its.log 2>&1; echo rc=$?
  fi
  [ "${ONLY_ONE:-0}" = 1 ] && continue
  stamp "two GPUs, rank 0 under ncu, $its cycles"
  timeout 250 mpirun --bind-to none -np 2 bash -c '
    if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then '"$(printf '%q ' "${NCU[@]}")"' --log-file '"$OUT"'/two.'"$its"'.csv "$@"; else "$@"; fi; true' _ \
    $HS run "${P[@]}" --set solver.max_iterations=$its --set "execution.decomposition=[1,1,2]" --set output.directory=$W/two.$its > $OUT/two.$its.log 2>&1; echo rc=$?
done
if [ -n "${DETAIL:-}" ]; then
  DNCU=(ncu --clock-control none --kernel-name "regex:$DETAIL" --launch-skip "${DETAIL_SKIP:-12}"
    --launch-count "${DETAIL_COUNT:-8}" --section SpeedOfLight --section MemoryWorkloadAnalysis
    --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats)
  stamp "detail: $DETAIL, one GPU"
  timeout 200 "${DNCU[@]}" --log-file $OUT/detail.one.txt $HS run "${P[@]}" --set solver.max_iterations=4 --set output.directory=$W/d1 > /dev/null 2>&1; echo rc=$?
  stamp "detail: $DETAIL, two GPUs, rank 0"
  timeout 200 mpirun --bind-to none -np 2 bash -c '
    if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then '"$(printf '%q ' "${DNCU[@]}")"' --log-file '"$OUT"'/detail.two.txt "$@"; else "$@"; fi; true' _ \
    $HS run "${P[@]}" --set solver.max_iterations=4 --set "execution.decomposition=[1,1,2]" --set output.directory=$W/d2 > /dev/null 2>&1; echo rc=$?
fi
python3 - "$OUT" <<'PY'
import csv, sys, collections, os
out = sys.argv[1]
def load(path):
    agg = collections.defaultdict(lambda: [0, 0.0])
    if not os.path.exists(path): return agg
    lines = open(path).read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None: return agg
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum": continue
        name = row["Kernel Name"]
        short = name.split("(")[0][:110]
        key = (short, row.get("Grid Size", ""), row.get("Block Size", ""))
        agg[key][0] += 1
        agg[key][1] += float(row["Metric Value"].replace(",", "")) * 1e-3  # ns -> us
    return agg
for case in ("one", "two"):
    a, b = load(f"{out}/{case}.3.csv"), load(f"{out}/{case}.7.csv")
    rows = []
    for k in set(a) | set(b):
        n = b[k][0] - a[k][0]; t = (b[k][1] - a[k][1]) / 4
        if n or abs(t) > 0.5: rows.append((t, n / 4, k))
    rows.sort(reverse=True)
    print(f"== {case}: per steady cycle, kernel time {sum(r[0] for r in rows):.1f} us, launches {sum(r[1] for r in rows):.1f}")
    for t, n, k in rows:
        print(f"  {t:9.1f} us  x{n:5.2f}  {k[1]:>14} {k[2]:>12}  {k[0]}")
PY
rm -f $OUT/one.*.log $OUT/two.*.log; (cd $OUT && tar czf ncu.tgz one.*.csv two.*.csv detail.*.txt 2>/dev/null; rm -f one.*.csv two.*.csv detail.*.txt)
stamp done
