#!/usr/bin/env bash
# Never lose data: a second run into the same output directory is refused (exit 2) and leaves
# the first run's files byte-for-byte intact; --overwrite replaces them.
# usage: overwrite_refusal.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -euo pipefail
bin=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
out=$work/out
formats='[]'
if "$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null; then formats='[hdf5]'; fi
run() {
  "$bin" run "$src/inputs/quickstart.yaml" -q --set 'grid.cells=[8,8,8]' --set time.steps=2 \
    --set time.end= --set execution.backend=cpu --set "output.formats=$formats" \
    --set "output.directory=$out" "$@"
}
fail() { echo "FAIL: $*"; exit 1; }

run || fail "first run failed"
[[ -s $out/summary.json ]] || fail "no summary.json after the first run"
before=$(cd "$out" && find . -type f -print0 | sort -z | xargs -0 sha256sum)

set +e
run 2>"$work/stderr"
rc=$?
set -e
cat "$work/stderr"
[[ $rc -eq 2 ]] || fail "second run exited $rc, expected 2"
grep -q "already holds results of a previous run" "$work/stderr" || fail "no refusal message"
grep -q -- "--overwrite" "$work/stderr" || fail "the message does not mention --overwrite"
after=$(cd "$out" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
[[ "$before" == "$after" ]] || fail "the first run's files changed:"$'\n'"$before"$'\n'"$after"

# The deck key works like the flag; both replace the results.
run --overwrite || fail "--overwrite run failed"
run --set output.overwrite=true || fail "output.overwrite: true run failed"
echo "OK: refused with exit 2, files intact; --overwrite and output.overwrite replace them"
