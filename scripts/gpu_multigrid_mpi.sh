#!/usr/bin/env bash
# One call on a machine with 2 (or NP) GPUs: multigrid across GPUs (distributed coarse levels,
# docs/mpi.md "Multigrid") against one GPU, in the same call:
#   * 3D Poisson, double, tolerance 1e-10 (inputs/poisson_multigrid.yaml): multigrid, mg-cg,
#     full multigrid, and multigrid with the small levels launched one by one (replay: false);
#     implicit heat: Crank-Nicolson, 10 steps (inputs/heat_implicit.yaml, time.end 0.05);
#   * strong: 512^3 in all on 1 and 2 GPUs; weak: 512^3 per GPU (2 GPUs: 512 x 512 x 1024 on a
#     1 x 1 x 2 box, so that cells stay cubes); 2 ranks split z ([1, 1, 2]), halos auto (IPC);
#   * extras: agglomerate_below 32^3 (16^3 gathered) and 64^3 (32^3 gathered: `auto` where the
#     gather goes through host memory) against `auto` between one node's GPUs (128^3, 64^3
#     gathered), multigrid strong and weak, Crank-Nicolson strong at 32^3;
#   * the MPI equivalence suite on the GPUs (HEATSOLVE_TEST_BACKEND=cuda, NP ranks).
# Prints per run: wall seconds (set-up included), set-up, cycles, the hierarchy; a table of
# speed-ups and efficiencies; and the per-level timing (seconds, halo exchanges, gathers) of
# the 2-GPU runs from summary.json's multigrid.decomposed.
# A warm-up process runs first (the first process after a build pays for reading the binary),
# and one extra 1-GPU multigrid run loads every kernel at start (CUDA_MODULE_LOADING=EAGER), so
# that the first cycle's lazy loading can be told from the rest. All runs' summary.json land
# in one file, $OUT/summaries.json (label -> summary), with the logs of failed runs.
#   OUT=/tmp/out bash scripts/gpu_multigrid_mpi.sh
# Environment: REPEAT (runs of each main case, default 1; 2: the fastest counts), N (default 512),
# SKIP_BUILD=1 (use an existing build/gpu-machine; a copied tree may be older than its objects:
# touch what changed), SKIP_SUITE=1 (no equivalence suite),
# SUITE_TIMEOUT (seconds, default 180; 4 ranks need more),
# BACKEND (default cuda; cpu for a dry run), GTEST_FILTER (also build heatsolve_tests and run
# these gtests last), SKIP_EXTRAS=1 (the main cases only), BENCH=1 (also `heatsolve bench
# --multigrid` on one GPU, and under mpirun on NP: one GPU against NP in one run), SKIP_TABLE=1
# (no runs and no table: the bench, suite and gtests),
# EAGER_TWO=1 (also multigrid strong and weak on NP GPUs with CUDA_MODULE_LOADING=EAGER: does
# lazy kernel loading land in the multi-GPU set-up?), NO_BATCH=1 (also multigrid on 1 GPU, strong
# and weak with HEATSOLVE_NO_ALLOCATION_BATCH=1: what carving the hierarchy's arrays saves).
source "$(dirname "$0")/gpu_common.sh"
export OMP_NUM_THREADS=4
REPEAT=${REPEAT:-1}
N=${N:-512}
NP=${NP:-2}  # ranks (one GPU each) of the multi-GPU runs
NG=$(nvidia-smi -L | wc -l)
[ "$NG" -ge "$NP" ] || echo "warning: $NG GPU(s): the $NP-rank runs share devices"
[ "${SKIP_BUILD:-0}" = 1 ] || gpu_build heatsolve heatsolve_mpi_tests ${GTEST_FILTER:+heatsolve_tests}
WORK=${WORK:-/tmp/mgmpi}
rm -rf "$WORK"
mkdir -p "$WORK"

BACKEND=${BACKEND:-cuda}  # cpu: a dry run of the script on a machine without GPUs
POISSON=(inputs/poisson_multigrid.yaml --set solver.tolerance=1e-10 --set execution.backend=$BACKEND
  --set execution.precision=double)
HEAT=(inputs/heat_implicit.yaml --set time.end=0.05 --set execution.backend=$BACKEND
  --set execution.precision=double)
STRONG=(--set "grid.cells=[$N,$N,$N]")
WEAK=(--set "grid.cells=[$N,$N,$((NP * N))]" --set "grid.length=[1.0,1.0,$NP.0]")

