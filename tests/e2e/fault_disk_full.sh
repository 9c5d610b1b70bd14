#!/usr/bin/env bash
# Fault injection: write errors (issue #31, item 4; docs/robustness.md). A run whose disk
# fills up (a tmpfs, at many sizes), or whose files pass `ulimit -f`, ends with exit 1 and
# one `error:` line naming the file and the cause, never a crash (the segfault in HDF5's
# exit-time clean-up was exit 139); whatever exists under a final name is complete; and once
# there is room again, `--restart latest` (or a fresh run where no checkpoint was written)
# ends with every output the uninterrupted run has, byte for byte. A closed stdout pipe is
# an error line too, not a silent SIGPIPE. The same on a file system that cannot preallocate
# (HEATSOLVE_TEST_NO_PREALLOCATION), where HDF5 meets the full disk itself: exit 1, never a
# crash. The tmpfs parts need mount(8) permission (root); without it only the `ulimit -f` and
# pipe parts run.
# usage: fault_disk_full.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}  # needs h5py + numpy
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
work=$(pwd)
source "$src/tests/e2e/lib/fault_common.sh"

fault_deck deck.yaml heat
hs ref.log run deck.yaml -q --set output.directory=ref
check "the uninterrupted run exits 0 (got $rc)" test "$rc" = 0

# Everything under a final name in <dir> is complete: HDF5 files read in full (checksums
# verified), XML files parse, .vti files end with their closing tag.
cat >complete.py <<'PY'
import glob, os, sys
import xml.etree.ElementTree as ET
import h5py
d = sys.argv[1]
def walk(group):
    for v in group.values():
        if isinstance(v, h5py.Dataset):
            v[...]
        else:
            walk(v)
for p in glob.glob(d + "/*.h5"):  # final names only: not .partial
    with h5py.File(p, "r") as f:
        walk(f)
for p in glob.glob(d + "/*.xdmf") + glob.glob(d + "/*.pvd") + glob.glob(d + "/*_vti/*.pvti"):
    ET.parse(p)
for p in glob.glob(d + "/*_vti/*.vti"):
    with open(p, "rb") as f:
        f.seek(max(0, os.path.getsize(p) - 64))
        if not f.read().rstrip().endswith(b"</VTKFile>"):
            sys.exit(f"{p} is truncated")
for p in glob.glob(d + "/summary.json"):
    import json
    json.load(open(p))
PY

# after_failure <dir> <log> <label> <cause>: the run failed: one error line naming a file
# under <dir> and the cause; whatever is under a final name is complete.
after_failure() {
  local dir=$1 log=$2 label=$3 cause=$4
  if ! one_error_line "$log" "$cause"; then
    bad "$label: not one error line naming the cause ($cause)"
    cat "$log"
  elif ! grep '^error: ' "$log" | grep -F "$dir/" >/dev/null; then
    bad "$label: the error line names no file under $dir"
    cat "$log"
  fi
  "$py" complete.py "$dir" || bad "$label: an incomplete file under a final name"
}

# continue_run <dir> <log> <label>: with room again, the run ends as the uninterrupted one.
continue_run() {
  local dir=$1 log=$2 label=$3
  local args=(run deck.yaml -q --set "output.directory=$dir")
  if [[ -f $dir/checkpoint_latest ]]; then args+=(--restart latest); else args+=(--overwrite); fi
  hs "$log" "${args[@]}"
  if [[ $rc != 0 ]]; then
    bad "$label: with room again, '${args[*]}' exits $rc"
    cat "$log"
  elif ! same_outputs ref "$dir" heat >/dev/null; then
    bad "$label: with room again, the outputs differ from the uninterrupted run's"
    same_outputs ref "$dir" heat
  fi
}

