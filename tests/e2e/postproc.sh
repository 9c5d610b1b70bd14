#!/usr/bin/env bash
# The post-processing scripts (postproc/) on small runs: every PNG exists and is not blank,
# verify_error passes on the sine and Poisson verification decks and fails when asked for an
# impossible accuracy, render_step renders with ParaView off-screen.
# usage: postproc.sh <heatsolve binary> <source dir> <work dir>   (exit 77 = skipped)
set -euo pipefail
bin=$1 src=$2 work=$3
py=/usr/bin/python3
post=$src/postproc

if ! "$bin" info | grep -E '^ *HDF5 output: *yes' >/dev/null; then
  echo "SKIP: heatsolve built without HDF5 output"; exit 77
fi
if ! "$py" -c 'import h5py, numpy, matplotlib' 2>/dev/null; then
  echo "SKIP: $py lacks h5py/numpy/matplotlib"; exit 77
fi

rm -rf "$work"
mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A PNG that exists, decodes, is not one flat colour (pixel std > 0, >= 16 colours), and
# has at least the fraction $2 (default 0.01) of its pixels off the background colour (the
# most common one): a plot whose data went missing leaves little beyond axes and colour bar.
check_png() {
  local f=$1 min_fraction=${2:-0.01}
  [[ -s $f ]] || { fail "no image $f"; return; }
  "$py" - "$f" "$min_fraction" <<'PY' || fail "blank or unreadable image $f"
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.image as mpimg
import numpy as np
img = mpimg.imread(sys.argv[1])
if img.ndim == 2:
    img = img[..., None]
rgb = img[..., :3].reshape(-1, min(3, img.shape[-1]))
colours, counts = np.unique(rgb, axis=0, return_counts=True)
std = float(rgb.std())
content = 1.0 - counts.max() / rgb.shape[0]
print("  %s: %dx%d, pixel std %.4f, %d colours, %.1f%% off background"
      % (sys.argv[1], img.shape[1], img.shape[0], std, len(colours), 100 * content))
sys.exit(0 if std > 0 and len(colours) >= 16 and content >= float(sys.argv[2]) else 1)
PY
}

for s in plot_residuals plot_slice verify_error render_step; do
  "$py" "$post/$s.py" --help >/dev/null || fail "$s.py --help"
done

# 1. Sine decay (3D, non-cubic box), outputs every 2 steps, HDF5 (+ VTK when built with it).
have_vtk=0
"$bin" info | grep -E "VTK output: +yes" >/dev/null && have_vtk=1
formats='[hdf5]'
[[ $have_vtk -eq 1 ]] && formats='[hdf5,vtk]'
sine=$work/sine3d
"$bin" run "$src/inputs/sine3d.yaml" -q --set 'grid.cells=[16,8,8]' --set output.every=2 \
  --set "output.formats=$formats" --set "output.directory=$sine"
echo "== verify_error (sine3d, last step and step 2)"
"$py" "$post/verify_error.py" "$sine" --max-error 5e-3 || fail "verify_error on the sine deck"
"$py" "$post/verify_error.py" "$sine" --step 2 --relative --max-error 5e-3 ||
  fail "verify_error --step 2 on the sine deck"
set +e
"$py" "$post/verify_error.py" "$sine" --max-error 1e-9 >/dev/null
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "verify_error with --max-error 1e-9 exited $rc, expected 1"

# 2. 2D sine decay.
sine2=$work/sine2d
"$bin" run "$src/inputs/sine2d.yaml" -q --set 'grid.cells=[32,32]' --set "output.directory=$sine2"
echo "== verify_error (sine2d)"
"$py" "$post/verify_error.py" "$sine2" --relative --max-error 5e-3 || fail "verify_error on sine2d"

# 3. Poisson manufactured solution (many residuals to plot).
pois=$work/poisson
"$bin" run "$src/inputs/poisson_manufactured.yaml" -q --set 'grid.cells=[16,16,16]' \
  --set "output.directory=$pois"
echo "== verify_error (poisson)"
"$py" "$post/verify_error.py" "$pois" --max-error 1e-2 || fail "verify_error on the Poisson deck"
# A deck without an analytic solution is refused with 2.
set +e
"$py" "$post/verify_error.py" "$work/none-such" >/dev/null 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "verify_error on a missing run exited $rc, expected 2"

