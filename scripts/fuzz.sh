#!/usr/bin/env bash
# Builds the libFuzzer deck target (clang, ASan+UBSan) in build-fuzz and fuzzes the deck
# parser for a fixed time. Fails on any crash, sanitizer report, leak, timeout or OOM.
# usage: scripts/fuzz.sh [seconds=60] [extra libFuzzer flags...]   (docs/robustness.md)
# Env: HEATSOLVE_FUZZ_BUILD (build dir, default build-fuzz), HEATSOLVE_FUZZ_JOBS (parallel
# fuzzing processes, default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
build="${HEATSOLVE_FUZZ_BUILD:-build-fuzz}"
jobs="${HEATSOLVE_FUZZ_JOBS:-1}"

for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "[fuzz] $tool not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
done

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHEATSOLVE_ENABLE_FUZZ=ON -DHEATSOLVE_ENABLE_CUDA=OFF -DHEATSOLVE_ENABLE_TESTS=OFF \
  -DHEATSOLVE_ENABLE_MPI=OFF -DHEATSOLVE_ENABLE_HDF5=OFF -DHEATSOLVE_ENABLE_VTK=OFF \
  | grep -v "^-- " || true
cmake --build "$build" --target fuzz_deck

# New interesting inputs go to $build/corpus (kept between runs); the committed seeds
# (tests/fuzz/corpus: shipped decks + the bad-deck table) are read only.
mkdir -p "$build/corpus" "$build/artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "[fuzz] fuzzing the deck parser for ${seconds}s (artifacts: $build/artifacts)"
args=(-max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -detect_leaks=1
      -max_len=8192 -dict=tests/fuzz/deck.dict -print_final_stats=1
      -artifact_prefix="$build/artifacts/")
# CI (CI=true) fuzzes from a fixed seed so that a run is repeatable; by hand, a fresh one.
if [ -n "${HEATSOLVE_FUZZ_SEED:-}" ]; then args+=(-seed="$HEATSOLVE_FUZZ_SEED")
elif [ "${CI:-}" = true ]; then args+=(-seed=1); fi
if [ "$jobs" -gt 1 ]; then args+=(-fork="$jobs" -ignore_crashes=0 -ignore_timeouts=0 -ignore_ooms=0); fi
if ! "$build/tests/fuzz/fuzz_deck" "${args[@]}" "$@" "$build/corpus" tests/fuzz/corpus >"$build/fuzz.log" 2>&1; then
  tail -n 60 "$build/fuzz.log" >&2
  echo "[fuzz] FAILED: reproducer(s) in $build/artifacts/:" >&2
  ls -l "$build/artifacts" >&2
  echo "[fuzz] replay one with: $build/tests/fuzz/fuzz_deck <file>" >&2
  exit 1
fi
grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$build/fuzz.log" || true
echo "[fuzz] OK: no crash, leak or timeout in ${seconds}s ($(ls "$build/corpus" | wc -l) inputs in $build/corpus)"
