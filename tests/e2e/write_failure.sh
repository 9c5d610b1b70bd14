#!/usr/bin/env bash
# Never lose data: a write that fails mid-run (a full file system: a 512 KiB tmpfs) stops the
# run with exit 1 and a message naming the file; files written before (an earlier run's
# results, unrelated files) stay intact, and nothing half-written appears under a final name.
# Needs mount(8) permission (root or CAP_SYS_ADMIN); exit 77 = skipped when unavailable.
# usage: write_failure.sh <heatsolve binary> <source dir> <work dir>
set -euo pipefail
bin=$1 src=$2 work=$3
if ! "$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null; then
  echo "SKIP: heatsolve built without HDF5 output"; exit 77
fi
rm -rf "$work"
mkdir -p "$work/mnt"
mnt=$work/mnt
if ! mount -t tmpfs -o size=512k tmpfs "$mnt" 2>"$work/mount.err"; then
  echo "SKIP: cannot mount a tmpfs here ($(cat "$work/mount.err"))"; exit 77
fi
trap 'umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*"; exit 1; }

deck=$src/inputs/quickstart.yaml
common=(-q --set time.end= --set execution.backend=cpu --set 'output.formats=[hdf5]')
# Files that exist before the failing run: an unrelated file and a complete earlier run.
head -c 1000 /dev/urandom >"$mnt/keep.bin"
"$bin" run "$deck" "${common[@]}" --set 'grid.cells=[8,8,8]' --set time.steps=2 \
  --set "output.directory=$mnt/old" || fail "the small run on the tmpfs failed"
before=$(cd "$mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum)

# 32^3 doubles = 256 KiB per output step, one every step: the tmpfs fills up at step ~1.
set +e
"$bin" run "$deck" "${common[@]}" --set 'grid.cells=[32,32,32]' --set time.steps=20 \
  --set output.every=1 --set "output.directory=$mnt/new" 2>"$work/stderr"
rc=$?
set -e
cat "$work/stderr"
[[ $rc -eq 1 ]] || fail "the run exited $rc, expected 1"
grep -q "$mnt/new/" "$work/stderr" || fail "the message does not name the file under $mnt/new"
if grep -Eq 'terminate called|Aborted|std::|H5[A-Z][a-z_]*\(\)|#[0-9]{3}:' "$work/stderr"; then
  fail "raw exception, abort or HDF5 error stack on stderr"
fi
for f in quickstart.h5 quickstart.xdmf summary.json residuals.csv; do
  [[ ! -e $mnt/new/$f ]] || fail "$mnt/new/$f exists under its final name after the failure"
done
after=$(cd "$mnt" && find . -path ./new -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
[[ "$before" == "$after" ]] || fail "files written before the failure changed"
echo "OK: exit 1 naming the file; earlier files intact; no final-name file from the failed run"
ls -la "$mnt/new" || true
