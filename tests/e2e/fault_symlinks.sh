#!/usr/bin/env bash
# Fault injection: symbolic links planted in the output directory (issue #31, item 5;
# docs/robustness.md). A link at a name heatsolve writes through (.heatsolve.lock,
# <name>.h5.partial, <name>.h5.restart-source, a checkpoint's temporary name, <name>_vti)
# is refused before anything is written (exit 2, one error line naming it) and its target
# outside the directory is untouched; a link at a final name is replaced by the file
# (rename(2)), never written through. (Links planted while a run is going are refused where
# the file is created: tests/io/test_integrity.cpp.)
# usage: fault_symlinks.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=${PYTHON:-/usr/bin/python3}  # needs h5py + numpy
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
source "$src/tests/e2e/lib/fault_common.sh"

fault_deck deck.yaml heat
mkdir -p outside outside/vti
echo precious >outside/target
digest() { sha256sum outside/target | cut -d' ' -f1; }
want=$(digest)

for name in .heatsolve.lock heat.h5.partial heat.h5.restart-source checkpoint_00000010.h5.tmp \
  heat_vti; do
  dir=planted_${name//./_}
  mkdir -p "$dir"
  if [[ $name == heat_vti ]]; then
    ln -s ../outside/vti "$dir/$name"
  else
    ln -s ../outside/target "$dir/$name"
  fi
  hs "$dir.log" run deck.yaml -q --set "output.directory=$dir"
  check "a link at $name: exit 2 (got $rc)" test "$rc" = 2
  check "... in one error line naming it" one_error_line "$dir.log" "$dir/$name"
  check "... its target untouched" test "$(digest)" = "$want" -a -z "$(ls outside/vti)"
  check "... and nothing written" \
    test -z "$(find "$dir" -mindepth 1 ! -name "$name" ! -name .heatsolve.lock)"
done

# A dangling link at a final name: replaced by the file when it is published.
mkdir -p final
ln -s ../outside/nothing-here final/heat.xdmf
hs final.log run deck.yaml -q --set output.directory=final
check "a dangling link at heat.xdmf: the run exits 0 (got $rc)" test "$rc" = 0
check "... heat.xdmf is now a regular file" test -f final/heat.xdmf -a ! -L final/heat.xdmf
check "... and nothing was written through the link" test ! -e outside/nothing-here

if ((fail)); then
  echo "fault_symlinks: FAILED"
  exit 1
fi
echo "fault_symlinks: all checks passed"
