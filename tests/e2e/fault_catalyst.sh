#!/usr/bin/env bash
# Fault injection: in-situ output on a headless machine and on a full disk (issue #31,
# item 7; docs/robustness.md):
#   a. without $DISPLAY, the shipped rendering script (slice.py) and the line probe run: heatsolve
#      starts a private Xvfb (exit 0, every PNG complete, no temporary left), which ends with
#      the run;
#   b. without $DISPLAY and without Xvfb, a rendering deck is refused before step 0 (exit 2,
#      one error line, no output directory); a script that does not render still runs;
#   c. extracts on a full disk (a tmpfs; needs mount permission): the run stops (exit 1) and
#      every line_*.csv under its final name is complete (temporary name, then rename).
# usage: fault_catalyst.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}
if ! "$bin" info | grep -E '^ *Catalyst in situ: *yes' >/dev/null; then
  echo "SKIP: heatsolve built without Catalyst"; exit 77
fi
xvfb=$(command -v Xvfb || true)
if [[ -z $xvfb ]]; then
  echo "SKIP: no Xvfb (installed by scripts/setup-debian.sh)"; exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
source "$src/tests/e2e/lib/fault_common.sh"

scripts=$src/postproc/catalyst
deck=$src/inputs/heat_catalyst.yaml
small=(-q --set 'grid.cells=[16,16,16]' --set time.steps=6 --set output.every=3)
headless() { env -u DISPLAY -u XAUTHORITY "$@"; }

# ---- a. a private Xvfb -----------------------------------------------------------------------------
# The wrapper records the server's pid (exec keeps it) for the check that it ends with the run.
cat >xvfb.sh <<EOF
#!/bin/sh
echo \$\$ >"$work/xvfb.pid"
exec "$xvfb" "\$@"
EOF
chmod +x xvfb.sh
headless HEATSOLVE_XVFB="$work/xvfb.sh" "$bin" run "$deck" "${small[@]}" --set output.directory=a \
  --set "output.catalyst=[{script: $scripts/slice.py, every: 3}, {script: $scripts/line_probe.py, every: 2}]" \
  >a.log 2>&1
rc=$?
check "a. slice.py without \$DISPLAY: exit 0 (got $rc, 134 = ParaView's abort)" test "$rc" = 0
[[ $rc == 0 ]] || cat a.log
check "a. ... a virtual X server was started" test -s xvfb.pid
"$py" - a <<'PY' >a.check 2>&1
import glob, os, sys
d = sys.argv[1]
pngs = sorted(os.path.basename(p) for p in glob.glob(d + "/slice_*.png"))
csvs = sorted(os.path.basename(p) for p in glob.glob(d + "/line_*.csv"))
assert pngs == ["slice_%06d.png" % s for s in (0, 3, 6)], pngs
assert csvs == ["line_%06d.csv" % s for s in (0, 2, 4, 6)], csvs
for p in pngs:
    data = open(os.path.join(d, p), "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[-8:-4] == b"IEND", p
for c in csvs:
    rows = open(os.path.join(d, c)).read().splitlines()
    assert rows[0] == "x,y,z,temperature" and len(rows) == 17, (c, len(rows))
left = [f for f in os.listdir(d) if ".tmp" in f]
assert not left, left
PY
check "a. ... every PNG and CSV complete, no temporary left" test $? = 0 || cat a.check
pid=$(cat xvfb.pid 2>/dev/null)
gone=1
for _ in $(seq 30); do
  state=$(ps -o stat= -p "$pid" 2>/dev/null)
  [[ -z $state || $state == Z* ]] && { gone=0; break; }
  sleep 0.1
done
check "a. ... and the X server ended with the run" test -n "$pid" -a "$gone" = 0

# ---- b. no display, no Xvfb -----------------------------------------------------------------------
headless HEATSOLVE_XVFB=/nonexistent/Xvfb "$bin" run "$deck" "${small[@]}" --set output.directory=b \
  >b.log 2>&1
rc=$?
check "b. a rendering deck without display or Xvfb: exit 2 (got $rc)" test "$rc" = 2
check "b. ... in one error line" one_error_line b.log "no virtual X server (Xvfb) is installed"
check "b. ... before the output directory is made" test ! -e b
headless HEATSOLVE_XVFB=/nonexistent/Xvfb "$bin" run "$deck" "${small[@]}" --set output.directory=b2 \
  --set "output.catalyst={script: $scripts/line_probe.py, every: 3}" >b2.log 2>&1
rc=$?
check "b. a script that does not render still runs (got $rc)" test "$rc" = 0

# ---- c. extracts on a full disk ----------------------------------------------------------------------
mkdir -p mnt
if mount -t tmpfs -o size=40k tmpfs mnt 2>mount.err; then
  trap 'umount mnt 2>/dev/null || umount -l mnt 2>/dev/null || true' EXIT
  # Line CSVs of 64 rows (about 5 KiB) every step, no field output: the extracts fill the disk.
  "$bin" run "$deck" -q --set 'grid.cells=[64,4,4]' --set time.steps=40 --set 'output.formats=[]' \
    --set output.directory=mnt/c --set "output.catalyst={script: $scripts/line_probe.py, every: 1}" \
    >c.log 2>&1
  rc=$?
  check "c. extracts filling the disk: exit 1 (got $rc)" test "$rc" = 1
  "$py" - mnt/c <<'PY' >c.check 2>&1
import glob, os, sys
csvs = glob.glob(sys.argv[1] + "/line_*.csv")
assert csvs, "no extract at all"
for c in csvs:
    rows = open(c).read().splitlines()
    assert rows[0] == "x,y,z,temperature" and len(rows) == 65, (c, len(rows))
print(len(csvs), "complete extracts")
PY
  check "c. ... every line_*.csv under its final name is complete" test $? = 0
  cat c.check
  umount mnt
else
  echo "note: full-disk part skipped: cannot mount a tmpfs here ($(cat mount.err))"
fi

if ((fail)); then
  echo "fault_catalyst: FAILED"
  exit 1
fi
echo "fault_catalyst: all checks passed"