# ---- a full disk at many sizes -------------------------------------------------------------------
mkdir -p mnt logs
if mount -t tmpfs -o size=64k tmpfs mnt 2>mount.err; then
  trap 'umount mnt 2>/dev/null || umount -l mnt 2>/dev/null || true' EXIT
  umount mnt
  full=0 done_=0
  # 40 KiB .. 1.3 MiB: the series header, every step, checkpoints, .vti, .pvd, .xdmf and
  # summary.json in turn meet the full disk (the whole run takes about 1 MiB).
  for kib in $(seq 40 $((sanitized ? 156 : 63)) 1300); do
    mount -t tmpfs -o size=${kib}k tmpfs mnt || { bad "mount size=${kib}k"; continue; }
    dir=mnt/s$kib log=logs/s$kib
    hs "$log.log" run deck.yaml -q --set "output.directory=$dir"
    case $rc in
      0) done_=$((done_ + 1)) ;;
      1) full=$((full + 1)); after_failure "$dir" "$log.log" "${kib} KiB" "No space left on device" ;;
      *) bad "${kib} KiB: exit $rc (expected 1 for a full disk, or 0)"; cat "$log.log" ;;
    esac
    mount -o remount,size=16m mnt
    continue_run "$dir" "$log.again.log" "${kib} KiB"
    umount mnt || umount -l mnt
  done
  echo "  $full sizes filled the disk, $done_ fit"
  check "a full disk at $full sizes: exit 1, one error line, complete final files, then a
    restart that ends as the uninterrupted run" test "$fail" = 0 -a "$full" -ge $((sanitized ? 5 : 15))

  # Where the file system cannot preallocate, HDF5 meets the full disk itself (and cannot close
  # the file afterwards): still exit 1 with one error line, never a crash (exit 139), and a
  # restart that either ends as the uninterrupted run or is refused in one error line
  # naming what is damaged (never a wrong series).
  before=$fail hdf5_full=0
  for kib in $(seq 60 $((sanitized ? 330 : 150)) 1300); do
    mount -t tmpfs -o size=${kib}k tmpfs mnt || { bad "mount size=${kib}k"; continue; }
    dir=mnt/n$kib log=logs/n$kib
    HEATSOLVE_TEST_NO_PREALLOCATION=1 hs "$log.log" run deck.yaml -q --set "output.directory=$dir"
    case $rc in
      0) ;;
      1) hdf5_full=$((hdf5_full + 1))
         after_failure "$dir" "$log.log" "${kib} KiB, no preallocation" "No space left on device" ;;
      *) bad "${kib} KiB, no preallocation: exit $rc (expected 1 or 0)"; cat "$log.log" ;;
    esac
    mount -o remount,size=16m mnt
    if [[ -f $dir/checkpoint_latest ]]; then
      hs "$log.again.log" run deck.yaml -q --set "output.directory=$dir" --restart latest
      if [[ $rc == 2 ]] && one_error_line "$log.again.log"; then
        echo "  ${kib} KiB, no preallocation: the restart is refused: $(grep '^error' "$log.again.log")"
      elif [[ $rc != 0 ]] || ! same_outputs ref "$dir" heat >/dev/null; then
        bad "${kib} KiB, no preallocation: the restart exits $rc or differs"
        cat "$log.again.log"
      fi
    fi
    umount mnt || umount -l mnt
  done
  check "without preallocation, a full disk at $hdf5_full sizes: exit 1 and one error line, never
    a crash; then a restart equal to the uninterrupted run or refused in one line" \
    test "$fail" = "$before" -a "$hdf5_full" -ge 3
else
  echo "note: full-disk part skipped: cannot mount a tmpfs here ($(cat mount.err))"
fi

# ---- ulimit -f -----------------------------------------------------------------------------------
before=$fail
for kib in 48 150 300; do  # KiB (bash)
  dir=fsize$kib
  (ulimit -f "$kib" && exec "$bin" run deck.yaml -q --set "output.directory=$dir") >"$dir.log" 2>&1
  rc=$?
  if [[ $rc != 1 ]]; then
    bad "ulimit -f $kib: exit $rc (expected 1)"; cat "$dir.log"
  else
    after_failure "$dir" "$dir.log" "ulimit -f $kib" "File too large"
  fi
  continue_run "$dir" "$dir.again.log" "ulimit -f $kib"
done
check "ulimit -f at 3 sizes: exit 1 and one error line (not SIGXFSZ), then restarts that end
    as the uninterrupted run" test "$fail" = "$before"

# ---- a closed stdout pipe ---------------------------------------------------------------------------
"$py" - "$bin" <<'PY' >pipe.log 2>&1
import os, subprocess, sys
r, w = os.pipe()
os.close(r)  # nobody reads: a write gets EPIPE (or SIGPIPE, restored for the child)
p = subprocess.run([sys.argv[1], "validate", "deck.yaml"], stdout=w, stderr=subprocess.PIPE)
sys.stdout.write(p.stderr.decode())
sys.exit(p.returncode)
PY
rc=$?
check "validate into a closed pipe: exit 1 (got $rc, 141 = SIGPIPE)" test "$rc" = 1
check "... with one error line" one_error_line pipe.log "cannot write to standard output"

if ((fail)); then
  echo "fault_disk_full: FAILED"
  exit 1
fi
echo "fault_disk_full: all checks passed"
