#!/usr/bin/env bash
# One GPU session for the CUDA stencil family and temporal blocking: build (preset
# gpu-machine), GPU tests, benchmark tables, end-to-end runs, sanitizers, ncu profiles + SASS.
# Writes at most 8 files under $OUT (default ./gpu-out). Run from the repository root.
#   PHASES="tests bench e2e loop sanitize ncu" (default: all), BENCH="512 3 float all;..." specs,
#   TESTS_FILTER (gtest filter of the tests phase), NCU_KERNELS="copy_kernel stencil_tma_kernel"
#   and NCU_SPEC="512 3 float" for the ncu phase; E2E_RUNS="temporal:auto temporal:3" the
#   end-to-end runs (kernel:time_block). HEATSOLVE_BENCH_VARIANTS / _CHUNKS / _SUSTAIN
#   become heatsolve bench --variants / --chunks / --sustain (comma-separated lists).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
PHASES=${PHASES:-"tests bench e2e loop sanitize ncu"}
BENCH=${BENCH:-"512 3 float all;512 3 double all;8192 2 float all;8192 2 double all"}
mkdir -p "$OUT"
exec > >(tee "$OUT/summary.log") 2>&1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
has() { [[ " $PHASES " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv || true

stamp configure+build
BUILD=build/gpu-machine
{ cmake --preset gpu-machine && cmake --build --preset gpu-machine -j16 --target heatsolve heatsolve_tests; } \
  >"$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -20; tail -20 "$OUT/build.log"; exit 1; }
grep -iE "spill|stack frame" "$OUT/build.log" | grep -v " 0 bytes" | head -5
TESTS="$BUILD/tests/heatsolve_tests"
HS="$BUILD/app/heatsolve"

if has tests; then
  stamp tests
  timeout 200 "$TESTS" --gtest_filter="${TESTS_FILTER:-CudaTemporal*:Temporal*:CudaStencil.*:CudaSolver.*}" >"$OUT/tests.log" 2>&1
  echo "tests rc=$?"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|worst|differ in bits" "$OUT/tests.log" | head -30
fi

if has bench; then
  stamp bench
  # SM / memory clocks, power and the active clock-event (throttle) reasons every 100 ms, so a
  # row's rate can be read against the clocks it ran at (appended to bench.log as CLOCK lines).
  smi=
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active \
      --format=csv,noheader -lms 100 >/tmp/clocks.csv 2>&1 &
    smi=$!
  fi
  # Each spec "N DIMS PRECISION [all]" is one `heatsolve bench` process (its own copy figure).
  IFS=';' read -ra specs <<<"$BENCH"
  for spec in "${specs[@]}"; do
    read -r n d p mode <<<"$spec"
    echo "SPEC $(date +%H:%M:%S.%N | cut -c1-12) $spec" >>"$OUT/bench.log"
    timeout 300 "$HS" bench --size "$n" --dims "$d" --precision "$p" \
      ${mode:+--all-shapes} \
      ${HEATSOLVE_BENCH_VARIANTS:+--variants "$HEATSOLVE_BENCH_VARIANTS"} \
      ${HEATSOLVE_BENCH_CHUNKS:+--chunks "$HEATSOLVE_BENCH_CHUNKS"} \
      ${HEATSOLVE_BENCH_SUSTAIN:+--sustain "$HEATSOLVE_BENCH_SUSTAIN"} >>"$OUT/bench.log" 2>&1
  done
  echo "SPEC $(date +%H:%M:%S.%N | cut -c1-12) end" >>"$OUT/bench.log"
  if [ -n "$smi" ]; then
    kill "$smi" 2>/dev/null
    sed 's/^/CLOCK /' /tmp/clocks.csv >>"$OUT/bench.log"
  fi
fi

if has e2e; then
  stamp e2e
  for run in ${E2E_RUNS:-auto:auto 2.5d-register:auto 2.5d-tma:auto temporal:auto}; do
    kern=${run%%:*} tb=${run#*:}
    {
      d=/tmp/e2e-$kern-$tb
      timeout 120 "$HS" run inputs/bench512.yaml --overwrite -q --set execution.kernel=$kern \
        --set execution.time_block=$tb --set output.directory=$d >/tmp/e2e.txt 2>&1
      rc=$?
      python3 - "$d/summary.json" "$kern time_block=$tb" "$rc" <<'PY' | tee -a "$OUT/e2e.log"
import json, sys
try:
    j = json.load(open(sys.argv[1]))
    pps = j.get("points_per_second") or j.get("performance", {}).get("points_per_second")
    print(f"e2e kernel={sys.argv[2]:<22} rc={sys.argv[3]} chosen={j.get('kernel')} "
          f"steps={j.get('steps')} wall={j.get('wall_seconds')} GPt/s={pps/1e9 if pps else None}")
except Exception as e:
    print(f"e2e kernel={sys.argv[2]} rc={sys.argv[3]} no summary: {e}")
PY
      [ $rc -ne 0 ] && tail -5 /tmp/e2e.txt
    }
  done
fi

if has loop && command -v ncu >/dev/null; then
  # Where a step of the time loop goes: the duration of every kernel the end-to-end run
  # launches (ncu, one metric), summarised per kernel over the loop's launches, and the
  # end-to-end rate at 200 and 1000 steps (a fixed cost shows as a difference).
  stamp loop
  timeout 240 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    "$HS" run inputs/bench512.yaml --overwrite -q --set time.steps=30 \
    --set output.directory=/tmp/loop >/tmp/loop.csv 2>&1 || tail -5 /tmp/loop.csv
  python3 - /tmp/loop.csv <<'PY' | tee -a "$OUT/e2e.log"
import csv, sys, statistics, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; k, u, v = (head.index(c) for c in ("Kernel Name", "Metric Unit", "Metric Value"))
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
seq = [(r[k].split("(")[0].split("<")[0], float(r[v].replace(",", "")) * scale.get(r[u], 1.0))
       for r in rows[1:]]
last = collections.defaultdict(list)
for name, t in seq[-70:]:  # the loop's launches (the tuner's come first)
    last[name].append(t)
for name, ts in last.items():
    print(f"loop kernel {name:<28} n={len(ts):3d} median {statistics.median(ts):9.2f} us")
PY
  for steps in 200 1000; do
    timeout 120 "$HS" run inputs/bench512.yaml --overwrite -q --set time.steps=$steps \
      --set output.directory=/tmp/e2e-steps >/dev/null 2>&1
    python3 -c "import json;j=json.load(open('/tmp/e2e-steps/summary.json'));print('e2e steps=$steps kernel',j.get('kernel'),'GPt/s',j['points_per_second']/1e9,'wall',j['wall_seconds'])" | tee -a "$OUT/e2e.log"
  done
  command -v nsys >/dev/null && echo "nsys: $(command -v nsys)" || echo "nsys: not installed"
fi

if has sanitize; then
  stamp sanitize
  mkdir -p /tmp/san
  SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-120} \
  SANITIZE_FILTER=${SANITIZE_FILTER:-'CudaTemporal.EveryShapeMatchesSingleStepsFloat:CudaTemporal.BackendStepsDouble:CudaStencil.EveryCompiledShapeFloat:CudaStencil.AsyncEdgesFloat'} \
    bash scripts/sanitize_gpu.sh "$TESTS" /tmp/san
  cat /tmp/san/sanitize_*.log >"$OUT/sanitize.log" 2>/dev/null
fi

if has ncu && command -v ncu >/dev/null; then
  # Nsight Compute on one bench configuration: the full section set (speed of light, memory
  # workload, warp-state stall reasons, scheduler, occupancy, per-SASS-instruction samples) for
  # each kernel of NCU_KERNELS, and the SASS of the stencil objects.
  NCU_KERNELS=${NCU_KERNELS:-"copy_kernel stencil_tma_kernel stencil_register_kernel"}
  read -r n d p <<<"${NCU_SPEC:-512 3 float}"
  mkdir -p /tmp/prof
  for k in $NCU_KERNELS; do
    stamp "ncu $k ($n^$d $p)"
    timeout 240 ncu --clock-control none --set full --import-source no -k "regex:$k" \
      --launch-skip 4 --launch-count 1 -f -o "/tmp/prof/$k" \
      "$HS" bench --size "$n" --dims "$d" --precision "$p" >/tmp/prof/$k.run 2>&1 ||
      tail -5 /tmp/prof/$k.run
    ncu --import "/tmp/prof/$k.ncu-rep" --page details >>"$OUT/ncu_details.txt" 2>&1
    ncu --import "/tmp/prof/$k.ncu-rep" --page source --csv --print-source sass \
      >"/tmp/prof/$k.sass.csv" 2>&1
  done
  for o in stencil_launch temporal_launch; do
    obj=$(find "$BUILD" -name "$o.cu.o" | head -1)
    [ -n "$obj" ] && cuobjdump -sass "$obj" >"/tmp/prof/$o.sass"
  done
  (cd /tmp/prof && tar czf "$OUT/ncu_sass.tgz" ./*.sass.csv ./*.ncu-rep ./*.sass 2>/dev/null)
  grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Executed Instructions  |Registers Per|Achieved Occupancy" \
    "$OUT/ncu_details.txt" | sed 's/(const.*//' | head -60
fi
stamp done
echo "==== bench (default shapes) ===="
grep -E "^stencil bench:|^copy bandwidth| \* " "$OUT/bench.log" 2>/dev/null | cut -c1-120
