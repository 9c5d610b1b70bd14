# Helpers shared by the checkpoint/restart e2e scripts (sourced, not a test itself):
# ok/bad/check accumulate $fail; same_series compares two HDF5 series bitwise;
# finite_checkpoints.py checks a directory's checkpoints; heat_deck writes the heat deck.
# Needs $bin, $py (python with h5py + numpy) and $backend; exits 77 (skip) without HDF5
# output or h5py; writes its python scripts into the cwd.
if ! "$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null; then
  echo "SKIP: heatsolve built without HDF5 output"; exit 77
fi
if ! "$py" -c 'import h5py, numpy' 2>/dev/null; then
  echo "SKIP: $py lacks h5py/numpy"; exit 77
fi

fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }
check() {  # check <description> <command...>
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

# Bitwise comparison of two HDF5 series: same steps, times (Poisson: iterations), dtypes and
# bytes. The field is `temperature` (heat) or `solution` (Poisson): the root attribute `field`.
cat > same_series.py <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
def field(f):
    v = f.attrs.get("field", b"temperature")
    return v.decode() if isinstance(v, bytes) else str(v)
if field(a) != field(b):
    sys.exit(f"fields differ: {field(a)} vs {field(b)}")
sa, sb = sorted(a["steps"].keys()), sorted(b["steps"].keys())
if sa != sb:
    sys.exit(f"steps differ: {sa} vs {sb}")
for s in sa:
    da, db = a["steps"][s][field(a)], b["steps"][s][field(b)]
    when = "time" if "time" in a["steps"][s].attrs else "iteration"
    if a["steps"][s].attrs[when] != b["steps"][s].attrs[when]:
        sys.exit(f"step {s}: {when} {a['steps'][s].attrs[when]} vs {b['steps'][s].attrs[when]}")
    x, y = da[...], db[...]
    if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
        n = np.count_nonzero(x != y) if x.shape == y.shape else -1
        sys.exit(f"step {s}: data differ ({n} values)")
print(f"{len(sa)} steps bitwise equal")
PY
same_series() { "$py" same_series.py "$1" "$2"; }

# Every checkpoint in a directory holds finite fields.
cat > finite_checkpoints.py <<'PY'
import sys, glob, h5py, numpy as np
for p in glob.glob(sys.argv[1] + "/checkpoint_*.h5"):
    with h5py.File(p, "r") as f:
        for name, d in f["fields"].items():
            if not np.all(np.isfinite(d[...])):
                sys.exit(f"{p}: field {name} is not finite")
PY

heat_deck() {  # heat_deck <file> <name>
  cat > "$1" <<EOF
name: $2
problem: {type: heat, dimensions: 3}
grid: {cells: [40, 40, 40]}
time: {steps: 1600, dt: auto, safety: 0.9}
initial: {type: gaussian, amplitude: 1.0, width: 0.15, center: [0.4, 0.5, 0.5], value: 0.0}
boundary:
  all: {type: dirichlet, value: 0.0}
  y+: {type: neumann, flux: 0.5}
source: {type: box, value: 3.0, lower: [0.1, 0.1, 0.1], upper: [0.3, 0.3, 0.3]}
execution: {backend: $backend, precision: double}
output: {directory: out, every: 400, formats: [hdf5]}
EOF
}

