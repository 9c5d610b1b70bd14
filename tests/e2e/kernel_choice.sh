#!/usr/bin/env bash
# A kernel/block choice the build does not compile is a deck error: `validate` and `run` exit 2
# with file:line:column at the key (a --set override: at the override), and `run` creates no
# output directory. Compiled choices validate and run (on this machine's backend).
# usage: kernel_choice.sh <heatsolve binary> <source dir> <work dir>
set -uo pipefail
bin=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

cat >deck.yaml <<'DECK'
name: kc
problem: {type: heat, dimensions: 3}
grid: {cells: [8, 8, 8]}
time: {steps: 2}
output: {directory: out/kc, formats: []}
execution:
  kernel: naive
  block: [48, 3, 1]
DECK

# expect_refusal <what> <expected start of stderr> <args...>
expect_refusal() {
  local what=$1 want=$2 cmd rc
  shift 2
  for cmd in validate run; do
    rm -rf out
    "$bin" "$cmd" deck.yaml -q "$@" >"$cmd.out" 2>"$cmd.err"
    rc=$?
    [[ $rc -eq 2 ]] || { cat "$cmd.err"; fail "$what: $cmd exited $rc, expected 2"; }
    [[ $(head -n 1 "$cmd.err") == "$want"* ]] ||
      fail "$what: $cmd said '$(head -n 1 "$cmd.err")', expected '$want...'"
    [[ ! -e out ]] || fail "$what: $cmd created the output directory"
  done
}

expect_refusal "uncompiled block" \
  "deck.yaml:8:3: execution.block: block 48x3x1 is not compiled for stencil variant 'naive' in 3D double"
expect_refusal "block from --set" "--set:1:" --set 'execution.block=[64, 64, 1]'
grep -q "execution.block: block 64x64x1 is not compiled" run.err || fail "--set: no block message"
expect_refusal "block of the other precision" "--set:2:" \
  --set execution.kernel=2.5d-tma --set 'execution.block=[512, 1, 16]'
grep -q "block 512x1x16 is not compiled for stencil variant '2.5d-tma' in 3D double" run.err ||
  fail "other precision: no block message"

# Compiled choices pass validate and run (the CPU backend where there is no GPU).
"$bin" validate deck.yaml -q --set 'execution.block=[32, 8, 4]' || fail "compiled block refused"
"$bin" validate deck.yaml -q --set execution.kernel=2.5d-tma --set execution.precision=float \
  --set 'execution.block=[512, 1, 16]' || fail "compiled 2.5d-tma block refused"
"$bin" run deck.yaml -q --set 'execution.block=[32, 8, 4]' || fail "run with a compiled block failed"
[[ -d out/kc ]] || fail "the valid run wrote no output directory"
echo "OK: uncompiled blocks refused with exit 2 at the key, no output directory; compiled ones run"
