#!/usr/bin/env bash
# What heatsolve says about itself and its runs:
#   a. --version: version, commit (12 hex digits, -dirty), compiler, CUDA, MPI, HDF5 lines;
#   b. --help (and run --help) end with the exit code table of app/exit_codes.hpp;
#   c. summary.json: version and commit as --version says, deck_sha256 = sha256sum of the deck
#      file, the --set overrides and the effective deck's hash (which they change), host, ranks,
#      start time (ISO 8601 UTC, within this test's run);
#   d. `heatsolve bench --backend cpu` (and without a GPU plain `heatsolve bench`) measures the
#      CPU backend: copy bandwidth and stencil rate, positive and consistent.
# usage: cli_provenance.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -uo pipefail
bin=$(realpath "$1") src=$(realpath "$2") work=$3
py=/usr/bin/python3
source "$src/tests/mpi/check.sh"
fail=0
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

# a. --version
"$bin" --version >version.txt 2>&1
check "--version exits 0" test $? -eq 0
check "--version: version line" grep -Eq '^heatsolve [0-9]+\.[0-9]+\.[0-9]+$' version.txt
if [[ -e $src/.git ]]; then
  head=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null)
  check "--version: commit of this checkout ($head)" grep -Eq "^commit: +$head(-dirty)?$" version.txt
fi
for what in compiler CUDA MPI HDF5; do
  check "--version: $what line" grep -Eq "^$what: +[^ ]" version.txt
done

# b. exit codes in --help
for cmd in "" run; do
  "$bin" $cmd --help >help.txt 2>&1
  check "heatsolve $cmd --help lists the exit codes" grep -q '^Exit codes:' help.txt
  for code in $(sed -nE 's/^constexpr int k[A-Za-z]+ = ([0-9]+);.*/\1/p' "$src/app/exit_codes.hpp"); do
    check "  ... code $code" grep -Eq "^  $code +[A-Za-z]" help.txt
  done
done

# c. summary.json provenance
cp "$src/inputs/quickstart.yaml" deck.yaml
before=$(date -u +%s)
"$bin" run deck.yaml -q --set 'grid.cells=[8,8,8]' --set output.directory=out/p >run.log 2>&1
check "small run" test $? -eq 0
"$bin" run deck.yaml -q --set 'grid.cells=[8,8,8]' --set output.directory=out/q \
  --set material.diffusivity=0.5 >run2.log 2>&1
check "small run with another override" test $? -eq 0
"$py" - out/p/summary.json out/q/summary.json version.txt deck.yaml "$before" "$(hostname)" <<'PY'
import datetime, hashlib, json, sys
p, q = (json.load(open(f)) for f in sys.argv[1:3])
version = open(sys.argv[3]).read().splitlines()
deck = open(sys.argv[4], "rb").read()
before, host = int(sys.argv[5]), sys.argv[6]
assert "heatsolve " + p["version"] == version[0], (p["version"], version[0])
assert "commit:   " + p["commit"] == version[1], (p["commit"], version[1])
assert p["deck_sha256"] == hashlib.sha256(deck).hexdigest() == q["deck_sha256"]
assert p["deck_overrides"] == ["grid.cells=[8,8,8]", "output.directory=out/p"], p["deck_overrides"]
assert len(p["effective_deck_sha256"]) == 64 and p["effective_deck_sha256"] != q["effective_deck_sha256"]
assert p["host"] == host and p["ranks"] == 1, (p["host"], host)
t = datetime.datetime.strptime(p["start_time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
now = datetime.datetime.now(datetime.timezone.utc).timestamp()
assert before - 1 <= t.timestamp() <= now + 1, (p["start_time"], before, now)
for key in ("name", "deck", "backend", "steps", "wall_seconds", "files"):  # the keys before
    assert key in p, key
print("summary provenance:", {k: p[k] for k in ("version", "commit", "deck_sha256", "host", "start_time")})
PY
check "summary.json provenance" test $? -eq 0

# d. bench on the CPU backend
"$bin" bench --backend cpu --size 48 --json >bench.json 2>bench.log
check "bench --backend cpu exits 0" test $? -eq 0
"$py" - bench.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["rows"][0]
assert j["backend"] == "cpu" and j["size"] == 48 and j["precision"] == "float", j
assert j["copy_gbs"] > 0 and r["gpoints_per_s"] > 0 and r["ms_per_step"] > 0, j  # load: no floor
assert abs(r["effective_gbs"] - 8 * r["gpoints_per_s"]) < 1e-9 * r["effective_gbs"] + 1e-12, r
assert abs(r["pct_of_copy"] - 100 * r["effective_gbs"] / j["copy_gbs"]) < 1e-6, r
assert r["pct_of_copy"] > 0, r  # a loaded runner can stall either measurement: no ceiling
print(f"CPU: copy {j['copy_gbs']:.1f} GB/s, stencil {r['gpoints_per_s']:.3f} GPt/s = {r['pct_of_copy']:.0f}% of copy")
PY
check "bench JSON: copy bandwidth, GPt/s, fraction of copy" test $? -eq 0
if "$bin" info | grep -E '^ *GPU: *none' >/dev/null; then
  "$bin" bench --size 32 --dims 3 --precision double >bench.txt 2>&1
  check "bench without a GPU exits 0" test $? -eq 0
  check "bench without a GPU: the CPU section" grep -q '^stencil bench (CPU backend' bench.txt
  check "bench without a GPU: copy bandwidth line" grep -Eq '^copy bandwidth .*: [0-9.]+ GB/s' bench.txt
  check "bench without a GPU: the CPU row" grep -Eq '^cpu-openmp +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+%' bench.txt
fi
if [[ $fail -ne 0 ]]; then for f in *.log *.txt; do echo "---- $f"; tail -20 "$f"; done; fi
exit $fail
