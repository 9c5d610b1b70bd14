#!/usr/bin/env bash
# Every input is answered clearly: each seed of the fuzz corpus (the shipped decks and the
# bad-deck table of tests/io/test_deck.cpp) and a set of hostile decks go through `validate`
# and `run`. Allowed answers: exit 0, or exit 2 with "file:line:column: message" first;
# never a crash, a raw exception, a template/stack dump or a sanitizer report.
# usage: bad_inputs.sh <heatsolve binary> <source dir> <work dir>
set -euo pipefail
bin=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work/decks"
fail() { echo "FAIL: $*"; exit 1; }

# Seeds: the deck text before the first NUL (the fuzz target's --set separator).
for f in "$src"/tests/fuzz/corpus/*; do
  python3 -c 'import sys; d=open(sys.argv[1],"rb").read().split(b"\0")[0]; open(sys.argv[2],"wb").write(d)' \
    "$f" "$work/decks/$(basename "$f")"
done
# Hostile decks beyond the table.
head='name: t
problem: {type: heat, dimensions: 3}
grid: {cells: [4, 4, 4]}'
printf '%s\ntime: {end: 1e400}\n' "$head" >"$work/decks/huge_end.yaml"
printf '%s\ntime: {steps: 99999999999999999999}\n' "$head" >"$work/decks/huge_steps.yaml"
printf '%s\nmaterial: {diffusivity: 1e308}\ntime: {end: 0}\n' "$head" >"$work/decks/alpha_overflow.yaml"
printf '%s\ntime: {end: 1}\noutput: {directory: "a\\0b"}\n' "$head" >"$work/decks/nul_in_path.yaml"
printf '%s\ntime: {end: 1}\noutput: {directory: a\xffb}\n' "$head" >"$work/decks/bad_utf8.yaml"
printf 'name: t\nproblem: {type: heat, dimensions: 4294967298}\n' >"$work/decks/dims_wrap.yaml"
# Multigrid and implicit stepping: an overflowing sweep count, a list where a scheme name
# belongs, an implicit deck whose dt is ~100x the explicit limit (valid).
printf '%s\ntime: {end: 1}\nsolver: {method: multigrid, multigrid: {pre_sweeps: 99999999999999999999}}\n' \
  "$head" >"$work/decks/mg_sweeps_overflow.yaml"
printf '%s\ntime: {end: 1, scheme: [implicit-euler]}\n' "$head" >"$work/decks/scheme_list.yaml"
printf '%s\ntime: {steps: 2, dt: 1.0, scheme: crank-nicolson}\nsolver: {method: mg-cg}\n' "$head" \
  >"$work/decks/implicit_huge_dt.yaml"
# Materials (docs/deck.md "Materials"): file regions whose file is missing, not HDF5, of the
# wrong shape, or holding a negative value or NaN; a conductivity whose face sum overflows;
# faces and regions that are fine (validate exits 0). Data files live beside decks/, not in it.
mkdir -p "$work/data"
printf 'not hdf5\n' >"$work/data/text.h5"
mat='materials: [{region: {file: {path: ../data/%s, dataset: conductivity}}}]'
for f in missing.h5 text.h5 shape.h5 negative.h5 nan.h5 good.h5; do
  printf "%s\ntime: {end: 0.01}\n$mat\n" "$head" "$f" >"$work/decks/material_file_${f%.h5}.yaml"
done
if /usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null; then
  /usr/bin/python3 - "$work/data" <<'PY'
import sys, h5py, numpy as np
d = sys.argv[1]
def write(name, a):
    with h5py.File(f"{d}/{name}", "w") as f:
        f["conductivity"] = a
write("good.h5", np.ones((4, 4, 4), dtype=np.float32))
write("shape.h5", np.ones((4, 4, 5)))
bad = np.ones((4, 4, 4)); bad[1, 2, 3] = -1
write("negative.h5", bad)
bad[1, 2, 3] = np.nan
write("nan.h5", bad)
PY
else
  echo "note: /usr/bin/python3 lacks h5py: the file-region decks see missing files"
fi
printf '%s\ntime: {end: 0.01}\nmaterials: [{region: {box: {lower: [0, 0, 0], upper: [0.5, 1, 1]}}, conductivity: 1e300}]\n' \
  "$head" >"$work/decks/material_face_sum_overflow.yaml"
printf '%s\ntime: {steps: 2}\nmaterial: {conductivity: 45, density: 7850, specific_heat: 490}\nmaterials: [{region: {sphere: {center: [0.5, 0.5, 0.5], radius: 0.3}}, conductivity: 400}]\nboundary: {all: {type: convective, h: 25, ambient: 293.15}, x-: {type: heat_flux, value: 1000}}\n' \
  "$head" >"$work/decks/material_regions_and_faces.yaml"
printf '%s\ntime: {end: 1}\nmaterials: [{region: {cylinder: {axis: q, center: [0.5, 0.5], radius: [1]}}}]\n' \
  "$head" >"$work/decks/material_cylinder_garbage.yaml"
python3 - "$work/decks/alias_bomb.yaml" <<'PY'
import sys
s = "a: &a [1,1,1,1,1,1,1,1,1,1]\n"
for i in range(8):
    prev = "a" if i == 0 else "b%d" % (i - 1)
    s += "b%d: &b%d [%s]\n" % (i, i, ",".join(["*" + prev] * 10))
open(sys.argv[1], "w").write(s)
PY
printf '\xff\xfe\x00\x01' >"$work/decks/binary.yaml"
: >"$work/decks/empty.yaml"

bad_output='terminate called|Aborted|core dumped|std::|what\(\)|Sanitizer|json\.exception|internal error|template'

# Checks one deck: `validate`, then `run` when validation rejects it (valid decks are real
# simulations). Prints "FAIL: ..." on a wrong answer. Runs 8 at a time (start-up bound).
check() {
  local deck=$1 name cmd rc rc_validate=0 log first
  name=$(basename "$deck")
  for cmd in validate run; do
    if [[ $cmd == run && $rc_validate -eq 0 ]]; then continue; fi
    log=$work/logs/$name.$cmd
    set +e
    timeout 120 "$bin" "$cmd" "$deck" -q --set "output.directory=$work/out/$name" \
      >"$log.out" 2>"$log.err"
    rc=$?
    set -e
    [[ $cmd == validate ]] && rc_validate=$rc
    if [[ $rc -ne 0 && $rc -ne 2 ]]; then
      echo "FAIL: $cmd $name: exit $rc (expected 0 or 2)"; cat "$log.err"; return
    fi
    if grep -Eq "$bad_output" "$log.err" "$log.out"; then
      echo "FAIL: $cmd $name: crash-like output"; cat "$log.err"; return
    fi
    if [[ $rc -eq 2 ]]; then
      first=$(head -n1 "$log.err")
      if [[ $first != "$deck:"* && $first != "--set:"* ]]; then
        echo "FAIL: $cmd $name: the first line does not name the deck: $first"; return
      fi
      if [[ -e $work/out/$name ]]; then
        echo "FAIL: $cmd $name: output directory created for a bad deck"; return
      fi
    fi
    echo "ok $cmd $name (exit $rc)"
  done
}

mkdir -p "$work/logs"
decks=("$work"/decks/*)
for ((i = 0; i < ${#decks[@]}; i += 8)); do
  for deck in "${decks[@]:i:8}"; do check "$deck" >"$work/logs/$(basename "$deck").result" & done
  wait
done
cat "$work"/logs/*.result >"$work/results"
# The materials decks: `validate`'s exit code and first line, at the key concerned.
expect() {  # deck name, exit code, "line:column: message start" (exit 2)
  local deck=$work/decks/$1.yaml first
  if ! grep -q "^ok validate $1.yaml (exit $2)" "$work/results"; then
    echo "FAIL: validate $1.yaml: expected exit $2" >>"$work/results"; return
  fi
  [[ $2 -eq 0 ]] && return
  first=$(head -n1 "$work/logs/$1.yaml.validate.err")
  if [[ $first != "$deck:$3"* ]]; then
    echo "FAIL: validate $1.yaml: expected '$deck:$3...', got: $first" >>"$work/results"
  fi
}
expect material_file_missing 2 "5:36: materials[0].region.file.path: no such file"
expect material_file_text 2 "5:36: materials[0].region.file.path: '$work/data/text.h5' is not an HDF5 file"
if /usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null; then
  expect material_file_shape 2 "5:63: materials[0].region.file.dataset: dataset 'conductivity' in '$work/data/shape.h5' has shape [4, 4, 5], but the grid's cells are [4, 4, 4]"
  expect material_file_negative 2 "5:66: materials[0].region.file.dataset: dataset 'conductivity' in '$work/data/negative.h5': the value -1 of cell (3, 2, 1) is not a positive, finite number"
  expect material_file_nan 2 "5:61: materials[0].region.file.dataset: dataset 'conductivity' in '$work/data/nan.h5': the value nan of cell (3, 2, 1)"
  expect material_file_good 0
fi
expect material_face_sum_overflow 2 "4:7: time: the stability limit dt_max = 0 (the smallest per-cell limit"
expect material_regions_and_faces 0
expect material_cylinder_garbage 2 "5:40: materials[0].region.cylinder.axis: unknown value 'q'"
if grep -q '^FAIL' "$work/results"; then
  grep -A5 '^FAIL' "$work/results"
  exit 1
fi
echo "OK: $(grep -c '^ok' "$work/results") answers for ${#decks[@]} decks, all exit 0 or 2 with" \
  "file:line:column messages"