# run <label> <ranks> <repeats> <deck and --set arguments...>; RUN_ENV: NAME=value pairs for
# the process (e.g. RUN_ENV=CUDA_MODULE_LOADING=EAGER run ...).
run() {
  local label=$1 np=$2 reps=$3 rep
  shift 3
  for rep in $(seq "$reps"); do
    local dir="$WORK/$label.$rep"
    local cmd=("$HS" run "$@" -q --set output.directory="$dir" --set "output.formats=[]")
    if [ "$np" -gt 1 ]; then
      cmd=(mpirun --bind-to none -np "$np" "${cmd[@]}" --set "execution.decomposition=[1,1,$np]")
    fi
    # shellcheck disable=SC2086  # RUN_ENV is a list of NAME=value words
    timeout 150 env ${RUN_ENV:-} "${cmd[@]}" >"$dir.log" 2>&1 ||
      { echo "$label: rc=$? $(tail -3 "$dir.log")"; cp "$dir.log" "$OUT/failed.$label.$rep.log"; }
  done
  echo "$label" >>"$WORK/labels"
  python3 - "$WORK" "$label" <<'PY'
import glob, json, os, sys
work, label = sys.argv[1:3]
for path in sorted(glob.glob(os.path.join(work, label + ".*", "summary.json"))):
    s = json.load(open(path))
    m = s.get("multigrid", {})
    print(f"  {label:<24} ranks={s['ranks']} wall={s['wall_seconds']:.3f}s "
          f"setup={m.get('setup_seconds', 0):.3f}s steps/its={s.get('iterations', s.get('steps'))} cycles={m.get('cycles')} "
          f"residual={s['final_residual']:.2e} halo={s.get('halo_transport', '-')} replays={m.get('replays', '-')} ahead={m.get('recorded_ahead', '-')} "
          f"| {m.get('hierarchy')}")
    d = m.get("decomposed", {})
    cs = m.get("cycle_seconds", [])
    rest = sorted(cs[2:])
    print(f"    cycles: first {', '.join(f'{c * 1e3:.1f}' for c in cs[:2])} ms, median of the rest "
          f"{rest[len(rest) // 2] * 1e3 if rest else 0:.2f} ms; set-up: tuning "
          f"{d.get('setup_tuning_seconds', 0):.3f} s, halos {d.get('setup_halo_seconds', 0):.3f} s, "
          f"overlap {d.get('overlap', '-')}, gather {d.get('gather', '-')}")
    if "setup_breakdown" in d:
        print("    set-up breakdown: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in d["setup_breakdown"].items())
              + f"; pinned staging {d.get('staging_pinned_bytes', 0) / 2**20:.1f} MiB")
PY
}

if [ "${SKIP_TABLE:-0}" != 1 ]; then  # the block is not indented: it holds here-documents
stamp "warm-up process (not measured)"
"$HS" run "${POISSON[@]}" --set "grid.cells=[64,64,64]" -q --set output.directory="$WORK/warmup" \
  --set "output.formats=[]" >"$WORK/warmup.log" 2>&1 || tail -3 "$WORK/warmup.log"

for m in multigrid mg-cg fmg unreplayed; do
  stamp "Poisson $m: 1 GPU ${N}^3, $NP GPUs strong ${N}^3, $NP GPUs weak ${N}^2 x $((NP * N))"
  M=(--set solver.method=$m)
  [ "$m" = fmg ] && M=(--set solver.method=multigrid --set solver.multigrid.cycle=fmg)
  [ "$m" = unreplayed ] && M=(--set solver.method=multigrid --set solver.multigrid.replay=false)
  run "${m}_1" 1 "$REPEAT" "${POISSON[@]}" "${STRONG[@]}" "${M[@]}"
  run "${m}_strong_$NP" "$NP" "$REPEAT" "${POISSON[@]}" "${STRONG[@]}" "${M[@]}"
  run "${m}_weak_$NP" "$NP" "$REPEAT" "${POISSON[@]}" "${WEAK[@]}" "${M[@]}"
done
stamp "Crank-Nicolson, 10 steps: 1 GPU ${N}^3, $NP GPUs strong, $NP GPUs weak"
run cn_1 1 "$REPEAT" "${HEAT[@]}" "${STRONG[@]}"
run cn_strong_$NP "$NP" "$REPEAT" "${HEAT[@]}" "${STRONG[@]}"
run cn_weak_$NP "$NP" "$REPEAT" "${HEAT[@]}" "${WEAK[@]}"
if [ "${EAGER_TWO:-0}" = 1 ]; then
  stamp "multigrid on $NP GPUs, eager module loading"
  RUN_ENV=CUDA_MODULE_LOADING=EAGER run multigrid_strong_${NP}_eager "$NP" "$REPEAT" "${POISSON[@]}" "${STRONG[@]}"
  RUN_ENV=CUDA_MODULE_LOADING=EAGER run multigrid_weak_${NP}_eager "$NP" "$REPEAT" "${POISSON[@]}" "${WEAK[@]}"
