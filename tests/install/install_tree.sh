#!/usr/bin/env bash
# ctest install.tree: `cmake --install` into a temporary prefix, then the installed tree alone:
#   1. the layout: bin/heatsolve, share/heatsolve/{inputs (and inputs/slurm), postproc
#      (and postproc/catalyst), docs, README.md}, lib/heatsolve/ modules of this build;
#   2. every installed deck validates with the installed binary, from a directory outside
#      both trees (the Catalyst deck's script path resolves relative to the installed deck);
#   3. the installed quickstart deck runs (8^3 through --set): summary.json names this
#      version, and the installed postproc/verify_error.py checks the result against the
#      exact solution;
#   4. with Catalyst in the build: the installed heat_catalyst deck runs (8^3, 4 steps) and its
#      installed slice.py renders slice_000000.png and slice_000004.png (Xvfb when no $DISPLAY).
# usage: install_tree.sh <cmake> <build dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
CMAKE=$1 BUILD=$(realpath "$2") WORK=$3
source "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/../mpi/check.sh"
py=/usr/bin/python3
fail=0
rm -rf "$WORK" && mkdir -p "$WORK/run" && cd "$WORK" || exit 1
prefix=$WORK/prefix
unset HEATSOLVE_CATALYST_MODULE

"$CMAKE" --install "$BUILD" --prefix "$prefix" >install.log 2>&1
check "cmake --install into $prefix" test $? -eq 0
hs=$prefix/bin/heatsolve
share=$prefix/share/heatsolve
check "bin/heatsolve is executable" test -x "$hs"
for d in inputs inputs/slurm postproc postproc/catalyst docs; do
  check "share/heatsolve/$d" test -d "$share/$d"
done
check "share/heatsolve/README.md" test -f "$share/README.md"
check "installed Slurm example for CPUs" test -f "$share/inputs/slurm/cpu.sbatch"
check "installed postproc scripts stay executable" test -x "$share/postproc/verify_error.py"
[[ -x $hs ]] || { echo "no installed binary"; cat install.log; exit 1; }
info=$("$hs" info)
catalyst=no; grep -Eq '^ *Catalyst in situ: *yes' <<<"$info" && catalyst=yes
if [[ $catalyst == yes ]]; then
  check "installed Catalyst module" test -f "$prefix/lib/heatsolve/libheatsolve_catalyst.so"
fi
if grep -Eq 'zfp yes' <<<"$info"; then
  check "installed HDF5 ZFP plugin" test -f "$prefix/lib/heatsolve/hdf5-plugins/libheatsolve_h5zfp.so"
fi
version=$("$hs" --version | head -n1)
check "--version of the installed binary ($version)" grep -Eq '^heatsolve [0-9]+\.[0-9]+\.[0-9]+$' <<<"$version"

# 2. every installed deck validates, run from elsewhere
cd "$WORK/run" || exit 1
ndecks=0
for deck in "$share"/inputs/*.yaml; do
  name=$(basename "$deck")
  if [[ $name == heat_catalyst.yaml && $catalyst == no ]]; then
    echo "  ($name needs Catalyst: not in this build)"
    continue
  fi
  "$hs" validate -q "$deck" >"validate-$name.log" 2>&1
  rc=$?
  check "installed $name validates (rc $rc)" test $rc -eq 0
  [[ $rc -eq 0 ]] || cat "validate-$name.log"
  ndecks=$((ndecks + 1))
done
check "decks found in the installed tree ($ndecks)" test "$ndecks" -ge 8

# 3. the installed quickstart deck runs; the installed post-processing reads its result
"$hs" run "$share/inputs/quickstart.yaml" -q --set 'grid.cells=[8,8,8]' \
  --set output.directory=out/quickstart >quickstart.log 2>&1
rc=$?
check "installed quickstart deck runs (rc $rc)" test $rc -eq 0
check "quickstart wrote its HDF5 series" test -s out/quickstart/quickstart.h5
check "summary.json names this version" "$py" -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert "heatsolve " + s["version"] == sys.argv[2], (s["version"], sys.argv[2])
assert s["commit"] and s["ranks"] == 1 and len(s["deck_sha256"]) == 64, s
' out/quickstart/summary.json "$version"
if "$py" -c 'import h5py, numpy' 2>/dev/null; then
  "$py" "$share/postproc/verify_error.py" out/quickstart --relative --max-error 2e-2 >verify.log 2>&1
  rc=$?
  check "installed verify_error.py on the result (rc $rc)" test $rc -eq 0
  [[ $rc -eq 0 ]] || cat verify.log
fi

# 4. the installed Catalyst deck finds its installed script and renders
if [[ $catalyst == yes ]] && { [[ -n ${DISPLAY:-} ]] || command -v Xvfb >/dev/null; }; then
  xvfb_pid=
  if [[ -z ${DISPLAY:-} ]]; then
    Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>xvfb.display 2>xvfb.log &
    xvfb_pid=$!
    trap 'kill $xvfb_pid 2>/dev/null' EXIT
    for _ in $(seq 100); do [[ -s xvfb.display ]] && break; sleep 0.1; done
    export DISPLAY=:$(head -n1 xvfb.display)
  fi
  # On a loaded machine Xlib's connection to the virtual X server can fail transiently (VTK:
  # "bad X server connection", SIGABRT): retry with back-off, as e2e.catalyst does.
  for attempt in 1 2 3 4; do
    "$hs" run "$share/inputs/heat_catalyst.yaml" -q --set 'grid.cells=[8,8,8]' \
      --set time.steps=4 --set output.directory=out/catalyst --overwrite >catalyst.log 2>&1
    rc=$?
    [[ $rc -ne 0 && $attempt -lt 4 ]] && grep -q "bad X server connection" catalyst.log || break
    echo "  rendering attempt $attempt lost the X connection; retrying"
    sleep $((2 * attempt))
  done
  check "installed heat_catalyst deck runs (rc $rc)" test $rc -eq 0
  check "its installed slice.py rendered steps 0 and 4" \
    test -s out/catalyst/slice_000000.png -a -s out/catalyst/slice_000004.png
  [[ $rc -eq 0 ]] || cat catalyst.log
else
  echo "  (no Catalyst run: built without Catalyst, or no X server)"
fi

if [[ $fail -ne 0 ]]; then
  for f in *.log; do echo "---- $f"; tail -20 "$f"; done
fi
exit $fail
