#!/usr/bin/python3
"""Plot a slice of a heatsolve field (HDF5 series) as a PNG with a colour bar.

The input is a run directory (its <name>.h5 is used) or an .h5 file. 3D fields are cut by the
plane normal to --axis through cell layer --index (default: the middle layer); 2D fields are
plotted whole. --step is the solver step number of an output step (default: the last one;
negative values count from the end of the series). The PNG goes to --out, by default
<dir of the .h5>/<name>_<step>_<axis><index>.png.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Series, fail, find_h5, short  # noqa: E402

PROG = "plot_slice"
AXES = "xyz"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="run output directory or .h5 file")
    p.add_argument("--step", type=int, default=None,
                   help="output step number (default: last; negative: from the end)")
    p.add_argument("--axis", choices=list(AXES), default="z", help="slice normal (3D; default z)")
    p.add_argument("--index", default="mid",
                   help="cell layer along --axis: an integer or 'mid' (default)")
    p.add_argument("-o", "--out", help="PNG to write")
    p.add_argument("--cmap", default="inferno", help="matplotlib colour map (default inferno)")
    p.add_argument("--vmin", type=float, default=None)
    p.add_argument("--vmax", type=float, default=None)
    p.add_argument("--dpi", type=int, default=100)
    args = p.parse_args()

    try:
        h5 = find_h5(args.source)
        series = Series(h5)
    except (OSError, ValueError) as e:
        fail(PROG, str(e))
    try:
        step = series.resolve(args.step)
    except (KeyError, IndexError):
        fail(PROG, "step %s not in %s (steps: %s)" % (args.step, h5, short(series.steps)))
    field = series.field(step)
    time = series.time(step)
    name = os.path.splitext(os.path.basename(h5))[0]

    axis = AXES.index(args.axis)
    if series.dims == 2:
        plane, label = field, ""
        xa, ya = 0, 1
    else:
        n = series.cells[axis]
        if args.index == "mid":
            index = n // 2
        else:
            try:
                index = int(args.index)
            except ValueError:
                p.error("--index must be an integer or 'mid'")
            if index < 0:
                index += n
            if not 0 <= index < n:
                fail(PROG, "--index %s outside 0..%d along %s" % (args.index, n - 1, args.axis))
        # field is [z][y][x]; numpy axis of grid axis a is 2 - a.
        plane = field.take(index, axis=2 - axis)
        xa, ya = [a for a in range(3) if a != axis]
        coord = series.centres(axis)[index]
        label = ", %s = %.4g (cell %d)" % (args.axis, coord, index)
    # plane is [ya][xa] with xa < ya: rows along ya, as imshow wants.
    extent = [series.origin[xa], series.origin[xa] + series.cells[xa] * series.spacing[xa],
              series.origin[ya], series.origin[ya] + series.cells[ya] * series.spacing[ya]]

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    im = ax.imshow(plane, origin="lower", extent=extent, cmap=args.cmap, vmin=args.vmin,
                   vmax=args.vmax, interpolation="nearest", aspect="equal")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label(series.field_name)
    ax.set_xlabel(AXES[xa])
    ax.set_ylabel(AXES[ya])
    when = "iteration %d" % step if series.steady else "step %d, t = %.6g" % (step, time)
    ax.set_title("%s: %s%s" % (name, when, label), fontsize=10)
    fig.tight_layout()
    if args.out:
        out = args.out
    else:
        suffix = "" if series.dims == 2 else "_%s%d" % (args.axis, index)
        out = os.path.join(os.path.dirname(h5) or ".", "%s_%08d%s.png" % (name, step, suffix))
    fig.savefig(out, dpi=args.dpi)
    print("%s: %s %s, range [%.6g, %.6g] -> %s"
          % (PROG, h5, when.replace(", t = ", " (t = ") + ("" if series.steady else ")"),
             plane.min(), plane.max(), out))
    series.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