fi
if [ "${NO_BATCH:-0}" = 1 ]; then
  stamp "multigrid on 1 and $NP GPUs, each array its own cudaMalloc (no allocation batch)"
  RUN_ENV=HEATSOLVE_NO_ALLOCATION_BATCH=1 run multigrid_1_nobatch 1 "$REPEAT" "${POISSON[@]}" "${STRONG[@]}"
  RUN_ENV=HEATSOLVE_NO_ALLOCATION_BATCH=1 run multigrid_strong_${NP}_nobatch "$NP" "$REPEAT" "${POISSON[@]}" "${STRONG[@]}"
  RUN_ENV=HEATSOLVE_NO_ALLOCATION_BATCH=1 run multigrid_weak_${NP}_nobatch "$NP" "$REPEAT" "${POISSON[@]}" "${WEAK[@]}"
fi
if [ "${SKIP_EXTRAS:-0}" != 1 ]; then
stamp "extras: 1 GPU with eager module loading; agglomerate_below 32^3 and 64^3"
RUN_ENV=CUDA_MODULE_LOADING=EAGER run multigrid_1_eager 1 1 "${POISSON[@]}" "${STRONG[@]}"
B32=(--set solver.multigrid.agglomerate_below=32768)
B64=(--set solver.multigrid.agglomerate_below=262144)
run multigrid_strong_${NP}_below_32 "$NP" "$REPEAT" "${POISSON[@]}" "${STRONG[@]}" "${B32[@]}"
run multigrid_weak_${NP}_below_32 "$NP" "$REPEAT" "${POISSON[@]}" "${WEAK[@]}" "${B32[@]}"
run cn_strong_${NP}_below_32 "$NP" 1 "${HEAT[@]}" "${STRONG[@]}" "${B32[@]}"
run multigrid_strong_${NP}_below_64 "$NP" "$REPEAT" "${POISSON[@]}" "${STRONG[@]}" "${B64[@]}"
run multigrid_weak_${NP}_below_64 "$NP" "$REPEAT" "${POISSON[@]}" "${WEAK[@]}" "${B64[@]}"
fi

stamp "table"
python3 - "$WORK" "$N" "$OUT" "$NP" <<'PY'
import glob, json, os, sys
work, n, out, np_ = sys.argv[1:5]
S = {}  # label -> the fastest repeat's summary
for label in open(os.path.join(work, "labels")).read().split():
    for path in glob.glob(os.path.join(work, label + ".*", "summary.json")):
        s = json.load(open(path))
        if label not in S or s["wall_seconds"] < S[label]["wall_seconds"]:
            S[label] = s
def t(label):
    return S[label]["wall_seconds"] if label in S else float("nan")
def cyc(label):
    return S[label].get("multigrid", {}).get("cycles", 0) if label in S else 0
def setup(label):
    return S[label].get("multigrid", {}).get("setup_seconds", 0) if label in S else 0
