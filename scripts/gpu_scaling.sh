#!/usr/bin/env bash
# MPI scaling over the GPUs of one node (one rank per GPU, decomposition along z), heat
# 3D float, output off (inputs/bench512.yaml with overrides):
#   weak:   512^3 cells per GPU, WEAK_STEPS steps (default 1000)
#   strong: 1024 x 1024 x STRONG_NZ cells in all (default 1024), STRONG_STEPS (default 300)
# For every multi-GPU run, time per step is split into compute (a 1-GPU run of the same
# local block, no exchange) and the rest (halo exchange and whatever overlap did not hide),
# for each halo transport with overlap on and off.
#   scripts/gpu_scaling.sh <heatsolve> [max GPUs] [work dir]
# Environment: KERNEL (execution.kernel, default auto: the ranks agree on one variant; with
# temporal, multi-GPU runs fuse through deep halos and the table shows their depth), REPEAT
# (runs of each case, default 2: the table shows the fastest and the spread), HALOS (halo
# transports to run, default "ipc staged"), OVERLAPS (execution.overlap values, default
# "true false"; fused passes do not overlap), STRONG_NZ (default 1024).
# Prints one table (markdown) last; the summaries stay under the work dir.
set -uo pipefail
HS=$(realpath "$1")
NG=${2:-$(nvidia-smi -L | wc -l)}
WORK=${3:-/tmp/scaling}
DECK=$(realpath inputs/bench512.yaml)
PYTHON=${PYTHON:-python3}
KERNEL=${KERNEL:-auto}
REPEAT=${REPEAT:-2}
HALOS=${HALOS:-ipc staged}
OVERLAPS=${OVERLAPS:-true false}
STRONG_NZ=${STRONG_NZ:-1024}
WEAK_STEPS=${WEAK_STEPS:-1000}
STRONG_STEPS=${STRONG_STEPS:-300}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=4
export NCCL_NVLS_ENABLE=0
mkdir -p "$WORK"

run() {  # run <label> <ranks> <nx> <ny> <nz> <steps> [--set ...]
  local label=$1 np=$2 nx=$3 ny=$4 nz=$5 steps=$6 rep
  shift 6
  for rep in $(seq "$REPEAT"); do
    local dir="$WORK/$label.$rep"
    rm -rf "$dir"
    local cmd=("$HS" run "$DECK" -q --set output.directory="$dir" --set output.formats=[]
      --set "grid.cells=[$nx,$ny,$nz]" --set time.steps="$steps" --set execution.kernel="$KERNEL"
      "$@")
    if [ "$np" -gt 1 ]; then
      cmd=(mpirun --bind-to none -np "$np" "${cmd[@]}" --set "execution.decomposition=[1,1,$np]")
    fi
    timeout 300 "${cmd[@]}" >"$dir.log" 2>&1 || echo "$label: rc=$? $(tail -2 "$dir.log")"
  done
  echo "$label" >>"$WORK/labels"
}

rm -f "$WORK/labels"
run weak_1 1 512 512 512 "$WEAK_STEPS"
run strong_1 1 1024 1024 "$STRONG_NZ" "$STRONG_STEPS"
for np in 2 4 8; do
  [ "$np" -le "$NG" ] || continue
  run "strong_compute_$np" 1 1024 1024 $((STRONG_NZ / np)) "$STRONG_STEPS"
  for halo in $HALOS; do
    for overlap in $OVERLAPS; do
      run "weak_${np}_${halo}_$overlap" "$np" 512 512 $((512 * np)) "$WEAK_STEPS" \
        --set execution.halo=$halo --set execution.overlap=$overlap
      run "strong_${np}_${halo}_$overlap" "$np" 1024 1024 "$STRONG_NZ" "$STRONG_STEPS" \
        --set execution.halo=$halo --set execution.overlap=$overlap
    done
  done
done

"$PYTHON" - "$WORK" "$STRONG_NZ" <<'EOF'
import glob, json, os, sys
work, strong = sys.argv[1], f"1024^2 x {sys.argv[2]}"
S, ALL = {}, {}  # label -> fastest repeat's summary; label -> ms/step of every repeat
for label in open(os.path.join(work, "labels")).read().split():
    for path in sorted(glob.glob(os.path.join(work, label + ".*", "summary.json"))):
        try:
            s = json.load(open(path))
        except Exception:
            continue
        t = 1e3 * s["wall_seconds"] / s["steps"]
        ALL.setdefault(label, []).append(t)
        if label not in S or t < 1e3 * S[label]["wall_seconds"] / S[label]["steps"]:
            S[label] = s
def ms(label):  # ms per step of the time loop, fastest repeat
    s = S.get(label)
    return 1e3 * s["wall_seconds"] / s["steps"] if s else float("nan")
def gpts(label):
    s = S.get(label)
    return s["points_per_second"] / 1e9 if s else float("nan")
def spread(label):
    v = ALL.get(label, [])
    return f"{max(v) / min(v) - 1:.0%}" if len(v) > 1 else "-"
def kern(label):
    return S[label]["kernel"] if label in S else "?"
def depth(label):
    return S[label].get("halo_depth", "-") if label in S else "?"
print(f"repeats: {os.environ.get('REPEAT', '2')} (fastest shown; spread = slowest/fastest - 1)")
print("| run | GPUs | halo | overlap | kernel (rank 0) | halo depth | ms/step | spread | GPt/s | compute ms/step | rest ms/step | efficiency |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
print(f"| weak 512^3/GPU | 1 | - | - | {kern('weak_1')} | - | {ms('weak_1'):.3f} | {spread('weak_1')} | {gpts('weak_1'):.1f} | {ms('weak_1'):.3f} | 0 | 100% |")
print(f"| strong {strong} | 1 | - | - | {kern('strong_1')} | - | {ms('strong_1'):.3f} | {spread('strong_1')} | {gpts('strong_1'):.1f} | {ms('strong_1'):.3f} | 0 | 1.00x |")
for np_ in (2, 4, 8):
    for kind in ("weak", "strong"):
        base = ms("weak_1") if kind == "weak" else ms(f"strong_compute_{np_}")
        for halo in ("ipc", "staged"):
            for ov in ("true", "false"):
                label = f"{kind}_{np_}_{halo}_{ov}"
                if label not in S:
                    continue
                t = ms(label)
                got = S[label].get("halo_transport", "?")
                eff = (f"{100 * ms('weak_1') / t:.0f}%" if kind == "weak"
                       else f"{ms('strong_1') / t:.2f}x")
                name = "weak 512^3/GPU" if kind == "weak" else f"strong {strong}"
                print(f"| {name} | {np_} | {got} | {ov} | {kern(label)} | {depth(label)} | {t:.3f} | {spread(label)} | "
                      f"{gpts(label):.1f} | {base:.3f} | {t - base:.3f} | {eff} |")
EOF
