#!/usr/bin/python3
"""Compare a heatsolve verification run with its analytic solution.

Supported decks (recognised from the deck echo in <run dir>/summary.json):
  heat, initial sine, no source, zero Dirichlet walls (inputs/quickstart.yaml, sine2d.yaml,
  sine3d.yaml):   u = A exp(-pi^2 alpha sum_d 1/L_d^2 t) prod_d sin(pi (x_d - o_d) / L_d)
  poisson, source sine of amplitude S, zero Dirichlet walls (inputs/poisson_manufactured.yaml):
                  -lap u = S prod_d sin(...)  =>  u = S / (pi^2 sum_d 1/L_d^2) prod_d sin(...)
The field is the run's HDF5 series (<name>.h5), by default its last output step, whose time
attribute is used for t (it equals summary.json's final_time for the last step). Prints the
max and L2 errors (absolute, and relative to the exact solution's max / L2 norm); exits 1 when
the max error exceeds --max-error (relative with --relative), 2 when the run cannot be checked.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Series, fail, find_h5, load_summary, short  # noqa: E402

PROG = "verify_error"
FACES = ["x-", "x+", "y-", "y+", "z-", "z+"]


def unsupported(message):
    fail(PROG, "no analytic solution for this run: %s" % message, code=2)


def check_zero_dirichlet(deck, dims):
    boundary = deck.get("boundary") or {}
    default = boundary.get("all")
    for face in FACES[: 2 * dims]:
        bc = boundary.get(face, default)
        if bc is None:
            unsupported("boundary.%s is not given" % face)
        if bc.get("type") != "dirichlet" or float(bc.get("value", 0.0)) != 0.0:
            unsupported("boundary.%s is %s, needs {type: dirichlet, value: 0}"
                        % (face, json.dumps(bc)))


def sine_product(series):
    """prod_d sin(pi (x_d - o_d) / L_d) at the cell centres, indexed like the field."""
    import numpy as np

    lengths = series.lengths()
    factors = [np.sin(math.pi * (series.centres(a) - series.origin[a]) / lengths[a])
               for a in range(series.dims)]
    if series.dims == 2:
        return factors[1][:, None] * factors[0][None, :]
    return factors[2][:, None, None] * factors[1][None, :, None] * factors[0][None, None, :]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="run output directory (summary.json + <name>.h5)")
    p.add_argument("--step", type=int, default=None,
                   help="output step number to check (default: the last one)")
    p.add_argument("--max-error", type=float, default=1e-2,
                   help="fail (exit 1) when the max error exceeds this (default 1e-2)")
    p.add_argument("--relative", action="store_true",
                   help="apply --max-error to the max error relative to max |exact|")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = p.parse_args()

    summary = load_summary(args.run_dir)
    if summary is None:
        fail(PROG, "no summary.json in %s" % args.run_dir, code=2)
    deck = summary.get("deck") or {}
    problem = summary.get("problem") or (deck.get("problem") or {}).get("type")
    try:
        series = Series(find_h5(args.run_dir))
    except (OSError, ValueError) as e:
        fail(PROG, str(e), code=2)
    try:
        step = series.resolve(args.step)
    except (KeyError, IndexError):
        fail(PROG, "step %s not in %s (steps: %s)" % (args.step, series.path, short(series.steps)),
             code=2)
    dims = series.dims
    lengths = series.lengths()
    inv_l2 = sum(1.0 / (l * l) for l in lengths)
    initial = deck.get("initial") or {}
    source = deck.get("source") or {"type": "none"}
    check_zero_dirichlet(deck, dims)

    t = series.time(step)
    if problem == "heat":
        if initial.get("type") != "sine":
            unsupported("initial.type is %r, needs sine" % initial.get("type"))
        if source.get("type", "none") != "none":
            unsupported("source.type is %r, needs none" % source.get("type"))
        amplitude = float(initial["amplitude"])
        alpha = float((deck.get("material") or {}).get("diffusivity", 1.0))
        decay = math.exp(-math.pi ** 2 * alpha * inv_l2 * t)
        scale = amplitude * decay
        kind = "sine decay: A=%g alpha=%g L=%s t=%.9g (decay %.6g)" % (
            amplitude, alpha, [float("%.6g" % l) for l in lengths], t, decay)
        if step == series.steps[-1] and "final_time" in summary:
            if abs(float(summary["final_time"]) - t) > 1e-9 * max(1.0, abs(t)):
                sys.stderr.write("%s: warning: last step time %.17g != summary final_time %.17g\n"
                                 % (PROG, t, summary["final_time"]))
    elif problem == "poisson":
        if source.get("type") != "sine":
            unsupported("source.type is %r, needs sine" % source.get("type"))
        s_amp = float(source["amplitude"])
        scale = s_amp / (math.pi ** 2 * inv_l2)
        kind = "Poisson manufactured sine: S=%g L=%s (u_max %.6g)" % (
            s_amp, [float("%.6g" % l) for l in lengths], scale)
        if summary.get("converged") is False:
            sys.stderr.write("%s: warning: the run did not converge\n" % PROG)
    else:
        unsupported("problem type %r" % problem)

    import numpy as np

    u = series.field(step)
    exact = scale * sine_product(series)
    err = u - exact
    cell_volume = float(np.prod(series.spacing[:dims]))
    max_err = float(np.max(np.abs(err)))
    l2_err = math.sqrt(float(np.sum(err * err)) * cell_volume)
    max_exact = float(np.max(np.abs(exact)))
    l2_exact = math.sqrt(float(np.sum(exact * exact)) * cell_volume)
    rel_max = max_err / max_exact if max_exact > 0 else float("inf")
    rel_l2 = l2_err / l2_exact if l2_exact > 0 else float("inf")
    measured = rel_max if args.relative else max_err
    ok = measured <= args.max_error
    result = {"run": summary.get("name"), "h5": series.path, "step": step, "time": t,
              "case": kind, "cells": series.cells[:dims], "max_error": max_err,
              "l2_error": l2_err, "relative_max_error": rel_max, "relative_l2_error": rel_l2,
              "threshold": args.max_error, "relative": args.relative, "pass": ok}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("%s: %s" % (PROG, kind))
        print("  run %s, step %d, %s cells" % (summary.get("name"), step,
                                              "x".join(str(c) for c in series.cells[:dims])))
        print("  max error %.6e (relative %.6e)" % (max_err, rel_max))
        print("  L2  error %.6e (relative %.6e)" % (l2_err, rel_l2))
        print("  %s: %s error %.3e %s %.3e" % ("PASS" if ok else "FAIL",
                                                "relative max" if args.relative else "max",
                                                measured, "<=" if ok else ">", args.max_error))
    series.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