def median(label):  # the median cycle past the first two (steady solves), seconds
    rest = sorted(S[label].get("multigrid", {}).get("cycle_seconds", [])[2:]) if label in S else []
    return rest[len(rest) // 2] if rest else float("nan")
print(f"wall seconds (set-up included), fastest of the repeats; weak: {n}^3 per GPU; median: the "
      "median cycle past the first two (steady solves)")
print(f"| case | 1 GPU | {np_} GPUs strong | speed-up (target >= 1.6 on 2): wall, median cycle | {np_} GPUs weak "
      "| weak efficiency (target >= 0.85): wall, median cycle | per cycle |")
print("|---|---|---|---|---|---|---|")
for case, name in (("multigrid", "multigrid"), ("mg-cg", "mg-cg"), ("fmg", "multigrid, cycle fmg"),
                   ("unreplayed", "multigrid, replay: false"), ("cn", "Crank-Nicolson 10 steps")):
    one, st, wk = f"{case}_1", f"{case}_strong_{np_}", f"{case}_weak_{np_}"
    per = (t(one) / max(cyc(one), 1)) / (t(wk) / max(cyc(wk), 1)) if cyc(wk) else float("nan")
    def ratio(a, b, unit=""):  # "-" where a run has no cycle times (implicit steps)
        r = a / b
        return "-" if r != r else f"{r:.2f}{unit}"
    print(f"| {name} | {t(one):.3f} s, {cyc(one)} cycles (set-up {setup(one):.3f}) "
          f"| {t(st):.3f} s, {cyc(st)} cycles (set-up {setup(st):.3f}) "
          f"| {t(one) / t(st):.3f}x, {ratio(median(one), median(st), 'x')} "
          f"| {t(wk):.3f} s, {cyc(wk)} cycles | {t(one) / t(wk):.3f}, {ratio(median(one), median(wk))} "
          f"| {per:.2f} |")
for label in (f"multigrid_strong_{np_}_below_32", f"multigrid_weak_{np_}_below_32",
              f"cn_strong_{np_}_below_32", f"multigrid_strong_{np_}_below_64",
              f"multigrid_weak_{np_}_below_64"):
    if label not in S:  # SKIP_EXTRAS=1
        continue
    one = "cn_1" if label.startswith("cn") else "multigrid_1"
    print(f"| {label} | | {t(label):.3f} s, {cyc(label)} cycles | {t(one) / t(label):.2f}, "
          f"{median(one) / median(label):.2f} (by wall, median) | | | |")
for label in ("multigrid_1", "multigrid_1_eager"):
    if label not in S:
        continue
    first = S[label].get("multigrid", {}).get("cycle_seconds", [float("nan")])[0]
    print(f"{label}: {t(label):.3f} s, first cycle {first * 1e3:.1f} ms, median {median(label) * 1e3:.2f} ms")
json.dump(S, open(os.path.join(out, "summaries.json"), "w"), indent=1)
print()
def fmt(v):
    return "-" if v is None else f"{v:.4f}"
for label in (f"multigrid_strong_{np_}", f"multigrid_weak_{np_}", f"mg-cg_strong_{np_}",
              f"cn_strong_{np_}", f"multigrid_strong_{np_}_below_64"):
    if label not in S:
        continue
    m = S[label]["multigrid"]
    d = m.get("decomposed", {})
    sec = m.get("seconds", {})
    print(f"{label}: wall {S[label]['wall_seconds']:.3f} s; smoother+residual {sec.get('smoother_and_residual', 0):.3f}, "
          f"transfer {sec.get('transfer', 0):.3f}, coarse {sec.get('coarse_solve', 0):.3f} s; "
          f"{d.get('distributed_levels')} distributed levels, gathered {d.get('gathered_level')} on "
          f"{d.get('gathered_on')}: gathers {d.get('agglomeration_seconds', 0):.4f} s, exchanges "
          f"{d.get('exchange_seconds', 0):.4f} s (rank 0)")
    print("  | level | placement | grid | block | margins | seconds | exchange s | exchanges (alongside) "
          "| deep passes (on zeroed margins) | corrections in kept margins |")
    for lv in d.get("levels", []):
        print(f"  | {lv['level']} | {lv['placement']} | {lv.get('grid', '-')} | {lv.get('block', '-')} "
              f"| {lv.get('deep_smoothing_depth', '-')} "
              f"| {lv['seconds']:.4f} | {fmt(lv.get('exchange_seconds'))} | {lv.get('exchanges', '-')} "
              f"({lv.get('margins_exchanged_alongside', '-')}) | {lv.get('deep_passes', '-')} "
              f"({lv.get('margins_zeroed', '-')}) | {lv.get('margins_kept', '-')} |")
PY
fi  # SKIP_TABLE

if [ "${BENCH:-0}" = 1 ]; then
  stamp "bench --multigrid 512 double, one GPU"
  CUDA_VISIBLE_DEVICES=0 timeout 150 "$HS" bench --multigrid --size "$N" --precision double \
    >"$OUT/bench_multigrid.log" 2>&1 || echo "bench rc=$?"
  grep -vE "^\s*$" "$OUT/bench_multigrid.log" | tail -14
  stamp "bench --multigrid $N double, one GPU against $NP (strong and weak, one run)"
  timeout 240 mpirun --bind-to none -np "$NP" "$HS" bench --multigrid --size "$N" \
    >"$OUT/bench_scaling.log" 2>&1 || echo "scaling bench rc=$?"
  grep -vE "^\s*$" "$OUT/bench_scaling.log" | tail -6
fi
if [ "${SKIP_SUITE:-0}" != 1 ]; then
  stamp "MPI equivalence suite on the GPUs ($NP ranks, CUDA backend)"
  HEATSOLVE_TEST_BACKEND=$BACKEND timeout "${SUITE_TIMEOUT:-180}" mpirun --bind-to none -np "$NP" \
    "$B/tests/heatsolve_mpi_tests" "$WORK/suite" >"$OUT/mpi_suite.log" 2>&1
  echo "suite rc=$?"
  grep -E "DIFFERS|FAILED|PASSED|-dist np$NP .*\(auto\)|restarted" "$OUT/mpi_suite.log" | head -40
fi
if [ -n "${GTEST_FILTER:-}" ]; then
  stamp "gtests: $GTEST_FILTER"
  timeout 200 "$B/tests/heatsolve_tests" --gtest_filter="$GTEST_FILTER" >"$OUT/gtests.log" 2>&1
  echo "gtests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" "$OUT/gtests.log" | head -20
fi
stamp done
