#!/usr/bin/env bash
# `execution.backend: cuda` on a machine where no CUDA device can be used is an input error of
# that machine: `validate` and `run` exit 2 with file:line:column at execution.backend (run
# before it creates the output directory); `auto` runs on the CPU there. On a machine with a
# device (heatsolve info names a GPU) there is nothing to check: skipped.
# usage: cuda_without_device.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
source "$src/tests/mpi/check.sh"
fail=0
if ! "$bin" info | grep -E '^ *GPU: *none' >/dev/null; then
  echo "SKIP: this machine has a usable CUDA device"; exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
cat >gpu.yaml <<'DECK'
name: gpu
problem: {type: heat, dimensions: 3}
grid: {cells: [8, 8, 8]}
time: {steps: 3}
execution:
  precision: double
  backend: cuda
output: {directory: out/gpu}
DECK
"$bin" validate gpu.yaml >validate.log 2>&1
rc=$?
check "validate exits 2 (rc $rc)" test $rc -eq 2
check "validate names gpu.yaml:7:12 and the reason" \
  grep -Eq '^gpu.yaml:7:12: execution.backend: cuda: (no usable CUDA device on this machine|this heatsolve was built without CUDA)' validate.log
"$bin" run gpu.yaml >run.log 2>&1
rc=$?
check "run exits 2 (rc $rc)" test $rc -eq 2
check "run says the same" grep -q '^gpu.yaml:7:12: execution.backend: cuda' run.log
check "run made no output directory" test ! -e out/gpu
"$bin" run gpu.yaml -q --set execution.backend=cpu >cpu.log 2>&1
check "the same deck runs with --set execution.backend=cpu" test $? -eq 0 -a -f out/gpu/summary.json
"$bin" validate -q gpu.yaml --set execution.backend=auto >auto.log 2>&1
check "backend auto validates" test $? -eq 0
"$bin" validate -q "$src/inputs/quickstart.yaml" --set execution.backend=cuda >set.log 2>&1
rc=$?
check "from --set: exit 2 at the override (rc $rc)" test $rc -eq 2
check "from --set: --set:1:19" grep -q '^--set:1:19: execution.backend: cuda' set.log
if [[ $fail -ne 0 ]]; then for f in *.log; do echo "---- $f"; cat "$f"; done; fi
exit $fail
