#!/usr/bin/python3
"""Plot a heatsolve run's residual history (residuals.csv) on a log scale.

Reads <run dir>/residuals.csv (columns step,residual; written by every run) and saves a PNG,
by default <run dir>/residuals.png. For heat runs the residual is the per-step change norm,
for Poisson runs the Jacobi/Anderson residual norm; summary.json (when present) labels the
axes and marks the Poisson tolerance.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import fail, load_summary  # noqa: E402

PROG = "plot_residuals"


def read_csv(path):
    steps, values = [], []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or not {"step", "residual"} <= set(reader.fieldnames):
            raise ValueError("%s: expected the header 'step,residual', got %s"
                             % (path, reader.fieldnames))
        for row in reader:
            steps.append(int(row["step"]))
            values.append(float(row["residual"]))
    return steps, values


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="run output directory (or a residuals.csv file)")
    p.add_argument("-o", "--out", help="PNG to write (default <run dir>/residuals.png)")
    p.add_argument("--title", help="plot title (default: the run name)")
    p.add_argument("--dpi", type=int, default=100)
    args = p.parse_args()

    if os.path.isdir(args.run_dir):
        run_dir, csv_path = args.run_dir, os.path.join(args.run_dir, "residuals.csv")
    else:
        csv_path = args.run_dir
        run_dir = os.path.dirname(csv_path) or "."
    if not os.path.isfile(csv_path):
        fail(PROG, "no residuals.csv: %s" % csv_path)
    try:
        steps, values = read_csv(csv_path)
    except (ValueError, KeyError) as e:
        fail(PROG, str(e))
    if not steps:
        fail(PROG, "%s has no rows (did the run record a residual history?)" % csv_path)
    summary = load_summary(run_dir) or {}
    poisson = summary.get("problem") == "poisson"

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    positive = [(s, v) for s, v in zip(steps, values) if v > 0]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if positive:
        ax.semilogy([s for s, _ in positive], [v for _, v in positive], marker=".", lw=1.2,
                    ms=3, label="residual")
    else:  # all zero: a log axis cannot show it
        ax.plot(steps, values, marker=".", label="residual")
    if poisson and summary.get("tolerance") and positive:
        ax.axhline(summary["tolerance"], color="tab:red", ls="--", lw=1, label="tolerance")
    ax.set_xlabel("iteration" if poisson else "step")
    ax.set_ylabel("residual norm" if poisson else "change per step")
    ax.set_title(args.title or summary.get("name") or os.path.basename(os.path.abspath(run_dir)))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = args.out or os.path.join(run_dir, "residuals.png")
    fig.savefig(out, dpi=args.dpi)
    print("%s: %d points -> %s" % (PROG, len(steps), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