echo "== plot_residuals"
"$py" "$post/plot_residuals.py" "$pois" --out "$work/residuals_poisson.png" &&
  check_png "$work/residuals_poisson.png" || fail "plot_residuals (poisson)"
"$py" "$post/plot_residuals.py" "$sine" && check_png "$sine/residuals.png" ||
  fail "plot_residuals (sine3d)"

echo "== plot_slice"
"$py" "$post/plot_slice.py" "$sine" --out "$work/slice_mid.png" && check_png "$work/slice_mid.png" 0.2 ||
  fail "plot_slice (run dir, mid z)"
"$py" "$post/plot_slice.py" "$sine/sine3d.h5" --step 2 --axis x --index 3 \
  --out "$work/slice_x3.png" && check_png "$work/slice_x3.png" 0.2 || fail "plot_slice (.h5, x=3)"
"$py" "$post/plot_slice.py" "$sine2" --out "$work/slice_2d.png" && check_png "$work/slice_2d.png" 0.2 ||
  fail "plot_slice (2D)"

echo "== render_step (pvbatch)"
xvfb_pid=
stop_xvfb() { [[ -n $xvfb_pid ]] && kill "$xvfb_pid" 2>/dev/null; xvfb_pid=; }
trap stop_xvfb EXIT
# ParaView built with EGL/OSMesa renders off-screen by itself; an X-only build (Debian's)
# needs an X server even with --force-offscreen-rendering: without $DISPLAY start a virtual
# one (Xvfb -displayfd reports its display once it accepts connections).
if [[ -z ${DISPLAY:-} ]] && command -v Xvfb >/dev/null 2>&1; then
  Xvfb -displayfd 3 -screen 0 1280x1024x24 -nolisten tcp 3>"$work/xvfb.display" \
    2>"$work/xvfb.log" &
  xvfb_pid=$!
  for _ in $(seq 100); do [[ -s $work/xvfb.display ]] && break; sleep 0.1; done
  if [[ -s $work/xvfb.display ]]; then
    export DISPLAY=:$(head -n1 "$work/xvfb.display")
    echo "  virtual display $DISPLAY (Xvfb pid $xvfb_pid)"
  else
    stop_xvfb
  fi
fi
# On a loaded machine Xlib's connection to the virtual X server can fail transiently (VTK:
# "bad X server connection. Aborting."): retry with back-off.
render() {
  local out=$1 attempt
  shift
  for attempt in 1 2 3 4 5; do
    rm -f "$out"
    pvbatch --force-offscreen-rendering "$post/render_step.py" "$@" --out "$out" \
      >"$work/render.log" 2>&1 && return 0
    echo "  render attempt $attempt failed:"
    grep -E "ERR\||Error|error" "$work/render.log" | grep -v '0x[0-9a-f]* ' | tail -2
    sleep $((2 * attempt))
  done
  return 1
}
if ! command -v pvbatch >/dev/null 2>&1; then
  echo "SKIP render_step: pvbatch not found"
elif [[ -z ${DISPLAY:-} ]] && ! render "$work/probe.png" "$sine/sine3d.xdmf" >/dev/null; then
  echo "SKIP render_step: no \$DISPLAY, no Xvfb, and this ParaView cannot render off-screen"
else
  render "$work/render_xdmf.png" "$sine/sine3d.xdmf" --step 2 && grep "render_step:" "$work/render.log" &&
    check_png "$work/render_xdmf.png" 0.1 || fail "render_step on the .xdmf"
  if [[ $have_vtk -eq 1 ]]; then
    render "$work/render_pvd.png" "$sine/sine3d.pvd" --axis y --size 400x300 &&
      grep "render_step:" "$work/render.log" && check_png "$work/render_pvd.png" 0.1 ||
      fail "render_step on the .pvd"
  fi
  render "$work/render_2d.png" "$sine2/sine2d.xdmf" && grep "render_step:" "$work/render.log" &&
    check_png "$work/render_2d.png" 0.1 || fail "render_step on a 2D series"
fi
stop_xvfb

if ((fails > 0)); then
  echo "$fails check(s) failed"
  exit 1
fi
echo "postproc: all checks passed"
