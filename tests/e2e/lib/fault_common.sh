# shellcheck shell=bash
# Helpers of the fault-injection suite (tests/e2e/fault_*.sh; sourced, not a test itself).
# Needs $bin (the heatsolve binary) and $py (python with h5py + numpy); exits 77 (skipped)
# without HDF5 output or h5py. Writes its python helpers into the working directory.
#   ok/bad/check       accumulate $fail
#   fault_deck F NAME  the small heat deck of the suite (12^3, 120 steps, output every 5,
#                      checkpoint every 10, HDF5 + VTK when built with VTK)
#   same_outputs REF RUN NAME [fields-only]   the run's outputs equal the uninterrupted
#                      run's: every HDF5 step (times, bytes), the .xdmf, the .pvd, every .vti
#                      and diagnostics.csv (unless fields-only) byte for byte; no
#                      temporaries, partial or restart-source file left
#   hs ...             heatsolve with OMP_NUM_THREADS=1, stdout+stderr into $log; sets $rc
#   one_error_line F [TEXT]   F holds exactly one error line ("error: ...", naming TEXT)
#                      and nothing else but warnings (such as taking over a killed run's lock)
if ! "$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null; then
  echo "SKIP: heatsolve built without HDF5 output"; exit 77
fi
if ! "$py" -c 'import h5py, numpy' 2>/dev/null; then
  echo "SKIP: $py lacks h5py/numpy"; exit 77
fi
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
# Under AddressSanitizer (the asan preset) every run is slower: loops take fewer cases.
sanitized=0
grep -qa __asan_init "$bin" && sanitized=1
have_vtk=0
"$bin" info | grep -E '^ *VTK output: *yes' >/dev/null && have_vtk=1
formats='[hdf5]'
[[ $have_vtk == 1 ]] && formats='[hdf5, vtk]'

fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }
check() {  # check <description> <command...>
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

# hs <log> <args...>: runs heatsolve, output into <log>, exit status into $rc.
hs() {
  local out=$1
  shift
  "$bin" "$@" >"$out" 2>&1
  rc=$?
}

# The log holds exactly one error line (naming $2 when given) and otherwise only warnings.
one_error_line() {
  [[ $(grep -c '^error: ' "$1") -eq 1 ]] && [[ -z $(grep -v '^error: \|^warning: ' "$1") ]] &&
    { [[ -z ${2:-} ]] || grep '^error: ' "$1" | grep -F -- "$2" >/dev/null; }
}

fault_deck() {  # fault_deck <file> <name> [source value]
  cat >"$1" <<EOF
name: $2
problem: {type: heat, dimensions: 3}
grid: {cells: [12, 12, 12]}
time: {steps: 120, dt: auto, safety: 0.9}
initial: {type: gaussian, amplitude: 1.0, width: 0.15, center: [0.4, 0.5, 0.5], value: 0.0}
boundary:
  all: {type: dirichlet, value: 0.0}
  y+: {type: neumann, flux: 0.5}
source: {type: box, value: ${3:-3.0}, lower: [0.1, 0.1, 0.1], upper: [0.3, 0.3, 0.3]}
execution: {backend: cpu, precision: double}
output: {directory: out, every: 5, formats: $formats, checkpoint_every: 10, diagnostics: {every: 5}}
EOF
}

cat >same_outputs.py <<'PY'
import filecmp, glob, os, sys
import h5py
ref, run, name = sys.argv[1:4]
fields_only = sys.argv[4:5] == ["fields-only"]  # sums of other decompositions differ in last digits
def fail(msg):
    sys.exit(f"{run}: {msg}")
a, b = h5py.File(f"{ref}/{name}.h5", "r"), h5py.File(f"{run}/{name}.h5", "r")
sa, sb = sorted(a["steps"]), sorted(b["steps"])
if sa != sb:
    fail(f"steps differ: missing {sorted(set(sa) - set(sb))}, extra {sorted(set(sb) - set(sa))}")
field = a.attrs.get("field", b"temperature")  # `solution` in Poisson series
field = field.decode() if isinstance(field, bytes) else str(field)
for s in sa:
    when = "time" if "time" in a["steps"][s].attrs else "iteration"
    if a["steps"][s].attrs[when] != b["steps"][s].attrs[when]:
        fail(f"step {s}: {when} {a['steps'][s].attrs[when]!r} vs {b['steps'][s].attrs[when]!r}")
    x, y = a["steps"][s][field][...], b["steps"][s][field][...]
    if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
        fail(f"step {s}: data differ")
for ext in ("xdmf", "pvd"):
    p, q = f"{ref}/{name}.{ext}", f"{run}/{name}.{ext}"
    if os.path.exists(p) and (not os.path.exists(q) or not filecmp.cmp(p, q, shallow=False)):
        fail(f"{name}.{ext} differs")
p, q = f"{ref}/diagnostics.csv", f"{run}/diagnostics.csv"  # output.diagnostics: byte for byte
if not fields_only and os.path.exists(p) and (not os.path.exists(q) or not filecmp.cmp(p, q, shallow=False)):
    fail("diagnostics.csv differs")
vti = sorted(os.path.basename(p) for p in glob.glob(f"{ref}/{name}_vti/*"))
if vti:
    got = sorted(os.path.basename(p) for p in glob.glob(f"{run}/{name}_vti/*"))
    if got != vti:
        fail(f"{name}_vti holds {len(got)} files, expected {len(vti)}: {sorted(set(vti) ^ set(got))[:4]}")
    for f in vti:
        if not filecmp.cmp(f"{ref}/{name}_vti/{f}", f"{run}/{name}_vti/{f}", shallow=False):
            fail(f"{name}_vti/{f} differs")
left = [os.path.relpath(p, run) for p in glob.glob(f"{run}/**/*", recursive=True) + glob.glob(f"{run}/.*")
        if ".tmp" in os.path.basename(p) or p.endswith((".partial", ".restart-source"))]
if left:
    fail(f"left behind: {left}")
print(f"{run}: {len(sa)} steps bitwise equal" + (f", {len(vti)} .vti files equal" if vti else ""))
PY
same_outputs() { "$py" same_outputs.py "$@"; }
